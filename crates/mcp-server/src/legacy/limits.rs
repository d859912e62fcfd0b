//! What handshake-era sessions may keep of what their clients sent.
//!
//! A session outlives the request that opened it (30 minutes of idleness on HTTP by default), so
//! whatever it keeps from the client is memory the client chose: the capabilities and identity
//! declared in `initialize`, and the URIs given to `resources/subscribe`. Each is bounded per
//! session, and all sessions of one server together are bounded by a budget of bytes
//! ([`SessionLimits::memory`]). The bytes counted are those of the JSON the client sent: the parsed
//! form takes several times that, which the defaults allow for.
//!
//! An adversarial review measured what an unbounded `initialize` costs: 140 of them, each with
//! 2.95 MB of `capabilities.experimental` (under the 4 MiB message limit), took a server to 2.8 GB.
//! With these bounds such an `initialize` is refused with -32602 naming the limit, and no client
//! can make sessions keep more than the budget together.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bounds on what handshake-era sessions keep; part of [`ServerConfig`](crate::ServerConfig).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SessionLimits {
    /// The largest `capabilities` object `initialize` may declare, in bytes of JSON (16 KiB).
    /// Hosts declare a few hundred bytes.
    pub capabilities: usize,
    /// The largest `clientInfo` object, in bytes of JSON (8 KiB: room for a small icon).
    pub client_info: usize,
    /// The most URIs one session may be subscribed to (1,024).
    pub subscriptions: usize,
    /// The longest URI `resources/subscribe` takes, in bytes (8 KiB).
    pub uri: usize,
    /// The most bytes of URIs one session's subscriptions may hold together (256 KiB).
    pub subscription_bytes: usize,
    /// What every session of this server may keep together, in bytes of the JSON their clients
    /// sent (declarations and subscriptions; 32 MiB). A transport refuses a new session beyond it
    /// as it refuses one beyond its count (HTTP: 503), and a subscription beyond it is refused.
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
            memory: 32 * 1024 * 1024,
        }
    }
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
