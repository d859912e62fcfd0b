//! `kelson serve`: the ready-to-run server. The SQL adapter over the embedded sample database (or the
//! databases given), the filesystem adapter over the roots given, served over Streamable HTTP on
//! loopback or over stdio.
//!
//! file.rs is the TOML format, settings/ lays the flags over the file and checks everything
//! before anything is opened, listen.rs binds the listeners (before anything is opened or
//! announced), open.rs opens the databases and roots and builds the server, and serving.rs serves
//! it until a stop signal or the end of stdin; check.rs is `--check`, exit.rs the exit statuses.
//! Here: the flags, logging (one line per request on stderr, `RequestLog`), and the order of the
//! start.

mod auth;
mod check;
mod exit;
mod file;
mod listen;
mod open;
mod serving;
mod settings;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use clap::Args;
use kelson_http::server::{HttpConfig, LegacyMode, ListenerConfig, OriginPolicy, ServerTls};
use kelson_server::observe::LOG_TARGET;

use crate::flags;
use crate::logging::{self, LogFormat};
pub(crate) use exit::Failure;
use file::{ErasSetting, LegacyHttpSetting};
use settings::Settings;

#[derive(Args, Debug)]
#[command(after_help = concat!(
    "With no flags: Streamable HTTP on http://127.0.0.1:8080/mcp, serving the \
sample database (created on first run in $KELSON_DATA_DIR, else $XDG_DATA_HOME/kelson, else \
~/.local/share/kelson), read-only. Flags override the --config file; the repeatable flags add \
to its lists. --check validates them without serving.

Logs: one line per request on stderr (id, method, tool/prompt/URI, outcome, duration); KELSON_LOG \
is the filter (default info; e.g. KELSON_LOG=info,kelson::request=off drops the request lines). \
Header values (Authorization, Mcp-Param-*) are never logged; arguments only with \
--log-arguments.

",
    exit::exit_codes_help!()
))]
pub(crate) struct ServeArgs {
    /// Read settings from this TOML file (docs/reference/config.md lists every key). Flags
    /// override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Check the settings (flags and --config file) and what they name without serving: open the
    /// databases and roots, read the key and certificate files, ask the authorization server for
    /// its metadata; print what would be served, or the first error. Creates no file (the sample
    /// database is created on the first real start) and binds no port.
    #[arg(long)]
    check: bool,

    /// Serve on stdin/stdout (newline-delimited JSON-RPC) for a local host that spawns this process,
    /// instead of HTTP.
    #[arg(long, conflicts_with = "http")]
    stdio: bool,

    /// Serve Streamable HTTP on this address: PORT (on 127.0.0.1), or HOST:PORT with an IP
    /// address or localhost [default: 127.0.0.1:8080]. Keep it on loopback unless the server sits
    /// behind authentication.
    #[arg(long, value_name = "ADDR", value_parser = flags::listen_addr)]
    http: Option<SocketAddr>,

    /// The HTTP endpoint path [default: /mcp].
    #[arg(long, value_name = "PATH")]
    path: Option<String>,

    /// Serve HTTPS with this certificate chain (PEM file, the server's certificate first), with
    /// --tls-key. SIGHUP reads both files again: new connections get the new certificate, open
    /// ones continue, and a file that does not load leaves the old one in use.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM file: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,

    /// Also accept this host name in `Host` and `Origin` (repeatable). Behind a reverse proxy that
    /// forwards the public name to a loopback server, this is the one setting needed. Off loopback,
    /// `Host` names other than localhost and these are refused (IP addresses are accepted);
    /// '*' accepts any host, leaving the Origin check alone against DNS rebinding.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,

    /// Accept browser requests from this origin, e.g. https://app.example.com (repeatable).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,

    /// Longest accepted message, in bytes (HTTP body or stdio line) [default: 4194304].
    #[arg(long, value_name = "BYTES", value_parser = whole_number)]
    max_message: Option<usize>,

    /// How long a new HTTP connection may stay silent before its first request, and how long a
    /// request's head and body may take to arrive once begun (408 after it): seconds, or with a
    /// unit (500ms, 30s, 2m) [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = flags::duration)]
    read_timeout: Option<Duration>,

    /// How long an HTTP connection may wait for its next request before it is closed (HTTP/2:
    /// with no open stream; it is sent GOAWAY) [default: 2m].
    #[arg(long, value_name = "DURATION", value_parser = flags::duration)]
    idle_timeout: Option<Duration>,

    /// How long a response may make no progress, its client reading none of it, before it is
    /// abandoned and the connection closed [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = flags::duration)]
    write_timeout: Option<Duration>,

    /// On SIGTERM or Ctrl-C, how long to keep serving with GET /readyz answering 503 before new
    /// connections are refused, so that a load balancer polling it stops sending first; then
    /// requests in flight finish [default: 0s].
    #[arg(long, value_name = "DURATION", value_parser = flags::duration)]
    shutdown_grace: Option<Duration>,

    /// The most HTTP connections open at once; one more is closed as soon as it is accepted
    /// [default: the limit of open files less an eighth (at least 64), at most 10000].
    #[arg(long, value_name = "N", value_parser = whole_number)]
    max_connections: Option<usize>,

    /// The most concurrent streams on one HTTP/2 connection [default: 100].
    #[arg(long, value_name = "N")]
    h2_max_streams: Option<u32>,

    /// The largest request header section in bytes, HTTP/1.1 and HTTP/2 alike (431 beyond it)
    /// [default: 65536].
    #[arg(long, value_name = "BYTES", value_parser = whole_number)]
    max_header_bytes: Option<usize>,

    /// The most connections open at once from one client IP address (beyond it a connection is
    /// closed on arrival and counted); clients behind one NAT share an address [default: no
    /// limit but --max-connections].
    #[arg(long, value_name = "N")]
    max_connections_per_address: Option<usize>,

    /// How long a tool call (or a resource read, a prompt) may run before it is stopped and
    /// answered with an error saying so: seconds, or with a unit (30s, 5m) [default: 5m].
    #[arg(long, value_name = "DURATION", value_parser = flags::duration)]
    handler_timeout: Option<Duration>,

    /// Which protocol eras to answer: both (2026-07-28 requests, and the handshake-era sessions
    /// that most hosts still open with `initialize`), or modern (2026-07-28 only) [default: both].
    #[arg(long, value_name = "ERAS", value_enum)]
    eras: Option<file::ErasSetting>,

    /// How handshake-era clients are served over HTTP: with `Mcp-Session-Id` sessions kept by
    /// this process (change notifications and subscriptions work), or stateless, each request on
    /// its own, for several instances behind a load balancer [default: sessions].
    #[arg(long, value_name = "MODE", value_enum)]
    legacy_http: Option<file::LegacyHttpSetting>,

    /// The most handshake-era HTTP sessions kept at once; `initialize` gets 503 beyond it
    /// [default: 10000].
    #[arg(long, value_name = "N", value_parser = whole_number)]
    max_sessions: Option<usize>,

    /// The most handshake-era HTTP sessions one client may keep at once: a principal when
    /// authentication is on, else a client address (an IPv6 /64; loopback is not counted apart).
    /// A client at its share that opens another ends its own least recently used idle session;
    /// one whose sessions are all in use gets 503 [default: 256].
    #[arg(long, value_name = "N", value_parser = whole_number)]
    max_sessions_per_client: Option<usize>,

    /// How long a handshake-era HTTP session may go unused (no request, no open GET stream)
    /// before it ends: seconds, or with a unit (30s, 10m) [default: 30m].
    #[arg(long, value_name = "DURATION", value_parser = flags::duration)]
    session_idle: Option<Duration>,

    /// The most bytes that responses over 64 KiB may hold at once, across the server, while
    /// their clients read them; a large response beyond it gets 503 [default: 67108864].
    #[arg(long, value_name = "BYTES", value_parser = whole_number)]
    response_memory: Option<usize>,

    /// A database to serve (repeatable): postgres://USER@HOST:PORT/DB, mysql://USER@HOST:PORT/DB
    /// (or mariadb://), sqlite:PATH or the path of an SQLite file, optionally named NAME=URL (the name tools and URIs use; default "main"). With
    /// any --db, the sample database is not served unless --sample is also given.
    #[arg(long = "db", value_name = "[NAME=]URL")]
    dbs: Vec<String>,

    /// Serve the sample database alongside the --db databases.
    #[arg(long)]
    sample: bool,

    /// A directory to expose as file:// resources (repeatable; none by default).
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,

    /// The most rows one call returns, on every database [default: 1000].
    #[arg(long, value_name = "N", value_parser = whole_number)]
    max_rows: Option<usize>,

    /// The most bytes of row data one call returns, on every database [default: 524288].
    #[arg(long, value_name = "BYTES", value_parser = whole_number)]
    max_bytes: Option<usize>,

    /// The longest one statement may run, on every database: seconds, or with a unit (500ms, 30s,
    /// 2m) [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = flags::duration)]
    query_timeout: Option<Duration>,

    /// The longest a call waits for a free database connection when all are taken by other
    /// calls, on every database; after it the call is refused as busy (a tool error). It counts
    /// toward --query-timeout. Seconds, or with a unit (500ms, 30s) [default: 5s].
    #[arg(long, value_name = "DURATION", value_parser = flags::duration)]
    connection_wait: Option<Duration>,

    /// Read-only connections of every SQLite database, the sample's too: how many reads run at
    /// once (1 to 64) [default: one per CPU, between 4 and 16].
    #[arg(long, value_name = "N", value_parser = whole_number)]
    read_connections: Option<usize>,

    /// Allow changes on every database through the `execute` tool; the user approves each
    /// statement (elicitation) before it runs once.
    #[arg(long)]
    allow_write: bool,

    /// A file of 32 or more random bytes that seals requestState, shared by every instance behind a
    /// load balancer [default: a random key per process].
    #[arg(long, value_name = "FILE")]
    state_key_file: Option<PathBuf>,

    /// A key file that sealed requestState before --state-key-file replaced it: what it sealed
    /// still opens (keep it one state lifetime, 10 minutes, after every instance has the new key).
    /// May be repeated.
    #[arg(long, value_name = "FILE")]
    previous_state_key_file: Vec<PathBuf>,

    /// A PostgreSQL URL where used write approvals are recorded (table mcp_used_approvals,
    /// created if missing), so that instances sharing a state key run each approved statement
    /// once between them [default: the file used-approvals.db in the data folder, which outlives
    /// restarts and is shared by the processes of one host].
    #[arg(long, value_name = "URL")]
    approval_ledger: Option<String>,

    /// A broker that carries change notifications between the instances behind one load balancer
    /// (nats://host:4222 or redis://host:6379; tls://, rediss:// with TLS, taking
    /// ?sslrootcert=CA.pem and &sslcert=CERT.pem&sslkey=KEY.pem), so that a listen stream on one instance hears of
    /// changes made through another [default: none; each instance notifies its own listeners].
    #[arg(long, value_name = "URL")]
    broker: Option<String>,

    /// The NATS subject or Redis channel the instances share on the broker; unrelated servers
    /// sharing one broker need different ones [default: mcp.changes].
    #[arg(long, value_name = "NAME", requires = "broker")]
    broker_channel: Option<String>,

    /// A PostgreSQL URL where tasks are kept (table mcp_tasks, created if missing), so that every
    /// instance behind a load balancer answers for every task and a task whose instance stopped
    /// is reported failed [default: in this process's memory].
    #[arg(long, value_name = "URL")]
    task_store: Option<String>,

    /// With --task-store: how long an instance may go without a heartbeat (each sends one every
    /// 2 seconds) before the tasks it was running are reported failed, for instances that crash
    /// or lose the database: seconds, or with a unit, at least 5s [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = flags::duration)]
    task_runner_timeout: Option<Duration>,

    /// How long a query or execute call may run before it becomes a task the client polls, for
    /// clients that declare the tasks extension: seconds, with a unit (500ms, 30s), or off
    /// [default: 5s].
    #[arg(long, value_name = "DURATION|off", value_parser = flags::duration_or_off)]
    task_after: Option<flags::DurationOrOff>,

    /// The data folder: the sample database, and the record of used write approvals
    /// (used-approvals.db) when writes are allowed [default: $KELSON_DATA_DIR, else
    /// $XDG_DATA_HOME/kelson, else ~/.local/share/kelson].
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,

    /// The format of the logs on stderr, one line per request among them: text, or json (one
    /// object per line) [default: text].
    #[arg(long, value_name = "FORMAT", value_enum)]
    log_format: Option<LogFormat>,

    /// Also log the arguments of tools/call and prompts/get, which may hold user data. They are
    /// logged at DEBUG level of the kelson::request target, which this flag turns on unless KELSON_LOG
    /// sets the filter. Header values (Authorization, Mcp-Param-*) are never logged.
    #[arg(long)]
    log_arguments: bool,

    /// Serve GET /metrics (Prometheus text format) on the HTTP listener, behind the same
    /// Host/Origin checks as the MCP endpoint.
    #[arg(long)]
    metrics: bool,

    /// The path of the metrics, wherever they are served [default: /metrics].
    #[arg(long, value_name = "PATH")]
    metrics_path: Option<String>,

    /// Serve the metrics on this address instead of the HTTP listener (also with --stdio), e.g.
    /// a port only the monitoring network reaches; the same forms as --http.
    #[arg(long, value_name = "ADDR", value_parser = flags::listen_addr)]
    metrics_addr: Option<SocketAddr>,

    /// Send traces (a span per request, with the client's W3C trace context, and a span per SQL
    /// statement under it) to this OpenTelemetry collector, with OTLP over HTTP (JSON), e.g.
    /// http://127.0.0.1:4318 [default: OTEL_EXPORTER_OTLP_ENDPOINT, else none]. SQL text is in the
    /// spans only with --log-arguments.
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,

    #[command(flatten)]
    auth: auth::AuthArgs,

    /// Set by `kelson gateway`, which serves the upstreams of its configuration file instead of
    /// databases and roots.
    #[arg(skip)]
    pub(crate) gateway: bool,
}

impl ServeArgs {
    /// The configuration file given, if any.
    pub(crate) fn config_path(&self) -> Option<&std::path::Path> {
        self.config.as_deref()
    }

    /// The settings of `--check --config FILE [--data-dir DIR]` and nothing else.
    pub(crate) fn for_check(config: PathBuf, data_dir: Option<PathBuf>) -> ServeArgs {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            serve: ServeArgs,
        }
        let mut argv: Vec<std::ffi::OsString> = vec![
            "kelson".into(),
            "--check".into(),
            "--config".into(),
            config.into(),
        ];
        if let Some(dir) = data_dir {
            argv.push("--data-dir".into());
            argv.push(dir.into());
        }
        <Only as clap::Parser>::parse_from(argv).serve
    }
}

/// The gateway's configuration as `kelson gateway` reads it from its flags and file.
pub(crate) fn gateway_config(args: &ServeArgs) -> Result<kelson_gateway::GatewayConfig, Failure> {
    let (settings, _) = read_settings(args)?;
    settings
        .gateway
        .ok_or_else(|| Failure::Usage(anyhow!("no gateway configuration")))
}

/// The settings of the flags and the configuration file, and the file's text (to find the line
/// of a key that a later check refuses).
fn read_settings(args: &ServeArgs) -> Result<(Settings, String), Failure> {
    let (file, text) = match args
        .config
        .as_deref()
        .map(load_file)
        .transpose()
        .map_err(Failure::Usage)?
    {
        Some((file, text)) => (Some(file), text),
        None => (None, String::new()),
    };
    let env = |name: &str| std::env::var_os(name);
    let settings = settings::resolve(args, file, &env)
        .map_err(|e| Failure::Usage(about_file(args, &text, e)))?;
    Ok((settings, text))
}

/// An error, with the file's name and the key's line when it is about a key of the file.
fn about_file(args: &ServeArgs, text: &str, e: String) -> anyhow::Error {
    match &args.config {
        Some(path) if from_file(&e) => anyhow!(in_file_error(path, text, &e)),
        _ => anyhow!(e),
    }
}

/// The endpoint's settings: its path, body limit, Host/Origin policy, handshake-era sessions and
/// the metrics path, when the metrics are served on the same listener.
fn http_config(settings: &Settings) -> HttpConfig {
    let policy = policy(settings, settings.http.bind);
    // Metrics on the HTTP listener, unless they have an address of their own.
    let metrics_path = settings
        .observability
        .metrics
        .as_ref()
        .filter(|m| m.addr.is_none())
        .map(|m| m.path.clone());
    {
        let mut edited = HttpConfig::default();
        edited.path = settings.http.path.clone();
        edited.max_body = settings.http.max_message;
        edited.legacy = match settings.legacy_http {
            file::LegacyHttpSetting::Sessions => LegacyMode::Sessions,
            file::LegacyHttpSetting::Stateless => LegacyMode::Stateless,
        };
        edited.max_sessions = settings.max_sessions;
        edited.max_sessions_per_caller = settings.max_sessions_per_client;
        edited.session_idle = settings.session_idle;
        edited.policy = policy;
        edited.metrics_path = metrics_path;
        edited
    }
}

/// The HTTP listener's limits: its timeouts, connection caps and response memory.
fn listener_config(settings: &Settings) -> ListenerConfig {
    let mut edited = ListenerConfig::default();
    edited.first_bytes_timeout = settings.http.read_timeout;
    edited.idle_timeout = settings.http.idle_timeout;
    edited.write_timeout = settings.http.write_timeout;
    edited.max_connections = settings
        .http
        .max_connections
        .unwrap_or(edited.max_connections);
    edited.h2_max_concurrent_streams = settings.http.h2_max_streams;
    edited.max_header_bytes = settings.http.max_header_bytes;
    edited.max_connections_per_address = settings.http.max_connections_per_address;
    edited.response_memory = settings.http.response_memory;
    edited
}

/// What the server answers, for the start-up log.
fn eras_line(settings: &Settings, stdio: bool) -> String {
    match settings.eras {
        ErasSetting::Modern => {
            "speaking 2026-07-28 only (--eras modern): initialize is refused with the supported version".to_owned()
        }
        ErasSetting::Both if stdio => {
            "speaking 2026-07-28, and 2025-11-25/06-18/03-26 to hosts that start with initialize".to_owned()
        }
        ErasSetting::Both => format!(
            "speaking 2026-07-28, and 2025-11-25/06-18/03-26 to hosts that start with initialize ({})",
            match settings.legacy_http {
                LegacyHttpSetting::Sessions => format!(
                    "Mcp-Session-Id sessions, at most {}, ended after {} s unused",
                    settings.max_sessions,
                    settings.session_idle.as_secs()
                ),
                LegacyHttpSetting::Stateless => {
                    "stateless: no sessions, no change notifications".to_owned()
                }
            }
        ),
    }
}

/// The Host/Origin policy of a listener on `addr` (the MCP endpoint's, or the metrics' own): the
/// secure default for the address, and the host names and origins allowed; `--allowed-host '*'`
/// accepts any host.
fn policy(settings: &Settings, addr: SocketAddr) -> OriginPolicy {
    let mut policy = OriginPolicy::for_bind(addr);
    for host in &settings.http.allowed_hosts {
        policy = if host == "*" {
            policy.allow_any_host()
        } else {
            policy.allow_host(host)
        };
    }
    for origin in &settings.http.allowed_origins {
        policy = policy.allow_origin(origin);
    }
    policy
}

/// Sets up logging on stderr from the settings. With `--log-arguments` the default filter enables
/// the request log's target at DEBUG, the level at which `RequestLog` adds the arguments.
fn init_logging(settings: &Settings) {
    let default_filter = if settings.observability.log_arguments.is_some() {
        format!("info,{LOG_TARGET}=debug")
    } else {
        "info".to_owned()
    };
    #[cfg(feature = "otel")]
    match &settings.observability.otlp {
        Some((url, _)) => {
            let service = std::env::var("OTEL_SERVICE_NAME")
                .ok()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| settings.server.name.clone());
            let (layer, exporter) = crate::otel::pipeline(url, &service);
            logging::init_with(
                &default_filter,
                settings.observability.log_format,
                Some(layer),
            );
            tokio::spawn(crate::otel::run_exporter(exporter));
            tracing::info!("sending traces to {url} as service {service}");
        }
        None => logging::init(&default_filter, settings.observability.log_format),
    }
    #[cfg(not(feature = "otel"))]
    logging::init(&default_filter, settings.observability.log_format);
    if let Some(key) = settings.observability.log_arguments
        && !tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG)
    {
        tracing::warn!(
            "{key}: arguments are logged only while {LOG_TARGET} is enabled at DEBUG, which {} \
             does not do (add {LOG_TARGET}=debug to it)",
            logging::FILTER_VAR
        );
    }
}

/// Reads and checks the configuration file; errors name the file and the key.
/// A count or a size given on the command line, in words when it is not one.
fn whole_number(text: &str) -> Result<usize, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("expected a whole number (0 or more), not {text:?}"))
}

/// The configuration file, the folder its relative paths start from, and its text (to find the
/// line of a key that a later check refuses).
fn load_file(path: &std::path::Path) -> anyhow::Result<((file::FileConfig, PathBuf), String)> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow!("--config {}: {e}", path.display()))?;
    let config = file::parse(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    // Relative paths in the file are relative to the file.
    let base = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok(((config, base), text))
}

/// An error about a key of the file, with the file's name in front and the key's line after, when
/// the message does not give it already.
fn in_file_error(path: &std::path::Path, text: &str, error: &str) -> String {
    let line = error
        .split_once(": ")
        .filter(|_| !error.contains("(line "))
        .and_then(|(key, _)| file::line_of(text, key));
    match line {
        Some(line) => format!("{}: {error} (line {line})", path.display()),
        None => format!("{}: {error}", path.display()),
    }
}

/// Whether a settings error names a key of the file (rather than a flag).
fn from_file(error: &str) -> bool {
    [
        "server.",
        "http.",
        "observability.",
        "sample.",
        "limits.",
        "databases.",
        "roots[",
        "files.",
        "auth.",
        "upstream[",
        "upstream:",
        "policy.",
        "audit.",
    ]
    .iter()
    .any(|section| error.starts_with(section))
}

pub(crate) async fn run(args: ServeArgs) -> Result<(), Failure> {
    let (settings, text) = read_settings(&args)?;
    // An error about a key of the file names the file too, and the key's line.
    let in_file = |e: String| about_file(&args, &text, e);
    if args.check {
        // The report is the output; logs only say what is wrong.
        logging::init("warn", settings.observability.log_format);
        for note in &settings.notes {
            tracing::warn!("{}", in_file(note.clone()));
        }
        return check::run(&settings, args.config.as_deref(), &in_file).await;
    }
    init_logging(&settings);
    for note in &settings.notes {
        tracing::warn!("{}", in_file(note.clone()));
    }
    let unavailable = |e: String| Failure::Unavailable(in_file(e));

    // The listeners first: a port that is taken stops the start before anything is opened or
    // announced.
    let listener = match settings.stdio {
        true => None,
        false => Some(
            listen::bind(settings.http.bind, settings.http.bind_key, "--http")
                .await
                .map_err(unavailable)?,
        ),
    };
    let metrics_listener = match settings.observability.metrics.as_ref().and_then(|m| m.addr) {
        Some((addr, key)) => Some((
            listen::bind(addr, key, "--metrics-addr")
                .await
                .map_err(unavailable)?,
            key,
        )),
        None => None,
    };

    let served = open::open(&settings, open::Mode::Serve)
        .await
        .map_err(|e| open_failure(e, &in_file))?;
    let Some(listener) = listener else {
        return serving::stdio(&settings, served, metrics_listener).await;
    };

    // With authorization in front, a public address is what the server is for.
    if !settings.http.bind.ip().is_loopback() && settings.auth.is_none() {
        tracing::warn!(
            "serving on {}, which is not a loopback address: anyone who can reach it can use the \
             tools; put authentication in front",
            settings.http.bind
        );
    }
    // Which hosts and origins get in, since a request under any other name is refused (403).
    tracing::info!("accepting {}", policy(&settings, settings.http.bind));
    tracing::info!("{}", eras_line(&settings, false));
    let tls = load_tls(&settings).map_err(unavailable)?;
    // SIGHUP is listened for before the address is announced, so that a reload asked for from
    // then on is not taken for the signal's default action, which ends the process.
    let hangups = tls.as_ref().map(|_| serving::Hangups::listen());
    let auth = authenticator(&settings).await.map_err(unavailable)?;
    if let (Some(a), Some(auth)) = (&settings.auth, &auth) {
        tracing::info!(
            "requiring bearer tokens of {} for {}; metadata at {}",
            a.config.issuer,
            a.config.resource,
            auth.resource_metadata_url()
        );
    }
    let front = serving::Front { tls, auth, hangups };
    serving::http(&settings, served, listener, metrics_listener, front).await
}

/// An error of opening what the settings name, with the exit status of its kind: a setting the
/// engine refuses is a usage error, anything else something unavailable.
fn open_failure(e: anyhow::Error, in_file: &dyn Fn(String) -> anyhow::Error) -> Failure {
    let text = in_file(format!("{e:#}"));
    if e.is::<open::Misconfigured>() {
        Failure::Usage(text)
    } else {
        Failure::Unavailable(text)
    }
}

/// The certificate and key of HTTPS, when served: read before serving, so that a bad file stops
/// the start with its name.
fn load_tls(settings: &Settings) -> Result<Option<ServerTls>, String> {
    match &settings.http.tls {
        Some(files) => Ok(Some(
            // The handshake is part of what a new connection must send within the read timeout.
            ServerTls::from_pem_files(&files.cert, &files.key)
                .map_err(|e| format!("{}: {e}", files.from))?
                .handshake_timeout(settings.http.read_timeout),
        )),
        None => Ok(None),
    }
}

/// The authorization server is asked for its metadata and keys before serving, so a
/// misconfigured issuer stops the start instead of refusing every request.
async fn authenticator(
    settings: &Settings,
) -> Result<Option<std::sync::Arc<kelson_auth::Authenticator>>, String> {
    match &settings.auth {
        Some(a) => {
            let auth = kelson_auth::Authenticator::new(a.config.clone())
                .await
                .map_err(|e| format!("auth.issuer: {:#}", anyhow::Error::new(e)))?;
            Ok(Some(std::sync::Arc::new(auth)))
        }
        None => Ok(None),
    }
}
