//! `mcp serve`: the ready-to-run server. The SQL adapter over the embedded sample database (or the
//! databases given), the filesystem adapter over the roots given, served over Streamable HTTP on
//! loopback or over stdio.
//!
//! file.rs is the TOML format, settings.rs lays the flags over the file and checks everything
//! before anything is opened, and open.rs opens the databases and roots and builds the server.

mod file;
mod open;
mod settings;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use clap::Args;
use mcp_http::server::{HttpConfig, McpService, OriginPolicy};
use mcp_server::stdio;

use settings::Settings;

#[derive(Args, Debug)]
#[command(
    after_help = "With no flags: Streamable HTTP on http://127.0.0.1:8080/mcp, serving the \
sample database (created on first run in $MCP_DATA_DIR, else $XDG_DATA_HOME/mcp-rs, else \
~/.local/share/mcp-rs), read-only. Flags override the --config file; the repeatable flags add \
to its lists."
)]
pub(crate) struct ServeArgs {
    /// Read settings from this TOML file (see the README for its format). Flags override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Serve on stdin/stdout (newline-delimited JSON-RPC) for a local host that spawns this process,
    /// instead of HTTP.
    #[arg(long, conflicts_with = "http")]
    stdio: bool,

    /// Serve Streamable HTTP on this address [default: 127.0.0.1:8080]. Keep it on loopback unless
    /// the server sits behind authentication.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,

    /// The HTTP endpoint path [default: /mcp].
    #[arg(long, value_name = "PATH")]
    path: Option<String>,

    /// Also accept this host name in `Host` and `Origin` (repeatable). Behind a reverse proxy that
    /// forwards the public name to a loopback server, this is the one setting needed.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,

    /// Accept browser requests from this origin, e.g. https://app.example.com (repeatable).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,

    /// Longest accepted message, in bytes (HTTP body or stdio line) [default: 4194304].
    #[arg(long, value_name = "BYTES")]
    max_message: Option<usize>,

    /// A database to serve (repeatable): postgres://USER@HOST:PORT/DB, sqlite:PATH or the path of an
    /// SQLite file, optionally named NAME=URL (the name tools and URIs use; default "main"). With
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
    #[arg(long, value_name = "N")]
    max_rows: Option<usize>,

    /// The most bytes of row data one call returns, on every database [default: 524288].
    #[arg(long, value_name = "BYTES")]
    max_bytes: Option<usize>,

    /// The longest one statement may run, on every database: seconds, or with a unit (500ms, 30s,
    /// 2m) [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = file::parse_duration)]
    query_timeout: Option<Duration>,

    /// Allow changes on every database through the `execute` tool; the user approves each
    /// statement (elicitation) before it runs once.
    #[arg(long)]
    allow_write: bool,

    /// A file of 32 or more random bytes that seals requestState, shared by every instance behind a
    /// load balancer [default: a random key per process].
    #[arg(long, value_name = "FILE")]
    state_key_file: Option<PathBuf>,

    /// Where the sample database lives [default: $MCP_DATA_DIR, else $XDG_DATA_HOME/mcp-rs, else
    /// ~/.local/share/mcp-rs].
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

fn http_config(settings: &Settings) -> HttpConfig {
    let mut policy = OriginPolicy::for_bind(settings.bind);
    for host in &settings.allowed_hosts {
        policy = policy.allow_host(host);
    }
    for origin in &settings.allowed_origins {
        policy = policy.allow_origin(origin);
    }
    HttpConfig {
        path: settings.path.clone(),
        max_body: settings.max_message,
        policy,
        ..HttpConfig::default()
    }
}

/// Reads and checks the configuration file; errors name the file and the key.
fn load_file(path: &std::path::Path) -> anyhow::Result<(file::FileConfig, PathBuf)> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow!("--config {}: {e}", path.display()))?;
    let config = file::parse(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    // Relative paths in the file are relative to the file.
    let base = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((config, base))
}

/// Whether a settings error names a key of the file (rather than a flag).
fn from_file(error: &str) -> bool {
    [
        "server.",
        "http.",
        "sample.",
        "limits.",
        "databases.",
        "roots[",
        "files.",
    ]
    .iter()
    .any(|section| error.starts_with(section))
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let file = args.config.as_deref().map(load_file).transpose()?;
    let env = |name: &str| std::env::var_os(name);
    // An error about a key of the file names the file too.
    let in_file = |e: String| match &args.config {
        Some(path) if from_file(&e) => anyhow!("{}: {e}", path.display()),
        _ => anyhow!(e),
    };
    let settings = settings::resolve(&args, file, &env).map_err(in_file)?;
    let served = open::open(&settings)
        .await
        .map_err(|e| in_file(format!("{e:#}")))?;
    let server = served.server.clone();
    if settings.stdio {
        let config = stdio::StdioConfig {
            max_line: settings.max_message,
            ..Default::default()
        };
        let result = stdio::serve_stdio(server, config)
            .await
            .context("serving on stdio");
        drop(served);
        return result;
    }
    if !settings.bind.ip().is_loopback() {
        tracing::warn!(
            "serving on {}, which is not a loopback address: anyone who can reach it can use the \
             tools; put authentication in front",
            settings.bind
        );
    }
    let config = http_config(&settings);
    let listener = tokio::net::TcpListener::bind(settings.bind)
        .await
        .with_context(|| format!("binding {}", settings.bind))?;
    let local = listener.local_addr().context("reading the bound address")?;
    tracing::info!("serving MCP on http://{local}{}", config.path);
    let result = mcp_http::server::serve(listener, McpService::new(server, config))
        .await
        .context("serving HTTP");
    drop(served);
    result
}
