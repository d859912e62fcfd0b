//! The listener and its connections: what [`serve`](crate::server::serve) runs an endpoint on.
//!
//! The endpoint is a `tower::Service` that any HTTP stack can serve; this is the crate's own,
//! because an MCP endpoint needs more bounded than a general server bounds. Every open
//! `subscriptions/listen` stream on HTTP/1.1 holds a connection of its own, and hyper's HTTP/1
//! connection keeps 8 KiB buffers for as long as it lives, so HTTP/1.1 is served here ([`h1`]:
//! nothing allocated while a connection waits); HTTP/2 (h2c, or ALPN `h2` over TLS) is hyper's,
//! with the idle and write timeouts hyper lacks kept around it ([`h2`]). Around both: the accept
//! loop with its connection caps and back-off ([`accept`]), telling the protocol by the first bytes
//! ([`sniff`]), TLS ([`tls`], feature `tls`), the byte streams served ([`io`]), one reusable timer
//! per connection ([`timer`]), the memory budget of large responses ([`memory`]), the stop signal
//! of a graceful shutdown ([`stop`]) and rate-limited warnings ([`throttle`]).
//!
//! Nothing here reads MCP: a connection hands whole requests to a handler and writes the
//! [`McpBody`](crate::server::McpBody) it answers with. What bounds the listener is its own
//! [`ListenerConfig`], apart from the endpoint's [`HttpConfig`](crate::server::HttpConfig): the
//! endpoint mounted in axum has none of these settings, so they are not the endpoint's to hold.

pub(crate) mod accept;
mod h1;
mod h2;
mod io;
mod memory;
mod sniff;
mod stop;
mod throttle;
mod timer;
#[cfg(feature = "tls")]
mod tls;

use std::time::Duration;

pub use accept::ServeError;
pub(crate) use accept::{Limits, TlsSide};
pub(crate) use h1::RequestBody;
pub use h1::fuzz;
#[cfg(feature = "tls")]
pub use tls::{ServerTls, TlsError};

/// Settings of the listener that [`serve`](crate::server::serve) runs an endpoint on: how long its
/// shutdown waits, and what bounds its connections in time, number and memory.
///
/// They apply only where this crate accepts the connections; the endpoint's own settings
/// ([`HttpConfig`](crate::server::HttpConfig)) apply wherever it is mounted. The listener reads
/// HTTP/1.1 bodies up to the endpoint's
/// [`max_body`](crate::server::HttpConfig::max_body), and leaves longer ones unread.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ListenerConfig {
    /// How long in-flight requests may run after shutdown begins.
    pub drain: Duration,
    /// How long a new connection may stay silent before its first bytes arrive; it is closed
    /// then, so that connections opened and left idle cannot pile up. On HTTP/1.1 it also bounds
    /// how long a request head may take once it has begun, and a body that did not come with its
    /// head (408 after it). Zero waits forever.
    pub first_bytes_timeout: Duration,
    /// How long a connection may stay open with no request in progress: on HTTP/1.1 between two
    /// requests, on HTTP/2 while it has no open stream (it is sent GOAWAY then). Zero waits
    /// forever. The default, 2 minutes, is longer than the 90 s for which common HTTP clients
    /// (reqwest, Go's) keep an idle connection, so that they are not caught sending on a
    /// connection the server is closing.
    pub idle_timeout: Duration,
    /// How long a response may make no progress, its client reading none of it, before it is
    /// abandoned and the connection closed (on HTTP/2: before the connection, none of whose
    /// responses made progress, is closed). Zero waits forever.
    pub write_timeout: Duration,
    /// The most bytes that responses larger than 64 KiB may hold at once across the listener
    /// while their clients read them; a large response beyond it is answered with 503 and a
    /// `Retry-After` instead.
    pub response_memory: usize,
    /// The most connections open at once. A connection accepted beyond it is closed at once
    /// (and counted), rather than left waiting in the kernel's queue. The default is the process's
    /// limit of open files less a reserve for the server's own (an eighth of it, at least 64),
    /// and at most 10,000.
    pub max_connections: usize,
    /// The most streams an HTTP/2 client may open at once on one connection.
    pub h2_max_concurrent_streams: u32,
    /// The largest request header section, in bytes: the HTTP/1.1 request head (answered with
    /// 431 beyond it) and the HTTP/2 header list (`SETTINGS_MAX_HEADER_LIST_SIZE`). The default,
    /// 64 KiB, leaves room for long `Mcp-Param-*` values and bearer tokens.
    pub max_header_bytes: usize,
    /// The most connections open at once from one client IP address; `None` (the default): no
    /// limit but [`max_connections`](Self::max_connections). One address cannot then take every
    /// connection; mind that clients behind one NAT or proxy share an address.
    pub max_connections_per_address: Option<usize>,
}

impl Default for ListenerConfig {
    fn default() -> Self {
        ListenerConfig {
            drain: Duration::from_secs(10),
            first_bytes_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            write_timeout: Duration::from_secs(30),
            response_memory: 64 * 1024 * 1024,
            max_connections: default_max_connections(),
            h2_max_concurrent_streams: 100,
            max_header_bytes: 64 * 1024,
            max_connections_per_address: None,
        }
    }
}

/// The default of [`ListenerConfig::max_connections`]: the limit of open files less a reserve,
/// within 16 and 10,000.
fn default_max_connections() -> usize {
    let limit = open_files_limit().unwrap_or(1024);
    let reserve = (limit / 8).max(64);
    limit.saturating_sub(reserve).clamp(16, 10_000)
}

/// The soft limit of open files of this process, from /proc on Linux (`std` has no `getrlimit`).
fn open_files_limit() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line["Max open files".len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(usize::MAX);
    }
    soft.parse().ok()
}
