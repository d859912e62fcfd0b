//! kelson: the Model Context Protocol in Rust, as one crate to depend on.
//!
//! A server is a set of plain async functions. Their parameters are extracted from the call (the
//! arguments as a type of your own with a generated JSON Schema, [`State`](server::State), the
//! [`RequestContext`](server::RequestContext), the caller's [`Principal`](server::Principal)), and
//! what they return becomes the result (`String`, [`Json<T>`](server::Json) with a generated
//! output schema, `Result<T, E>` with `?` on any error). The server serves the stateless
//! 2026-07-28 revision and the handshake era (2025-03-26 to 2025-11-25) from one registration, on
//! stdio or Streamable HTTP.
//!
//! ```no_run
//! use kelson::prelude::*;
//!
//! /// Adds two numbers.
//! #[tool(read_only)]
//! async fn add(a: f64, b: f64) -> String {
//!     (a + b).to_string()
//! }
//!
//! fn main() -> kelson::Result<()> {
//!     // stdio, or Streamable HTTP with `--http 127.0.0.1:8080`.
//!     kelson::run(Server::builder("calc", "1.0.0").route(add_tool()))
//! }
//! ```
//!
//! The same without macros: `.tool(ToolDef::new("add").read_only(true), add)` with `add` taking
//! one `#[derive(Deserialize, JsonSchema)]` struct. The crates underneath are re-exported whole:
//! [`server`] (kelson-server), [`types`] (kelson-types), `http` (kelson-http, feature `http`), `auth`
//! (kelson-auth, feature `auth`), `client` (kelson-client, feature `client`).
//!
//! Features: `server` (always on), `http` (default), `macros` (default), `tls`, `auth`, `client`.

#[cfg(feature = "http")]
use std::net::SocketAddr;

pub use kelson_jsonrpc as jsonrpc;
pub use kelson_server as server;
pub use kelson_types as types;

#[cfg(feature = "auth")]
pub use kelson_auth as auth;
#[cfg(feature = "client")]
pub use kelson_client as client;
#[cfg(feature = "http")]
pub use kelson_http as http;
#[cfg(feature = "macros")]
pub use kelson_macros::{prompt, resource, tool, tools};

mod cli;
#[cfg(doctest)]
pub mod guide;

pub use cli::UsageError;

/// What a server needs in one import: the builder, the handler types, the common result types,
/// serde's and schemars' derives, and the macros (feature `macros`).
pub mod prelude {
    pub use kelson_server::{
        HandlerError, Json, Principal, PromptDef, RequestContext, Route, Scopes, Server,
        ServerBuilder, State, ToolDef, Toolbox, Uri,
    };
    pub use kelson_types::{
        CallToolResult, ContentBlock, GetPromptResult, PromptMessage, Resource, ResourceTemplate,
    };
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};

    #[cfg(feature = "macros")]
    pub use kelson_macros::{prompt, resource, tool, tools};
}

/// Any error of starting or serving, with its message.
pub type Error = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where [`serve`] serves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// One JSON-RPC message per line on stdin and stdout.
    Stdio,
    /// Streamable HTTP at `http://ADDR/mcp` (feature `http`).
    #[cfg(feature = "http")]
    Http(SocketAddr),
}

impl Transport {
    /// The transport the command line names: `--http ADDR` (or `--http=ADDR`) for Streamable
    /// HTTP, `--stdio` or nothing for stdio. Anything else is refused with a usage message
    /// ([`UsageError`], whose `Debug` is its message too).
    pub fn from_args() -> Result<Self> {
        Self::parse(std::env::args().skip(1))
    }

    /// [`from_args`](Self::from_args) on given arguments (without the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self> {
        Ok(Self::parse_args(args)?)
    }

    pub(crate) fn parse_args(
        args: impl IntoIterator<Item = String>,
    ) -> std::result::Result<Self, UsageError> {
        let mut args = args.into_iter();
        let mut transport = Transport::Stdio;
        while let Some(arg) = args.next() {
            let addr = match arg.as_str() {
                "--stdio" => {
                    transport = Transport::Stdio;
                    continue;
                }
                "--http" => args.next(),
                other => match other.strip_prefix("--http=") {
                    Some(addr) => Some(addr.to_owned()),
                    None => return Err(UsageError::new(format!("unknown argument {other}"))),
                },
            };
            let Some(addr) = addr else {
                return Err(UsageError::new(
                    "--http needs an address, such as 127.0.0.1:8080",
                ));
            };
            transport = http_transport(&addr)?;
        }
        Ok(transport)
    }
}

#[cfg(feature = "http")]
fn http_transport(addr: &str) -> std::result::Result<Transport, UsageError> {
    let addr: SocketAddr = addr
        .parse()
        .map_err(|e| UsageError::new(format!("--http {addr:?}: {e}")))?;
    Ok(Transport::Http(addr))
}

#[cfg(not(feature = "http"))]
fn http_transport(_: &str) -> std::result::Result<Transport, UsageError> {
    Err(UsageError::new(
        "this build has no HTTP (the `http` feature of kelson)",
    ))
}

/// Builds the server and serves it on the transport the command line names (`--stdio`, the
/// default, or `--http ADDR`) until stdin closes (stdio) or SIGINT/SIGTERM (HTTP), on a runtime of
/// its own. For a server inside an application that has a runtime, use [`serve`].
///
/// `run` is the whole program, command line included: `--help` (`-h`) prints a usage text and
/// `--version` (`-V`) the server's name and version, and it returns `Ok(())`. A command-line
/// mistake, a server that does not build or cannot start (an address in use), and a failure while
/// serving are printed on stderr in words, and end the process with status 2 (a command-line
/// mistake) or 1; so the `Result` returned is always `Ok`, and is there for `fn main() ->
/// kelson::Result<()>`.
pub fn run(builder: kelson_server::ServerBuilder) -> Result<()> {
    let program = cli::program();
    let args = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let invocation = match cli::invocation(args) {
        Ok(invocation) => invocation,
        Err(e) => cli::exit_with(&program, &e, cli::EXIT_USAGE),
    };
    let server = match builder.build() {
        Ok(server) => server,
        Err(e) => cli::exit_with(&program, &e, cli::EXIT_FAILURE),
    };
    let transport = match invocation {
        cli::Invocation::Help => {
            let info = server.info();
            print!("{}", cli::usage(&program, &info.name, &info.version));
            return Ok(());
        }
        cli::Invocation::Version => {
            let info = server.info();
            println!("{} {}", info.name, info.version);
            return Ok(());
        }
        cli::Invocation::Serve(transport) => transport,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => cli::exit_with(&program, &e, cli::EXIT_FAILURE),
    };
    if let Err(e) = runtime.block_on(serve(server, transport)) {
        cli::exit_with(&program, &*e, cli::EXIT_FAILURE);
    }
    Ok(())
}

/// Serves `server` on `transport` until stdin closes (stdio) or SIGINT/SIGTERM (HTTP, which then
/// drains gracefully).
pub async fn serve(server: kelson_server::Server, transport: Transport) -> Result<()> {
    match transport {
        Transport::Stdio => {
            kelson_server::stdio::serve_stdio(server, Default::default()).await?;
        }
        #[cfg(feature = "http")]
        Transport::Http(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
                let why = match e.kind() {
                    std::io::ErrorKind::AddrInUse => {
                        "the address is in use (is another server running there?)".to_owned()
                    }
                    _ => e.to_string(),
                };
                std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {why}"))
            })?;
            eprintln!(
                "{} serving MCP at http://{}/mcp",
                server.info().name,
                listener.local_addr()?
            );
            let service = kelson_http::server::McpService::new(server, Default::default());
            kelson_http::server::serve(listener, service).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Transport;

    fn parse(args: &[&str]) -> super::Result<Transport> {
        Transport::parse(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn the_command_line_names_the_transport() {
        assert_eq!(parse(&[]).unwrap(), Transport::Stdio);
        assert_eq!(parse(&["--stdio"]).unwrap(), Transport::Stdio);
        assert_eq!(
            parse(&["--http", "127.0.0.1:9"]).unwrap(),
            Transport::Http("127.0.0.1:9".parse().unwrap())
        );
        assert_eq!(
            parse(&["--http=[::1]:80"]).unwrap(),
            Transport::Http("[::1]:80".parse().unwrap())
        );
        let err = parse(&["--http"]).unwrap_err().to_string();
        assert!(err.contains("needs an address"), "{err}");
        let err = parse(&["--http", "nowhere"]).unwrap_err().to_string();
        assert!(err.contains("\"nowhere\""), "{err}");
        let err = parse(&["--verbose"]).unwrap_err();
        assert!(
            err.to_string().contains("usage: [--stdio | --http ADDR]"),
            "{err}"
        );
        // A `main` that returns it through `?` prints words, not a quoted string.
        assert_eq!(
            format!("{err:?}"),
            "unknown argument --verbose; usage: [--stdio | --http ADDR]"
        );
    }
}
