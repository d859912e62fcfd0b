//! The endpoint's settings.

use std::time::Duration;

use super::{Health, LegacyMode, OriginPolicy};

/// Settings of the HTTP endpoint.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The endpoint path.
    pub path: String,
    /// The largest request body accepted, in bytes (413 beyond it).
    pub max_body: usize,
    /// How often an idle SSE stream gets a keep-alive comment line; zero disables them.
    pub keep_alive: Duration,
    /// Which `Host` and `Origin` values are accepted.
    pub policy: OriginPolicy,
    /// How many notifications may queue for a slow client on one streamed request before the
    /// oldest advisory ones (progress, log) are dropped.
    pub notification_buffer: usize,
    /// How long in-flight requests may run after shutdown begins (used by [`serve`](crate::server::serve)).
    pub drain: Duration,
    /// How long a new connection may stay silent before its first bytes arrive; it is closed
    /// then, so that connections opened and left idle cannot pile up. On HTTP/1.1 it also bounds
    /// how long a request head may take once it has begun, and a body that did not come with its
    /// head (408 after it). Used by [`serve`](crate::server::serve); zero waits forever.
    pub first_bytes_timeout: Duration,
    /// How long a connection may stay open with no request in progress: on HTTP/1.1 between two
    /// requests, on HTTP/2 while it has no open stream (it is sent GOAWAY then). Used by
    /// [`serve`](crate::server::serve); zero waits forever. The default, 2 minutes, is longer than the 90 s for which
    /// common HTTP clients (reqwest, Go's) keep an idle connection, so that they are not caught
    /// sending on a connection the server is closing.
    pub idle_timeout: Duration,
    /// How long a response may make no progress, its client reading none of it, before it is
    /// abandoned and the connection closed (on HTTP/2: before the connection, none of whose
    /// responses made progress, is closed). Used by [`serve`](crate::server::serve); zero waits forever.
    pub write_timeout: Duration,
    /// The most bytes that responses larger than 64 KiB may hold at once across the listener
    /// while their clients read them; a large response beyond it is answered with 503 and a
    /// `Retry-After` instead. Used by [`serve`](crate::server::serve).
    pub response_memory: usize,
    /// The most connections open at once. A connection accepted beyond it is closed at once
    /// (and counted), rather than left waiting in the kernel's queue. The default is the process's
    /// limit of open files less a reserve for the server's own (an eighth of it, at least 64),
    /// and at most 10,000. Used by [`serve`](crate::server::serve).
    pub max_connections: usize,
    /// The most streams an HTTP/2 client may open at once on one connection. Used by [`serve`](crate::server::serve).
    pub h2_max_concurrent_streams: u32,
    /// The largest request header section, in bytes: the HTTP/1.1 request head (answered with
    /// 431 beyond it) and the HTTP/2 header list (`SETTINGS_MAX_HEADER_LIST_SIZE`). The default,
    /// 64 KiB, leaves room for long `Mcp-Param-*` values and bearer tokens. Used by [`serve`](crate::server::serve).
    pub max_header_bytes: usize,
    /// The most connections open at once from one client IP address; `None` (the default): no
    /// limit but [`max_connections`](Self::max_connections). One address cannot then take every
    /// connection; mind that clients behind one NAT or proxy share an address. Used by [`serve`](crate::server::serve).
    pub max_connections_per_address: Option<usize>,
    /// Where to answer `GET` with the server's metrics ([`Server::metrics`]) in the Prometheus
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
            drain: Duration::from_secs(10),
            first_bytes_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            write_timeout: Duration::from_secs(30),
            response_memory: 64 * 1024 * 1024,
            max_connections: crate::server::conn::default_max_connections(),
            h2_max_concurrent_streams: 100,
            max_header_bytes: 64 * 1024,
            max_connections_per_address: None,
            metrics_path: None,
            health: None,
            legacy: LegacyMode::Sessions,
            max_sessions: 10_000,
            max_sessions_per_caller: 256,
            session_idle: Duration::from_secs(30 * 60),
        }
    }
}
