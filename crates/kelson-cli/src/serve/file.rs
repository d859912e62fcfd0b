//! The TOML configuration file of `kelson serve` (`--config kelson.toml`): its format, and errors that
//! name the key at fault.
//!
//! Every table refuses keys it does not know (`deny_unknown_fields`), so a misspelt setting is an
//! error instead of a silently ignored line. Serde's errors carry the byte span of the offending
//! key or value; [`parse`] turns that span back into the dotted key (`databases.sales.url`) by
//! walking the document's spanned syntax tree.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use toml::de::{DeTable, DeValue};

use crate::logging::LogFormat;

/// The whole file. Every section is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct FileConfig {
    #[serde(default)]
    pub server: ServerSection,
    #[serde(default)]
    pub http: HttpSection,
    #[serde(default)]
    pub sample: SampleSection,
    #[serde(default)]
    pub limits: LimitsSection,
    #[serde(default)]
    pub databases: BTreeMap<String, DatabaseSection>,
    #[serde(default)]
    pub roots: Vec<RootSection>,
    #[serde(default)]
    pub files: FilesSection,
    #[serde(default)]
    pub observability: ObservabilitySection,
    #[serde(default)]
    pub auth: super::auth::AuthSection,
    /// `[[upstream]]`: the servers behind `kelson gateway`.
    #[serde(default)]
    pub upstream: Vec<kelson_gateway::UpstreamConfig>,
    /// `[policy]`: what `kelson gateway` exposes, and how.
    pub policy: Option<kelson_gateway::PolicyConfig>,
    /// `[audit]`: the audit log of `kelson gateway`.
    pub audit: Option<kelson_gateway::AuditConfig>,
}

/// `[server]`: identity, instructions, the `requestState` key.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct ServerSection {
    /// `serverInfo.name`.
    pub name: Option<String>,
    /// Text for the model, put before what the adapters say about their databases and roots.
    pub instructions: Option<String>,
    /// A file of 32 or more bytes that seals `requestState`; shared by every instance behind a
    /// load balancer.
    pub state_key_file: Option<PathBuf>,
    /// Key files that sealed `requestState` before `state_key_file` replaced them; what they
    /// sealed still opens.
    #[serde(default)]
    pub previous_state_key_files: Vec<PathBuf>,
    /// A PostgreSQL URL where used write approvals are recorded, shared by every instance.
    pub approval_ledger: Option<String>,
    /// A NATS or Redis URL that carries change notifications between instances.
    pub broker: Option<String>,
    /// The subject or channel the instances share on the broker.
    pub broker_channel: Option<String>,
    /// A PostgreSQL URL where tasks are kept, shared by every instance.
    pub task_store: Option<String>,
    /// How long an instance may go without a heartbeat before its tasks are reported failed.
    pub task_runner_timeout: Option<Seconds>,
    /// How long a SQL call may run before it becomes a task: a duration, or "off".
    pub task_after: Option<SecondsOrOff>,
    /// `both` (the default: handshake-era hosts too) or `modern` (2026-07-28 only).
    pub eras: Option<ErasSetting>,
    /// How long a handler may run before it is stopped.
    pub handler_timeout: Option<Seconds>,
}

/// Which protocol eras `kelson serve` answers.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ErasSetting {
    /// 2026-07-28 requests, and handshake-era (2025) sessions started with `initialize`.
    Both,
    /// 2026-07-28 only: `initialize` is refused with the supported versions.
    Modern,
}

/// How handshake-era clients are served over HTTP.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LegacyHttpSetting {
    /// `Mcp-Session-Id` sessions, kept by this process.
    Sessions,
    /// No sessions: each request on its own (for instances behind a load balancer).
    Stateless,
}

/// `[http]`: the Streamable HTTP endpoint.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct HttpSection {
    /// A socket address, checked after parsing so the message can quote it.
    pub bind: Option<String>,
    pub path: Option<String>,
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Largest HTTP body or stdio line, in bytes.
    pub max_message: Option<usize>,
    /// How long a connection may stay silent before its first request, and how long a request
    /// may take to arrive once it has begun.
    pub read_timeout: Option<Seconds>,
    /// How long a connection may wait for its next request.
    pub idle_timeout: Option<Seconds>,
    /// How long a response may make no progress before it is abandoned.
    pub write_timeout: Option<Seconds>,
    /// How long to keep serving, not ready, after a stop signal.
    pub shutdown_grace: Option<Seconds>,
    /// The most connections open at once.
    pub max_connections: Option<usize>,
    /// The most concurrent streams on one HTTP/2 connection.
    pub h2_max_streams: Option<u32>,
    /// The largest request header section, in bytes.
    pub max_header_bytes: Option<usize>,
    /// The most connections open at once from one client address.
    pub max_connections_per_address: Option<usize>,
    /// The most bytes large responses may hold at once.
    pub response_memory: Option<usize>,
    /// `sessions` or `stateless`: how handshake-era clients are served.
    pub legacy: Option<LegacyHttpSetting>,
    /// The most handshake-era sessions kept at once.
    pub max_sessions: Option<usize>,
    /// The most handshake-era sessions one client (principal or address) may keep at once.
    pub max_sessions_per_client: Option<usize>,
    /// How long a handshake-era session may go unused before it ends.
    pub session_idle: Option<Seconds>,
    /// HTTPS: the certificate chain (PEM), with `tls_key`.
    pub tls_cert: Option<PathBuf>,
    /// HTTPS: the certificate's private key (PEM), with `tls_cert`.
    pub tls_key: Option<PathBuf>,
}

/// `[sample]`: the embedded sample database.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct SampleSection {
    /// Serve it; by default only when no database is configured.
    pub enabled: Option<bool>,
    /// Where `sample.db` lives.
    pub data_dir: Option<PathBuf>,
    #[serde(default)]
    pub allow_write: bool,
    /// Read-only connections serving reads in parallel.
    pub read_connections: Option<usize>,
    /// The scopes (space-separated) a caller needs to read it; `sample:read` by default.
    pub read_scope: Option<String>,
    /// The scopes a caller needs for `execute` on it; `sample:write` by default.
    pub write_scope: Option<String>,
}

/// `[limits]`: the per-call limits of every database that does not set its own.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct LimitsSection {
    pub max_rows: Option<usize>,
    pub max_bytes: Option<usize>,
    pub query_timeout: Option<Seconds>,
    /// The longest a call waits for a free connection.
    pub connection_wait: Option<Seconds>,
}

/// `[databases.NAME]`: one database.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct DatabaseSection {
    /// `postgres://...`, `mysql://...` (or `mariadb://...`), `sqlite:PATH`, or a path.
    pub url: String,
    /// PostgreSQL and MySQL only: the role or account `execute` connects as.
    pub write_url: Option<String>,
    #[serde(default)]
    pub allow_write: bool,
    pub description: Option<String>,
    pub max_rows: Option<usize>,
    pub max_bytes: Option<usize>,
    pub query_timeout: Option<Seconds>,
    pub connection_wait: Option<Seconds>,
    /// PostgreSQL and MySQL only: the most connections per pool.
    pub connections: Option<usize>,
    /// SQLite only: read-only connections serving reads in parallel.
    pub read_connections: Option<usize>,
    /// The scopes (space-separated) a caller needs to read it; `NAME:read` by default.
    pub read_scope: Option<String>,
    /// The scopes a caller needs for `execute` on it; `NAME:write` by default.
    pub write_scope: Option<String>,
    /// PostgreSQL and MySQL only: `disable`, `prefer` (PostgreSQL only), `require`, `verify-ca`
    /// or `verify-full`, over the URL's `sslmode`.
    pub ssl_mode: Option<String>,
    /// PostgreSQL and MySQL only: the CA certificates (PEM) the server's certificate must come
    /// from.
    pub ssl_root_cert: Option<PathBuf>,
}

/// `[[roots]]`: one directory exposed as `file://` resources.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct RootSection {
    pub path: PathBuf,
    pub name: Option<String>,
    /// The scopes (space-separated) a caller needs for the root; `files:read` by default.
    pub scope: Option<String>,
}

/// `[files]`: bounds of the filesystem adapter.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct FilesSection {
    pub max_file_bytes: Option<u64>,
    pub max_dir_entries: Option<usize>,
    pub max_listed_entries: Option<usize>,
}

/// `[observability]`: request logs and metrics.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(crate) struct ObservabilitySection {
    /// `text` or `json`.
    pub log_format: Option<LogFormat>,
    /// Log the arguments of `tools/call` and `prompts/get` (at DEBUG level of `kelson::request`).
    #[serde(default)]
    pub log_arguments: bool,
    /// Serve the metrics on the HTTP listener.
    #[serde(default)]
    pub metrics: bool,
    /// Where the metrics are served.
    pub metrics_path: Option<String>,
    /// A socket address of their own, checked after parsing so the message can quote it.
    pub metrics_addr: Option<String>,
    /// An OpenTelemetry collector's OTLP/HTTP base URL, where traces are sent.
    pub otlp_endpoint: Option<String>,
}

/// A duration written as seconds (`30`, `1.5`) or with a unit (`"500ms"`, `"30s"`, `"2m"`, `"1h"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seconds(pub Duration);

/// A duration as [`Seconds`] reads it, or the string `"off"` (`None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SecondsOrOff(pub Option<Duration>);

impl<'de> Deserialize<'de> for SecondsOrOff {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(deserializer)?;
        match value.as_str() {
            Some(s) if s.trim().eq_ignore_ascii_case("off") => Ok(SecondsOrOff(None)),
            Some(s) => crate::flags::duration(s)
                .map(|d| SecondsOrOff(Some(d)))
                .map_err(|e| de::Error::custom(format!("{e}, or \"off\""))),
            None => Seconds::deserialize(value)
                .map(|s| SecondsOrOff(Some(s.0)))
                .map_err(|e| {
                    let e = e.to_string();
                    de::Error::custom(format!("{}, or \"off\"", e.trim_end()))
                }),
        }
    }
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Seconds;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of seconds or a string such as \"30s\" or \"500ms\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Seconds, E> {
                u64::try_from(v)
                    .map(|s| Seconds(Duration::from_secs(s)))
                    .map_err(|_| E::custom("a duration cannot be negative"))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Seconds, E> {
                Ok(Seconds(Duration::from_secs(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Seconds, E> {
                Duration::try_from_secs_f64(v)
                    .map(Seconds)
                    .map_err(|_| E::custom(format!("invalid duration {v}")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Seconds, E> {
                crate::flags::duration(v).map(Seconds).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// Parses the file's text; an error names the key at fault and its line.
pub(crate) fn parse(text: &str) -> Result<FileConfig, String> {
    toml::from_str(text).map_err(|e| describe(text, &e))
}

fn describe(text: &str, error: &toml::de::Error) -> String {
    let message = plain_words(error.message().trim_end());
    let Some(span) = error.span() else {
        return message;
    };
    let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
    match key_at(text, &span) {
        Some(key) => {
            let hint = if message.contains("expected a sequence") && !key.contains('.') {
                // `[roots]` opens a table; every entry of a list of tables needs two brackets.
                format!("; write [[{key}]] (two brackets) before each entry")
            } else {
                String::new()
            };
            format!("{key}: {message}{hint} (line {line})")
        }
        None => format!("line {line}: {message}"),
    }
}

/// Serde names Rust types (`expected usize`); a configuration file has numbers.
fn plain_words(message: &str) -> String {
    let mut out = message.to_owned();
    for ty in ["usize", "u64", "u32", "u16", "u8"] {
        out = out.replace(
            &format!("expected {ty}"),
            "expected a whole number (0 or more)",
        );
    }
    for ty in ["isize", "i64", "i32"] {
        out = out.replace(&format!("expected {ty}"), "expected a whole number");
    }
    out.replace("expected f64", "expected a number")
}

/// The line of the file where the dotted key `key` (as errors write it: `databases.sales.url`,
/// `roots[1].path`, `databases."my db".url`) is set, if it is.
pub(crate) fn line_of(text: &str, key: &str) -> Option<usize> {
    let doc = DeTable::parse(text).ok()?;
    let segments = parse_key(key)?;
    let mut table = doc.get_ref();
    let mut value: Option<&DeValue<'_>> = None;
    let mut span = None;
    for segment in &segments {
        match segment {
            Segment::Key(name) => {
                if let Some(v) = value {
                    let DeValue::Table(inner) = v else {
                        return None;
                    };
                    table = inner;
                }
                let (k, v) = table.iter().find(|(k, _)| k.get_ref().as_ref() == name)?;
                span = Some(k.span());
                value = Some(v.get_ref());
            }
            Segment::Index(i) => {
                let Some(DeValue::Array(items)) = value else {
                    return None;
                };
                let item = items.get(*i)?;
                span = Some(item.span());
                value = Some(item.get_ref());
            }
        }
    }
    let span = span?;
    Some(text[..span.start.min(text.len())].matches('\n').count() + 1)
}

/// Splits a dotted key as [`key_at`] writes it into its segments.
fn parse_key(key: &str) -> Option<Vec<Segment>> {
    let mut out = Vec::new();
    let mut rest = key;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('"') {
            let end = after.find('"')?;
            out.push(Segment::Key(after[..end].to_owned()));
            rest = &after[end + 1..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            out.push(Segment::Index(after[..end].parse().ok()?));
            rest = &after[end + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            out.push(Segment::Key(rest[..end].to_owned()));
            rest = &rest[end..];
        }
        rest = rest.strip_prefix('.').unwrap_or(rest);
    }
    Some(out)
}

/// The dotted key whose name or value covers `span`, the deepest one.
fn key_at(text: &str, span: &Range<usize>) -> Option<String> {
    let doc = DeTable::parse(text).ok()?;
    let path = in_table(doc.get_ref(), span)?;
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                push_key(&mut out, &key);
            }
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    Some(out)
}

/// One step of a key path: a table key or an array index.
enum Segment {
    Key(String),
    Index(usize),
}

fn covers(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end && outer.start < outer.end
}

fn in_table(table: &DeTable<'_>, span: &Range<usize>) -> Option<Vec<Segment>> {
    for (key, value) in table.iter() {
        let here = || vec![Segment::Key(key.get_ref().to_string())];
        if covers(&key.span(), span) {
            return Some(here());
        }
        if covers(&value.span(), span) {
            let mut path = here();
            path.extend(in_value(value.get_ref(), span).unwrap_or_default());
            return Some(path);
        }
    }
    // A table opened by a header (`[databases.sales]`) need not span its keys: look inside.
    for (key, value) in table.iter() {
        if let Some(inner) = in_value(value.get_ref(), span) {
            let mut path = vec![Segment::Key(key.get_ref().to_string())];
            path.extend(inner);
            return Some(path);
        }
    }
    None
}

fn in_value(value: &DeValue<'_>, span: &Range<usize>) -> Option<Vec<Segment>> {
    match value {
        DeValue::Table(table) => in_table(table, span),
        DeValue::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            let inner = match item.get_ref() {
                DeValue::Table(table) => in_table(table, span),
                _ => None,
            };
            match inner {
                Some(inner) => {
                    let mut path = vec![Segment::Index(i)];
                    path.extend(inner);
                    Some(path)
                }
                None if covers(&item.span(), span) => Some(vec![Segment::Index(i)]),
                None => None,
            }
        }),
        _ => None,
    }
}

/// Appends a key, quoted when it is not a bare TOML key.
fn push_key(path: &mut String, key: &str) {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare {
        path.push_str(key);
    } else {
        path.push_str(&format!("{key:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        parse(text).expect_err("the file is refused")
    }

    #[test]
    fn an_empty_file_is_all_defaults() {
        let config = parse("").unwrap();
        assert!(config.databases.is_empty() && config.roots.is_empty());
        assert_eq!(config.sample.enabled, None);
    }

    #[test]
    fn errors_name_the_key() {
        let e = error("[http]\nbnd = \"127.0.0.1:1\"\n");
        assert!(e.starts_with("http.bnd: unknown field `bnd`"), "{e}");
        assert!(e.contains("(line 2)"), "{e}");

        let e = error("[databases.sales]\nurl = \"x\"\nmax_rows = \"many\"\n");
        assert!(
            e.starts_with("databases.sales.max_rows: invalid type"),
            "{e}"
        );

        let e = error("[databases.sales]\nurl = \"x\"\nquery_timeout = \"soon\"\n");
        assert!(
            e.starts_with("databases.sales.query_timeout: invalid duration"),
            "{e}"
        );

        let e = error("[databases]\nsales = { url = \"x\", colour = 1 }\n");
        assert!(
            e.starts_with("databases.sales.colour: unknown field"),
            "{e}"
        );

        let e = error("[databases.sales]\ndescription = \"no url\"\n");
        assert!(e.starts_with("databases.sales: missing field `url`"), "{e}");

        let e = error("[[roots]]\npath = \"/a\"\n[[roots]]\npath = \"/b\"\nnmae = \"b\"\n");
        assert!(e.starts_with("roots[1].nmae: unknown field"), "{e}");

        let e = error("colour = 1\n");
        assert!(e.starts_with("colour: unknown field"), "{e}");

        let e = error("[databases.\"my db\"]\nurl = 1\n");
        assert!(
            e.starts_with("databases.\"my db\".url: invalid type"),
            "{e}"
        );

        let e = error("[observability]\nlog_format = \"xml\"\n");
        assert!(
            e.starts_with(
                "observability.log_format: unknown variant `xml`, expected `text` or `json`"
            ),
            "{e}"
        );

        let e = error("[observability]\nmetrics = \"yes\"\n");
        assert!(e.starts_with("observability.metrics: invalid type"), "{e}");

        let e = error("[observability]\nmetrics_adr = \"127.0.0.1:9090\"\n");
        assert!(
            e.starts_with("observability.metrics_adr: unknown field `metrics_adr`"),
            "{e}"
        );

        let e = error("[http\n");
        assert!(e.starts_with("line 1: "), "{e}");
    }

    #[test]
    fn errors_speak_of_numbers_not_rust_types() {
        let e = error("[databases.sales]\nurl = \"x\"\nmax_rows = \"many\"\n");
        assert!(e.contains("expected a whole number (0 or more)"), "{e}");
        assert!(!e.contains("usize"), "{e}");
        let e = error("[limits]\nmax_bytes = -1\n");
        assert!(e.contains("expected a whole number (0 or more)"), "{e}");
    }

    #[test]
    fn a_table_written_for_a_list_of_tables_gets_a_hint() {
        let e = error("[roots]\npath = \"/srv\"\n");
        assert!(
            e.starts_with("roots: invalid type: map, expected a sequence; write [[roots]] (two brackets) before each entry (line 1)"),
            "{e}"
        );
    }

    #[test]
    fn keys_are_found_back_by_line() {
        let text = "[http]\nbind = \"127.0.0.1:1\"\n\n[databases.sales]\nurl = \"x\"\nmax_rows = 0\n\n\
                    [databases.\"my db\"]\nurl = \"y\"\n\n[[roots]]\npath = \"/a\"\n[[roots]]\npath = \"/b\"\n\
                    [limits]\nmax_rows = 0\n";
        assert_eq!(line_of(text, "http.bind"), Some(2));
        assert_eq!(line_of(text, "databases.sales.max_rows"), Some(6));
        assert_eq!(line_of(text, "databases.\"my db\".url"), Some(9));
        assert_eq!(line_of(text, "roots[1].path"), Some(14));
        assert_eq!(line_of(text, "limits.max_rows"), Some(16));
        assert_eq!(line_of(text, "limits.max_bytes"), None);
        assert_eq!(line_of(text, "nothing.here"), None);
    }
}
