//! Validated tokens remembered until they expire, keyed by a SHA-256 digest so that the token
//! itself is never stored.

use std::collections::HashMap;
use std::sync::Mutex;

use kelson_server::Principal;
use sha2::{Digest, Sha256};

/// A token's cache key.
pub(crate) type TokenKey = [u8; 32];

pub(crate) fn token_key(token: &str) -> TokenKey {
    Sha256::digest(token.as_bytes()).into()
}

/// A bounded map from token digests to the principal they stand for and the second (Unix time)
/// until which that holds.
pub(crate) struct TokenCache {
    capacity: usize,
    entries: Mutex<HashMap<TokenKey, (Principal, u64)>>,
}

impl TokenCache {
    pub(crate) fn new(capacity: usize) -> Self {
        TokenCache {
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The principal of a token still valid at `now`.
    pub(crate) fn get(&self, key: &TokenKey, now: u64) -> Option<Principal> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries.get(key) {
            Some((principal, until)) if now < *until => Some(principal.clone()),
            _ => None,
        }
    }

    /// Remembers a token until `until`. When full, expired entries go first; if none has expired,
    /// the whole map is cleared, which costs only a validation per token afterwards.
    pub(crate) fn insert(&self, key: TokenKey, principal: Principal, until: u64, now: u64) {
        if self.capacity == 0 || until <= now {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (_, u)| now < *u);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(key, (principal, until));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_the_map_stays_bounded() {
        let cache = TokenCache::new(2);
        let p = Principal::builder("alice").build();
        cache.insert(token_key("a"), p.clone(), 100, 10);
        cache.insert(token_key("b"), p.clone(), 20, 10);
        assert!(cache.get(&token_key("a"), 50).is_some());
        assert!(cache.get(&token_key("b"), 20).is_none(), "expired at 20");
        // Full: the expired "b" makes room for "c".
        cache.insert(token_key("c"), p.clone(), 100, 30);
        assert!(cache.get(&token_key("a"), 30).is_some());
        assert!(cache.get(&token_key("c"), 30).is_some());
        // Full of live entries: cleared, then "d" goes in.
        cache.insert(token_key("d"), p, 100, 30);
        assert!(cache.get(&token_key("a"), 30).is_none());
        assert!(cache.get(&token_key("d"), 30).is_some());
    }
}
