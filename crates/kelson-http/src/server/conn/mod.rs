//! The listener and its connections: accepting, HTTP/1.1 (served here, [`h1`]) and HTTP/2 (served
//! by hyper, [`h2`]) over TCP or TLS, and what bounds them.
mod accept;
mod h1;
mod h2;
mod io;
mod memory;
mod stop;
mod throttle;
mod timer;
#[cfg(feature = "tls")]
mod tls;

pub(crate) use accept::default_max_connections;
pub use accept::{
    FrontService, IncomingBody, ServeError, serve, serve_metrics, serve_with_shutdown,
    serve_wrapped_with_shutdown, shutdown_signal,
};
#[cfg(feature = "tls")]
pub use accept::{serve_tls, serve_tls_with_shutdown, serve_tls_wrapped_with_shutdown};
pub use h1::fuzz;
#[cfg(feature = "tls")]
pub use tls::{ServerTls, TlsError};
