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
mod defs;
mod error;
mod handler;
mod hub;
mod legacy;
mod methods;
mod mrtr;
pub mod observe;
mod principal;
mod registry;
mod route;
mod router;
pub mod schema;
mod scopes;
mod server;
mod transport;

pub use context::{NotificationSink, RequestContext};
pub use defs::{PromptDef, ToolDef};
pub use error::{BuildError, HandlerError, InputRequired, resource_not_found};
pub use handler::extract::{CallParts, FromCall, State, Uri};
pub use handler::func::{PromptFn, ResourceFn, ToolFn};
pub use handler::output::{IntoPromptResult, IntoReadResult, IntoToolResult, Json};
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
pub use route::{Route, Toolbox};
pub use router::{Incoming, Outcome, Prepared, Reply, ReplyMessage, RequestIo, ToolCallGuard};
pub use schema::schema_object;
pub use scopes::{INSUFFICIENT_SCOPE, Scoped, Scopes, WithScopes};
pub use server::{SUPPORTED_VERSIONS, Server, ServerBuilder, ServerConfig};
pub use transport::stdio;

/// What the `mcp-macros` expansions name. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use mcp_types;
    pub use schemars;
    pub use serde;
}
