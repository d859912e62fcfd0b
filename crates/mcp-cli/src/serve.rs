//! `mcp serve`.

use std::net::SocketAddr;

use anyhow::Context as _;
use clap::Args;
use mcp_http::server::{HttpConfig, McpService, OriginPolicy};
use mcp_server::{Server, stdio};

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Serve on stdin/stdout (newline-delimited JSON-RPC) for a local host that spawns this process,
    /// instead of HTTP.
    #[arg(long, conflicts_with = "http")]
    stdio: bool,

    /// Serve Streamable HTTP on this address. Keep it on loopback unless the server sits behind
    /// authentication.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    http: SocketAddr,

    /// The HTTP endpoint path.
    #[arg(long, value_name = "PATH", default_value = "/mcp")]
    path: String,

    /// Also accept this host name in `Host` and `Origin` (repeatable). Behind a reverse proxy that
    /// forwards the public name to a loopback server, this is the one setting needed.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,

    /// Accept browser requests from this origin, e.g. https://app.example.com (repeatable).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,

    /// Longest accepted message, in bytes (HTTP body or stdio line).
    #[arg(long, default_value_t = 4 * 1024 * 1024, value_name = "BYTES")]
    max_message: usize,
}

pub(crate) fn http_config(
    bind: SocketAddr,
    path: &str,
    allowed_hosts: &[String],
    allowed_origins: &[String],
    max_body: usize,
) -> HttpConfig {
    let mut policy = OriginPolicy::for_bind(bind);
    for host in allowed_hosts {
        policy = policy.allow_host(host);
    }
    for origin in allowed_origins {
        policy = policy.allow_origin(origin);
    }
    HttpConfig {
        path: path.to_owned(),
        max_body,
        policy,
        ..HttpConfig::default()
    }
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let server = Server::builder("mcp-rs", env!("CARGO_PKG_VERSION"))
        .info(
            mcp_types::Implementation::new("mcp-rs", env!("CARGO_PKG_VERSION"))
                .with_title("mcp-rs"),
        )
        .build()
        .context("building the server")?;
    if args.stdio {
        let config = stdio::StdioConfig {
            max_line: args.max_message,
            ..Default::default()
        };
        return stdio::serve_stdio(server, config)
            .await
            .context("serving on stdio");
    }
    let config = http_config(
        args.http,
        &args.path,
        &args.allowed_hosts,
        &args.allowed_origins,
        args.max_message,
    );
    let listener = tokio::net::TcpListener::bind(args.http)
        .await
        .with_context(|| format!("binding {}", args.http))?;
    let local = listener.local_addr().context("reading the bound address")?;
    tracing::info!("serving MCP on http://{local}{}", config.path);
    mcp_http::server::serve(listener, McpService::new(server, config))
        .await
        .context("serving HTTP")
}
