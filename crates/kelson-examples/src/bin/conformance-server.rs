//! `conformance-server`: the MCP conformance fixture (see `kelson_examples::conformance`).
//!
//! `conformance-server --stdio` serves it on stdin and stdout; `conformance-server --http ADDR` serves
//! it over Streamable HTTP at `http://ADDR/mcp`, which is what the official suite drives, and says
//! so on stderr once it listens (`conformance-server serving MCP at http://127.0.0.1:PORT/mcp`,
//! the port bound when ADDR names port 0). Logs go to stderr (`RUST_LOG` sets the filter).

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use kelson_examples::run::Serving;
use kelson_server::stdio::StdioConfig;

#[derive(Debug, Parser)]
#[command(
    name = "conformance-server",
    version,
    about = "The MCP conformance fixture server (kelson)"
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
    let serving = Serving {
        http: args.http,
        max_body: Some(args.max_message),
        stdio: {
            let mut edited = StdioConfig::default();
            edited.max_line = args.max_message.max(1);
            edited
        },
        announce: false,
        ..Serving::default()
    };
    kelson_examples::run::main(
        "conformance-server",
        kelson_examples::conformance::build_server(),
        serving,
    )
}
