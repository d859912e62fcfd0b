//! What the example binaries share: logs on stderr (stdout carries only protocol messages on
//! stdio, spec 2026-07-28 basic/transports), a runtime, and serving one server on stdio or over
//! Streamable HTTP at `/mcp`.

use std::fmt::Display;
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;

use kelson_http::server::{HttpConfig, LegacyMode, McpService, OriginPolicy};
use kelson_server::Server;
use kelson_server::stdio::{self, StdioConfig};

/// How an example binary serves.
#[derive(Debug, Default)]
pub struct Serving {
    /// Streamable HTTP on this address; stdio when `None`.
    pub http: Option<SocketAddr>,
    /// The largest HTTP request body, when not the default.
    pub max_body: Option<usize>,
    /// The stdio settings.
    pub stdio: StdioConfig,
    /// How handshake-era clients are served over HTTP: sessions (the default) or stateless.
    pub legacy: LegacyMode,
    /// Print `listening on http://ADDR/mcp` (the port actually bound) as the first line on stdout,
    /// for test harnesses that start the binary on port 0.
    pub announce: bool,
    /// Require OAuth bearer tokens over HTTP, checked by kelson-auth with this configuration.
    pub auth: Option<kelson_auth::AuthConfig>,
}

/// Runs `server` as `serving` says, until stdin closes (stdio) or SIGINT/SIGTERM (HTTP); errors go
/// to stderr prefixed with `name`.
pub fn main(name: &str, server: Result<Server, impl Display>, serving: Serving) -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let server = match server {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{name}: the server is invalid: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{name}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(name, server, serving)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(name: &str, server: Server, serving: Serving) -> std::io::Result<()> {
    let Some(addr) = serving.http else {
        tracing::info!(version = env!("CARGO_PKG_VERSION"), "serving on stdio");
        return stdio::serve_stdio(server, serving.stdio).await;
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot bind {addr}: {e}")))?;
    let bound = listener.local_addr()?;
    let config = {
        let mut edited = HttpConfig::default();
        edited.policy = OriginPolicy::for_bind(bound);
        edited.max_body = serving.max_body.map_or(edited.max_body, |b| b.max(1));
        edited.legacy = serving.legacy;
        edited
    };
    if serving.announce {
        let mut stdout = std::io::stdout();
        writeln!(stdout, "listening on http://{bound}/mcp")?;
        stdout.flush()?;
    }
    let service = McpService::new(server, config);
    let Some(auth) = serving.auth else {
        ready(name, bound);
        return kelson_http::server::serve(listener, service)
            .await
            .map_err(std::io::Error::other);
    };
    let auth = kelson_auth::Authenticator::new(auth)
        .await
        .map_err(|e| std::io::Error::other(format!("authorization: {e}")))?;
    ready(name, bound);
    let layer = kelson_auth::AuthLayer::new(std::sync::Arc::new(auth));
    kelson_http::server::serve(listener, service)
        .wrap(|s| tower_layer::Layer::layer(&layer, s))
        .await
        .map_err(std::io::Error::other)
}

/// Says on stderr, as every server of the project does once it serves, where the endpoint is.
fn ready(name: &str, bound: SocketAddr) {
    eprintln!("{name} serving MCP at http://{bound}/mcp");
    tracing::info!(%bound, "serving Streamable HTTP at /mcp");
}
