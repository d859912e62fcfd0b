//! The memory large responses hold while clients read them, bounded across a listener.
//!
//! A response is in memory whole before it is written (a JSON body) and stays there until the
//! client has read it: a client that asks for a large resource and never reads keeps it for as
//! long as the write timeout allows. So a body larger than [`LARGE`] holds its size from a
//! budget ([`HttpConfig::response_memory`](crate::server::HttpConfig::response_memory)) while it is
//! written; when the budget is in use the client gets 503 instead, and the body is freed at once.
//! Smaller bodies, the usual case, are written without touching the budget: they fit the kernel's
//! socket buffer, and the connection cap bounds how many there can be.

use std::sync::Arc;

use http::{HeaderValue, Response, StatusCode};
use kelson_server::observe::ConnectionStats;

use super::throttle::{Throttle, throttled_warn};
use crate::server::endpoint::{McpBody, http_error};

/// Bodies larger than this hold memory from the budget.
pub(crate) const LARGE: usize = 64 * 1024;

/// Memory held for one large body, given back when dropped.
pub(crate) struct Held {
    stats: Arc<ConnectionStats>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.stats.release(self.bytes);
    }
}

/// The budget was in use: the body must not be sent.
pub(crate) struct OverMemory;

/// Holds `len` bytes from the budget of `limit` if the body is large; `Ok(None)` for a small one.
pub(crate) fn hold(
    stats: &Arc<ConnectionStats>,
    len: usize,
    limit: u64,
) -> Result<Option<Held>, OverMemory> {
    if len <= LARGE {
        return Ok(None);
    }
    let bytes = len as u64;
    if stats.try_hold(bytes, limit) {
        return Ok(Some(Held {
            stats: stats.clone(),
            bytes,
        }));
    }
    static WARN: Throttle = Throttle::new();
    throttled_warn!(
        WARN,
        bytes,
        limit,
        "a large response was refused with 503: the response memory is in use by clients still \
         reading theirs"
    );
    Err(OverMemory)
}

/// The answer instead of a large response when the listener's response memory is in use.
pub(crate) fn over_memory() -> Response<McpBody> {
    let mut response = http_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "the server holds as many large responses as it may while clients read them; try again shortly",
    );
    response
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_large_bodies_hold_memory_and_give_it_back() {
        let stats = Arc::new(ConnectionStats::default());
        assert!(matches!(hold(&stats, LARGE, 0), Ok(None)));
        let held = hold(&stats, LARGE + 1, 200_000)
            .ok()
            .flatten()
            .expect("held");
        assert_eq!(stats.response_bytes_held(), LARGE as u64 + 1);
        assert!(hold(&stats, 150_000, 200_000).is_err());
        drop(held);
        assert_eq!(stats.response_bytes_held(), 0);
        assert!(matches!(hold(&stats, 150_000, 200_000), Ok(Some(_))));
    }
}
