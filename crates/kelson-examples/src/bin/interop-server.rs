//! `interop-server`: the interop profile (see `kelson_examples::interop`), for the official SDKs'
//! clients to test against.
//!
//! `interop-server --stdio` serves it on stdin and stdout; `interop-server --http ADDR` serves
//! Streamable HTTP at `http://ADDR/mcp` and prints `listening on http://ADDR/mcp` (with the port
//! actually bound, so `127.0.0.1:0` works) as the first line on stdout. Logs go to stderr.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use kelson_examples::run::Serving;

#[derive(Debug, Parser)]
#[command(
    name = "interop-server",
    version,
    about = "The interop profile server (kelson)"
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
    let serving = Serving {
        http: args.http,
        announce: true,
        ..Serving::default()
    };
    kelson_examples::run::main(
        "interop-server",
        kelson_examples::interop::build_server(),
        serving,
    )
}
