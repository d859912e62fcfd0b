//! The Model Context Protocol (2026-07-28) server runtime.
//!
//! A [`Server`] holds an immutable registry of tools, resources, resource templates, prompts and a
//! completion handler, built once and shared. Transports feed it one message at a time: the stdio
//! transport is here ([`stdio`]); Streamable HTTP is in `kelson-http`. Every request is a function call:
//! no handshake, no session, no per-request server.
//!
//! Observers ([`observe`]) see every request, notification and listen stream on every transport:
//! [`Metrics`] counts them for Prometheus and [`RequestLog`] logs one `tracing` event per request.
//!
//! Handlers are plain async functions. Each parameter is extracted from the call ([`FromCall`]):
//! the arguments as a type of your own (its JSON Schema becomes the tool's `inputSchema`),
//! [`State<S>`] given once to the builder, the [`RequestContext`] (progress, logging,
//! cancellation, MRTR input requests), the caller's [`Principal`]. The return value becomes the
//! result ([`IntoToolResult`]): text, [`Json<T>`] with a generated `outputSchema`, content blocks,
//! or a `Result` whose error, through `?` from any error type, the model reads as an `isError`
//! result.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! use kelson_server::{HandlerError, Json, RequestContext, Server, State, ToolDef, stdio};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! /// Echoes its input.
//! #[derive(Deserialize, JsonSchema)]
//! struct Echo {
//!     /// The text to send back.
//!     text: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Echoed {
//!     text: String,
//!     calls: u64,
//! }
//!
//! async fn echo(
//!     ctx: RequestContext,
//!     calls: State<AtomicU64>,
//!     Echo { text }: Echo,
//! ) -> Result<Json<Echoed>, HandlerError> {
//!     if text.is_empty() {
//!         return Err("say something".into());
//!     }
//!     ctx.progress(1.0, Some(1.0), None);
//!     let calls = calls.fetch_add(1, Ordering::Relaxed) + 1;
//!     Ok(Json(Echoed { text, calls }))
//! }
//!
//! # fn main() -> Result<(), kelson_server::BuildError> {
//! let server = Server::builder("echo-server", "1.0.0")
//!     .state(AtomicU64::new(0))
//!     .tool(ToolDef::new("echo").read_only(true), echo)
//!     .build()?;
//! let tool = &server.tools()[0];
//! assert_eq!(tool.description.as_deref(), Some("Echoes its input."));
//! assert!(tool.output_schema.is_some());
//! // Serve it: `stdio::serve_stdio(server, Default::default()).await`.
//! # let _ = stdio::serve_stdio;
//! # Ok(())
//! # }
//! ```
//!
//! The `kelson-macros` crate generates the same registrations from `#[tool]` functions, and the raw
//! handler traits ([`ToolHandler`] and friends, registered with
//! [`tool_handler`](ServerBuilder::tool_handler) and its siblings) take the request as it came.

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
pub mod relay;
mod route;
mod router;
pub mod schema;
mod scopes;
mod server;
pub mod tasks;
pub mod transport;

pub use context::RequestContext;
pub use defs::{PromptDef, ToolDef};
pub use error::{BuildError, HandlerError, InputRequired, resource_not_found};
pub use handler::extract::{CallParts, FromCall, State, Uri};
pub use handler::func::{PromptFn, ResourceFn, ToolFn};
pub use handler::output::{IntoPromptResult, IntoReadResult, IntoToolResult, Json};
pub use handler::{
    BoxFuture, CompletionHandler, Completions, PromptHandler, ResourceHandler, TemplateVars,
    ToolHandler, ToolResult,
};
pub use legacy::{DECLARATION_FACTOR, Eras, LEGACY_VERSIONS, SessionLimits, URI_OVERHEAD};
pub use mrtr::{KeyTooShort, MIN_KEY_LEN, StateError, StateSealer};
pub use observe::{Metrics, RequestLog, RequestObserver, RequestProbe};
pub use principal::{InsufficientScope, Principal, PrincipalBuilder};
pub use registry::{TemplateError, UriTemplate};
pub use route::{Route, Toolbox};
pub use schema::schema_object;
pub use scopes::{INSUFFICIENT_SCOPE, Scoped, Scopes, WithScopes};
pub use server::{SUPPORTED_VERSIONS, Server, ServerBuilder, ServerConfig};
pub use tasks::{TaskConfig, TaskPolicy, TaskStart, TaskSupport};
pub use transport::stdio;

/// What the `kelson-macros` expansions name. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use kelson_types;
    pub use schemars;
    pub use serde;
}
