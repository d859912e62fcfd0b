//! What an operator writes: the upstreams (`[[upstream]]`), the policy (`[policy]`) and the audit
//! log (`[audit]`), as they appear in the configuration file of `kelson gateway`.
//!
//! Every table refuses keys it does not know, so a misspelt setting is an error rather than a
//! silently ignored line. Secrets (header values, environment values) may be written inline, or
//! taken from the gateway's environment (`{ env = "NAME" }`) or from a file (`{ file = "PATH" }`),
//! so that the file itself can be shared without them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer};

use crate::glob::Glob;

/// The separator between an upstream's prefix and its tools' names, when the prefix is the
/// default (the upstream's name): `db` and `query` expose `db_query`. An underscore, because the
/// hosts that hand tool names to a model's function calling accept `[A-Za-z0-9_-]` only.
pub const PREFIX_SEPARATOR: &str = "_";

/// One upstream MCP server.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct UpstreamConfig {
    /// Unique among the upstreams; names the upstream in logs, metrics, the audit log and pins.
    pub name: String,
    /// What the upstream is. Only `"mcp"` (the default) is served so far.
    #[serde(default)]
    pub kind: Kind,
    /// A Streamable HTTP endpoint, of either protocol era (detected).
    pub url: Option<String>,
    /// A program and its arguments, spoken to over stdio, of either protocol era (detected).
    pub command: Option<Vec<String>>,
    /// The working directory of `command` (default: the gateway's).
    pub cwd: Option<PathBuf>,
    /// Environment variables of `command`, besides the few any program needs to run (`PATH`,
    /// `HOME`, the locale); the gateway's own environment is not passed on.
    #[serde(default)]
    pub env: BTreeMap<String, Secret>,
    /// What goes in front of every tool name of this upstream (default: the name and `_`); `""`
    /// for none.
    pub prefix: Option<String>,
    /// Static headers sent with every request to a `url` upstream: its credentials.
    #[serde(default)]
    pub headers: BTreeMap<String, Secret>,
    /// The longest one call may wait for its answer; progress notifications restart the wait.
    #[serde(default, deserialize_with = "duration_opt")]
    pub timeout: Option<Duration>,
    /// A PEM file of the CA that issued a `url` upstream's certificate.
    pub ca_cert: Option<PathBuf>,
    /// Which protocol era to speak: `auto` (the default: detected), `legacy` (the handshake era)
    /// or `modern` (2026-07-28).
    #[serde(default)]
    pub era: EraSetting,
}

/// What an upstream is.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An MCP server, over `url` or `command`.
    #[default]
    Mcp,
    /// The SQL adapter of `kelson serve`, in process (not served by the gateway yet).
    Sql,
    /// The files adapter of `kelson serve`, in process (not served by the gateway yet).
    Files,
    /// A REST API through its OpenAPI document (not served by the gateway yet).
    Openapi,
    /// A gRPC service through reflection (not served by the gateway yet).
    Grpc,
}

/// Which protocol era to speak to an upstream.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EraSetting {
    /// Detected: 2026-07-28 first, then the handshake.
    #[default]
    Auto,
    /// The handshake era (`initialize`).
    Legacy,
    /// 2026-07-28 only.
    Modern,
}

/// A value that may be written inline or come from the environment or a file.
#[derive(Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "a string, { env = \"NAME\" } or { file = \"PATH\" }"
)]
pub enum Secret {
    /// Written in the configuration.
    Inline(String),
    /// The gateway's environment variable of that name, read at start.
    Env {
        /// The variable's name.
        env: String,
    },
    /// The file's content without its final line break, read at start.
    File {
        /// The file's path, relative to the configuration file's folder.
        file: PathBuf,
    },
}

impl fmt::Debug for Secret {
    // The value itself is never printed: it may be a credential.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Secret::Inline(_) => f.write_str("Inline(..)"),
            Secret::Env { env } => write!(f, "Env({env})"),
            Secret::File { file } => write!(f, "File({})", file.display()),
        }
    }
}

impl Secret {
    /// The value, read now. `base` is the folder relative files start from.
    pub fn resolve(&self, base: &Path) -> Result<String, String> {
        match self {
            Secret::Inline(v) => Ok(v.clone()),
            Secret::Env { env } => {
                std::env::var(env).map_err(|_| format!("the environment variable {env} is not set"))
            }
            Secret::File { file } => {
                let path = base.join(file);
                std::fs::read_to_string(&path)
                    .map(|s| s.trim_end_matches(['\r', '\n']).to_owned())
                    .map_err(|e| format!("{}: {e}", path.display()))
            }
        }
    }
}

/// `[policy]`: which tools are exposed and how they may be called.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct PolicyConfig {
    /// Globs over the exposed tool names; when given, only matching tools are exposed.
    #[serde(default)]
    pub allow: Vec<Glob>,
    /// Globs over the exposed tool names that are never exposed; deny wins over allow.
    #[serde(default)]
    pub deny: Vec<Glob>,
    /// Globs of tools that run only after the person approves each call (elicitation).
    #[serde(default)]
    pub approve: Vec<Glob>,
    /// Expose only tools that their upstream annotates `readOnlyHint: true`. The annotation is the
    /// upstream's claim, not a guarantee.
    #[serde(default)]
    pub read_only: bool,
    /// The largest `arguments` object a call may carry, in bytes of JSON.
    pub max_argument_bytes: Option<usize>,
    /// The largest result a call may return, in bytes of JSON; a larger one is refused.
    pub max_result_bytes: Option<usize>,
    /// Calls one principal may make to one tool: `"N/s"`, `"N/min"` or `"N/h"`.
    pub rate_limit: Option<RateLimit>,
}

/// `[audit]`: the log of calls.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct AuditConfig {
    /// Where the JSON lines go: a file (appended to), or `"-"` for stderr (default: `audit.jsonl`
    /// in the data folder).
    pub path: Option<PathBuf>,
    /// Also record the arguments of each call (they may hold personal data).
    #[serde(default)]
    pub arguments: bool,
    /// Record nothing.
    #[serde(default)]
    pub off: bool,
}

/// A number of calls per period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Calls allowed per period.
    pub calls: u32,
    /// The period.
    pub per: Duration,
}

impl RateLimit {
    /// Parses `"60/min"`, `"10/s"`, `"1000/h"`.
    pub fn parse(text: &str) -> Result<RateLimit, String> {
        let (calls, per) = text
            .split_once('/')
            .ok_or_else(|| format!("expected CALLS/PERIOD such as \"60/min\", not {text:?}"))?;
        let calls: u32 = calls
            .trim()
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("expected a whole number of calls above 0, not {calls:?}"))?;
        let per = match per.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            other => return Err(format!("expected s, min or h as the period, not {other:?}")),
        };
        Ok(RateLimit { calls, per })
    }
}

impl<'de> Deserialize<'de> for RateLimit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        RateLimit::parse(&text).map_err(de::Error::custom)
    }
}

/// Parses a duration: seconds as a number, or with a unit (`500ms`, `30s`, `2m`, `1h`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("expected a duration such as 30s or 500ms, not {text:?}"))?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?} (ms, s, m or h)"
            ));
        }
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(format!("a duration above zero is needed, not {text:?}"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn duration_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Text {
        Number(f64),
        Text(String),
    }
    match Text::deserialize(d)? {
        Text::Number(n) => parse_duration(&n.to_string()).map(Some),
        Text::Text(t) => parse_duration(&t).map(Some),
    }
    .map_err(de::Error::custom)
}

/// A configuration error, naming the key at fault (`upstream[2].url`).
#[derive(Debug, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct ConfigError {
    /// The dotted key.
    pub key: String,
    /// What is wrong with it.
    pub reason: String,
}

fn err(key: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        reason: reason.into(),
    }
}

/// The characters a tool name may hold (spec 2026-07-28 server/tools: 1 to 128 of
/// `A-Za-z0-9_-.`).
fn valid_name_part(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Checks the upstreams: unique names, one of `url` and `command`, keys that fit the kind, and
/// prefixes that cannot make two upstreams' tools collide by construction.
pub fn check_upstreams(upstreams: &[UpstreamConfig]) -> Result<(), ConfigError> {
    if upstreams.is_empty() {
        return Err(err(
            "upstream",
            "no upstream: add an [[upstream]] table with a name and a url or a command",
        ));
    }
    let mut names = BTreeMap::new();
    let mut prefixes: BTreeMap<String, usize> = BTreeMap::new();
    for (i, u) in upstreams.iter().enumerate() {
        let key = |field: &str| format!("upstream[{i}].{field}");
        if u.name.is_empty() || !valid_name_part(&u.name) {
            return Err(err(
                key("name"),
                format!(
                    "{:?}: a name of letters, digits, '_', '-' or '.' is needed",
                    u.name
                ),
            ));
        }
        if let Some(first) = names.insert(u.name.clone(), i) {
            return Err(err(
                key("name"),
                format!("{:?} is also the name of upstream[{first}]", u.name),
            ));
        }
        if u.kind != Kind::Mcp {
            return Err(err(
                key("kind"),
                format!(
                    "{:?} upstreams are not served by the gateway yet; put `kelson serve --stdio` \
                     behind it as a command upstream instead",
                    format!("{:?}", u.kind).to_lowercase()
                ),
            ));
        }
        match (&u.url, &u.command) {
            (Some(_), Some(_)) => {
                return Err(err(key("url"), "give either url or command, not both"));
            }
            (None, None) => return Err(err(key("url"), "a url or a command is needed")),
            (Some(url), None) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(err(
                        key("url"),
                        format!("{url:?}: an http:// or https:// URL is needed"),
                    ));
                }
                if !u.env.is_empty() {
                    return Err(err(key("env"), "env is for command upstreams"));
                }
                if u.cwd.is_some() {
                    return Err(err(key("cwd"), "cwd is for command upstreams"));
                }
            }
            (None, Some(command)) => {
                if command.is_empty() || command[0].is_empty() {
                    return Err(err(key("command"), "the program to run is missing"));
                }
                if !u.headers.is_empty() {
                    return Err(err(key("headers"), "headers are for url upstreams"));
                }
                if u.ca_cert.is_some() {
                    return Err(err(key("ca_cert"), "ca_cert is for url upstreams"));
                }
            }
        }
        for name in u.headers.keys() {
            if name.eq_ignore_ascii_case("host") || name.to_ascii_lowercase().starts_with("mcp-") {
                return Err(err(
                    format!("upstream[{i}].headers.{name}"),
                    "this header is the protocol's own and cannot be set",
                ));
            }
        }
        let prefix = u.prefix();
        if !valid_name_part(&prefix) {
            return Err(err(
                key("prefix"),
                format!("{prefix:?}: letters, digits, '_', '-' or '.' only"),
            ));
        }
        if let Some(first) = prefixes.insert(prefix.clone(), i)
            && !prefix.is_empty()
        {
            return Err(err(
                key("prefix"),
                format!("{prefix:?} is also the prefix of upstream[{first}]"),
            ));
        }
    }
    Ok(())
}

impl UpstreamConfig {
    /// What goes in front of this upstream's tool names.
    pub fn prefix(&self) -> String {
        match &self.prefix {
            Some(p) => p.clone(),
            None => format!("{}{PREFIX_SEPARATOR}", self.name),
        }
    }

    /// Where the upstream is, for messages: the URL, or the command line.
    pub fn location(&self) -> String {
        match (&self.url, &self.command) {
            (Some(url), _) => url.clone(),
            (None, Some(command)) => command.join(" "),
            (None, None) => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstream(json_text: &str) -> UpstreamConfig {
        #[derive(Deserialize)]
        struct File {
            upstream: Vec<UpstreamConfig>,
        }
        // The configuration is TOML in the CLI; its JSON twin exercises the same serde rules.
        let file: File = serde_json::from_str(json_text).unwrap();
        file.upstream.into_iter().next().unwrap()
    }

    #[test]
    fn durations_and_rates_parse_with_their_units() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3 weeks").is_err());
        assert_eq!(
            RateLimit::parse("60/min").unwrap(),
            RateLimit {
                calls: 60,
                per: Duration::from_secs(60)
            }
        );
        assert!(RateLimit::parse("0/min").is_err());
        assert!(RateLimit::parse("60").is_err());
        assert!(RateLimit::parse("5/week").is_err());
    }

    #[test]
    fn upstreams_are_checked_with_the_key_at_fault() {
        let ok = upstream(r#"{"upstream":[{"name":"db","command":["kelson","serve","--stdio"]}]}"#);
        assert_eq!(ok.prefix(), "db_");
        check_upstreams(std::slice::from_ref(&ok)).unwrap();

        let both = upstream(r#"{"upstream":[{"name":"a","url":"http://x/mcp","command":["x"]}]}"#);
        let e = check_upstreams(&[both]).unwrap_err();
        assert_eq!(e.key, "upstream[0].url");

        let mut twin = ok.clone();
        twin.prefix = Some("db_".into());
        twin.name = "other".into();
        let e = check_upstreams(&[ok.clone(), twin]).unwrap_err();
        assert_eq!(e.key, "upstream[1].prefix");
        assert!(e.reason.contains("upstream[0]"), "{e}");

        let mut dup = ok.clone();
        dup.prefix = Some("x_".into());
        let e = check_upstreams(&[ok.clone(), dup]).unwrap_err();
        assert_eq!(e.key, "upstream[1].name");

        let header = upstream(
            r#"{"upstream":[{"name":"a","url":"http://x/mcp","headers":{"Mcp-Session-Id":"x"}}]}"#,
        );
        assert!(check_upstreams(&[header]).is_err());

        let sql = upstream(r#"{"upstream":[{"name":"a","kind":"sql"}]}"#);
        let e = check_upstreams(&[sql]).unwrap_err();
        assert_eq!(e.key, "upstream[0].kind");

        let bad = serde_json::from_str::<UpstreamConfig>(r#"{"name":"a","urll":"http://x"}"#);
        assert!(bad.is_err(), "unknown keys are refused");
    }

    #[test]
    fn secrets_never_print_and_resolve_from_their_source() {
        let s: Secret = serde_json::from_str(r#""hunter2""#).unwrap();
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(s.resolve(Path::new(".")).unwrap(), "hunter2");
        let e: Secret = serde_json::from_str(r#"{"env":"KELSON_GATEWAY_TEST_UNSET_VAR"}"#).unwrap();
        assert!(e.resolve(Path::new(".")).unwrap_err().contains("not set"));
        let dir = std::env::temp_dir().join(format!("kelson-gw-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("token"), "abc\n").unwrap();
        let f: Secret = serde_json::from_str(r#"{"file":"token"}"#).unwrap();
        assert_eq!(f.resolve(&dir).unwrap(), "abc");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
