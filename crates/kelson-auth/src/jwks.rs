//! The authorization server's signing keys: a JWKS fetched on demand, cached, and refetched on an
//! unknown `kid` within a small budget per interval.
//!
//! Why a budget and not one fetch per interval: the `kid` is in the token's unsigned header, so
//! anyone can send a token naming a key nobody publishes. With one fetch per interval, such a
//! token spends the interval's only fetch, and a key the authorization server rotates in just
//! after it is refused (401) for up to the whole interval (30 s by default) to every legitimate
//! client. A fetch loads every key, whoever asked for it, so what a rotated key needs is that
//! some fetch happens soon after it is published: unknown kids may cause up to [`REFETCH_BURST`]
//! fetches at once, and after such a burst one more every `interval / REFETCH_BURST`. An
//! attacker's single token no longer holds a rotation back; one who keeps sending made-up kids
//! costs the authorization server at most `REFETCH_BURST` fetches per interval (on average) and
//! holds a rotated key back for at most `interval / REFETCH_BURST` (7.5 s by default). The
//! attacker's kids cannot be told from a rotated key's without fetching, so no rule can do both
//! better: remembering the kids that missed would let an attacker who guesses the next kid keep
//! it out for a whole interval by sending it before it is published, so misses are not
//! remembered. Requests that find no key while a fetch is under way wait for it and share its
//! answer, so a wave of requests with one unknown kid costs one or two fetches, not the budget.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// How many JWKS fetches unknown kids may cause at once. After such a burst, one more may
/// happen every refetch interval divided by this.
pub(crate) const REFETCH_BURST: u32 = 4;

/// The cached keys and the rules for fetching them again.
pub(crate) struct KeyStore {
    url: Option<String>,
    keys: ArcSwap<KeySet>,
    refetch_interval: Duration,
    max_keys: usize,
    /// How many fetches have begun: a request that saw no key and finds this count moved once it
    /// holds the lock shares the answer of a fetch that began after it looked.
    started: AtomicU64,
    /// One fetch at a time; also guards the budget and how the last fetch went.
    fetch: tokio::sync::Mutex<FetchState>,
}

#[derive(Default)]
struct FetchState {
    /// When the last fetch failed, if it did: the authorization server is not asked again
    /// within the interval after a failure.
    failed_at: Option<Instant>,
    /// The budget of fetches unknown kids may cause.
    budget: Budget,
}

/// [`REFETCH_BURST`] fetches at once, then one per `interval / REFETCH_BURST`: a token bucket kept
/// as one instant (the generic cell rate algorithm).
#[derive(Default)]
struct Budget {
    /// When the budget will be whole again; `None` (or past): it is whole.
    full_at: Option<Instant>,
}

impl Budget {
    /// Takes one fetch from the budget at `now`, if one is left.
    fn take(&mut self, now: Instant, interval: Duration) -> bool {
        let step = interval / REFETCH_BURST;
        let full_at = self.full_at.map_or(now, |at| at.max(now));
        // `full_at - now` is what was spent and not yet refilled, `interval` the whole budget.
        if full_at.duration_since(now) + step > interval {
            return false;
        }
        self.full_at = Some(full_at + step);
        true
    }
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
            started: AtomicU64::new(0),
            fetch: tokio::sync::Mutex::new(FetchState::default()),
        }
    }

    /// The key for a token, fetching the JWKS again if the `kid` is unknown and the budget of
    /// fetches allows (see the module's documentation).
    pub(crate) async fn key(
        &self,
        fetch: &Fetcher,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Arc<VerifyKey>, KeyError> {
        // Read before looking: a fetch counted after this began after the key was found missing.
        let started = self.started.load(Ordering::Acquire);
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
        if let Some(failed_at) = state.failed_at {
            let since = failed_at.elapsed();
            if since < self.refetch_interval {
                // The authorization server just failed: its outage is the answer until the
                // interval has passed, rather than a fetch per request.
                return Err(KeyError::Unavailable {
                    retry_after: self.refetch_interval - since,
                });
            }
        }
        if self.started.load(Ordering::Acquire) != started {
            // A fetch began after this request found no key, and did not find it either.
            return Err(KeyError::Unknown);
        }
        if !state.budget.take(Instant::now(), self.refetch_interval) {
            // Unknown kids must not make the server hammer the authorization server: with the
            // budget spent, the answer is the last fetch's.
            return Err(KeyError::Unknown);
        }
        self.started.fetch_add(1, Ordering::AcqRel);
        match fetch.get_json::<JwksDocument>(url).await {
            Ok(doc) => {
                state.failed_at = None;
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
                state.failed_at = Some(Instant::now());
                tracing::warn!(url = %url, error = %crate::error::chain(&e), "fetching the authorization server's JWKS failed");
                Err(KeyError::Unavailable {
                    retry_after: self.refetch_interval,
                })
            }
        }
    }

    /// Fetches the JWKS now (at start-up), outside the budget; a failure is only logged.
    pub(crate) async fn warm(&self, fetch: &Fetcher) {
        let Some(url) = &self.url else { return };
        let mut state = self.fetch.lock().await;
        self.started.fetch_add(1, Ordering::AcqRel);
        match fetch.get_json::<JwksDocument>(url).await {
            Ok(doc) => {
                state.failed_at = None;
                self.keys
                    .store(Arc::new(KeySet::from_document(&doc, self.max_keys)));
            }
            Err(e) => {
                tracing::warn!(url = %url, error = %crate::error::chain(&e), "fetching the authorization server's JWKS failed; it is tried again on the first token");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use jsonwebtoken::Algorithm;
    use tokio::sync::Semaphore;

    use super::{Budget, KeyError, KeyStore, REFETCH_BURST};
    use crate::config::AuthConfig;
    use crate::fetch::Fetcher;

    #[test]
    fn the_budget_is_a_burst_then_one_fetch_per_share_of_the_interval() {
        let interval = Duration::from_secs(40);
        let step = interval / REFETCH_BURST;
        let t0 = Instant::now();
        let mut budget = Budget::default();
        for _ in 0..REFETCH_BURST {
            assert!(budget.take(t0, interval));
        }
        assert!(!budget.take(t0, interval), "the burst is spent");
        assert!(!budget.take(t0 + step - Duration::from_millis(1), interval));
        assert!(
            budget.take(t0 + step, interval),
            "a share of the interval later"
        );
        assert!(!budget.take(t0 + step, interval));
        // Unused, it refills up to the burst and no further.
        let later = t0 + interval * 10;
        for _ in 0..REFETCH_BURST {
            assert!(budget.take(later, interval));
        }
        assert!(!budget.take(later, interval));
    }

    /// A JWKS endpoint that publishes no key and answers only when let through.
    struct Gated {
        url: String,
        hits: Arc<AtomicUsize>,
        gate: Arc<Semaphore>,
    }

    async fn gated() -> Gated {
        let hits = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(Semaphore::new(0));
        let (h, g) = (hits.clone(), gate.clone());
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                let (h, g) = (h.clone(), g.clone());
                async move {
                    h.fetch_add(1, Ordering::SeqCst);
                    g.acquire().await.unwrap().forget();
                    (
                        [(http::header::CONTENT_TYPE, "application/json")],
                        r#"{"keys": []}"#,
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Gated { url, hits, gate }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_waiting_on_a_fetch_share_the_one_that_begins_after_them() {
        let jwks = gated().await;
        let store = Arc::new(KeyStore::new(
            Some(jwks.url.clone()),
            Duration::from_secs(3600),
            32,
        ));
        let config = AuthConfig::new("https://issuer.test", "https://mcp.test/mcp");
        let fetcher = Arc::new(Fetcher::new(&config).unwrap());
        let ask = || {
            let (store, fetcher) = (store.clone(), fetcher.clone());
            Box::pin(async move {
                matches!(
                    store.key(&fetcher, Some("made-up"), Algorithm::ES256).await,
                    Err(KeyError::Unknown)
                )
            })
        };
        let first = tokio::spawn(ask());
        let deadline = Instant::now() + Duration::from_secs(30);
        while jwks.hits.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "the first fetch never arrived");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Eight more requests find no key while the first fetch is under way, and wait for it.
        let mut waiting = Vec::new();
        for _ in 0..8 {
            let mut request = ask();
            assert!(futures_util::poll!(&mut request).is_pending());
            waiting.push(tokio::spawn(request));
        }
        // Every fetch is let through from now on.
        jwks.gate.add_permits(1000);
        assert!(first.await.unwrap());
        for request in waiting {
            assert!(request.await.unwrap(), "unknown");
        }
        // That first fetch may predate a key they need, so one more is made, for all of them.
        assert_eq!(jwks.hits.load(Ordering::SeqCst), 2);
    }
}
