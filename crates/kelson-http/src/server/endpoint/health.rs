//! `GET /healthz` and `GET /readyz`: what load balancers and orchestrators ask before they send
//! traffic ([`HttpConfig::health`](super::HttpConfig::health)).
//!
//! Liveness says the process serves HTTP; it never looks at anything else, so a database outage
//! does not get healthy instances restarted. Readiness runs the checks the application gave (a
//! database answering, a broker connected), all at once and each within a time limit, and is false
//! from the moment the server starts draining ([`Health::set_draining`]): a balancer that polls it
//! stops sending new requests while the ones in flight finish.
//!
//! Both sit behind the endpoint's Host/Origin policy, like the metrics: a health check that names
//! a host the policy accepts passes; a DNS-rebinding page learns nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, Uri, Version};

use super::{McpBody, OriginPolicy};

type CheckFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;
type CheckFn = Arc<dyn Fn() -> CheckFuture + Send + Sync>;

/// The health endpoints and the readiness checks behind them. Cloning is cheap and every clone is
/// the same (draining one drains all).
///
/// ```
/// use kelson_http::server::{Health, HttpConfig};
///
/// let health = Health::new().check("database", || async { Ok(()) });
/// let mut config = HttpConfig::default();
/// config.health = Some(health.clone());
/// // On SIGTERM, before the listener stops: readiness goes false at once.
/// health.set_draining();
/// assert!(health.is_draining());
/// ```
#[derive(Clone)]
pub struct Health {
    inner: Arc<Inner>,
}

struct Inner {
    live_path: String,
    ready_path: String,
    timeout: Duration,
    checks: Vec<(String, CheckFn)>,
    draining: AtomicBool,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.inner.checks.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Health")
            .field("live_path", &self.inner.live_path)
            .field("ready_path", &self.inner.ready_path)
            .field("timeout", &self.inner.timeout)
            .field("checks", &names)
            .field("draining", &self.is_draining())
            .finish()
    }
}

impl Default for Health {
    fn default() -> Self {
        Self::new()
    }
}

impl Health {
    /// `/healthz` and `/readyz`, with no readiness check yet and a 2-second limit per check.
    pub fn new() -> Self {
        Health {
            inner: Arc::new(Inner {
                live_path: "/healthz".to_owned(),
                ready_path: "/readyz".to_owned(),
                timeout: Duration::from_secs(2),
                checks: Vec::new(),
                draining: AtomicBool::new(false),
            }),
        }
    }

    fn edit(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            live_path: shared.live_path.clone(),
            ready_path: shared.ready_path.clone(),
            timeout: shared.timeout,
            checks: shared.checks.clone(),
            draining: AtomicBool::new(shared.draining.load(Ordering::Relaxed)),
        });
        change(&mut inner);
        Health {
            inner: Arc::new(inner),
        }
    }

    /// Serves liveness and readiness on these paths instead.
    #[must_use]
    pub fn paths(self, live: impl Into<String>, ready: impl Into<String>) -> Self {
        let (live, ready) = (live.into(), ready.into());
        self.edit(|inner| {
            inner.live_path = live;
            inner.ready_path = ready;
        })
    }

    /// How long each readiness check may take before it counts as failed.
    #[must_use]
    pub fn timeout(self, timeout: Duration) -> Self {
        self.edit(|inner| inner.timeout = timeout)
    }

    /// Adds a readiness check: the server is ready only while every check returns `Ok`. The
    /// error text is shown in the `/readyz` answer (keep secrets out of it).
    #[must_use]
    pub fn check<F, Fut>(self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let name = name.into();
        let check: CheckFn = Arc::new(move || Box::pin(check()));
        self.edit(|inner| inner.checks.push((name, check)))
    }

    /// The liveness path.
    pub fn live_path(&self) -> &str {
        &self.inner.live_path
    }

    /// The readiness path.
    pub fn ready_path(&self) -> &str {
        &self.inner.ready_path
    }

    /// From now on readiness answers 503 `draining`; the server still serves requests. Call it
    /// when shutdown begins, some time before the listener stops (`kelson serve --shutdown-grace`),
    /// so that balancers polling readiness stop sending first.
    pub fn set_draining(&self) {
        self.inner.draining.store(true, Ordering::Relaxed);
    }

    /// Whether [`set_draining`](Self::set_draining) was called.
    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::Relaxed)
    }

    /// Whether `path` is one of the two.
    pub(super) fn serves(&self, path: &str) -> bool {
        path == self.inner.live_path || path == self.inner.ready_path
    }

    /// Runs the readiness checks: one line per check, and whether all passed.
    pub async fn readiness(&self) -> (bool, String) {
        if self.is_draining() {
            return (false, "draining\n".to_owned());
        }
        let timeout = self.inner.timeout;
        let runs = self.inner.checks.iter().map(|(name, check)| {
            let run = check();
            async move {
                let outcome = match tokio::time::timeout(timeout, run).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
                };
                (name.as_str(), outcome)
            }
        });
        let outcomes = futures_util::future::join_all(runs).await;
        let mut ready = true;
        let mut text = String::new();
        for (name, outcome) in outcomes {
            match outcome {
                Ok(()) => text.push_str(&format!("{name}: ok\n")),
                Err(why) => {
                    ready = false;
                    // One line per check, whatever the error text holds.
                    let why = why.replace(['\r', '\n'], " ");
                    text.push_str(&format!("{name}: {why}\n"));
                }
            }
        }
        if ready {
            text.push_str("ready\n");
        }
        (ready, text)
    }

    /// Answers a request for one of the two paths.
    pub(super) async fn answer(
        &self,
        policy: &OriginPolicy,
        method: &Method,
        version: Version,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Response<McpBody> {
        if let Err(refusal) = policy.check_request(version, uri, headers) {
            tracing::debug!(why = %refusal.reason, "health request refused by the Host/Origin policy");
            return text(refusal.status, format!("{}\n", refusal.reason), method);
        }
        if method != Method::GET && method != Method::HEAD {
            let mut response = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "health is read with GET\n".to_owned(),
                method,
            );
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        if uri.path() == self.inner.live_path {
            return text(StatusCode::OK, "ok\n".to_owned(), method);
        }
        let (ready, body) = self.readiness().await;
        let status = if ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        text(status, body, method)
    }
}

fn text(status: StatusCode, body: String, method: &Method) -> Response<McpBody> {
    let mut response = Response::new(if method == Method::HEAD {
        McpBody::empty()
    } else {
        McpBody::full(body)
    });
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str) -> (Uri, HeaderMap) {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::HOST, HeaderValue::from_static("127.0.0.1"));
        (path.parse().unwrap(), headers)
    }

    async fn ask(health: &Health, method: Method, path: &str) -> (StatusCode, String) {
        let (uri, headers) = get(path);
        let response = health
            .answer(
                &OriginPolicy::loopback(),
                &method,
                Version::HTTP_11,
                &uri,
                &headers,
            )
            .await;
        let status = response.status();
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn readiness_needs_every_check_and_ends_when_draining() {
        let up = Arc::new(AtomicBool::new(true));
        let flag = up.clone();
        let health = Health::new()
            .timeout(Duration::from_millis(200))
            .check("database", move || {
                let up = flag.load(Ordering::Relaxed);
                async move {
                    if up {
                        Ok(())
                    } else {
                        Err("connection refused\nat 127.0.0.1:5432".to_owned())
                    }
                }
            })
            .check("broker", || async { Ok(()) });
        assert_eq!(
            ask(&health, Method::GET, "/readyz").await,
            (
                StatusCode::OK,
                "database: ok\nbroker: ok\nready\n".to_owned()
            )
        );
        up.store(false, Ordering::Relaxed);
        assert_eq!(
            ask(&health, Method::GET, "/readyz").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "database: connection refused at 127.0.0.1:5432\nbroker: ok\n".to_owned()
            )
        );
        // Liveness does not depend on the checks.
        assert_eq!(
            ask(&health, Method::GET, "/healthz").await,
            (StatusCode::OK, "ok\n".to_owned())
        );

        up.store(true, Ordering::Relaxed);
        let clone = health.clone();
        clone.set_draining();
        assert_eq!(
            ask(&health, Method::GET, "/readyz").await,
            (StatusCode::SERVICE_UNAVAILABLE, "draining\n".to_owned())
        );
        assert_eq!(
            ask(&health, Method::GET, "/healthz").await.0,
            StatusCode::OK
        );
    }

    #[tokio::test]
    async fn a_check_that_hangs_fails_within_the_limit_and_others_still_run() {
        let health = Health::new()
            .timeout(Duration::from_millis(100))
            .check("stuck", std::future::pending)
            .check("fine", || async { Ok(()) });
        let started = std::time::Instant::now();
        let (status, body) = ask(&health, Method::GET, "/readyz").await;
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, "stuck: no answer within 100 ms\nfine: ok\n");
    }

    #[tokio::test]
    async fn only_get_and_head_and_the_host_policy_applies() {
        let health = Health::new().paths("/live", "/ready");
        assert!(health.serves("/live") && health.serves("/ready") && !health.serves("/healthz"));
        let (status, _) = ask(&health, Method::POST, "/live").await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        let (status, body) = ask(&health, Method::HEAD, "/ready").await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, ""));

        let mut headers = HeaderMap::new();
        headers.insert(http::header::HOST, HeaderValue::from_static("evil.example"));
        let response = health
            .answer(
                &OriginPolicy::loopback(),
                &Method::GET,
                Version::HTTP_11,
                &"/live".parse().unwrap(),
                &headers,
            )
            .await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
    }
}
