//! What `mcp serve` runs: the flags laid over the configuration file over the defaults, checked
//! before anything is opened, with every error naming the flag or key at fault.
//!
//! Precedence: a flag that takes one value wins over the file; the repeatable flags (`--db`,
//! `--root`, `--allowed-host`, `--allowed-origin`) add to the file's lists, and a `--db NAME=URL`
//! whose name the file uses replaces that database. The limit flags (`--connection-wait` among
//! them) and `--allow-write` apply to every database, and `--read-connections` to every SQLite
//! one, over the file's values.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_fs::{FsLimits, RootConfig};
use mcp_http::server::HttpConfig;
use mcp_server::Scopes;
use mcp_sql::{
    DEFAULT_DATABASE, DatabaseConfig, Limits, MysqlConfig, PostgresConfig, SqliteConfig,
};

use super::ServeArgs;
use super::file::{DatabaseSection, ErasSetting, FileConfig, LegacyHttpSetting, SecondsOrOff};
use crate::flags::DurationOrOff;
use crate::logging::LogFormat;

/// The default HTTP address: loopback only.
pub(crate) const DEFAULT_BIND: &str = "127.0.0.1:8080";
/// The name of the sample database in tools and URIs.
pub(crate) const SAMPLE_NAME: &str = "sample";
/// The sample database's file in the data folder.
pub(crate) const SAMPLE_FILE: &str = "sample.db";
/// The record of used write approvals in the data folder.
pub(crate) const APPROVALS_FILE: &str = "used-approvals.db";
const DEFAULT_NAME: &str = "mcp-rs";
const DEFAULT_PATH: &str = "/mcp";
const DEFAULT_MAX_MESSAGE: usize = 4 * 1024 * 1024;
const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The smallest header size limit: a request's standard headers and a modest token fit.
const MIN_HEADER_BYTES: usize = 4096;
/// How long a handler may run by default: well past any query timeout, short enough that a stuck
/// call does not hold a client for good.
const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(300);
/// How long an instance may go without a heartbeat before its tasks are failed, by default, and at
/// least (the heartbeat comes every two seconds).
const DEFAULT_TASK_RUNNER_TIMEOUT: Duration = Duration::from_secs(30);
const MIN_TASK_RUNNER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a SQL call runs before it becomes a task, by default.
const DEFAULT_TASK_AFTER: Duration = Duration::from_secs(5);
const DEFAULT_METRICS_PATH: &str = "/metrics";
/// The least response memory: room for one large response of a few hundred kilobytes.
const MIN_RESPONSE_MEMORY: usize = 1024 * 1024;

/// Everything `mcp serve` needs, resolved and checked.
#[derive(Debug)]
pub(crate) struct Settings {
    pub stdio: bool,
    pub bind: SocketAddr,
    pub path: String,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    pub max_message: usize,
    /// How long a new HTTP connection may stay silent, and a request take to arrive once begun.
    pub read_timeout: Duration,
    /// How long an HTTP connection may wait for its next request (HTTP/2: with no open stream).
    pub idle_timeout: Duration,
    /// How long a response may make no progress before it is abandoned.
    pub write_timeout: Duration,
    /// How long to keep serving, not ready, after a stop signal.
    pub shutdown_grace: Duration,
    /// The most HTTP connections open at once; `None`: from the limit of open files.
    pub max_connections: Option<usize>,
    /// The most concurrent streams on one HTTP/2 connection.
    pub h2_max_streams: u32,
    /// The largest request header section, in bytes.
    pub max_header_bytes: usize,
    /// The most connections open at once from one client address; `None`: no such limit.
    pub max_connections_per_address: Option<usize>,
    /// The most bytes large responses may hold at once while clients read them.
    pub response_memory: usize,
    /// HTTPS: the certificate and key files, when served.
    pub tls: Option<TlsFiles>,
    /// Which protocol eras are answered.
    pub eras: ErasSetting,
    /// How long a handler may run before it is stopped.
    pub handler_timeout: Duration,
    /// How handshake-era clients are served over HTTP.
    pub legacy_http: LegacyHttpSetting,
    /// The most handshake-era HTTP sessions at once.
    pub max_sessions: usize,
    /// How long a handshake-era HTTP session may go unused.
    pub session_idle: Duration,
    pub name: String,
    pub instructions: Option<String>,
    pub state_key: Option<KeyFile>,
    /// Keys that sealed before `state_key`, still accepted to open what they sealed.
    pub previous_state_keys: Vec<KeyFile>,
    /// The broker's URL and channel, and the flag or key that gave the URL.
    pub broker: Option<BrokerSetting>,
    /// The shared approval ledger's URL, and the flag or key that gave it.
    pub approval_ledger: Option<(String, &'static str)>,
    /// The shared task store's URL, and the flag or key that gave it.
    pub task_store: Option<(String, &'static str)>,
    /// How long an instance of the shared task store may go without a heartbeat.
    pub task_runner_timeout: Duration,
    /// How long a SQL call may run before it becomes a task; `None`: never.
    pub task_after: Option<Duration>,
    /// Where used write approvals are recorded when there are writes and no shared ledger: a file
    /// in the data folder.
    pub approvals_file: Option<PathBuf>,
    pub sample: Option<Sample>,
    pub databases: Vec<DatabaseSettings>,
    pub roots: Vec<Root>,
    pub fs_limits: FsLimits,
    pub log_format: LogFormat,
    /// Log the arguments of `tools/call` and `prompts/get` (at DEBUG level of `mcp::request`):
    /// the flag or key that asked for it.
    pub log_arguments: Option<&'static str>,
    /// `GET /metrics`, when on.
    pub metrics: Option<MetricsSettings>,
    /// Where traces go (an OTLP/HTTP base URL), and the flag, key or variable that said so.
    #[cfg_attr(
        not(feature = "otel"),
        allow(dead_code, reason = "refused at resolution")
    )]
    pub otlp: Option<(String, &'static str)>,
    /// OAuth authorization of the HTTP endpoint, when an issuer is configured.
    pub auth: Option<super::auth::AuthSettings>,
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
    let bind = match (&args.http, &file.http.bind) {
        (Some(addr), _) => *addr,
        (None, Some(text)) => {
            crate::flags::listen_addr(text).map_err(|e| format!("http.bind: {e}"))?
        }
        (None, None) => DEFAULT_BIND.parse().expect("the default address parses"),
    };
    let (path, path_key) = match (&args.path, &file.http.path) {
        (Some(p), _) => (p.clone(), "--path"),
        (None, Some(p)) => (p.clone(), "http.path"),
        (None, None) => (DEFAULT_PATH.to_owned(), "--path"),
    };
    check_path(&path, path_key, "endpoint path")?;
    if path == "/healthz" || path == "/readyz" {
        return Err(format!(
            "{path_key}: {path} is where health is served; choose another endpoint path"
        ));
    }
    let mut allowed_hosts = Vec::new();
    for (i, host) in file.http.allowed_hosts.iter().enumerate() {
        check_host(host).map_err(|e| format!("http.allowed_hosts[{i}]: {e}"))?;
        allowed_hosts.push(host.clone());
    }
    for host in &args.allowed_hosts {
        check_host(host).map_err(|e| format!("--allowed-host: {e}"))?;
        allowed_hosts.push(host.clone());
    }
    let mut allowed_origins = Vec::new();
    for (i, origin) in file.http.allowed_origins.iter().enumerate() {
        check_origin(origin).map_err(|e| format!("http.allowed_origins[{i}]: {e}"))?;
        allowed_origins.push(origin.clone());
    }
    for origin in &args.allowed_origins {
        check_origin(origin).map_err(|e| format!("--allowed-origin: {e}"))?;
        allowed_origins.push(origin.clone());
    }
    let max_message = match (args.max_message, file.http.max_message) {
        (Some(n), _) => check_min(n, 1024, "--max-message")?,
        (None, Some(n)) => check_min(n, 1024, "http.max_message")?,
        (None, None) => DEFAULT_MAX_MESSAGE,
    };
    let read_timeout = match (args.read_timeout, &file.http.read_timeout) {
        (Some(d), _) => check_positive(d, "--read-timeout")?,
        (None, Some(s)) => check_positive(s.0, "http.read_timeout")?,
        (None, None) => DEFAULT_READ_TIMEOUT,
    };
    let http_defaults = HttpConfig::default();
    let idle_timeout = match (args.idle_timeout, &file.http.idle_timeout) {
        (Some(d), _) => check_positive(d, "--idle-timeout")?,
        (None, Some(s)) => check_positive(s.0, "http.idle_timeout")?,
        (None, None) => http_defaults.idle_timeout,
    };
    let write_timeout = match (args.write_timeout, &file.http.write_timeout) {
        (Some(d), _) => check_positive(d, "--write-timeout")?,
        (None, Some(s)) => check_positive(s.0, "http.write_timeout")?,
        (None, None) => http_defaults.write_timeout,
    };
    let shutdown_grace = match (args.shutdown_grace, &file.http.shutdown_grace) {
        (Some(d), _) => d,
        (None, Some(s)) => s.0,
        (None, None) => Duration::ZERO,
    };
    let max_connections = match (args.max_connections, file.http.max_connections) {
        (Some(n), _) => Some(check_min(n, 1, "--max-connections")?),
        (None, Some(n)) => Some(check_min(n, 1, "http.max_connections")?),
        (None, None) => None,
    };
    let h2_max_streams = match (args.h2_max_streams, file.http.h2_max_streams) {
        (Some(n), _) => check_min(n, 1, "--h2-max-streams")?,
        (None, Some(n)) => check_min(n, 1, "http.h2_max_streams")?,
        (None, None) => http_defaults.h2_max_concurrent_streams,
    };
    let max_header_bytes = match (args.max_header_bytes, file.http.max_header_bytes) {
        (Some(n), _) => check_min(n, MIN_HEADER_BYTES, "--max-header-bytes")?,
        (None, Some(n)) => check_min(n, MIN_HEADER_BYTES, "http.max_header_bytes")?,
        (None, None) => http_defaults.max_header_bytes,
    };
    let max_connections_per_address = match (
        args.max_connections_per_address,
        file.http.max_connections_per_address,
    ) {
        (Some(n), _) => Some(check_min(n, 1, "--max-connections-per-address")?),
        (None, Some(n)) => Some(check_min(n, 1, "http.max_connections_per_address")?),
        (None, None) => None,
    };
    let response_memory = match (args.response_memory, file.http.response_memory) {
        (Some(n), _) => check_min(n, MIN_RESPONSE_MEMORY, "--response-memory")?,
        (None, Some(n)) => check_min(n, MIN_RESPONSE_MEMORY, "http.response_memory")?,
        (None, None) => http_defaults.response_memory,
    };

    // HTTPS: both files, from the flags or else from the file.
    let tls = match (
        &args.tls_cert,
        &args.tls_key,
        &file.http.tls_cert,
        &file.http.tls_key,
    ) {
        (Some(cert), Some(key), _, _) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            from: "--tls-cert",
        }),
        (Some(_), None, _, _) | (None, Some(_), _, _) => {
            return Err("--tls-cert and --tls-key: give both, or neither".to_owned());
        }
        (None, None, Some(cert), Some(key)) => Some(TlsFiles {
            cert: in_file(cert),
            key: in_file(key),
            from: "http.tls_cert",
        }),
        (None, None, Some(_), None) => {
            return Err("http.tls_cert: http.tls_key is missing; give both, or neither".to_owned());
        }
        (None, None, None, Some(_)) => {
            return Err("http.tls_key: http.tls_cert is missing; give both, or neither".to_owned());
        }
        (None, None, None, None) => None,
    };

    let handler_timeout = match (args.handler_timeout, &file.server.handler_timeout) {
        (Some(d), _) => check_positive(d, "--handler-timeout")?,
        (None, Some(s)) => check_positive(s.0, "server.handler_timeout")?,
        (None, None) => DEFAULT_HANDLER_TIMEOUT,
    };

    // Eras: both by default, since the hosts most people run open with `initialize`.
    let eras = args.eras.or(file.server.eras).unwrap_or(ErasSetting::Both);
    let legacy_http = args
        .legacy_http
        .or(file.http.legacy)
        .unwrap_or(LegacyHttpSetting::Sessions);
    let max_sessions = match (args.max_sessions, file.http.max_sessions) {
        (Some(n), _) => check_min(n, 1, "--max-sessions")?,
        (None, Some(n)) => check_min(n, 1, "http.max_sessions")?,
        (None, None) => http_defaults.max_sessions,
    };
    let session_idle = match (args.session_idle, &file.http.session_idle) {
        (Some(d), _) => check_positive(d, "--session-idle")?,
        (None, Some(s)) => check_positive(s.0, "http.session_idle")?,
        (None, None) => http_defaults.session_idle,
    };

    // Identity and the state key.
    let name = file
        .server
        .name
        .clone()
        .unwrap_or_else(|| DEFAULT_NAME.to_owned());
    if name.trim().is_empty() {
        return Err("server.name: must not be empty".to_owned());
    }
    let state_key = match (&args.state_key_file, &file.server.state_key_file) {
        (Some(path), _) => Some(KeyFile {
            path: path.clone(),
            key: "--state-key-file",
        }),
        (None, Some(path)) => Some(KeyFile {
            path: in_file(path),
            key: "server.state_key_file",
        }),
        (None, None) => None,
    };
    let previous_state_keys: Vec<KeyFile> = if args.previous_state_key_file.is_empty() {
        file.server
            .previous_state_key_files
            .iter()
            .map(|path| KeyFile {
                path: in_file(path),
                key: "server.previous_state_key_files",
            })
            .collect()
    } else {
        args.previous_state_key_file
            .iter()
            .map(|path| KeyFile {
                path: path.clone(),
                key: "--previous-state-key-file",
            })
            .collect()
    };
    if state_key.is_none()
        && let Some(first) = previous_state_keys.first()
    {
        return Err(format!(
            "{}: only with a current key (--state-key-file or server.state_key_file)",
            first.key
        ));
    }
    let broker = match (&args.broker, &file.server.broker) {
        (Some(url), _) => Some((url.clone(), "--broker")),
        (None, Some(url)) => Some((url.clone(), "server.broker")),
        (None, None) => None,
    };
    let broker = match broker {
        Some((url, key)) => {
            let (channel, channel_key) = match (&args.broker_channel, &file.server.broker_channel) {
                (Some(c), _) => (c.clone(), "--broker-channel"),
                (None, Some(c)) => (c.clone(), "server.broker_channel"),
                (None, None) => (DEFAULT_BROKER_CHANNEL.to_owned(), "--broker-channel"),
            };
            // Checked now, so that a bad URL stops the start with the flag's name.
            if let Err(e) = mcp_broker::Broker::check(&url, &channel) {
                let which = match e {
                    mcp_broker::BrokerError::Channel(_) => channel_key,
                    _ => key,
                };
                return Err(format!("{which}: {e}"));
            }
            Some(BrokerSetting { url, channel, key })
        }
        None if file.server.broker_channel.is_some() => {
            return Err("server.broker_channel: only with a broker (server.broker)".to_owned());
        }
        None => None,
    };
    let approval_ledger = match (&args.approval_ledger, &file.server.approval_ledger) {
        (Some(url), _) => Some((url.clone(), "--approval-ledger")),
        (None, Some(url)) => Some((url.clone(), "server.approval_ledger")),
        (None, None) => None,
    };
    if let Some((url, key)) = &approval_ledger
        && !(url.starts_with("postgres://") || url.starts_with("postgresql://"))
    {
        return Err(format!("{key}: expected a postgres:// URL"));
    }

    let task_store = match (&args.task_store, &file.server.task_store) {
        (Some(url), _) => Some((url.clone(), "--task-store")),
        (None, Some(url)) => Some((url.clone(), "server.task_store")),
        (None, None) => None,
    };
    if let Some((url, key)) = &task_store
        && !(url.starts_with("postgres://") || url.starts_with("postgresql://"))
    {
        return Err(format!("{key}: expected a postgres:// URL"));
    }
    let task_runner_timeout = match (args.task_runner_timeout, &file.server.task_runner_timeout) {
        (Some(d), _) => Some((d, "--task-runner-timeout")),
        (None, Some(s)) => Some((s.0, "server.task_runner_timeout")),
        (None, None) => None,
    };
    let task_runner_timeout = match task_runner_timeout {
        Some((_, key)) if task_store.is_none() => {
            return Err(format!(
                "{key}: only with a shared task store (--task-store or server.task_store)"
            ));
        }
        Some((d, key)) if d < MIN_TASK_RUNNER_TIMEOUT => {
            return Err(format!(
                "{key}: must be at least {}s, several heartbeats (one every 2s)",
                MIN_TASK_RUNNER_TIMEOUT.as_secs()
            ));
        }
        Some((d, _)) => d,
        None => DEFAULT_TASK_RUNNER_TIMEOUT,
    };
    let task_after = match (args.task_after, &file.server.task_after) {
        (Some(DurationOrOff(Some(d))), _) => Some(check_positive(d, "--task-after")?),
        (Some(DurationOrOff(None)), _) => None,
        (None, Some(SecondsOrOff(Some(d)))) => Some(check_positive(*d, "server.task_after")?),
        (None, Some(SecondsOrOff(None))) => None,
        (None, None) => Some(DEFAULT_TASK_AFTER),
    };

    // Limits: defaults, then [limits], then the database's own, then the flags; each layer is
    // checked on its own so that the error names where the bad value was written.
    let flags = Layer {
        max_rows: args.max_rows,
        max_bytes: args.max_bytes,
        timeout: args.query_timeout,
        connection_wait: args.connection_wait,
    };
    flags.check(&|field| {
        match field {
            "max_rows" => "--max-rows",
            "max_bytes" => "--max-bytes",
            "connection_wait" => "--connection-wait",
            _ => "--query-timeout",
        }
        .to_owned()
    })?;
    let file_limits = Layer {
        max_rows: file.limits.max_rows,
        max_bytes: file.limits.max_bytes,
        timeout: file.limits.query_timeout.map(|s| s.0),
        connection_wait: file.limits.connection_wait.map(|s| s.0),
    };
    file_limits.check(&|field| format!("limits.{}", file_key(field)))?;
    let base_limits = flags.over(file_limits.over(Limits::default()));
    if let Some(n) = args.read_connections {
        check_read_connections(n, "--read-connections")?;
    }

    // Databases: the file's, then the flags' (a flag's name replaces the file's database).
    let mut databases = Vec::new();
    for (name, section) in &file.databases {
        let key = format!("databases.{name}");
        databases.push(file_database(
            name,
            &key,
            section,
            &file_limits,
            &flags,
            args,
            &in_file,
        )?);
    }
    let mut unnamed = false;
    let mut flag_names: Vec<String> = Vec::new();
    for value in &args.dbs {
        let (name, url) = split_db_flag(value);
        let name = match name {
            Some(name) => name.to_owned(),
            None if unnamed => {
                return Err(format!(
                    "--db {value}: more than one database without a name; name each one: --db NAME=URL"
                ));
            }
            None => {
                unnamed = true;
                DEFAULT_DATABASE.to_owned()
            }
        };
        if flag_names.contains(&name) {
            return Err(format!("--db {name}: the name {name:?} is given twice"));
        }
        flag_names.push(name.clone());
        let key = format!("--db {name}");
        let mut target = target(url, None).map_err(|e| format!("{key}: {e}"))?;
        if let (Target::Sqlite(sqlite), Some(n)) = (&mut target, args.read_connections) {
            sqlite.read_connections = n;
        }
        let config = {
            let mut edited = DatabaseConfig::default();
            edited.limits = base_limits;
            edited.allow_write = args.allow_write;
            edited.description = None;
            edited.read_scopes = default_scopes(&name, "read");
            edited.write_scopes = default_scopes(&name, "write");
            edited
        };
        databases.retain(|d: &DatabaseSettings| d.name != name);
        databases.push(DatabaseSettings {
            name,
            key,
            target,
            config,
        });
    }

    // The data folder: the sample database's, and where used write approvals are recorded.
    let data_dir = || {
        let from_env = env("MCP_DATA_DIR").filter(|v| !v.is_empty());
        match (&args.data_dir, from_env, &file.sample.data_dir) {
            (Some(dir), _, _) => Ok(dir.clone()),
            (None, Some(dir), _) => Ok(PathBuf::from(dir)),
            (None, None, Some(dir)) => Ok(in_file(dir)),
            (None, None, None) => default_data_dir(env),
        }
    };

    // The sample: on by default only when no database is configured.
    let sample_on = args.sample
        || match file.sample.enabled {
            Some(on) => on,
            None => databases.is_empty(),
        };
    let sample = if sample_on {
        if databases.iter().any(|d| d.name == SAMPLE_NAME) {
            return Err(format!(
                "databases.{SAMPLE_NAME}: the name {SAMPLE_NAME:?} belongs to the sample database; rename the database or turn the sample off"
            ));
        }
        let data_dir = data_dir()?;
        let read_connections = match (args.read_connections, file.sample.read_connections) {
            (Some(n), _) => n,
            (None, Some(n)) => check_read_connections(n, "sample.read_connections")?,
            (None, None) => SqliteConfig::default_read_connections(),
        };
        Some(Sample {
            data_dir,
            read_connections,
            config: {
                let mut edited = DatabaseConfig::default();
                edited.limits = base_limits;
                edited.allow_write = args.allow_write || file.sample.allow_write;
                edited.description = Some(
                    "the sample shop: categories, products, customers, orders and order items"
                        .to_owned(),
                );
                edited.read_scopes = scopes(
                    file.sample.read_scope.as_deref(),
                    "sample.read_scope",
                    || default_scopes(SAMPLE_NAME, "read"),
                )?;
                edited.write_scopes = scopes(
                    file.sample.write_scope.as_deref(),
                    "sample.write_scope",
                    || default_scopes(SAMPLE_NAME, "write"),
                )?;
                edited
            },
        })
    } else {
        None
    };

    // Used write approvals outlive a restart (the state key may be read from a file, so a sealed
    // approval would be accepted again), unless the shared ledger records them.
    let writes = sample.as_ref().is_some_and(|s| s.config.allow_write)
        || databases.iter().any(|d| d.config.allow_write);
    let approvals_file = if writes && approval_ledger.is_none() {
        Some(data_dir()?.join(APPROVALS_FILE))
    } else {
        None
    };

    // Roots.
    let mut roots = Vec::new();
    for (i, root) in file.roots.iter().enumerate() {
        let mut config = RootConfig::new(in_file(&root.path)).with_scopes(scopes(
            root.scope.as_deref(),
            &format!("roots[{i}].scope"),
            default_root_scopes,
        )?);
        config.name = root.name.clone();
        roots.push(Root {
            config,
            key: format!("roots[{i}].path"),
        });
    }
    for dir in &args.roots {
        roots.push(Root {
            config: RootConfig::new(dir).with_scopes(default_root_scopes()),
            key: "--root".to_owned(),
        });
    }
    let mut fs_limits = FsLimits::default();
    if let Some(n) = file.files.max_file_bytes {
        fs_limits.max_file_bytes = check_min(n, 1, "files.max_file_bytes")?;
    }
    if let Some(n) = file.files.max_dir_entries {
        fs_limits.max_dir_entries = check_min(n, 1, "files.max_dir_entries")?;
    }
    if let Some(n) = file.files.max_listed_entries {
        fs_limits.max_listed_entries = n;
    }

    // Logs and metrics.
    let observability = &file.observability;
    let log_format = args
        .log_format
        .or(observability.log_format)
        .unwrap_or_default();
    let log_arguments = if args.log_arguments {
        Some("--log-arguments")
    } else if observability.log_arguments {
        Some("observability.log_arguments")
    } else {
        None
    };
    let mut notes = Vec::new();
    let metrics = metrics(args, observability, &path, &mut notes)?;
    let otlp = match (&args.otlp_endpoint, &observability.otlp_endpoint) {
        (Some(url), _) => Some((url.clone(), "--otlp-endpoint")),
        (None, Some(url)) => Some((url.clone(), "observability.otlp_endpoint")),
        (None, None) => env("OTEL_EXPORTER_OTLP_ENDPOINT")
            .and_then(|v| v.into_string().ok())
            .filter(|v| !v.trim().is_empty())
            .map(|v| (v, "OTEL_EXPORTER_OTLP_ENDPOINT")),
    };
    if let Some((url, key)) = &otlp {
        match url::Url::parse(url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
            _ => {
                return Err(format!(
                    "{key}: expected the collector's OTLP/HTTP base URL, such as http://127.0.0.1:4318, not {url:?}"
                ));
            }
        }
        if cfg!(not(feature = "otel")) {
            return Err(format!(
                "{key}: this mcp was built without the `otel` feature, so it cannot send traces"
            ));
        }
    }
    let tls = match tls {
        Some(files) if args.stdio => {
            notes.push(format!(
                "{}: not used with --stdio, which has no HTTP listener",
                files.from
            ));
            None
        }
        tls => tls,
    };

    if sample.is_none() && databases.is_empty() && roots.is_empty() {
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
        bind,
        path,
        allowed_hosts,
        allowed_origins,
        max_message,
        read_timeout,
        idle_timeout,
        write_timeout,
        shutdown_grace,
        max_connections,
        h2_max_streams,
        max_header_bytes,
        max_connections_per_address,
        response_memory,
        tls,
        eras,
        handler_timeout,
        legacy_http,
        max_sessions,
        session_idle,
        name,
        instructions: file.server.instructions.clone(),
        state_key,
        previous_state_keys,
        broker,
        approval_ledger,
        task_store,
        task_runner_timeout,
        task_after,
        approvals_file,
        sample,
        databases,
        roots,
        fs_limits,
        log_format,
        log_arguments,
        otlp,
        metrics,
        auth,
        notes,
    })
}

/// Where the metrics are served, if anywhere: on the HTTP listener (`--metrics`,
/// `observability.metrics`), or on an address of their own (`--metrics-addr`,
/// `observability.metrics_addr`), which also works with `--stdio`.
fn metrics(
    args: &ServeArgs,
    file: &super::file::ObservabilitySection,
    mcp_path: &str,
    notes: &mut Vec<String>,
) -> Result<Option<MetricsSettings>, String> {
    let addr = match (&args.metrics_addr, &file.metrics_addr) {
        (Some(addr), _) => Some((*addr, "--metrics-addr")),
        (None, Some(text)) => Some((
            crate::flags::listen_addr(text)
                .map_err(|e| format!("observability.metrics_addr: {e}"))?,
            "observability.metrics_addr",
        )),
        (None, None) => None,
    };
    let (path, path_key) = match (&args.metrics_path, &file.metrics_path) {
        (Some(p), _) => (Some(p.clone()), "--metrics-path"),
        (None, Some(p)) => (Some(p.clone()), "observability.metrics_path"),
        (None, None) => (None, "--metrics-path"),
    };
    if let Some(path) = &path {
        check_path(path, path_key, "metrics path")?;
    }
    // On the HTTP listener: asked for there, and no address of their own.
    let mut on_listener = addr.is_none() && (args.metrics || file.metrics);
    if on_listener && args.stdio {
        if args.metrics {
            return Err(
                "--metrics: with --stdio there is no HTTP listener to serve the metrics on; give \
                 them an address of their own with --metrics-addr ADDR"
                    .to_owned(),
            );
        }
        // A file shared by both ways of serving: like [http], this key is for HTTP.
        notes.push(
            "observability.metrics: not served with --stdio, which has no HTTP listener; set \
             observability.metrics_addr to serve them on an address of their own"
                .to_owned(),
        );
        on_listener = false;
    }
    if addr.is_none() && !on_listener {
        if path.is_some() && !(args.stdio && file.metrics) {
            return Err(format!(
                "{path_key}: the metrics are off; turn them on with --metrics (observability.metrics \
                 = true) or give them an address with --metrics-addr (observability.metrics_addr)"
            ));
        }
        return Ok(None);
    }
    let path = path.unwrap_or_else(|| DEFAULT_METRICS_PATH.to_owned());
    if on_listener && path == mcp_path {
        return Err(format!(
            "{path_key}: the metrics path {path:?} is the MCP endpoint's; give it another"
        ));
    }
    Ok(Some(MetricsSettings { path, addr }))
}

/// An HTTP path: it starts with '/' and holds no white space.
fn check_path(path: &str, key: &str, what: &str) -> Result<(), String> {
    if !path.starts_with('/') || path.contains(char::is_whitespace) {
        return Err(format!(
            "{key}: invalid {what} {path:?}: it must start with '/'"
        ));
    }
    Ok(())
}

/// The settings a server database (PostgreSQL, MySQL) takes from its section.
struct ServerOptions {
    connections: Option<usize>,
    ssl_mode: Option<mcp_sql::SslMode>,
    ssl_root_cert: Option<PathBuf>,
}

fn server_options(
    key: &str,
    section: &DatabaseSection,
    in_file: &dyn Fn(&Path) -> PathBuf,
) -> Result<ServerOptions, String> {
    if section.read_connections.is_some() {
        return Err(format!(
            "{key}.read_connections: only for SQLite databases (PostgreSQL and MySQL use connections)"
        ));
    }
    let ssl_mode = section
        .ssl_mode
        .as_deref()
        .map(|mode| {
            mode.parse::<mcp_sql::SslMode>()
                .map_err(|e| format!("{key}.ssl_mode: {e}"))
        })
        .transpose()?;
    Ok(ServerOptions {
        connections: section.connections,
        ssl_mode,
        ssl_root_cert: section.ssl_root_cert.as_deref().map(in_file),
    })
}

fn file_database(
    name: &str,
    key: &str,
    section: &DatabaseSection,
    file_limits: &Layer,
    flags: &Layer,
    args: &ServeArgs,
    in_file: &dyn Fn(&Path) -> PathBuf,
) -> Result<DatabaseSettings, String> {
    let own = Layer {
        max_rows: section.max_rows,
        max_bytes: section.max_bytes,
        timeout: section.query_timeout.map(|s| s.0),
        connection_wait: section.connection_wait.map(|s| s.0),
    };
    own.check(&|field| format!("{key}.{}", file_key(field)))?;
    let mut target = target(&section.url, Some(in_file)).map_err(|e| format!("{key}.url: {e}"))?;
    match &mut target {
        Target::Postgres(pg) => {
            if let Some(url) = &section.write_url {
                match self::target(url, None) {
                    Ok(Target::Postgres(_)) => pg.write_url = Some(url.clone()),
                    _ => {
                        return Err(format!(
                            "{key}.write_url: must be a postgres:// URL like url"
                        ));
                    }
                }
            }
            let server = server_options(key, section, in_file)?;
            if let Some(n) = server.connections {
                pg.connections = n;
            }
            pg.ssl_mode = server.ssl_mode;
            pg.ssl_root_cert = server.ssl_root_cert;
        }
        Target::Mysql(my) => {
            if let Some(url) = &section.write_url {
                match self::target(url, None) {
                    Ok(Target::Mysql(_)) => my.write_url = Some(url.clone()),
                    _ => {
                        return Err(format!(
                            "{key}.write_url: must be a mysql:// (or mariadb://) URL like url"
                        ));
                    }
                }
            }
            let server = server_options(key, section, in_file)?;
            if let Some(n) = server.connections {
                my.connections = n;
            }
            my.ssl_mode = server.ssl_mode;
            my.ssl_root_cert = server.ssl_root_cert;
        }
        Target::Sqlite(sqlite) => {
            if section.write_url.is_some() {
                return Err(format!(
                    "{key}.write_url: only for PostgreSQL and MySQL databases"
                ));
            }
            if section.ssl_mode.is_some() {
                return Err(format!(
                    "{key}.ssl_mode: only for PostgreSQL and MySQL databases"
                ));
            }
            if section.ssl_root_cert.is_some() {
                return Err(format!(
                    "{key}.ssl_root_cert: only for PostgreSQL and MySQL databases"
                ));
            }
            if section.connections.is_some() {
                return Err(format!(
                    "{key}.connections: only for PostgreSQL and MySQL databases (SQLite uses read_connections)"
                ));
            }
            if let Some(n) = section.read_connections {
                sqlite.read_connections =
                    check_read_connections(n, &format!("{key}.read_connections"))?;
            }
            if let Some(n) = args.read_connections {
                sqlite.read_connections = n;
            }
        }
    }
    Ok(DatabaseSettings {
        name: name.to_owned(),
        key: key.to_owned(),
        target,
        config: {
            let mut edited = DatabaseConfig::default();
            edited.limits = flags.over(own.over(file_limits.over(Limits::default())));
            edited.allow_write = args.allow_write || section.allow_write;
            edited.description = section.description.clone();
            edited.read_scopes = scopes(
                section.read_scope.as_deref(),
                &format!("{key}.read_scope"),
                || default_scopes(name, "read"),
            )?;
            edited.write_scopes = scopes(
                section.write_scope.as_deref(),
                &format!("{key}.write_scope"),
                || default_scopes(name, "write"),
            )?;
            edited
        },
    })
}

/// The scopes a database needs by default: `NAME:read` and `NAME:write`. With an auth layer in
/// front, least privilege: a token reaches a database only when it was granted that database's
/// scope. Without one, callers are anonymous and scopes restrict nothing.
fn default_scopes(name: &str, access: &str) -> Scopes {
    Scopes::all([format!("{name}:{access}")])
}

/// The scopes a filesystem root needs by default.
fn default_root_scopes() -> Scopes {
    Scopes::all(["files:read"])
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

/// One layer of limits: the values one place sets.
#[derive(Debug, Default)]
struct Layer {
    max_rows: Option<usize>,
    max_bytes: Option<usize>,
    timeout: Option<Duration>,
    connection_wait: Option<Duration>,
}

impl Layer {
    fn over(&self, limits: Limits) -> Limits {
        {
            let mut edited = Limits::default();
            edited.max_rows = self.max_rows.unwrap_or(limits.max_rows);
            edited.max_bytes = self.max_bytes.unwrap_or(limits.max_bytes);
            edited.timeout = self.timeout.unwrap_or(limits.timeout);
            edited.connection_wait = self.connection_wait.unwrap_or(limits.connection_wait);
            edited
        }
    }

    /// Checks this layer's values alone; `key` names a field (`max_rows`, `max_bytes`, `timeout`,
    /// `connection_wait`) where it was written.
    fn check(&self, key: &dyn Fn(&str) -> String) -> Result<(), String> {
        match self.over(Limits::default()).validate() {
            Ok(()) => Ok(()),
            Err(reason) => {
                // The adapter's reasons start with the field's name: "max_rows must be ...".
                let (field, rest) = reason.split_once(' ').unwrap_or(("", reason));
                Err(format!("{}: {rest}", key(field)))
            }
        }
    }
}

/// The file's name for a field of `mcp_sql::Limits`.
fn file_key(field: &str) -> &str {
    if field == "timeout" {
        "query_timeout"
    } else {
        field
    }
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

/// A number of SQLite read connections, within what the adapter accepts.
fn check_read_connections(n: usize, key: &str) -> Result<usize, String> {
    let max = SqliteConfig::MAX_READ_CONNECTIONS;
    if (1..=max).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{key}: must be between 1 and {max}"))
    }
}

fn check_positive(value: Duration, key: &str) -> Result<Duration, String> {
    if value.is_zero() {
        Err(format!("{key}: must be more than zero"))
    } else {
        Ok(value)
    }
}

fn check_host(host: &str) -> Result<(), String> {
    let ok = !host.is_empty()
        && !host.contains("://")
        && !host.contains('/')
        && !host.contains(char::is_whitespace);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid host {host:?}: give a host name such as mcp.example.com"
        ))
    }
}

fn check_origin(origin: &str) -> Result<(), String> {
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    let ok = rest.is_some_and(|host| {
        let host = host.trim_end_matches('/');
        !host.is_empty() && !host.contains('/') && !host.contains(char::is_whitespace)
    });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid origin {origin:?}: give scheme://host[:port], such as https://app.example.com"
        ))
    }
}

/// Splits `--db [NAME=]URL`. A value that starts like a URL or a path has no name, so that a path
/// holding `=` still works.
pub(crate) fn split_db_flag(value: &str) -> (Option<&str>, &str) {
    let unnamed = [
        "postgres://",
        "postgresql://",
        "mysql://",
        "mariadb://",
        "sqlite:",
        "/",
        ".",
        "~",
    ]
    .iter()
    .any(|p| value.starts_with(p));
    if !unnamed && let Some((name, url)) = value.split_once('=') {
        let name_like = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if name_like {
            return (Some(name), url);
        }
    }
    (None, value)
}

/// What a database URL names: `postgres://...` or `postgresql://...`, `mysql://...` or
/// `mariadb://...`, `sqlite:PATH` (also
/// `sqlite://PATH`), or a plain path to an SQLite file. Relative paths resolve with `base` (the
/// configuration file's folder) when given. Errors never repeat the URL, which may hold a password.
fn target(url: &str, base: Option<&dyn Fn(&Path) -> PathBuf>) -> Result<Target, String> {
    let url = url.trim();
    if url.is_empty() {
        return Err("the database URL is empty".to_owned());
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Target::Postgres(PostgresConfig::new(url)));
    }
    if url.starts_with("mysql://") || url.starts_with("mariadb://") {
        return Ok(Target::Mysql(MysqlConfig::new(url)));
    }
    let path = if let Some(rest) = url.strip_prefix("sqlite:") {
        rest.strip_prefix("//").unwrap_or(rest)
    } else if let Some((scheme, _)) = url.split_once("://") {
        return Err(format!(
            "unsupported database URL scheme {scheme:?}: use postgres://..., mysql://... (or \
             mariadb://...), sqlite:PATH or the path of an SQLite file"
        ));
    } else {
        url
    };
    if path.is_empty() {
        return Err("sqlite: needs the path of the database file".to_owned());
    }
    let path = Path::new(path);
    let path = match base {
        Some(resolve) => resolve(path),
        None => path.to_path_buf(),
    };
    Ok(Target::Sqlite(SqliteConfig::new(path)))
}

/// `$XDG_DATA_HOME/mcp-rs` (when absolute), else `~/.local/share/mcp-rs`.
fn default_data_dir(env: Env<'_>) -> Result<PathBuf, String> {
    if let Some(xdg) = env("XDG_DATA_HOME").map(PathBuf::from)
        && xdg.is_absolute()
    {
        return Ok(xdg.join("mcp-rs"));
    }
    match env("HOME").map(PathBuf::from) {
        Some(home) if home.is_absolute() => Ok(home.join(".local/share/mcp-rs")),
        _ => Err(
            "cannot find a data folder (for the sample database and the record of used write approvals): set MCP_DATA_DIR (or --data-dir)"
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests;
