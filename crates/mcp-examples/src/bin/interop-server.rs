//! `interop-server`: the interop profile (see `mcp_examples::interop`), for the official SDKs'
//! clients to test against.
//!
//! `interop-server --stdio` serves it on stdin and stdout; `interop-server --http ADDR` serves
//! Streamable HTTP at `http://ADDR/mcp` and prints `listening on http://ADDR/mcp` (with the port
//! actually bound, so `127.0.0.1:0` works) as the first line on stdout. Logs go to stderr.

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use mcp_http::server::{HttpConfig, McpService, OriginPolicy};
use mcp_server::stdio::{self, StdioConfig};

#[derive(Debug, Parser)]
#[command(
    name = "interop-server",
    version,
    about = "The interop profile server (mcp-rs)"
)]
#[command(group(ArgGroup::new("transport").required(true).args(["stdio", "http"])))]
struct Args {
    /// Serve on stdin and stdout.
    #[arg(long)]
    stdio: bool,
    /// Serve Streamable HTTP on this address (port 0: any free port), at the path `/mcp`.
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
    let server = match mcp_examples::interop::build_server() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("interop-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("interop-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match args.http {
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(addr).await?;
                let bound = listener.local_addr()?;
                let config = HttpConfig {
                    policy: OriginPolicy::for_bind(bound),
                    ..HttpConfig::default()
                };
                let mut stdout = std::io::stdout();
                writeln!(stdout, "listening on http://{bound}/mcp")?;
                stdout.flush()?;
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
            eprintln!("interop-server: {e}");
            ExitCode::FAILURE
        }
    }
}
