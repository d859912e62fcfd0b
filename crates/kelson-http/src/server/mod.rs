//! The Streamable HTTP server: a `tower::Service` over an `kelson_server::Server`.
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
//! Every request reaches the server's observers ([`kelson_server::observe`]) through one
//! [`RequestProbe`]: refusals at the HTTP level are reported here, with their status, apart from
//! JSON-RPC errors. With [`HttpConfig::metrics_path`] set, the same service also answers
//! `GET /metrics`; [`MetricsService`] serves them on an address of their own instead.
//!
//! [sh]: https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http

mod body;
mod h1;
mod h2;
mod health;
mod io;
mod legacy;
mod memory;
mod metrics;
mod policy;
mod scope;
mod serve;
mod stop;
mod throttle;
mod timer;
#[cfg(feature = "tls")]
mod tls;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use kelson_jsonrpc::{ErrorObject, Id};
use kelson_server::observe::Transport;
use kelson_server::transport::{
    Incoming, NotificationSink, Outcome, Prepared, Reply, ReplyMessage, RequestIo, ToolCallGuard,
};
use kelson_server::{Principal, RequestProbe, Server};
use kelson_types::{JsonObject, ParamHeader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use body::McpBody;
pub use health::Health;
pub use legacy::ClientAddr;
pub use legacy::LegacyMode;
pub use metrics::MetricsService;
pub use policy::{OriginPolicy, Refusal};
pub use scope::insufficient_scope_challenge;
pub use serve::{
    FrontService, IncomingBody, ServeError, serve, serve_metrics, serve_with_shutdown,
    serve_wrapped_with_shutdown, shutdown_signal,
};
#[cfg(feature = "tls")]
pub use serve::{serve_tls, serve_tls_with_shutdown, serve_tls_wrapped_with_shutdown};
#[cfg(feature = "tls")]
pub use tls::{ServerTls, TlsError};

use body::Event;

/// For the fuzz targets (`fuzz/` at the repository root), not part of the API: the HTTP/1.1
/// request reader over bytes in memory.
#[doc(hidden)]
pub mod __fuzz {
    pub use super::h1::fuzz::{End, Read, read_requests};
}

/// The error type HTTP bodies are boxed into.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

use crate::headers::MCP_METHOD;
use crate::{check_param_headers, check_standard_headers};

/// Settings of the HTTP endpoint.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The endpoint path.
    pub path: String,
    /// The largest request body accepted, in bytes (413 beyond it).
    pub max_body: usize,
    /// How often an idle SSE stream gets a keep-alive comment line; zero disables them.
    pub keep_alive: Duration,
    /// Which `Host` and `Origin` values are accepted.
    pub policy: OriginPolicy,
    /// How many notifications may queue for a slow client on one streamed request before the
    /// oldest advisory ones (progress, log) are dropped.
    pub notification_buffer: usize,
    /// How long in-flight requests may run after shutdown begins (used by [`serve`]).
    pub drain: Duration,
    /// How long a new connection may stay silent before its first bytes arrive; it is closed
    /// then, so that connections opened and left idle cannot pile up. On HTTP/1.1 it also bounds
    /// how long a request head may take once it has begun, and a body that did not come with its
    /// head (408 after it). Used by [`serve`]; zero waits forever.
    pub first_bytes_timeout: Duration,
    /// How long a connection may stay open with no request in progress: on HTTP/1.1 between two
    /// requests, on HTTP/2 while it has no open stream (it is sent GOAWAY then). Used by
    /// [`serve`]; zero waits forever. The default, 2 minutes, is longer than the 90 s for which
    /// common HTTP clients (reqwest, Go's) keep an idle connection, so that they are not caught
    /// sending on a connection the server is closing.
    pub idle_timeout: Duration,
    /// How long a response may make no progress, its client reading none of it, before it is
    /// abandoned and the connection closed (on HTTP/2: before the connection, none of whose
    /// responses made progress, is closed). Used by [`serve`]; zero waits forever.
    pub write_timeout: Duration,
    /// The most bytes that responses larger than 64 KiB may hold at once across the listener
    /// while their clients read them; a large response beyond it is answered with 503 and a
    /// `Retry-After` instead. Used by [`serve`].
    pub response_memory: usize,
    /// The most connections open at once. A connection accepted beyond it is closed at once
    /// (and counted), rather than left waiting in the kernel's queue. The default is the process's
    /// limit of open files less a reserve for the server's own (an eighth of it, at least 64),
    /// and at most 10,000. Used by [`serve`].
    pub max_connections: usize,
    /// The most streams an HTTP/2 client may open at once on one connection. Used by [`serve`].
    pub h2_max_concurrent_streams: u32,
    /// The largest request header section, in bytes: the HTTP/1.1 request head (answered with
    /// 431 beyond it) and the HTTP/2 header list (`SETTINGS_MAX_HEADER_LIST_SIZE`). The default,
    /// 64 KiB, leaves room for long `Mcp-Param-*` values and bearer tokens. Used by [`serve`].
    pub max_header_bytes: usize,
    /// The most connections open at once from one client IP address; `None` (the default): no
    /// limit but [`max_connections`](Self::max_connections). One address cannot then take every
    /// connection; mind that clients behind one NAT or proxy share an address. Used by [`serve`].
    pub max_connections_per_address: Option<usize>,
    /// Where to answer `GET` with the server's metrics ([`Server::metrics`]) in the Prometheus
    /// text format, behind the same Host/Origin policy; `None` (the default) serves none. It must
    /// differ from [`path`](Self::path). To serve them on another address, use [`MetricsService`].
    pub metrics_path: Option<String>,
    /// Liveness and readiness (`GET /healthz`, `GET /readyz` unless changed) for load balancers
    /// and orchestrators, behind the same Host/Origin policy; `None` (the default) serves neither.
    /// Their paths must differ from [`path`](Self::path).
    pub health: Option<Health>,
    /// How handshake-era clients are served, when the server serves them
    /// ([`kelson_server::Eras::Both`]): with `Mcp-Session-Id` sessions (the default) or statelessly.
    pub legacy: LegacyMode,
    /// The most legacy sessions kept at once; `initialize` gets 503 beyond it.
    pub max_sessions: usize,
    /// The most legacy sessions one caller may keep at once: a principal behind an auth layer,
    /// else a client address (an IPv6 /64; loopback addresses are not counted apart). A caller at
    /// its share that opens another ends its own least recently used idle session to make room,
    /// and gets 503 when all of them are in use. The default is 256.
    pub max_sessions_per_caller: usize,
    /// How long a legacy session may go unused (no request, no open GET stream) before it ends.
    pub session_idle: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".to_owned(),
            max_body: 4 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            policy: OriginPolicy::loopback(),
            notification_buffer: 256,
            drain: Duration::from_secs(10),
            first_bytes_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            write_timeout: Duration::from_secs(30),
            response_memory: 64 * 1024 * 1024,
            max_connections: serve::default_max_connections(),
            h2_max_concurrent_streams: 100,
            max_header_bytes: 64 * 1024,
            max_connections_per_address: None,
            metrics_path: None,
            health: None,
            legacy: LegacyMode::Sessions,
            max_sessions: 10_000,
            max_sessions_per_caller: 256,
            session_idle: Duration::from_secs(30 * 60),
        }
    }
}

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

const JSON: HeaderValue = HeaderValue::from_static("application/json");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

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
            &prepared.method,
            prepared.protocol_version(),
            prepared.name.as_deref(),
            &parts.headers,
        ) {
            return answer(probe, reject(&prepared.id, &e));
        }
        if let Some(reply) = server.precheck(&prepared) {
            return answer(probe, reply);
        }

        let principal = parts
            .extensions
            .get::<Principal>()
            .cloned()
            .unwrap_or_default();
        if prepared.method == "subscriptions/listen" {
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
        prepared: Prepared<'static>,
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

/// The HTTP status of a JSON-RPC outcome. spec 2026-07-28 basic/index and
/// basic/transports/streamable-http fix 400 for -32020, -32021, -32022 and a missing `_meta` key,
/// and 404 for -32601; 400 for -32700 and -32600, and 200 for the errors of a method, are the
/// SDKs' convention where the spec says nothing.
pub fn status_for(outcome: Outcome) -> StatusCode {
    use kelson_jsonrpc::code;
    match outcome {
        Outcome::Success | Outcome::ToolError | Outcome::InputRequired => StatusCode::OK,
        Outcome::Error { code, rejected } => match code {
            code::PARSE_ERROR
            | code::INVALID_REQUEST
            | code::HEADER_MISMATCH
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
            code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            // spec 2026-07-28 basic/authorization: insufficient scope is a 403.
            kelson_server::INSUFFICIENT_SCOPE => StatusCode::FORBIDDEN,
            // A missing `_meta` key is a 400; a -32602 from a method is answered in band.
            code::INVALID_PARAMS if rejected => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        },
    }
}

fn reject(id: &Id, error: &ErrorObject) -> ReplyMessage {
    let mut body = Vec::with_capacity(128);
    kelson_jsonrpc::write_error(&mut body, Some(id), error);
    ReplyMessage {
        body,
        outcome: Outcome::Error {
            code: error.code,
            rejected: true,
        },
    }
}

/// Ends the probe with `reply`'s outcome and answers with it.
enum BodyError {
    TooLarge,
    Read(BoxError),
}

/// Reads a request body of at most `max` bytes. A body that arrives as one chunk (the usual case:
/// the HTTP/1.1 connection reads it whole, hyper hands over what came with the h2c headers) is used
/// as it is, without a copy or a list of chunks; only a body in several chunks is gathered.
async fn read_body<B>(body: B, max: usize) -> Result<Bytes, BodyError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut gathered: Vec<u8> = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(|e| BodyError::Read(e.into()))?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers carry nothing we read
        };
        let so_far = first.as_ref().map_or(gathered.len(), Bytes::len);
        if so_far + data.len() > max {
            return Err(BodyError::TooLarge);
        }
        match first.take() {
            None if gathered.is_empty() => first = Some(data),
            None => gathered.extend_from_slice(&data),
            Some(earlier) => {
                gathered.reserve(earlier.len() + data.len());
                gathered.extend_from_slice(&earlier);
                gathered.extend_from_slice(&data);
            }
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(gathered)))
}

fn answer(probe: &mut RequestProbe, reply: ReplyMessage) -> Response<McpBody> {
    probe.finish(reply.outcome);
    json_reply(reply)
}

fn json_reply(reply: ReplyMessage) -> Response<McpBody> {
    let refusal = reply.insufficient_scope();
    let mut response = Response::new(McpBody::full(reply.body));
    *response.status_mut() = status_for(reply.outcome);
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    if let Some(refusal) = refusal {
        scope::forbid(&mut response, refusal);
    }
    response
}

fn sse_response(body: McpBody) -> Response<McpBody> {
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, EVENT_STREAM);
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // spec 2026-07-28 streamable-http: servers SHOULD set this so proxies do not buffer the stream.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn plain(status: StatusCode) -> Response<McpBody> {
    let mut response = Response::new(McpBody::empty());
    *response.status_mut() = status;
    response
}

/// The answer instead of a large response when the listener's response memory is in use
/// ([`memory`]).
fn over_memory() -> Response<McpBody> {
    let mut response = http_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "the server holds as many large responses as it may while clients read them; try again shortly",
    );
    response
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// An HTTP-level refusal, with a JSON-RPC error body without `id` (the message was not read).
fn http_error(status: StatusCode, message: &str) -> Response<McpBody> {
    let mut body = Vec::with_capacity(64 + message.len());
    kelson_jsonrpc::write_error(&mut body, None, &ErrorObject::invalid_request(message));
    let mut response = Response::new(McpBody::full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

/// spec 2026-07-28 streamable-http: the client MUST list both media types. Wildcards that cover a
/// type count as listing it.
fn accepts_both(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(http::header::ACCEPT).iter();
    // What MCP clients send, answered with one comparison; anything else is parsed below.
    if let (Some(only), None) = (values.next(), values.next())
        && only.as_bytes() == b"application/json, text/event-stream"
    {
        return true;
    }
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(http::header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            // Media types are case-insensitive; compared in place, without allocating.
            let media = range.split(';').next().unwrap_or("").trim();
            let is = |name: &str| media.eq_ignore_ascii_case(name);
            if is("*/*") {
                (json, sse) = (true, true);
            } else if is("application/json") || is("application/*") {
                json = true;
            } else if is("text/event-stream") || is("text/*") {
                sse = true;
            }
        }
    }
    json && sse
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    /// A body that yields these chunks (or an error where a chunk is `None`).
    fn chunked(
        chunks: Vec<Option<&'static [u8]>>,
    ) -> impl http_body::Body<Data = Bytes, Error = std::io::Error> {
        let frames = chunks.into_iter().map(|c| match c {
            Some(bytes) => Ok(http_body::Frame::data(Bytes::from_static(bytes))),
            None => Err(std::io::Error::other("the client went away")),
        });
        http_body_util::StreamBody::new(futures_util::stream::iter(frames))
    }

    fn read(chunks: Vec<Option<&'static [u8]>>, max: usize) -> Result<Bytes, BodyError> {
        futures_util::FutureExt::now_or_never(read_body(chunked(chunks), max))
            .expect("the body is ready")
    }

    #[test]
    fn bodies_are_read_whole_within_the_limit() {
        let one = read(vec![Some(b"{\"a\":1}")], 16).ok().expect("read");
        assert_eq!(&one[..], b"{\"a\":1}");
        let many = read(vec![Some(b"ab"), Some(b""), Some(b"cd"), Some(b"e")], 5)
            .ok()
            .expect("read");
        assert_eq!(&many[..], b"abcde");
        let empty = read(vec![], 5).ok().expect("read");
        assert!(empty.is_empty());
    }

    #[test]
    fn bodies_over_the_limit_or_broken_are_errors() {
        assert!(matches!(
            read(vec![Some(b"abcdef")], 5),
            Err(BodyError::TooLarge)
        ));
        assert!(matches!(
            read(vec![Some(b"abc"), Some(b"def")], 5),
            Err(BodyError::TooLarge)
        ));
        assert!(matches!(
            read(vec![Some(b"abc"), None], 5),
            Err(BodyError::Read(_))
        ));
    }

    #[test]
    fn accept_needs_both_types() {
        assert!(accepts_both(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
        assert!(accepts_both(&headers(&[(
            "accept",
            "text/event-stream;q=0.9,application/json"
        )])));
        assert!(accepts_both(&headers(&[
            ("accept", "application/json"),
            ("accept", "text/event-stream")
        ])));
        assert!(accepts_both(&headers(&[("accept", "*/*")])));
        assert!(!accepts_both(&headers(&[("accept", "application/json")])));
        assert!(!accepts_both(&headers(&[("accept", "text/event-stream")])));
        assert!(!accepts_both(&headers(&[])));
    }

    #[test]
    fn content_type_must_be_json() {
        assert!(is_json(&headers(&[("content-type", "application/json")])));
        assert!(is_json(&headers(&[(
            "content-type",
            "Application/JSON; charset=utf-8"
        )])));
        assert!(!is_json(&headers(&[("content-type", "text/plain")])));
        assert!(!is_json(&headers(&[])));
    }

    #[test]
    fn statuses_follow_the_spec() {
        use kelson_jsonrpc::code::*;
        let e = |code, rejected| status_for(Outcome::Error { code, rejected });
        assert_eq!(e(HEADER_MISMATCH, false), StatusCode::BAD_REQUEST);
        assert_eq!(
            e(MISSING_REQUIRED_CLIENT_CAPABILITY, false),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            e(UNSUPPORTED_PROTOCOL_VERSION, true),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(e(METHOD_NOT_FOUND, true), StatusCode::NOT_FOUND);
        assert_eq!(e(INVALID_PARAMS, true), StatusCode::BAD_REQUEST);
        assert_eq!(e(INVALID_PARAMS, false), StatusCode::OK);
        assert_eq!(e(INTERNAL_ERROR, false), StatusCode::OK);
        assert_eq!(status_for(Outcome::ToolError), StatusCode::OK);
    }
}
