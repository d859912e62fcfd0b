//! Sealed `requestState`: the server's memory across MRTR rounds, carried by the client.
//!
//! spec 2026-07-28 basic/patterns/mrtr: the state comes back attacker-controlled, so it is
//! integrity-protected with HMAC-SHA256 and bound to the principal, a short expiry, the method and a
//! digest of the request's salient params. It is not encrypted: it holds only what the client itself
//! supplied (earlier answers) and what the handler chose to keep, so handlers must not put secrets in it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

type HmacSha256 = hmac::Hmac<Sha256>;

/// The shortest server key accepted for sealing state.
pub const MIN_KEY_LEN: usize = 32;

/// What a sealed state carries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct StatePayload {
    /// Format version.
    pub v: u8,
    /// The method the state was issued for.
    pub m: String,
    /// Digest of the request params without `_meta`, `inputResponses` and `requestState`.
    pub d: String,
    /// The principal's id.
    pub p: String,
    /// Expiry, in milliseconds since the Unix epoch.
    pub e: u64,
    /// The input-request keys asked in the round that issued this state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub k: Vec<String>,
    /// Answers gathered in earlier rounds, by key.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub a: Map<String, Value>,
    /// State the handler chose to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s: Option<Value>,
    /// A random value unique to this issued state, for handlers that enforce one-time use.
    pub n: String,
}

/// Why a `requestState` was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The text is not a state this server could have issued, or its signature does not verify.
    #[error("requestState is malformed or its signature does not verify")]
    Tampered,
    /// The state was issued for another method, other params, or another principal.
    #[error("requestState was issued for a different request")]
    Mismatch,
    /// The state is genuine but past its expiry.
    #[error("requestState has expired")]
    Expired,
}

/// Seals and opens `requestState` under a server key.
///
/// Several instances behind a load balancer share state by sharing the key; a random key per process
/// is only the default.
///
/// Keys rotate without refusing states already issued: the sealer seals with its current key and
/// opens with it or with any of its previous keys ([`with_previous`](Self::with_previous)). A
/// previous key is needed for one state lifetime ([`ttl`](Self::ttl)) after it stops sealing.
#[derive(Clone)]
pub struct StateSealer {
    key: HmacSha256,
    /// Keys that sealed earlier and still open what they sealed.
    previous: Vec<HmacSha256>,
    ttl: Duration,
}

impl std::fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("StateSealer")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl StateSealer {
    /// A sealer with a fresh random key, good for one process.
    pub fn random(ttl: Duration) -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system provides random bytes");
        Self::with_key(&key, ttl).expect("32 bytes is a valid key")
    }

    /// A sealer with a configured key of at least [`MIN_KEY_LEN`] bytes.
    pub fn with_key(key: &[u8], ttl: Duration) -> Result<Self, KeyTooShort> {
        if key.len() < MIN_KEY_LEN {
            return Err(KeyTooShort(key.len()));
        }
        Ok(StateSealer {
            key: hmac_key(key),
            previous: Vec::new(),
            ttl,
        })
    }

    /// Also opens states sealed with `key`, a key this sealer's instances sealed with before (at
    /// least [`MIN_KEY_LEN`] bytes). New states are still sealed with the current key.
    pub fn with_previous(mut self, key: &[u8]) -> Result<Self, KeyTooShort> {
        if key.len() < MIN_KEY_LEN {
            return Err(KeyTooShort(key.len()));
        }
        self.previous.push(hmac_key(key));
        Ok(self)
    }

    /// How long issued states stay valid.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    pub(crate) fn seal(&self, payload: &StatePayload) -> String {
        let body = serde_json::to_vec(payload).expect("state payload serializes");
        let mut mac = self.key.clone();
        mac.update(&body);
        let tag = mac.finalize().into_bytes();
        let mut out = B64.encode(&body);
        out.push('.');
        B64.encode_string(tag, &mut out);
        out
    }

    /// Opens a state and checks it against the request it came back with.
    pub(crate) fn open(
        &self,
        token: &str,
        method: &str,
        digest: &str,
        principal: &str,
    ) -> Result<StatePayload, StateError> {
        let (body, tag) = token.split_once('.').ok_or(StateError::Tampered)?;
        let body = B64.decode(body).map_err(|_| StateError::Tampered)?;
        let tag = B64.decode(tag).map_err(|_| StateError::Tampered)?;
        let verifies = |key: &HmacSha256| {
            let mut mac = key.clone();
            mac.update(&body);
            mac.verify_slice(&tag).is_ok()
        };
        if !verifies(&self.key) && !self.previous.iter().any(verifies) {
            return Err(StateError::Tampered);
        }
        let payload: StatePayload =
            serde_json::from_slice(&body).map_err(|_| StateError::Tampered)?;
        if payload.v != 1 {
            return Err(StateError::Tampered);
        }
        if payload.m != method || payload.d != digest || payload.p != principal {
            return Err(StateError::Mismatch);
        }
        if payload.e < now_ms() {
            return Err(StateError::Expired);
        }
        Ok(payload)
    }

    pub(crate) fn expiry(&self) -> u64 {
        now_ms().saturating_add(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX))
    }
}

fn hmac_key(key: &[u8]) -> HmacSha256 {
    HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length")
}

/// A configured state key was shorter than [`MIN_KEY_LEN`] bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the requestState key must be at least {MIN_KEY_LEN} bytes, got {0}")]
pub struct KeyTooShort(pub usize);

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(crate) fn nonce() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    B64.encode(bytes)
}

/// A digest of the request's params without the members that change from round to round.
///
/// The params are written as canonical JSON (object keys sorted at every level) so the digest does
/// not depend on the client's key order.
pub(crate) fn params_digest(params: &Map<String, Value>) -> String {
    let mut hasher = Sha256::new();
    let mut buf = Vec::with_capacity(256);
    buf.push(b'{');
    let mut keys: Vec<&String> = params
        .keys()
        .filter(|k| !matches!(k.as_str(), "_meta" | "inputResponses" | "requestState"))
        .collect();
    keys.sort();
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write_canonical(&mut buf, &Value::String((*k).clone()));
        buf.push(b':');
        write_canonical(&mut buf, &params[k.as_str()]);
    }
    buf.push(b'}');
    hasher.update(&buf);
    B64.encode(hasher.finalize())
}

fn write_canonical(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, k).expect("string serializes");
                out.push(b':');
                write_canonical(out, &map[k.as_str()]);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item);
            }
            out.push(b']');
        }
        scalar => serde_json::to_writer(&mut *out, scalar).expect("scalar serializes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload() -> StatePayload {
        StatePayload {
            v: 1,
            m: "tools/call".into(),
            d: "digest".into(),
            p: String::new(),
            e: now_ms() + 60_000,
            k: vec!["confirm".into()],
            a: Map::new(),
            s: Some(json!({"step": 2})),
            n: nonce(),
        }
    }

    #[test]
    fn a_sealed_state_opens_for_the_same_request() {
        let sealer = StateSealer::random(Duration::from_secs(60));
        let token = sealer.seal(&payload());
        let opened = sealer.open(&token, "tools/call", "digest", "").unwrap();
        assert_eq!(opened.s, Some(json!({"step": 2})));
    }

    #[test]
    fn a_rotated_key_still_opens_what_the_previous_key_sealed() {
        let ttl = Duration::from_secs(60);
        let (old, new, other) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let before = StateSealer::with_key(&old, ttl).unwrap();
        let issued_before = before.seal(&payload());
        // The new key seals; the old one still opens.
        let after = StateSealer::with_key(&new, ttl)
            .unwrap()
            .with_previous(&old)
            .unwrap();
        let issued_after = after.seal(&payload());
        for token in [&issued_before, &issued_after] {
            assert!(after.open(token, "tools/call", "digest", "").is_ok());
        }
        // An instance that has not rotated yet opens neither the new states nor, without the
        // old key, anything but its own.
        assert_eq!(
            before.open(&issued_after, "tools/call", "digest", ""),
            Err(StateError::Tampered)
        );
        let dropped = StateSealer::with_key(&new, ttl).unwrap();
        assert_eq!(
            dropped.open(&issued_before, "tools/call", "digest", ""),
            Err(StateError::Tampered)
        );
        let stranger = StateSealer::with_key(&other, ttl)
            .unwrap()
            .with_previous(&new)
            .unwrap();
        assert!(
            stranger
                .open(&issued_after, "tools/call", "digest", "")
                .is_ok()
        );
        // Previous keys have the same minimum length.
        assert_eq!(
            dropped.with_previous(&[0u8; 8]).map(|_| ()),
            Err(KeyTooShort(8))
        );
    }

    #[test]
    fn tampering_is_detected() {
        let sealer = StateSealer::random(Duration::from_secs(60));
        let token = sealer.seal(&payload());
        let mut bytes = token.clone().into_bytes();
        bytes[3] ^= 1;
        let tampered = String::from_utf8(bytes).unwrap();
        assert_eq!(
            sealer.open(&tampered, "tools/call", "digest", ""),
            Err(StateError::Tampered)
        );
        for junk in ["", "abc", "a.b", "x.", &token.replace('.', "")] {
            assert_eq!(
                sealer.open(junk, "tools/call", "digest", ""),
                Err(StateError::Tampered)
            );
        }
        let other = StateSealer::random(Duration::from_secs(60));
        assert_eq!(
            other.open(&token, "tools/call", "digest", ""),
            Err(StateError::Tampered)
        );
    }

    #[test]
    fn binding_is_checked() {
        let sealer = StateSealer::random(Duration::from_secs(60));
        let token = sealer.seal(&payload());
        assert_eq!(
            sealer.open(&token, "prompts/get", "digest", ""),
            Err(StateError::Mismatch)
        );
        assert_eq!(
            sealer.open(&token, "tools/call", "other", ""),
            Err(StateError::Mismatch)
        );
        assert_eq!(
            sealer.open(&token, "tools/call", "digest", "alice"),
            Err(StateError::Mismatch)
        );
    }

    #[test]
    fn expiry_is_checked() {
        let sealer = StateSealer::random(Duration::from_secs(60));
        let mut p = payload();
        p.e = now_ms() - 1;
        let token = sealer.seal(&p);
        assert_eq!(
            sealer.open(&token, "tools/call", "digest", ""),
            Err(StateError::Expired)
        );
    }

    #[test]
    fn shared_keys_work_across_instances() {
        let key = [7u8; 32];
        let a = StateSealer::with_key(&key, Duration::from_secs(60)).unwrap();
        let b = StateSealer::with_key(&key, Duration::from_secs(60)).unwrap();
        let token = a.seal(&payload());
        assert!(b.open(&token, "tools/call", "digest", "").is_ok());
        assert!(StateSealer::with_key(&key[..16], Duration::from_secs(1)).is_err());
    }

    #[test]
    fn digest_ignores_key_order_and_round_members() {
        let a = json!({"name": "t", "arguments": {"x": 1, "y": [1, {"b": 2, "a": 1}]}, "_meta": {"k": 1}});
        let b = json!({"arguments": {"y": [1, {"a": 1, "b": 2}], "x": 1}, "name": "t", "requestState": "zz", "inputResponses": {}});
        let c = json!({"name": "t", "arguments": {"x": 2, "y": [1, {"a": 1, "b": 2}]}});
        let d = |v: Value| params_digest(v.as_object().unwrap());
        assert_eq!(d(a.clone()), d(b));
        assert_ne!(d(a), d(c));
    }
}
