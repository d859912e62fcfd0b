//! `mcp serve`: the ready-to-run server. The SQL adapter over the embedded sample database (or the
//! databases given), the filesystem adapter over the roots given, served over Streamable HTTP on
//! loopback or over stdio.
//!
//! file.rs is the TOML format, settings/ lays the flags over the file and checks everything
//! before anything is opened, and open.rs opens the databases and roots and builds the server.
//! Here: the flags, logging (one line per request on stderr, `RequestLog`), and the serve loop with
//! the metrics, on the HTTP listener or on a listener of their own that stops with the server.

mod auth;
mod file;
mod open;
mod settings;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use clap::Args;
use futures_util::FutureExt as _;
use mcp_http::server::{
    Health, HttpConfig, LegacyMode, McpService, MetricsService, OriginPolicy, ServerTls,
};
use mcp_server::observe::LOG_TARGET;
use mcp_server::stdio;
use tokio::net::TcpListener;

use crate::flags;
use crate::logging::{self, LogFormat};
use file::{ErasSetting, LegacyHttpSetting};
use settings::Settings;

#[derive(Args, Debug)]
#[command(
    after_help = "With no flags: Streamable HTTP on http://127.0.0.1:8080/mcp, serving the \
sample database (created on first run in $MCP_DATA_DIR, else $XDG_DATA_HOME/mcp-rs, else \
~/.local/share/mcp-rs), read-only. Flags override the --config file; the repeatable flags add \
to its lists.

Logs: one line per request on stderr (id, method, tool/prompt/URI, outcome, duration); MCP_LOG \
is the filter (default info; e.g. MCP_LOG=info,mcp::request=off drops the request lines). \
Header values (Authorization, Mcp-Param-*) are never logged; arguments only with \
--log-arguments."
)]
pub(crate) struct ServeArgs {
    /// Read settings from this TOML file (see the README for its format). Flags override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

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
    /// (used-approvals.db) when writes are allowed [default: $MCP_DATA_DIR, else
    /// $XDG_DATA_HOME/mcp-rs, else ~/.local/share/mcp-rs].
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,

    /// The format of the logs on stderr, one line per request among them: text, or json (one
    /// object per line) [default: text].
    #[arg(long, value_name = "FORMAT", value_enum)]
    log_format: Option<LogFormat>,

    /// Also log the arguments of tools/call and prompts/get, which may hold user data. They are
    /// logged at DEBUG level of the mcp::request target, which this flag turns on unless MCP_LOG
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
}

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
        edited.legacy = match settings.legacy_http {
            file::LegacyHttpSetting::Sessions => LegacyMode::Sessions,
            file::LegacyHttpSetting::Stateless => LegacyMode::Stateless,
        };
        edited.max_sessions = settings.max_sessions;
        edited.session_idle = settings.session_idle;
        edited.policy = policy;
        edited.metrics_path = metrics_path;
        edited
    }
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
    ]
    .iter()
    .any(|section| error.starts_with(section))
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let (file, text) = match args.config.as_deref().map(load_file).transpose()? {
        Some((file, text)) => (Some(file), text),
        None => (None, String::new()),
    };
    let env = |name: &str| std::env::var_os(name);
    // An error about a key of the file names the file too, and the key's line.
    let in_file = |e: String| match &args.config {
        Some(path) if from_file(&e) => anyhow!(in_file_error(path, &text, &e)),
        _ => anyhow!(e),
    };
    let settings = settings::resolve(&args, file, &env).map_err(in_file)?;
    init_logging(&settings);
    for note in &settings.notes {
        tracing::warn!("{}", in_file(note.clone()));
    }
    let served = open::open(&settings)
        .await
        .map_err(|e| in_file(format!("{e:#}")))?;
    let server = served.server.clone();

    // The metrics' own listener, if they have one; told to stop when the server stops.
    let metrics = match (&settings.observability.metrics, server.metrics()) {
        (Some(m), Some(metrics)) => match m.addr {
            Some((addr, key)) => {
                let listener = TcpListener::bind(addr)
                    .await
                    .map_err(|e| in_file(format!("{key}: cannot listen on {addr}: {e}")))?;
                let local = listener
                    .local_addr()
                    .context("reading the bound metrics address")?;
                let service = MetricsService::new(metrics.clone(), policy(&settings, addr))
                    .with_path(&m.path);
                Some((listener, service, local))
            }
            None => None,
        },
        _ => None,
    };
    let (stop_metrics, metrics_stopped) = tokio::sync::oneshot::channel::<()>();

    if settings.stdio {
        tracing::info!("{}", eras_line(&settings, true));
        let config = {
            let mut edited = stdio::StdioConfig::default();
            edited.max_line = settings.http.max_message;
            edited
        };
        if let Some((_, service, local)) = &metrics {
            announce_metrics(*local, service.path());
        }
        // On stdio the server stops at the end of its input (signals keep their default action).
        let serving = async {
            let result = stdio::serve_stdio(server, config)
                .await
                .context("serving on stdio");
            drop(stop_metrics);
            result
        };
        let stopped = async {
            let _ = metrics_stopped.await;
        };
        let (result, ()) = tokio::join!(serving, serve_metrics(metrics, stopped));
        drop(served);
        return result;
    }
    // With authorization in front, a public address is what the server is for.
    if !settings.http.bind.ip().is_loopback() && settings.auth.is_none() {
        tracing::warn!(
            "serving on {}, which is not a loopback address: anyone who can reach it can use the \
             tools; put authentication in front",
            settings.http.bind
        );
    }
    let mut config = http_config(&settings);
    let health = readiness(&served.databases, served.broker.as_ref());
    config.health = Some(health.clone());
    // Which hosts and origins get in, since a request under any other name is refused (403).
    tracing::info!("accepting {}", config.policy);
    tracing::info!("{}", eras_line(&settings, false));
    // The certificate is read before binding, so that a bad file stops the start with its name.
    let tls = match &settings.http.tls {
        Some(files) => Some(
            // The handshake is part of what a new connection must send within the read timeout.
            ServerTls::from_pem_files(&files.cert, &files.key)
                .map_err(|e| in_file(format!("{}: {e}", files.from)))?
                .handshake_timeout(settings.http.read_timeout),
        ),
        None => None,
    };
    // SIGHUP is listened for before the address is announced, so that a reload asked for from
    // then on is not taken for the signal's default action, which ends the process.
    let hangups = tls.as_ref().map(|_| Hangups::listen());
    // The authorization server is asked for its metadata and keys before the port opens, so a
    // misconfigured issuer stops the start instead of refusing every request.
    let auth = match &settings.auth {
        Some(a) => {
            let auth = mcp_auth::Authenticator::new(a.config.clone())
                .await
                .map_err(|e| in_file(format!("auth.issuer: {:#}", anyhow::Error::new(e))))?;
            tracing::info!(
                "requiring bearer tokens of {} for {}; metadata at {}",
                a.config.issuer,
                a.config.resource,
                auth.resource_metadata_url()
            );
            Some(std::sync::Arc::new(auth))
        }
        None => None,
    };
    let listener = TcpListener::bind(settings.http.bind)
        .await
        .with_context(|| format!("binding {}", settings.http.bind))?;
    let local = listener.local_addr().context("reading the bound address")?;
    if let Some((_, service, local)) = &metrics {
        announce_metrics(*local, service.path());
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    if let Some(path) = &config.metrics_path {
        tracing::info!("serving metrics on {scheme}://{local}{path}");
    }
    tracing::info!("serving MCP on {scheme}://{local}{}", config.path);
    tracing::info!(
        "health on {scheme}://{local}{} and {}",
        health.live_path(),
        health.ready_path()
    );
    // One signal stops both listeners; the metrics one also stops if the server stops otherwise.
    // Readiness goes false first, for the grace period, so that balancers stop sending.
    let grace = settings.http.shutdown_grace;
    let draining = health.clone();
    let signal = async move {
        mcp_http::server::shutdown_signal().await;
        draining.set_draining();
        if !grace.is_zero() {
            tracing::info!(
                "stopping in {} ms; {} answers 503 meanwhile",
                grace.as_millis(),
                draining.ready_path()
            );
            tokio::time::sleep(grace).await;
        }
    }
    .shared();
    let mcp_signal = signal.clone();
    let serving = async {
        let service = McpService::new(server, config);
        let result = match (tls, auth) {
            (Some(tls), auth) => {
                let hangups = hangups.unwrap_or_else(Hangups::listen);
                let reloading = tokio::spawn(reload_on_hangup(tls.clone(), hangups));
                let served = match auth {
                    Some(auth) => {
                        let layer = mcp_auth::AuthLayer::new(auth)
                            .open_paths([health.live_path(), health.ready_path()]);
                        mcp_http::server::serve_tls_wrapped_with_shutdown(
                            listener,
                            service,
                            |s| tower_layer::Layer::layer(&layer, s),
                            tls,
                            mcp_signal,
                        )
                        .await
                    }
                    None => {
                        mcp_http::server::serve_tls_with_shutdown(
                            listener, service, tls, mcp_signal,
                        )
                        .await
                    }
                };
                reloading.abort();
                served
            }
            (None, Some(auth)) => {
                let layer = mcp_auth::AuthLayer::new(auth)
                    .open_paths([health.live_path(), health.ready_path()]);
                mcp_http::server::serve_wrapped_with_shutdown(
                    listener,
                    service,
                    |s| tower_layer::Layer::layer(&layer, s),
                    mcp_signal,
                )
                .await
            }
            (None, None) => {
                mcp_http::server::serve_with_shutdown(listener, service, mcp_signal).await
            }
        }
        .context("serving HTTP");
        drop(stop_metrics);
        result
    };
    let stopped = async move {
        tokio::select! {
            () = signal => {}
            _ = metrics_stopped => {}
        }
    };
    let (result, ()) = tokio::join!(serving, serve_metrics(metrics, stopped));
    drop(served);
    result
}

/// Liveness, and readiness that needs every database to answer `SELECT 1` (within 2 s)
/// and the broker, if there is one, to be connected.
fn readiness(databases: &[mcp_sql::Database], broker: Option<&mcp_broker::Broker>) -> Health {
    const PING: std::time::Duration = std::time::Duration::from_secs(2);
    let mut health = Health::new().timeout(PING + std::time::Duration::from_millis(500));
    for db in databases {
        let db = db.clone();
        health = health.check(format!("database {}", db.name()), move || {
            let db = db.clone();
            async move { db.ping(PING).await }
        });
    }
    if let Some(broker) = broker {
        let broker = broker.clone();
        health = health.check("broker", move || {
            let up = broker.is_connected();
            let describe = broker.describe();
            let why = broker.last_error();
            async move {
                match (up, why) {
                    (true, _) => Ok(()),
                    (false, Some(why)) => Err(format!("not connected to {describe}: {why}")),
                    (false, None) => Err(format!("not connected to {describe}")),
                }
            }
        });
    }
    health
}

/// SIGHUP, listened for (on Unix; elsewhere there is none).
struct Hangups(#[cfg(unix)] Option<tokio::signal::unix::Signal>);

impl Hangups {
    fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::hangup()) {
                Ok(hangups) => Hangups(Some(hangups)),
                Err(e) => {
                    tracing::warn!(
                        "cannot listen for SIGHUP ({e}); the certificate will not be reloaded"
                    );
                    Hangups(None)
                }
            }
        }
        #[cfg(not(unix))]
        Hangups()
    }

    /// The next SIGHUP; `false` when there will be none.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        if let Some(signal) = &mut self.0 {
            return signal.recv().await.is_some();
        }
        false
    }
}

/// Reads the certificate and key again on every SIGHUP: new connections get the new certificate,
/// open ones keep theirs, and files that do not load leave the old certificate in use.
async fn reload_on_hangup(tls: ServerTls, mut hangups: Hangups) {
    while hangups.next().await {
        match tls.reload() {
            Ok(()) => tracing::info!(
                "SIGHUP: reloaded the certificate {} and key {}",
                tls.cert_path().display(),
                tls.key_path().display()
            ),
            Err(e) => tracing::error!("SIGHUP: {e}; still serving the previous certificate"),
        }
    }
}

/// Says where the metrics' own listener is (tests read this line), with a warning off loopback.
fn announce_metrics(local: SocketAddr, path: &str) {
    if !local.ip().is_loopback() {
        tracing::warn!(
            "serving metrics on {local}, which is not a loopback address: anyone who can reach it \
             can read them"
        );
    }
    tracing::info!("serving metrics on http://{local}{path}");
}

/// Serves the metrics on their own listener, if they have one, until `shutdown`; a failure of
/// that listener is logged and leaves the MCP server running.
async fn serve_metrics(
    metrics: Option<(TcpListener, MetricsService, SocketAddr)>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let Some((listener, service, local)) = metrics else {
        return;
    };
    if let Err(e) = mcp_http::server::serve_metrics(listener, service, shutdown).await {
        tracing::error!("metrics on {local}: {e}; no longer served");
    }
}
