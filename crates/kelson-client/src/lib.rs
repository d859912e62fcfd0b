//! A Model Context Protocol client for revision 2026-07-28, which also speaks the 2025 handshake era.
//!
//! Connect with [`ClientBuilder::connect_stdio`] (a child process), [`ClientBuilder::connect_http`]
//! (Streamable HTTP) or [`ClientBuilder::connect_stream`] (the stdio framing over any byte stream).
//! Connecting detects the server's era: modern first (`server/discover`), then the legacy
//! `initialize` handshake when the answer says so; every call then works the same way in both eras.
//! [`ClientBuilder::era`] forces one era instead ([`EraChoice`]).
//!
//! - One typed call per method ([`Client::call_tool`], [`Client::read_resource`], ...), each a
//!   [`Request`] that takes per-call options (progress and log callbacks, timeouts, the result as
//!   received) before it is awaited; every request carries `_meta` with the protocol version, the
//!   capabilities the installed input handlers allow, and `clientInfo`.
//! - Multi round-trip requests are driven for you: input the server asks for goes to the handlers
//!   installed on the builder ([`ClientBuilder::on_elicit_form`], ...), and the call is resent with
//!   the answers and the echoed `requestState` under a new id, a bounded number of times.
//! - [`Client::listen`] returns a [`Subscription`], a stream of [`ListenEvent`]s; dropping it
//!   unsubscribes. Dropping any call's future cancels it (HTTP: the response closes; stdio:
//!   `notifications/cancelled`).
//! - Long calls the server turns into tasks (the `io.modelcontextprotocol/tasks` extension,
//!   declared by default, [`ClientBuilder::tasks`]) are waited for transparently:
//!   [`Client::call_tool`] polls `tasks/get` at the task's interval, answers its input requests
//!   with the same handlers, reports its status messages as progress, and cancels it
//!   (`tasks/cancel`) when the call is cancelled, times out or is dropped.
//!   [`Client::call_tool_as_task`], [`Client::get_task`], [`Client::update_task`],
//!   [`Client::cancel_task`] and [`Client::wait_task`] give the handle to callers who want it.
//! - `list_all_*` follow every `nextCursor`, within bounds of pages, items and bytes
//!   ([`ClientBuilder::max_list_pages`], ...): a server whose list never ends fails the call with
//!   [`Error::ListTooLong`] instead of being followed forever.
//! - An optional TTL cache ([`ClientBuilder::cache`], off by default) honours `ttlMs` and
//!   `cacheScope`, keys `private` results by the authorization context, and drops entries when a
//!   listen stream reports a change.
//! - One [`Error`] type whose [`kind`](Error::kind) separates protocol errors, transport failures,
//!   local timeouts and local problems.
//!
//! The HTTP plumbing (headers, statuses, SSE) lives in `kelson_http::client`; this crate decides what
//! the answers mean.
//!
//! ```
//! use kelson_client::{Client, Error};
//! use kelson_server::Server;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Error> {
//! // A server to talk to, served over an in-memory pipe with the stdio framing.
//! let server = Server::builder("demo", "1.0.0")
//!     .tool("hello", || async { "hello, world" })
//!     .build()
//!     .expect("the server builds");
//! let (client_end, server_end) = tokio::io::duplex(64 * 1024);
//! let (server_read, server_write) = tokio::io::split(server_end);
//! tokio::spawn(kelson_server::stdio::serve_stream(server, server_read, server_write, Default::default()));
//!
//! let (read, write) = tokio::io::split(client_end);
//! let client = Client::builder().connect_stream(read, write).await?;
//! assert_eq!(client.era().version(), "2026-07-28");
//!
//! let tools = client.list_all_tools().await?;
//! assert_eq!(tools[0].name, "hello");
//! let result = client.call_tool("hello", json!({})).await?;
//! assert_eq!(result.content[0].as_text(), Some("hello, world"));
//! client.close().await?;
//! # Ok(())
//! # }
//! ```

pub mod auth;
mod cache;
mod client;
mod era;
mod error;
mod handlers;
mod list;
mod listen;
mod methods;
mod request;
mod result;
mod tasks;
mod transport;

pub use client::{Client, ClientBuilder};
pub use era::{Era, EraChoice, LEGACY_VERSIONS, MODERN_VERSIONS};
pub use error::{Error, ErrorKind, ListLimit, StartProblem, Violation};
pub use handlers::{BoxFuture, HandlerError, InputHandler};
pub use listen::{ListenEvent, Subscription};
pub use request::Request;
pub use tasks::{TASK_STATUS_KEY, TaskOrResult};

/// The token of [`Request::cancel_token`], from `tokio-util`.
pub use tokio_util::sync::CancellationToken;
pub use transport::process::Stderr;

/// The client half of the HTTP binding, re-exported for its error type.
pub use kelson_http::client::HttpError;

/// The header types of [`ClientBuilder::header`] and [`Client::set_header`], from the `http`
/// crate, so that setting a header needs no dependency of its own.
pub use http::{HeaderName, HeaderValue};
