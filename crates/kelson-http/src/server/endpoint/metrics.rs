//! `GET /metrics`: the server's [`Metrics`] in the Prometheus text format, on the MCP listener
//! ([`HttpConfig::metrics_path`](super::HttpConfig::metrics_path)) or on an address of its own
//! ([`MetricsService`], served by [`serve`](crate::server::serve) like the MCP endpoint).
//!
//! Either way the Host/Origin policy applies: metrics say what a server does and how busy it is,
//! and a DNS-rebinding page must not read them from a loopback server any more than it may call
//! its tools.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri, Version};
use kelson_server::Metrics;

use super::{McpBody, OriginPolicy};

/// Answers a request for the metrics path.
pub(super) fn answer(
    metrics: Option<&Metrics>,
    policy: &OriginPolicy,
    method: &Method,
    version: Version,
    uri: &Uri,
    headers: &HeaderMap,
) -> Response<McpBody> {
    if let Err(refusal) = policy.check_request(version, uri, headers) {
        tracing::debug!(why = %refusal.reason, "metrics request refused by the Host/Origin policy");
        return text(refusal.status, format!("{}\n", refusal.reason));
    }
    if method != Method::GET && method != Method::HEAD {
        let mut response = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "metrics are read with GET\n".to_owned(),
        );
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let Some(metrics) = metrics else {
        return text(
            StatusCode::NOT_FOUND,
            "this server has no metrics\n".to_owned(),
        );
    };
    let mut response = Response::new(if method == Method::HEAD {
        McpBody::empty()
    } else {
        McpBody::full(metrics.render())
    });
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(kelson_server::observe::CONTENT_TYPE),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn text(status: StatusCode, body: String) -> Response<McpBody> {
    let mut response = Response::new(McpBody::full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The metrics alone, as a `tower::Service`: for serving them on an address other than the MCP
/// endpoint's (a port only the monitoring network reaches), with [`serve`] or mounted in axum.
/// It also works beside a stdio server.
///
/// It answers `GET` and `HEAD` on its path (`/metrics` unless changed) and 404 elsewhere, behind
/// its own Host/Origin policy.
///
/// [`serve`]: crate::server::serve
#[derive(Clone, Debug)]
pub struct MetricsService {
    inner: Arc<Shared>,
}

#[derive(Clone, Debug)]
struct Shared {
    metrics: Metrics,
    path: String,
    policy: OriginPolicy,
}

impl MetricsService {
    /// Serves `metrics` at `/metrics` to requests that pass `policy` (use
    /// [`OriginPolicy::for_bind`] with the metrics address).
    pub fn new(metrics: Metrics, policy: OriginPolicy) -> Self {
        MetricsService {
            inner: Arc::new(Shared {
                metrics,
                path: "/metrics".to_owned(),
                policy,
            }),
        }
    }

    /// Serves them at `path` instead.
    #[must_use]
    pub fn with_path(self, path: impl Into<String>) -> Self {
        let shared = Arc::unwrap_or_clone(self.inner);
        MetricsService {
            inner: Arc::new(Shared {
                path: path.into(),
                ..shared
            }),
        }
    }

    /// The path the metrics are served at.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Answers one HTTP request. The request body is never read.
    pub fn handle<B>(&self, request: &Request<B>) -> Response<McpBody> {
        if request.uri().path() != self.inner.path {
            let mut response = Response::new(McpBody::empty());
            *response.status_mut() = StatusCode::NOT_FOUND;
            return response;
        }
        answer(
            Some(&self.inner.metrics),
            &self.inner.policy,
            request.method(),
            request.version(),
            request.uri(),
            request.headers(),
        )
    }
}

impl<B> tower_service::Service<Request<B>> for MetricsService {
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<McpBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let response = self.handle(&request);
        Box::pin(std::future::ready(Ok(response)))
    }
}
