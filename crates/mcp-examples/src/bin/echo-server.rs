//! `echo-server`: one tool, `echo` (argument `text`), for benchmarks and smoke tests.
//!
//! `echo-server --http ADDR` serves Streamable HTTP at `http://ADDR/mcp` (JSON responses);
//! `echo-server --stdio` serves stdio.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use mcp_http::server::{HttpConfig, McpService, OriginPolicy};
use mcp_server::stdio::{self, StdioConfig};

#[derive(Debug, Parser)]
#[command(
    name = "echo-server",
    version,
    about = "An MCP server with one tool, echo (mcp-rs)"
)]
#[command(group(ArgGroup::new("transport").required(true).args(["stdio", "http"])))]
struct Args {
    /// Serve on stdin and stdout.
    #[arg(long)]
    stdio: bool,
    /// Serve Streamable HTTP on this address, at the path `/mcp`.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let server = match mcp_examples::echo::build_server() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("echo-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("echo-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match args.http {
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(addr).await?;
                let config = HttpConfig {
                    policy: OriginPolicy::for_bind(addr),
                    ..HttpConfig::default()
                };
                mcp_http::server::serve(listener, McpService::new(server, config))
                    .await
                    .map_err(std::io::Error::other)
            }
            None => stdio::serve_stdio(server, StdioConfig::default()).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo-server: {e}");
            ExitCode::FAILURE
        }
    }
}
