//! [`ConnectionStats`]: what an HTTP listener's connections cost and how they end, kept by the
//! transport (`kelson-http`'s accept loop) and rendered with the request metrics.
//!
//! These are per connection, not per request, except the response memory, which only responses
//! too large to be written at once touch; so one shared atomic per series is enough.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

/// Why the server closed a connection that was still open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// No request for the idle timeout (HTTP/1.1 between requests, HTTP/2 with no open stream).
    Idle,
    /// Nothing, or not a whole request, within the read timeout.
    ReadTimeout,
    /// A response made no progress for the write timeout: the client stopped reading.
    WriteTimeout,
}

impl CloseReason {
    const ALL: [CloseReason; 3] = [
        CloseReason::Idle,
        CloseReason::ReadTimeout,
        CloseReason::WriteTimeout,
    ];

    /// The `reason` label: `idle`, `read_timeout` or `write_timeout`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CloseReason::Idle => "idle",
            CloseReason::ReadTimeout => "read_timeout",
            CloseReason::WriteTimeout => "write_timeout",
        }
    }

    const fn index(self) -> usize {
        match self {
            CloseReason::Idle => 0,
            CloseReason::ReadTimeout => 1,
            CloseReason::WriteTimeout => 2,
        }
    }
}

/// Connection counters of a listener, and the memory its large responses hold.
///
/// | metric | type | labels |
/// |---|---|---|
/// | `mcp_http_connections_open` | gauge | |
/// | `mcp_http_connections_total` | counter | |
/// | `mcp_http_connections_refused_total` | counter | |
/// | `mcp_http_connections_refused_per_address_total` | counter | |
/// | `mcp_http_connections_closed_total` | counter | `reason` (`idle`, `read_timeout`, `write_timeout`) |
/// | `mcp_http_accept_errors_total` | counter | |
/// | `mcp_http_response_bytes_held` | gauge | |
/// | `mcp_http_responses_over_memory_total` | counter | |
#[derive(Debug, Default)]
pub struct ConnectionStats {
    open: AtomicI64,
    accepted: AtomicU64,
    refused: AtomicU64,
    refused_per_address: AtomicU64,
    closed: [AtomicU64; CloseReason::ALL.len()],
    accept_errors: AtomicU64,
    held: AtomicU64,
    over_memory: AtomicU64,
}

impl ConnectionStats {
    /// A connection was accepted and is being served.
    pub fn opened(&self) {
        self.accepted.fetch_add(1, Relaxed);
        self.open.fetch_add(1, Relaxed);
    }

    /// A connection counted by [`opened`](Self::opened) ended, however it ended.
    pub fn ended(&self) {
        self.open.fetch_sub(1, Relaxed);
    }

    /// A connection was closed as soon as it was accepted, because the most connections allowed
    /// were open.
    pub fn refused(&self) {
        self.refused.fetch_add(1, Relaxed);
    }

    /// A connection was closed as soon as it was accepted, because its client address had the
    /// most connections allowed per address open.
    pub fn refused_per_address(&self) {
        self.refused_per_address.fetch_add(1, Relaxed);
    }

    /// The server closed a connection for `reason`.
    pub fn closed(&self, reason: CloseReason) {
        self.closed[reason.index()].fetch_add(1, Relaxed);
    }

    /// Accepting a connection failed (out of file descriptors, and the like).
    pub fn accept_error(&self) {
        self.accept_errors.fetch_add(1, Relaxed);
    }

    /// Holds `bytes` of response memory if that keeps the total within `limit`; `false` (and
    /// counted) when it would not. Each hold is given back with [`release`](Self::release).
    pub fn try_hold(&self, bytes: u64, limit: u64) -> bool {
        let held = self.held.fetch_update(Relaxed, Relaxed, |held| {
            held.checked_add(bytes).filter(|total| *total <= limit)
        });
        if held.is_err() {
            self.over_memory.fetch_add(1, Relaxed);
        }
        held.is_ok()
    }

    /// Gives back what [`try_hold`](Self::try_hold) held.
    pub fn release(&self, bytes: u64) {
        self.held.fetch_sub(bytes, Relaxed);
    }

    /// Connections open now.
    pub fn open(&self) -> i64 {
        self.open.load(Relaxed)
    }

    /// Connections closed for `reason` so far.
    pub fn closed_for(&self, reason: CloseReason) -> u64 {
        self.closed[reason.index()].load(Relaxed)
    }

    /// Connections refused at the cap so far.
    pub fn refused_count(&self) -> u64 {
        self.refused.load(Relaxed)
    }

    /// Connections refused at the per-address cap so far.
    pub fn refused_per_address_count(&self) -> u64 {
        self.refused_per_address.load(Relaxed)
    }

    /// Bytes of large responses held now.
    pub fn response_bytes_held(&self) -> u64 {
        self.held.load(Relaxed)
    }

    /// Appends the series in the Prometheus text format.
    pub(crate) fn render_into(&self, out: &mut String) {
        let mut one = |name: &str, kind: &str, help: &str, value: &dyn std::fmt::Display| {
            super::text::family(out, name, kind, help);
            let _ = writeln!(out, "{name} {value}");
        };
        one(
            "mcp_http_connections_open",
            "gauge",
            "HTTP connections open now.",
            &self.open.load(Relaxed),
        );
        one(
            "mcp_http_connections_total",
            "counter",
            "HTTP connections accepted.",
            &self.accepted.load(Relaxed),
        );
        one(
            "mcp_http_connections_refused_total",
            "counter",
            "HTTP connections closed on arrival because the most allowed were open.",
            &self.refused.load(Relaxed),
        );
        one(
            "mcp_http_connections_refused_per_address_total",
            "counter",
            "HTTP connections closed on arrival because their address had the most allowed open.",
            &self.refused_per_address.load(Relaxed),
        );
        one(
            "mcp_http_accept_errors_total",
            "counter",
            "Failures to accept an HTTP connection, such as running out of file descriptors.",
            &self.accept_errors.load(Relaxed),
        );
        one(
            "mcp_http_response_bytes_held",
            "gauge",
            "Bytes of large HTTP responses held while clients read them.",
            &self.held.load(Relaxed),
        );
        one(
            "mcp_http_responses_over_memory_total",
            "counter",
            "Large HTTP responses refused with 503 because the response memory was in use.",
            &self.over_memory.load(Relaxed),
        );
        super::text::family(
            out,
            "mcp_http_connections_closed_total",
            "counter",
            "HTTP connections the server closed, by reason.",
        );
        for reason in CloseReason::ALL {
            let _ = writeln!(
                out,
                "mcp_http_connections_closed_total{{reason=\"{}\"}} {}",
                reason.as_str(),
                self.closed_for(reason)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_held_within_the_limit_and_given_back() {
        let stats = ConnectionStats::default();
        assert!(stats.try_hold(60, 100));
        assert!(!stats.try_hold(41, 100), "over the limit");
        assert!(stats.try_hold(40, 100), "exactly at the limit");
        assert_eq!(stats.response_bytes_held(), 100);
        stats.release(60);
        stats.release(40);
        assert_eq!(stats.response_bytes_held(), 0);
        assert!(!stats.try_hold(u64::MAX, u64::MAX - 1));
        let mut out = String::new();
        stats.render_into(&mut out);
        assert!(
            out.contains("mcp_http_responses_over_memory_total 2\n"),
            "{out}"
        );
    }

    #[test]
    fn every_close_reason_is_rendered() {
        let stats = ConnectionStats::default();
        stats.opened();
        stats.opened();
        stats.ended();
        stats.closed(CloseReason::Idle);
        stats.closed(CloseReason::WriteTimeout);
        stats.closed(CloseReason::WriteTimeout);
        let mut out = String::new();
        stats.render_into(&mut out);
        for line in [
            "mcp_http_connections_open 1",
            "mcp_http_connections_total 2",
            "mcp_http_connections_closed_total{reason=\"idle\"} 1",
            "mcp_http_connections_closed_total{reason=\"read_timeout\"} 0",
            "mcp_http_connections_closed_total{reason=\"write_timeout\"} 2",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} in\n{out}");
        }
    }
}
