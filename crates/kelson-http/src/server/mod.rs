//! The Streamable HTTP server.

mod conn;
mod endpoint;

pub use conn::{
    FrontService, IncomingBody, ServeError, serve, serve_metrics, serve_with_shutdown,
    serve_wrapped_with_shutdown, shutdown_signal,
};
#[cfg(feature = "tls")]
pub use conn::{
    ServerTls, TlsError, serve_tls, serve_tls_with_shutdown, serve_tls_wrapped_with_shutdown,
};
pub use endpoint::{
    BoxError, ClientAddr, Health, HttpConfig, LegacyMode, McpBody, McpService, MetricsService,
    OriginPolicy, Refusal, insufficient_scope_challenge,
};

/// For the fuzz targets (`fuzz/` at the repository root), not part of the API: the HTTP/1.1
/// request reader over bytes in memory.
#[doc(hidden)]
pub mod __fuzz {
    pub use super::conn::fuzz::{End, Read, read_requests};
}
