//! The Streamable HTTP server: the MCP endpoint, and a listener to serve it on.
//!
//! Two parts, apart because they are used apart:
//!
//! - **The endpoint**, [`McpService`]: a `tower::Service` over a [`kelson_server::Server`] that
//!   answers whole HTTP requests. Mount it in axum (`Router::route_service`) or behind any tower
//!   stack, or serve it with [`serve`]. Its settings, [`HttpConfig`], hold wherever it is mounted:
//!   the path, the body limit, the Host/Origin [`OriginPolicy`], the handshake-era sessions
//!   ([`LegacyMode`]), [`Health`] and metrics paths. Beside it: [`MetricsService`] (the metrics on
//!   an address of their own), [`McpBody`] (every response's body) and
//!   [`insufficient_scope_challenge`] (for auth layers in front).
//! - **The listener**, [`serve`]: this crate's accept loop, which serves HTTP/1.1 itself (no
//!   buffer held by a waiting connection) and h2c or HTTPS ([`ServerTls`], feature `tls`) with
//!   hyper, and bounds connections in time, number and memory. Its settings, [`ListenerConfig`],
//!   mean nothing to an endpoint mounted elsewhere, so they are not [`HttpConfig`]'s.
//!
//! ```no_run
//! use kelson_http::server::{HttpConfig, McpService, serve};
//!
//! # async fn run(server: kelson_server::Server) -> Result<(), kelson_http::server::ServeError> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await.expect("bind");
//! // Until SIGINT or SIGTERM, then a graceful shutdown.
//! serve(listener, McpService::new(server, HttpConfig::default())).await
//! # }
//! ```
//!
//! Everything public is listed here; the modules behind it are private, so that moving code
//! between them never changes a path.

mod conn;
mod endpoint;
mod serve;

pub use conn::{ListenerConfig, ServeError};
#[cfg(feature = "tls")]
pub use conn::{ServerTls, TlsError};
pub use endpoint::{
    BoxError, ClientAddr, Health, HttpConfig, LegacyMode, McpBody, McpService, MetricsService,
    OriginPolicy, Refusal, insufficient_scope_challenge,
};
pub use serve::{Endpoint, FrontService, IncomingBody, Serve, Wrapped, serve, shutdown_signal};

/// For the fuzz targets (`fuzz/` at the repository root), not part of the API: the HTTP/1.1
/// request reader over bytes in memory.
#[doc(hidden)]
pub mod __fuzz {
    pub use super::conn::fuzz::{End, Read, read_requests};
}
