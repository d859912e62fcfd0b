//! `conformance-server`: the MCP conformance fixture (see `mcp_examples::conformance`).
//!
//! `conformance-server --stdio` serves it on stdin and stdout; `conformance-server --http ADDR` serves
//! it over Streamable HTTP at `http://ADDR/mcp`, which is what the official suite drives. Logs go to
//! stderr (`RUST_LOG` sets the filter).

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use mcp_http::server::{HttpConfig, McpService, OriginPolicy};
use mcp_server::stdio::{self, StdioConfig};

#[derive(Debug, Parser)]
#[command(
    name = "conformance-server",
    version,
    about = "The MCP conformance fixture server (mcp-rs)"
)]
#[command(group(ArgGroup::new("transport").required(true).args(["stdio", "http"])))]
struct Args {
    /// Serve on stdin and stdout, one JSON-RPC message per line.
    #[arg(long)]
    stdio: bool,
    /// Serve Streamable HTTP on this address, at the path `/mcp`.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// The longest stdio message accepted, in bytes; longer lines are answered with an error.
    #[arg(long, value_name = "BYTES", default_value_t = StdioConfig::default().max_line)]
    max_message: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // Only protocol messages may go to stdout (spec 2026-07-28 basic/transports, stdio), so logs go
    // to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();

    let server = match mcp_examples::conformance::build_server() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("conformance-server: the fixture is invalid: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("conformance-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(addr) = args.http {
        return runtime.block_on(serve_http(server, addr, args.max_message));
    }
    let config = StdioConfig {
        max_line: args.max_message.max(1),
        ..StdioConfig::default()
    };
    tracing::info!(version = env!("CARGO_PKG_VERSION"), "serving on stdio");
    match runtime.block_on(stdio::serve_stdio(server, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-server: stdio failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_http(server: mcp_server::Server, addr: SocketAddr, max_body: usize) -> ExitCode {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("conformance-server: cannot bind {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let config = HttpConfig {
        policy: OriginPolicy::for_bind(addr),
        max_body: max_body.max(1),
        ..HttpConfig::default()
    };
    tracing::info!(%addr, "serving Streamable HTTP at /mcp");
    match mcp_http::server::serve(listener, McpService::new(server, config)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-server: {e}");
            ExitCode::FAILURE
        }
    }
}
