//! `echo-server`: two tools taking one argument, `text`, for benchmarks and smoke tests: `echo`
//! answers with text and `structuredContent` (it declares an `outputSchema`), `echo_text` with text
//! only.
//!
//! `echo-server --http ADDR` serves Streamable HTTP at `http://ADDR/mcp` (JSON responses);
//! `echo-server --stdio` serves stdio. Handshake-era clients get `Mcp-Session-Id` sessions over
//! HTTP, or with `--legacy-stateless` are served without sessions. With `--auth-issuer` and
//! `--auth-resource`, HTTP requests need a bearer token of that authorization server for that
//! resource (kelson-auth), for measuring what authorization costs.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{ArgGroup, Parser};
use kelson_examples::run::Serving;

#[derive(Debug, Parser)]
#[command(
    name = "echo-server",
    version,
    about = "An MCP server with two tools, echo (structured) and echo_text (text only) (kelson)"
)]
#[command(group(ArgGroup::new("transport").required(true).args(["stdio", "http"])))]
struct Args {
    /// Serve on stdin and stdout.
    #[arg(long)]
    stdio: bool,
    /// Serve Streamable HTTP on this address, at the path `/mcp`.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Serve handshake-era clients over HTTP without sessions (each request on its own).
    #[arg(long, requires = "http")]
    legacy_stateless: bool,
    /// Require OAuth bearer tokens issued by this authorization server (its metadata and keys
    /// are discovered from the issuer URL).
    #[arg(long, value_name = "URL", requires_all = ["http", "auth_resource"])]
    auth_issuer: Option<String>,
    /// This server's URL as the tokens' audience names it (RFC 8707).
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    auth_resource: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let serving = Serving {
        http: args.http,
        legacy: if args.legacy_stateless {
            kelson_http::server::LegacyMode::Stateless
        } else {
            kelson_http::server::LegacyMode::Sessions
        },
        auth: args
            .auth_issuer
            .zip(args.auth_resource)
            .map(|(issuer, resource)| kelson_auth::AuthConfig::new(issuer, resource)),
        ..Serving::default()
    };
    kelson_examples::run::main(
        "echo-server",
        kelson_examples::echo::build_server(),
        serving,
    )
}
