//! What `kelson serve` runs: the flags laid over the configuration file over the defaults, checked
//! before anything is opened, with every error naming the flag or key at fault.
//!
//! Precedence: a flag that takes one value wins over the file; the repeatable flags (`--db`,
//! `--root`, `--allowed-host`, `--allowed-origin`) add to the file's lists, and a `--db NAME=URL`
//! whose name the file uses replaces that database. The limit flags (`--connection-wait` among
//! them) and `--allow-write` apply to every database, and `--read-connections` to every SQLite
//! one, over the file's values.
//!
//! Each section is resolved in a file of its own: http.rs (`[http]`: the listener, HTTPS and the
//! handshake-era sessions), server.rs (`[server]`: identity, keys, broker, approvals, tasks),
//! databases.rs (`[limits]`, `[databases]`, `--db` and the sample), roots.rs (`[[roots]]` and
//! `[files]`), observability.rs (logs, metrics, traces) and ../auth.rs (`[auth]`). Here: the
//! settings themselves, and what ties the sections together.

mod databases;
mod http;
mod observability;
mod roots;
mod server;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kelson_fs::{FsLimits, RootConfig};
use kelson_server::Scopes;
use kelson_sql::{DatabaseConfig, MysqlConfig, PostgresConfig, SqliteConfig};

use super::ServeArgs;
use super::file::{ErasSetting, FileConfig, LegacyHttpSetting};
pub(crate) use http::Http;
pub(crate) use observability::Observability;
pub(crate) use server::Server;

/// The default HTTP address: loopback only.
pub(crate) const DEFAULT_BIND: &str = "127.0.0.1:8080";
/// The name of the sample database in tools and URIs.
pub(crate) const SAMPLE_NAME: &str = "sample";
/// The sample database's file in the data folder.
pub(crate) const SAMPLE_FILE: &str = "sample.db";
/// The record of used write approvals in the data folder.
pub(crate) const APPROVALS_FILE: &str = "used-approvals.db";
/// How long a handler may run by default: well past any query timeout, short enough that a stuck
/// call does not hold a client for good.
const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(300);

/// Everything `kelson serve` needs, resolved and checked.
#[derive(Debug)]
pub(crate) struct Settings {
    pub stdio: bool,
    /// The HTTP listener (`[http]`).
    pub http: Http,
    /// Which protocol eras are answered.
    pub eras: ErasSetting,
    /// How long a handler may run before it is stopped.
    pub handler_timeout: Duration,
    /// How handshake-era clients are served over HTTP.
    pub legacy_http: LegacyHttpSetting,
    /// The most handshake-era HTTP sessions at once.
    pub max_sessions: usize,
    /// The most handshake-era HTTP sessions one client may keep at once.
    pub max_sessions_per_client: usize,
    /// How long a handshake-era HTTP session may go unused.
    pub session_idle: Duration,
    /// The server's identity, state keys, broker, approval ledger and tasks (`[server]`).
    pub server: Server,
    pub instructions: Option<String>,
    /// Where used write approvals are recorded when there are writes and no shared ledger: a file
    /// in the data folder.
    pub approvals_file: Option<PathBuf>,
    pub sample: Option<Sample>,
    pub databases: Vec<DatabaseSettings>,
    pub roots: Vec<Root>,
    pub fs_limits: FsLimits,
    /// Logs, metrics and traces (`[observability]`).
    pub observability: Observability,
    /// OAuth authorization of the HTTP endpoint, when an issuer is configured.
    pub auth: Option<super::auth::AuthSettings>,
    /// `kelson gateway`: the upstreams, policy and audit log served instead of databases and roots.
    pub gateway: Option<kelson_gateway::GatewayConfig>,
    /// Settings that were given but do not apply, to say so once logging is set up.
    pub notes: Vec<String>,
}

/// Where the metrics are served.
#[derive(Debug)]
pub(crate) struct MetricsSettings {
    /// Their path on whichever listener serves them.
    pub path: String,
    /// Their own address, and the flag or key that gave it; `None`: on the HTTP listener.
    pub addr: Option<(SocketAddr, &'static str)>,
}

/// The certificate chain and key of HTTPS, and the flag or key that named them.
#[derive(Debug)]
pub(crate) struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// `--tls-cert` or `http.tls_cert`.
    pub from: &'static str,
}

/// The broker that carries change notifications between instances.
#[derive(Debug)]
pub(crate) struct BrokerSetting {
    pub url: String,
    pub channel: String,
    /// The flag or key that gave the URL.
    pub key: &'static str,
}

/// The channel instances share when none is given.
pub(crate) const DEFAULT_BROKER_CHANNEL: &str = "mcp.changes";

/// The `requestState` key file, and the flag or key that named it.
#[derive(Debug)]
pub(crate) struct KeyFile {
    pub path: PathBuf,
    pub key: &'static str,
}

/// The sample database: where it lives and its policy.
#[derive(Debug)]
pub(crate) struct Sample {
    pub data_dir: PathBuf,
    pub read_connections: usize,
    pub config: DatabaseConfig,
}

impl Sample {
    pub(crate) fn path(&self) -> PathBuf {
        self.data_dir.join(SAMPLE_FILE)
    }
}

/// One database to open.
#[derive(Debug)]
pub(crate) struct DatabaseSettings {
    pub name: String,
    /// The flag or key it came from, for error messages: `databases.sales` or `--db sales`.
    pub key: String,
    pub target: Target,
    pub config: DatabaseConfig,
}

/// The engine and how to reach it.
#[derive(Debug)]
pub(crate) enum Target {
    Sqlite(SqliteConfig),
    Postgres(PostgresConfig),
    Mysql(MysqlConfig),
}

/// One filesystem root, and the flag or key it came from.
#[derive(Debug)]
pub(crate) struct Root {
    pub config: RootConfig,
    pub key: String,
}

/// Reads an environment variable (a parameter so tests can pass their own).
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// Lays `args` over `file` (read from the directory `base`, against which the file's relative
/// paths resolve) over the defaults.
pub(crate) fn resolve(
    args: &ServeArgs,
    file: Option<(FileConfig, PathBuf)>,
    env: Env<'_>,
) -> Result<Settings, String> {
    let (file, base) = match file {
        Some((file, base)) => (file, Some(base)),
        None => (FileConfig::default(), None),
    };
    let in_file = |path: &Path| match &base {
        Some(base) => base.join(path),
        None => path.to_path_buf(),
    };

    // HTTP.
    let (mut http, http_defaults) = http::resolve(args, &file, &in_file)?;

    let handler_timeout = match (args.handler_timeout, &file.server.handler_timeout) {
        (Some(d), _) => check_positive(d, "--handler-timeout")?,
        (None, Some(s)) => check_positive(s.0, "server.handler_timeout")?,
        (None, None) => DEFAULT_HANDLER_TIMEOUT,
    };

    // Eras: both by default, since the hosts most people run open with `initialize`.
    let eras = args.eras.or(file.server.eras).unwrap_or(ErasSetting::Both);
    let http::Sessions {
        legacy_http,
        max_sessions,
        max_sessions_per_client,
        session_idle,
    } = http::sessions(args, &file, &http_defaults)?;

    // The server: identity, the state key, the broker, approvals and tasks.
    let server = server::resolve(args, &file, &in_file)?;

    // Limits and databases.
    let databases::Databases {
        databases,
        base_limits,
    } = databases::resolve(args, &file, &in_file)?;

    // The data folder: the sample database's, and where used write approvals are recorded.
    let data_dir = || {
        let from_env = env("KELSON_DATA_DIR").filter(|v| !v.is_empty());
        match (&args.data_dir, from_env, &file.sample.data_dir) {
            (Some(dir), _, _) => Ok(dir.clone()),
            (None, Some(dir), _) => Ok(PathBuf::from(dir)),
            (None, None, Some(dir)) => Ok(in_file(dir)),
            (None, None, None) => default_data_dir(env),
        }
    };

    let gateway = gateway(args, &file, &base, &data_dir)?;
    let sample = match gateway {
        Some(_) => None,
        None => databases::sample(args, &file, &databases, base_limits, &data_dir)?,
    };

    // Used write approvals outlive a restart (the state key may be read from a file, so a sealed
    // approval would be accepted again), unless the shared ledger records them.
    let writes = sample.as_ref().is_some_and(|s| s.config.allow_write)
        || databases.iter().any(|d| d.config.allow_write);
    let approvals_file = if writes && server.approval_ledger.is_none() {
        Some(data_dir()?.join(APPROVALS_FILE))
    } else {
        None
    };

    // Roots.
    let (roots, fs_limits) = roots::resolve(args, &file, &in_file)?;

    // Logs and metrics.
    let mut notes = Vec::new();
    let observability = observability::resolve(args, &file, &http.path, env, &mut notes)?;
    if args.stdio
        && let Some(files) = http.tls.take()
    {
        notes.push(format!(
            "{}: not used with --stdio, which has no HTTP listener",
            files.from
        ));
    }

    if gateway.is_some() && !roots.is_empty() {
        return Err(ADAPTERS_IN_GATEWAY.replace("{what}", "roots"));
    }
    if gateway.is_none() && sample.is_none() && databases.is_empty() && roots.is_empty() {
        return Err(
            "nothing to serve: no database (--db or [databases]), no root (--root or [[roots]]), and the sample database is off"
                .to_owned(),
        );
    }

    let mut auth = super::auth::resolve(&args.auth, &file.auth, env, &in_file)?;
    // spec 2026-07-28 basic/authorization (RFC 9728): the metadata's `scopes_supported` is what a
    // client asks for when a challenge names no scope. Unless it is set, it lists every scope
    // this server checks: the required ones, each database's read and write scopes, the roots'.
    if let Some(auth) = &mut auth
        && auth.config.scopes_supported.is_empty()
    {
        let mut scopes: Vec<String> = auth.config.required_scopes.clone();
        let databases = sample
            .iter()
            .map(|s| &s.config)
            .chain(databases.iter().map(|d| &d.config));
        for config in databases {
            for set in [&config.read_scopes, &config.write_scopes] {
                scopes.extend(set.alternatives().flatten().cloned());
            }
        }
        for root in &roots {
            scopes.extend(root.config.scopes.alternatives().flatten().cloned());
        }
        let mut seen = std::collections::BTreeSet::new();
        scopes.retain(|s| s != "offline_access" && seen.insert(s.clone()));
        auth.config.scopes_supported = scopes;
    }
    if args.stdio && auth.is_some() {
        notes.push(
            "auth: authorization applies to HTTP; --stdio serves the local host that started it \
             without tokens"
                .to_owned(),
        );
    }
    Ok(Settings {
        stdio: args.stdio,
        http,
        eras,
        handler_timeout,
        legacy_http,
        max_sessions,
        max_sessions_per_client,
        session_idle,
        server,
        instructions: file.server.instructions.clone(),
        approvals_file,
        sample,
        databases,
        roots,
        fs_limits,
        observability,
        auth,
        gateway,
        notes,
    })
}

/// Why `kelson gateway` refuses databases and roots of its own.
const ADAPTERS_IN_GATEWAY: &str = "{what}: kelson gateway serves the upstreams of its \
configuration file; run `kelson serve` with these {what} as an upstream (command = [\"kelson\", \
\"serve\", \"--stdio\", ...])";

/// The gateway's part of the settings: its upstreams, policy and audit log, for `kelson gateway`;
/// for `kelson serve`, a refusal of the gateway's sections.
fn gateway(
    args: &ServeArgs,
    file: &FileConfig,
    base: &Option<PathBuf>,
    data_dir: &dyn Fn() -> Result<PathBuf, String>,
) -> Result<Option<kelson_gateway::GatewayConfig>, String> {
    if !args.gateway {
        let key = if !file.upstream.is_empty() {
            Some("upstream")
        } else if file.policy.is_some() {
            Some("policy")
        } else if file.audit.is_some() {
            Some("audit")
        } else {
            None
        };
        return match key {
            Some(key) => Err(format!(
                "{key}: a section of `kelson gateway`'s configuration; run kelson gateway --config FILE"
            )),
            None => Ok(None),
        };
    }
    if !args.dbs.is_empty() || !file.databases.is_empty() {
        return Err(ADAPTERS_IN_GATEWAY.replace("{what}", "databases"));
    }
    if args.sample || file.sample.enabled == Some(true) {
        return Err(ADAPTERS_IN_GATEWAY.replace("{what}", "sample"));
    }
    if args.allow_write {
        return Err("--allow-write: the gateway runs no SQL of its own; set it on the kelson serve behind it".to_owned());
    }
    let data_dir = data_dir()?;
    let mut config = kelson_gateway::GatewayConfig::new(file.upstream.clone(), data_dir);
    config.policy = file.policy.clone().unwrap_or_default();
    config.audit = file.audit.clone().unwrap_or_default();
    if let Some(base) = base {
        config.base = base.clone();
    }
    kelson_gateway::config::check_upstreams(&config.upstreams).map_err(|e| e.to_string())?;
    Ok(Some(config))
}

/// Space-separated scopes as written at `key`, every one of which a caller needs; `""` needs
/// none. Absent: `default`.
fn scopes(
    value: Option<&str>,
    key: &str,
    default: impl FnOnce() -> Scopes,
) -> Result<Scopes, String> {
    let Some(value) = value else {
        return Ok(default());
    };
    let scopes = Scopes::all(value.split_whitespace());
    if let Some(bad) = scopes.invalid() {
        return Err(format!(
            "{key}: invalid scope {bad:?}: scopes are printable ASCII without '\"' or '\\', separated by spaces"
        ));
    }
    Ok(scopes)
}

fn check_min<T: PartialOrd + std::fmt::Display + Copy>(
    value: T,
    min: T,
    key: &str,
) -> Result<T, String> {
    if value < min {
        Err(format!("{key}: must be at least {min}"))
    } else {
        Ok(value)
    }
}

fn check_positive(value: Duration, key: &str) -> Result<Duration, String> {
    if value.is_zero() {
        Err(format!("{key}: must be more than zero"))
    } else {
        Ok(value)
    }
}

/// `$XDG_DATA_HOME/kelson` (when absolute), else `~/.local/share/kelson`.
fn default_data_dir(env: Env<'_>) -> Result<PathBuf, String> {
    if let Some(xdg) = env("XDG_DATA_HOME").map(PathBuf::from)
        && xdg.is_absolute()
    {
        return Ok(xdg.join("kelson"));
    }
    match env("HOME").map(PathBuf::from) {
        Some(home) if home.is_absolute() => Ok(home.join(".local/share/kelson")),
        _ => Err(
            "cannot find a data folder (for the sample database and the record of used write approvals): set KELSON_DATA_DIR (or --data-dir)"
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests;
