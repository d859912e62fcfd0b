//! The Model Context Protocol (2026-07-28) server runtime.
//!
//! A [`Server`] holds an immutable registry of tools, resources, resource templates, prompts and a
//! completion handler, built once and shared. Transports feed it one message at a time: the stdio
//! transport is here ([`stdio`]); Streamable HTTP is in `mcp-http`. Every request is a function call:
//! no handshake, no session, no per-request server.
//!
//! Observers ([`observe`]) see every request, notification and listen stream on every transport:
//! [`Metrics`] counts them for Prometheus and [`RequestLog`] logs one `tracing` event per request.
//!
//! ```
//! use mcp_server::{Server, RequestContext, stdio};
//! use mcp_types::{CallToolResult, Tool};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Echo {
//!     /// The text to send back.
//!     text: String,
//! }
//!
//! # fn main() -> Result<(), mcp_server::BuildError> {
//! let server = Server::builder("echo-server", "1.0.0")
//!     .typed_tool(
//!         Tool::new("echo", Default::default()).with_description("Echoes its input"),
//!         |_ctx: RequestContext, args: Echo| async move { Ok(CallToolResult::text(args.text)) },
//!     )
//!     .build()?;
//! // Serve it: `stdio::serve_stdio(server, Default::default()).await`.
//! # let _ = server;
//! # Ok(())
//! # }
//! ```

mod context;
mod error;
mod handler;
mod hub;
mod legacy;
mod methods;
mod mrtr;
pub mod observe;
mod principal;
mod registry;
mod router;
pub mod schema;
mod scopes;
mod server;
mod transport;
mod typed;

pub use context::{NotificationSink, RequestContext};
pub use error::{BuildError, HandlerError, InputRequired, resource_not_found};
pub use handler::{
    BoxFuture, CompletionHandler, Completions, PromptHandler, ResourceHandler, TemplateVars,
    ToolHandler, ToolResult,
};
pub use hub::ListenStream;
pub use legacy::{Eras, LEGACY_VERSIONS, LegacyNotifications, LegacySession, TrackGuard};
pub use mrtr::{KeyTooShort, MIN_KEY_LEN, StateError, StateSealer};
pub use observe::{Metrics, RequestLog, RequestObserver, RequestProbe};
pub use principal::{InsufficientScope, Principal, PrincipalBuilder};
pub use registry::{TemplateError, UriTemplate};
pub use router::{Incoming, Outcome, Prepared, Reply, ReplyMessage, RequestIo, ToolCallGuard};
pub use scopes::{INSUFFICIENT_SCOPE, Scoped, Scopes, WithScopes};
pub use server::{SUPPORTED_VERSIONS, Server, ServerBuilder, ServerConfig};
pub use transport::stdio;
pub use typed::schema_object;
