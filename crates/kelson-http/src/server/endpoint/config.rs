//! The endpoint's settings, apart from the listener's: they hold wherever the endpoint is mounted.

use std::time::Duration;

use super::{Health, LegacyMode, OriginPolicy};

/// Settings of the HTTP endpoint: what it answers and how, wherever it is mounted (in axum, or on
/// this crate's listener, whose own settings are [`ListenerConfig`](crate::server::ListenerConfig)).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The endpoint path.
    pub path: String,
    /// The largest request body accepted, in bytes (413 beyond it). On this crate's listener a
    /// longer HTTP/1.1 body is not even read.
    pub max_body: usize,
    /// How often an idle SSE stream gets a keep-alive comment line; zero disables them.
    pub keep_alive: Duration,
    /// Which `Host` and `Origin` values are accepted.
    pub policy: OriginPolicy,
    /// How many notifications may queue for a slow client on one streamed request before the
    /// oldest advisory ones (progress, log) are dropped.
    pub notification_buffer: usize,
    /// Where to answer `GET` with the server's metrics ([`Server::metrics`](kelson_server::Server::metrics)) in the Prometheus
    /// text format, behind the same Host/Origin policy; `None` (the default) serves none. It must
    /// differ from [`path`](Self::path). To serve them on another address, use [`MetricsService`](super::MetricsService).
    pub metrics_path: Option<String>,
    /// Liveness and readiness (`GET /healthz`, `GET /readyz` unless changed) for load balancers
    /// and orchestrators, behind the same Host/Origin policy; `None` (the default) serves neither.
    /// Their paths must differ from [`path`](Self::path).
    pub health: Option<Health>,
    /// How handshake-era clients are served, when the server serves them
    /// ([`kelson_server::Eras::Both`]): with `Mcp-Session-Id` sessions (the default) or statelessly.
    pub legacy: LegacyMode,
    /// The most legacy sessions kept at once; `initialize` gets 503 beyond it.
    pub max_sessions: usize,
    /// The most legacy sessions one caller may keep at once: a principal behind an auth layer,
    /// else a client address (an IPv6 /64; loopback addresses are not counted apart). A caller at
    /// its share that opens another ends its own least recently used idle session to make room,
    /// and gets 503 when all of them are in use. The default is 256.
    pub max_sessions_per_caller: usize,
    /// How long a legacy session may go unused (no request, no open GET stream) before it ends.
    pub session_idle: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".to_owned(),
            max_body: 4 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            policy: OriginPolicy::loopback(),
            notification_buffer: 256,
            metrics_path: None,
            health: None,
            legacy: LegacyMode::Sessions,
            max_sessions: 10_000,
            max_sessions_per_caller: 256,
            session_idle: Duration::from_secs(30 * 60),
        }
    }
}
