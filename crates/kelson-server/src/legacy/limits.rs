//! What handshake-era sessions may keep of what their clients sent.
//!
//! A session outlives the request that opened it (30 minutes of idleness on HTTP by default), so
//! whatever it keeps from the client is memory the client chose: the capabilities and identity
//! declared in `initialize`, and the URIs given to `resources/subscribe`. Each is bounded per
//! session, and all sessions of one server together are bounded by a budget
//! ([`SessionLimits::memory`]).
//!
//! The budget counts an estimate of memory, not bytes received: parsed JSON takes several times
//! its text (one-character members took 13 times as much, measured with `scripts/bench-sessions
//! --experimental-shape keys`), so a declaration is charged [`DECLARATION_FACTOR`] times its
//! length, and a subscribed URI its length and [`URI_OVERHEAD`]. An adversarial review measured
//! what unbounded declarations cost: 140 `initialize` requests, each with 2.95 MB of
//! `capabilities.experimental` (under the 4 MiB message limit), took a server to 2.8 GB. Now each is
//! refused with -32602 naming the limit, and no clients can make sessions keep more than the
//! budget together.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a declaration of `initialize` is charged per byte of its JSON: an upper bound of what
/// its parsed form takes.
pub const DECLARATION_FACTOR: usize = 16;

/// What a subscription is charged beyond its URI's bytes: the set's node and the string's header.
pub const URI_OVERHEAD: usize = 64;

/// Bounds on what handshake-era sessions keep; part of [`ServerConfig`](crate::ServerConfig).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SessionLimits {
    /// The largest `capabilities` object `initialize` may declare, in bytes of JSON (16 KiB);
    /// larger is refused with -32602. Hosts declare a few hundred bytes.
    pub capabilities: usize,
    /// The largest `clientInfo` object kept, in bytes of JSON (8 KiB). A larger one is kept
    /// without its `icons` (which a server never shows); if still larger, refused with -32602.
    pub client_info: usize,
    /// The most URIs one session may be subscribed to (1,024).
    pub subscriptions: usize,
    /// The longest URI `resources/subscribe` takes, in bytes (8 KiB).
    pub uri: usize,
    /// The most bytes of URIs one session's subscriptions may hold together (256 KiB).
    pub subscription_bytes: usize,
    /// What every session of this server may keep together (128 MiB), as estimated: each
    /// declaration [`DECLARATION_FACTOR`] times its bytes of JSON, each subscription its URI's
    /// bytes and [`URI_OVERHEAD`]. A transport refuses a new session beyond it as it refuses one
    /// beyond its count (HTTP: 503), and a subscription beyond it is refused with -32603. Typical
    /// sessions (a few hundred bytes declared) are charged a few KiB, so the count of sessions is
    /// the bound they meet first.
    pub memory: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            capabilities: 16 * 1024,
            client_info: 8 * 1024,
            subscriptions: 1024,
            uri: 8 * 1024,
            subscription_bytes: 256 * 1024,
            memory: 128 * 1024 * 1024,
        }
    }
}

/// What a session is charged for declarations of `bytes` bytes of JSON.
pub(crate) fn declaration_charge(bytes: usize) -> usize {
    bytes.saturating_mul(DECLARATION_FACTOR)
}

/// What a session is charged for subscribing to `uri`.
pub(crate) fn uri_charge(uri: &str) -> usize {
    uri.len() + URI_OVERHEAD
}

/// The bytes that every session of one server keeps, counted as they are taken and given back.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    bytes: AtomicUsize,
}

impl Kept {
    pub(crate) fn get(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Counts `bytes` more when they fit under `budget` (or when `force`), returning whether they
    /// were counted.
    fn take(&self, bytes: usize, budget: usize, force: bool) -> bool {
        let mut now = self.bytes.load(Ordering::Relaxed);
        loop {
            let next = now.saturating_add(bytes);
            if next > budget && !force {
                return false;
            }
            match self
                .bytes
                .compare_exchange_weak(now, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => now = seen,
            }
        }
    }

    fn give_back(&self, bytes: usize) {
        self.bytes.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// What one session holds of the server's [`Kept`] bytes; given back when the session is dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    kept: Arc<Kept>,
    bytes: AtomicUsize,
}

impl Charge {
    /// A session's first charge: its declarations, counted even beyond the budget (the transport
    /// decides whether to keep the session, from [`Kept::get`]).
    pub(crate) fn new(kept: Arc<Kept>, bytes: usize) -> Self {
        kept.take(bytes, usize::MAX, true);
        Charge {
            kept,
            bytes: AtomicUsize::new(bytes),
        }
    }

    /// Counts `bytes` more for this session if the server's budget has room.
    pub(crate) fn add(&self, bytes: usize, budget: usize) -> bool {
        if !self.kept.take(bytes, budget, false) {
            return false;
        }
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        true
    }

    /// Gives `bytes` of this session's back.
    pub(crate) fn sub(&self, bytes: usize) {
        let bytes = bytes.min(self.bytes.load(Ordering::Relaxed));
        self.bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.kept.give_back(bytes);
    }

    /// The bytes this session holds.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.kept.give_back(*self.bytes.get_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_counted_and_given_back() {
        let kept = Arc::new(Kept::default());
        let a = Charge::new(kept.clone(), 100);
        let b = Charge::new(kept.clone(), 50);
        assert_eq!(kept.get(), 150);
        assert!(a.add(40, 200));
        assert!(!b.add(20, 200), "190 + 20 is over the budget of 200");
        assert_eq!(kept.get(), 190);
        a.sub(1000);
        assert_eq!(a.bytes(), 0, "a charge never gives back more than it holds");
        assert_eq!(kept.get(), 50);
        drop(b);
        assert_eq!(kept.get(), 0);
        drop(a);
        assert_eq!(kept.get(), 0);
    }
}
