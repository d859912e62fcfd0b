//! The authorization server's signing keys: a JWKS fetched on demand, cached, and refetched on an
//! unknown `kid` no more often than the configured interval.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;

use crate::fetch::Fetcher;

/// A verification key and the algorithms it may verify.
pub(crate) struct VerifyKey {
    pub(crate) key: DecodingKey,
    /// Never empty, never an HMAC algorithm.
    pub(crate) algorithms: Vec<Algorithm>,
}

/// The keys of one JWKS document.
#[derive(Default)]
pub(crate) struct KeySet {
    by_kid: HashMap<String, Arc<VerifyKey>>,
    /// Every key, for tokens without a `kid`.
    all: Vec<Arc<VerifyKey>>,
}

impl KeySet {
    /// Reads a JWKS document, keeping at most `max` usable signature keys.
    ///
    /// Keys that cannot verify an asymmetric algorithm we allow (symmetric `oct` keys, encryption
    /// keys, unknown types or curves) are skipped, not fatal: one odd key must not disable the rest.
    pub(crate) fn from_document(doc: &JwksDocument, max: usize) -> Self {
        let mut set = KeySet::default();
        for raw in &doc.keys {
            if set.all.len() >= max {
                break;
            }
            let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else {
                continue;
            };
            let Some(key) = verify_key(&jwk) else {
                continue;
            };
            let key = Arc::new(key);
            if let Some(kid) = &jwk.common.key_id {
                set.by_kid.entry(kid.clone()).or_insert_with(|| key.clone());
            }
            set.all.push(key);
        }
        set
    }

    /// The key for a token's `kid` and `alg`: by id, or, without an id, the only key that fits.
    pub(crate) fn find(&self, kid: Option<&str>, alg: Algorithm) -> Lookup {
        match kid {
            Some(kid) => match self.by_kid.get(kid) {
                Some(key) if key.algorithms.contains(&alg) => Lookup::Found(key.clone()),
                Some(_) => Lookup::WrongAlgorithm,
                None => Lookup::Unknown,
            },
            None => {
                let mut fitting = self.all.iter().filter(|k| k.algorithms.contains(&alg));
                match (fitting.next(), fitting.next()) {
                    (Some(key), None) => Lookup::Found(key.clone()),
                    (None, _) => Lookup::Unknown,
                    (Some(_), Some(_)) => Lookup::Ambiguous,
                }
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.all.len()
    }
}

/// The result of looking a key up.
pub(crate) enum Lookup {
    Found(Arc<VerifyKey>),
    Unknown,
    WrongAlgorithm,
    Ambiguous,
}

/// A JWKS document as served; keys are read one by one.
#[derive(Debug, Deserialize)]
pub(crate) struct JwksDocument {
    keys: Vec<serde_json::Value>,
}

/// The algorithms a key may verify, from its type and curve, narrowed by its `alg` if it names one.
fn verify_key(jwk: &Jwk) -> Option<VerifyKey> {
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let by_type: &[Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => &[
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(p) => match p.curve {
            EllipticCurve::P256 => &[Algorithm::ES256],
            EllipticCurve::P384 => &[Algorithm::ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(p) => match p.curve {
            EllipticCurve::Ed25519 => &[Algorithm::EdDSA],
            _ => return None,
        },
        // A symmetric key would let anyone holding the "public" JWKS forge tokens: never HMAC.
        _ => return None,
    };
    let algorithms: Vec<Algorithm> = match jwk.common.key_algorithm {
        Some(named) => {
            let named = Algorithm::try_from(named).ok()?;
            if !by_type.contains(&named) {
                return None;
            }
            vec![named]
        }
        None => by_type.to_vec(),
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(VerifyKey { key, algorithms })
}

/// The cached keys and the rules for fetching them again.
pub(crate) struct KeyStore {
    url: Option<String>,
    keys: ArcSwap<KeySet>,
    refetch_interval: Duration,
    max_keys: usize,
    /// One fetch at a time; also guards when the last one happened and how it went.
    fetch: tokio::sync::Mutex<FetchState>,
}

#[derive(Default)]
struct FetchState {
    last: Option<Instant>,
    failed: bool,
}

/// Why no key could be had.
pub(crate) enum KeyError {
    /// The JWKS has no such key, and it was fetched recently (or just now) without it.
    Unknown,
    /// The key's type does not allow the token's algorithm.
    WrongAlgorithm,
    /// The token names no key and several fit.
    Ambiguous,
    /// The JWKS could not be fetched: the authorization server is unreachable or broken.
    Unavailable { retry_after: Duration },
}

impl KeyStore {
    pub(crate) fn new(url: Option<String>, refetch_interval: Duration, max_keys: usize) -> Self {
        KeyStore {
            url,
            keys: ArcSwap::from_pointee(KeySet::default()),
            refetch_interval,
            max_keys,
            fetch: tokio::sync::Mutex::new(FetchState::default()),
        }
    }

    /// The key for a token, fetching the JWKS again if the `kid` is unknown and the last fetch
    /// is older than the refetch interval.
    pub(crate) async fn key(
        &self,
        fetch: &Fetcher,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Arc<VerifyKey>, KeyError> {
        match self.keys.load().find(kid, alg) {
            Lookup::Found(key) => return Ok(key),
            Lookup::WrongAlgorithm => return Err(KeyError::WrongAlgorithm),
            Lookup::Ambiguous => return Err(KeyError::Ambiguous),
            Lookup::Unknown => {}
        }
        let Some(url) = &self.url else {
            return Err(KeyError::Unknown);
        };
        let mut state = self.fetch.lock().await;
        // Another request may have fetched while this one waited for the lock.
        match self.keys.load().find(kid, alg) {
            Lookup::Found(key) => return Ok(key),
            Lookup::WrongAlgorithm => return Err(KeyError::WrongAlgorithm),
            Lookup::Ambiguous => return Err(KeyError::Ambiguous),
            Lookup::Unknown => {}
        }
        if let Some(last) = state.last {
            let since = last.elapsed();
            if since < self.refetch_interval {
                // An unknown kid must not make every request hit the authorization server: within
                // the interval the answer is the last fetch's.
                return Err(if state.failed {
                    KeyError::Unavailable {
                        retry_after: self.refetch_interval - since,
                    }
                } else {
                    KeyError::Unknown
                });
            }
        }
        state.last = Some(Instant::now());
        match fetch.get_json::<JwksDocument>(url).await {
            Ok(doc) => {
                state.failed = false;
                let set = KeySet::from_document(&doc, self.max_keys);
                tracing::info!(url = %url, keys = set.len(), "fetched the authorization server's JWKS");
                let found = set.find(kid, alg);
                self.keys.store(Arc::new(set));
                match found {
                    Lookup::Found(key) => Ok(key),
                    Lookup::WrongAlgorithm => Err(KeyError::WrongAlgorithm),
                    Lookup::Ambiguous => Err(KeyError::Ambiguous),
                    Lookup::Unknown => Err(KeyError::Unknown),
                }
            }
            Err(e) => {
                state.failed = true;
                tracing::warn!(url = %url, error = %crate::error::chain(&e), "fetching the authorization server's JWKS failed");
                Err(KeyError::Unavailable {
                    retry_after: self.refetch_interval,
                })
            }
        }
    }

    /// Fetches the JWKS now (at start-up), whatever the interval; a failure is only logged.
    pub(crate) async fn warm(&self, fetch: &Fetcher) {
        let Some(url) = &self.url else { return };
        let mut state = self.fetch.lock().await;
        match fetch.get_json::<JwksDocument>(url).await {
            Ok(doc) => {
                state.last = Some(Instant::now());
                state.failed = false;
                self.keys
                    .store(Arc::new(KeySet::from_document(&doc, self.max_keys)));
            }
            Err(e) => {
                tracing::warn!(url = %url, error = %crate::error::chain(&e), "fetching the authorization server's JWKS failed; it is tried again on the first token");
            }
        }
    }
}
