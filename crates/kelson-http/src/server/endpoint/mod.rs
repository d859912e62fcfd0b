//! The MCP endpoint: [`McpService`], a `tower::Service` over a [`kelson_server::Server`], and what it
//! answers with ([`McpBody`]), checks ([`OriginPolicy`]) and serves beside the protocol
//! ([`Health`], [`MetricsService`], the handshake era in [`legacy`]).
//!
//! Nothing here knows of sockets: the endpoint is handed whole requests, from axum or any tower
//! stack, or from this crate's listener ([`crate::server::serve`]), which adds only what the
//! endpoint asks of every host (the client's address as [`ClientAddr`]).
//!
//! spec 2026-07-28 [basic/transports/streamable-http][sh]: one endpoint, POST only; every POST
//! carries one JSON-RPC message; a request is answered with `application/json` or with an SSE
//! stream scoped to that request; notifications get 202. Validation runs in this order:
//! Host/Origin (403), method (405), `Accept` (406), `Content-Type` (415), body size (413), JSON
//! (-32700), JSON-RPC shape (-32600), `_meta` (-32602), standard headers (-32020), protocol version
//! (-32022), method (-32601/404), params (-32602 in band), `Mcp-Param-*` (-32020), client
//! capabilities (-32021).
//! The spec fixes neither the order nor the statuses for `Accept`, `Content-Type`, body size, JSON
//! and JSON-RPC shape (those are the SDKs' usual ones); the order agrees with every case the
//! official conformance suite pins.
//!
//! The server is reached in one place, `McpService::serve_mcp` (`prepare_observed`, `check`,
//! `dispatch`; the one method this transport tells apart is `subscriptions/listen`, whose answer
//! is a stream), and for the handshake era in [`legacy`] (`initialize`, `legacy_dispatch`).
//!
//! Every request reaches the server's observers ([`kelson_server::observe`]) through one
//! [`RequestProbe`]: refusals at the HTTP level are reported here, with their status, apart from
//! JSON-RPC errors. With [`HttpConfig::metrics_path`] set, the same service also answers
//! `GET /metrics`; [`MetricsService`] serves them on an address of their own instead.
//!
//! [sh]: https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http

mod body;
mod config;
mod health;
mod legacy;
mod metrics;
mod policy;
mod reply;
mod scope;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::ALLOW;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use kelson_jsonrpc::ErrorObject;
use kelson_server::observe::Transport;
use kelson_server::transport::{
    Checked, Incoming, NotificationSink, Reply, ReplyMessage, RequestIo, ToolCallGuard,
};
use kelson_server::{Principal, RequestProbe, Server};
use kelson_types::{JsonObject, ParamHeader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use body::{BoxError, McpBody};
pub use config::HttpConfig;
pub use health::Health;
pub use legacy::{ClientAddr, LegacyMode};
pub use metrics::MetricsService;
pub use policy::{OriginPolicy, Refusal};
pub use scope::insufficient_scope_challenge;

#[cfg(test)]
pub(crate) use body::Event;
#[cfg(not(test))]
use body::Event;
pub(crate) use reply::http_error;
use reply::{
    BodyError, JSON, accepts_both, answer, is_json, json_reply, plain, read_body, reject,
    sse_response, status_for,
};

use crate::headers::MCP_METHOD;
use crate::{check_param_headers, check_standard_headers};

/// The MCP endpoint as a `tower::Service`; mount it in axum with `Router::route_service`.
///
/// A principal placed in the request extensions by an auth layer in front of the service is the
/// principal handlers see; without one, requests are anonymous.
#[derive(Clone)]
pub struct McpService {
    inner: Arc<Shared>,
}

struct Shared {
    server: Server,
    config: HttpConfig,
    /// Legacy sessions ([`LegacyMode::Sessions`]).
    sessions: legacy::Sessions,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.sessions.close_all();
    }
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("server", &self.inner.server)
            .field("config", &self.inner.config)
            .finish()
    }
}

impl McpService {
    /// Serves `server` with `config`.
    pub fn new(server: Server, config: HttpConfig) -> Self {
        if config.metrics_path.is_some() && server.metrics().is_none() {
            tracing::warn!(
                "a metrics path is configured but the server has no metrics (ServerBuilder::metrics); it will answer 404"
            );
        }
        McpService {
            inner: Arc::new(Shared {
                server,
                config,
                sessions: legacy::Sessions::default(),
            }),
        }
    }

    /// The server behind the endpoint.
    pub fn server(&self) -> &Server {
        &self.inner.server
    }

    /// The endpoint's settings.
    pub fn config(&self) -> &HttpConfig {
        &self.inner.config
    }

    /// How many legacy sessions are live.
    pub fn legacy_sessions(&self) -> usize {
        self.inner.sessions.len()
    }

    /// Answers one HTTP request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<McpBody>
    where
        B: http_body::Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        let config = &self.inner.config;
        let (parts, body) = request.into_parts();
        if parts.uri.path() != config.path {
            if config.metrics_path.as_deref() == Some(parts.uri.path()) {
                return metrics::answer(
                    self.inner.server.metrics(),
                    &config.policy,
                    &parts.method,
                    parts.version,
                    &parts.uri,
                    &parts.headers,
                );
            }
            if let Some(health) = config
                .health
                .as_ref()
                .filter(|h| h.serves(parts.uri.path()))
            {
                return health
                    .answer(
                        &config.policy,
                        &parts.method,
                        parts.version,
                        &parts.uri,
                        &parts.headers,
                    )
                    .await;
            }
            return plain(StatusCode::NOT_FOUND);
        }
        // If the client goes away, this future is dropped with the probe in it, which reports the
        // request as cancelled.
        let mut probe = self.inner.server.probe(Transport::Http);
        // W3C trace context in the headers: the request's span continues it, unless its `_meta`
        // carries one (kelson_server::observe::trace).
        if let Some(parent) = parts.headers.get("traceparent")
            && let Ok(parent) = parent.to_str()
        {
            let state = parts
                .headers
                .get("tracestate")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            let span = tracing::info_span!(
                target: "kelson::trace",
                "mcp.trace_context",
                traceparent = parent,
                tracestate = state,
            );
            if !span.is_disabled() {
                let serving = self.serve_mcp(&mut probe, parts, body);
                return tracing::Instrument::instrument(serving, span).await;
            }
        }
        self.serve_mcp(&mut probe, parts, body).await
    }

    /// The MCP endpoint. Every way out ends `probe`, or hands it on to the task or the stream that
    /// will.
    async fn serve_mcp<B>(
        &self,
        probe: &mut RequestProbe,
        parts: http::request::Parts,
        body: B,
    ) -> Response<McpBody>
    where
        B: http_body::Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        let config = &self.inner.config;
        let refuse = |probe: &mut RequestProbe, status: StatusCode, message: &str| {
            // The body was not read, so the `Mcp-Method` header is the only hint of the method.
            let method = parts.headers.get(MCP_METHOD).and_then(|v| v.to_str().ok());
            probe.rejected(status.as_u16(), method);
            http_error(status, message)
        };
        if let Err(refusal) = config
            .policy
            .check_request(parts.version, &parts.uri, &parts.headers)
        {
            tracing::debug!(why = %refusal.reason, "refused by the Host/Origin policy");
            return refuse(probe, refusal.status, &refusal.reason);
        }
        if parts.method != Method::POST {
            if let Some(response) = self.legacy_get_or_delete(probe, &parts) {
                return response;
            }
            let (status, message, allow) = self.not_post(&parts);
            let mut response = refuse(probe, status, message);
            if let Some(allow) = allow {
                response
                    .headers_mut()
                    .insert(ALLOW, HeaderValue::from_static(allow));
            }
            return response;
        }
        if !accepts_both(&parts.headers) {
            return refuse(
                probe,
                StatusCode::NOT_ACCEPTABLE,
                "the Accept header must list both application/json and text/event-stream",
            );
        }
        if !is_json(&parts.headers) {
            return refuse(
                probe,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the Content-Type must be application/json",
            );
        }
        let too_large = |probe: &mut RequestProbe| {
            refuse(
                probe,
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the request body exceeds {} bytes", config.max_body),
            )
        };
        if let Some(len) = http_body::Body::size_hint(&body).exact()
            && len > config.max_body as u64
        {
            return too_large(probe);
        }
        let bytes = match read_body(body, config.max_body).await {
            Ok(bytes) => bytes,
            Err(BodyError::TooLarge) => return too_large(probe),
            Err(BodyError::Read(e)) => {
                return refuse(
                    probe,
                    StatusCode::BAD_REQUEST,
                    &format!("reading the body: {e}"),
                );
            }
        };

        let server = &self.inner.server;
        let prepared = match server.prepare_observed(&bytes, probe) {
            Incoming::Request(p) => p,
            Incoming::Legacy(p) => return self.serve_legacy(probe, parts, p).await,
            Incoming::Rejected(reply) => return answer(probe, reply),
            // spec 2026-07-28 streamable-http: an accepted notification gets 202 with no body.
            Incoming::Notification(n) => {
                return self.notification(probe, &parts, &n.method, n.params);
            }
            Incoming::Response(r) => return self.response(probe, &parts, &r),
        };

        if let Err(e) = check_standard_headers(
            prepared.method.as_str(),
            prepared.protocol_version(),
            prepared.name.as_deref(),
            &parts.headers,
        ) {
            return answer(probe, reject(&prepared.id, &e));
        }
        // The version and the method, checked once: the dispatch takes the checked request.
        let prepared = match server.check(prepared) {
            Ok(checked) => checked,
            Err(reply) => return answer(probe, reply),
        };

        let principal = parts
            .extensions
            .get::<Principal>()
            .cloned()
            .unwrap_or_default();
        if matches!(prepared.method, kelson_types::Method::SubscriptionsListen) {
            let io = RequestIo {
                principal,
                cancel: CancellationToken::new(),
                sink: None,
                guard: None,
                // Listen streams end with the server's shutdown.
                close: None,
                probe: Some(&mut *probe),
            };
            // Boxed, like the streamed path below, to keep the common plain path's future small.
            return match Box::pin(server.dispatch(prepared, io)).await {
                // The probe went with the stream, which reports its closing.
                Reply::Listen(stream) => sse_response(McpBody::listen(stream, keep_alive(config))),
                Reply::Message(m) => answer(probe, m),
            };
        }
        if prepared.wants_stream() {
            return Box::pin(self.streamed(
                prepared.into_owned(),
                parts.headers,
                principal,
                probe.take(),
            ))
            .await;
        }

        // The plain JSON path runs the handler inline: no task, no channel. If the client goes away,
        // the connection drops this future, and the guard fires the handler's cancellation token.
        let cancel = CancellationToken::new();
        let guard = ParamGuard(&parts.headers);
        let io = RequestIo {
            principal,
            cancel: cancel.clone(),
            sink: None,
            guard: Some(&guard),
            close: None,
            probe: Some(&mut *probe),
        };
        let armed = cancel.drop_guard();
        let reply = server.dispatch(prepared, io).await;
        armed.disarm();
        match reply {
            Reply::Message(m) => answer(probe, m),
            Reply::Listen(_) => unreachable!("listen requests are served above"),
        }
    }

    /// A request that may get notifications before its result (it carries a progress token or a
    /// log level): the handler runs in its own task and its messages flow into an SSE body.
    ///
    /// The response is chosen by the first message: if the handler's first word is a rejection
    /// with its own status (a -32020 for `Mcp-Param-*`, a -32021), the client gets that status and a
    /// JSON body, as the spec requires; otherwise the stream starts.
    async fn streamed(
        &self,
        prepared: Checked<'static>,
        headers: HeaderMap,
        principal: Principal,
        mut probe: RequestProbe,
    ) -> Response<McpBody> {
        let config = &self.inner.config;
        let (tx, mut rx) = mpsc::channel::<Event>(config.notification_buffer.max(1));
        let cancel = CancellationToken::new();
        let server = self.inner.server.clone();
        let task_cancel = cancel.clone();
        let sink = Arc::new(ChannelSink(tx.clone()));
        tokio::spawn(async move {
            let guard = OwnedParamGuard(headers);
            let io = RequestIo {
                principal,
                cancel: task_cancel.clone(),
                sink: Some(sink),
                guard: Some(&guard),
                close: None,
                probe: Some(&mut probe),
            };
            let reply = tokio::select! {
                biased;
                () = task_cancel.cancelled() => None,
                reply = server.dispatch(prepared, io) => Some(reply),
            };
            let Some(reply) = reply else {
                probe.cancelled();
                return;
            };
            if let Reply::Message(m) = reply {
                probe.finish(m.outcome);
                // The body may be gone already; then nobody is listening.
                let _ = tx.send(Event::Final(m.body, m.outcome)).await;
            }
        });
        // If the client leaves before the first message, this future is dropped: cancel the task.
        let armed = cancel.drop_guard();
        let Some(first) = rx.recv().await else {
            return http_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the request ended without a response",
            );
        };
        if let Event::Final(body, outcome) = first {
            let status = status_for(outcome);
            if status != StatusCode::OK {
                return json_reply(ReplyMessage { body, outcome });
            }
            return sse_response(McpBody::events(
                Event::Final(body, outcome),
                rx,
                keep_alive(config),
                armed,
            ));
        }
        sse_response(McpBody::events(first, rx, keep_alive(config), armed))
    }
}

fn keep_alive(config: &HttpConfig) -> Option<Duration> {
    Some(config.keep_alive).filter(|d| !d.is_zero())
}

/// Notifications of a streamed request. Progress and log messages are advisory: when a slow client
/// lets the queue fill, they are dropped rather than buffered without bound.
struct ChannelSink(mpsc::Sender<Event>);

impl NotificationSink for ChannelSink {
    fn send(&self, message: Vec<u8>) {
        if self.0.try_send(Event::Notification(message)).is_err() {
            tracing::debug!("SSE queue full or closed; dropped a notification");
        }
    }
}

struct ParamGuard<'h>(&'h HeaderMap);

impl ToolCallGuard for ParamGuard<'_> {
    fn check(
        &self,
        decls: &[ParamHeader],
        arguments: Option<&JsonObject>,
    ) -> Result<(), ErrorObject> {
        check_param_headers(decls, arguments, self.0)
    }
}

struct OwnedParamGuard(HeaderMap);

impl ToolCallGuard for OwnedParamGuard {
    fn check(
        &self,
        decls: &[ParamHeader],
        arguments: Option<&JsonObject>,
    ) -> Result<(), ErrorObject> {
        check_param_headers(decls, arguments, &self.0)
    }
}

impl<B> tower_service::Service<Request<B>> for McpService
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response<McpBody>;
    type Error = std::convert::Infallible;
    type Future =
        Pin<Box<dyn Future<Output = Result<Response<McpBody>, std::convert::Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let service = self.clone();
        Box::pin(async move { Ok(service.handle(request).await) })
    }
}
