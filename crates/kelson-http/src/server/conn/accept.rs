//! Accepting connections: HTTP/1.1 with keep-alive (served by [`super::h1`]) and HTTP/2 over
//! cleartext (h2c, served by hyper), one task per connection and none per request, and a graceful
//! shutdown. With the `tls` feature, the same over TLS ([`serve_tls_with_shutdown`]): the
//! handshake runs in the connection's task, and ALPN picks the protocol.

use std::future::Future;
use std::net::IpAddr;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{Request, Response};
use hyper_util::rt::TokioExecutor;
use kelson_server::observe::{CloseReason, ConnectionStats};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::h1::{self, RequestBody};
use super::h2;
use super::stop::{Stop, Watched};
use super::throttle::{Throttle, throttled_warn};
use crate::server::endpoint::{ClientAddr, McpBody, McpService, MetricsService};

/// How long a metrics listener lets scrapes in progress finish after shutdown begins.
const METRICS_DRAIN: Duration = Duration::from_secs(2);
/// How long a connection to the metrics listener may stay silent before it is closed.
const METRICS_FIRST_BYTES: Duration = Duration::from_secs(30);
/// The largest request body the metrics listener reads (its `GET`s have none).
const METRICS_MAX_BODY: usize = 64 * 1024;
/// The most connections the metrics listener keeps open: scrapers are few.
const METRICS_MAX_CONNECTIONS: usize = 64;
/// The longest back-off after accepting failed for want of resources.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listening socket failed.
    #[error("the listening socket failed: {0}")]
    Listener(#[source] std::io::Error),
}

/// Serves `service` on `listener` until SIGINT or SIGTERM, then shuts down gracefully.
pub async fn serve(listener: TcpListener, service: McpService) -> Result<(), ServeError> {
    serve_with_shutdown(listener, service, shutdown_signal()).await
}

/// Serves `service` on `listener` until `shutdown` resolves.
///
/// Shutdown stops accepting, ends every open listen stream with its graceful final result, lets
/// requests in flight finish within the configured drain time, and closes idle connections. It
/// returns once every connection is closed: those still busy after the drain time are cut off,
/// which cancels their requests.
///
/// The connections are bounded by the [`HttpConfig`](crate::server::HttpConfig) timeouts and limits, and
/// counted in the server's [`Metrics`](kelson_server::Metrics), if it has them.
pub async fn serve_with_shutdown(
    listener: TcpListener,
    service: McpService,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    serve_mcp(listener, service, None, shutdown).await
}

/// Serves `service` over HTTPS on `listener` until SIGINT or SIGTERM, then shuts down gracefully.
#[cfg(feature = "tls")]
pub async fn serve_tls(
    listener: TcpListener,
    service: McpService,
    tls: super::tls::ServerTls,
) -> Result<(), ServeError> {
    serve_tls_with_shutdown(listener, service, tls, shutdown_signal()).await
}

/// Serves `service` over HTTPS on `listener` until `shutdown` resolves, as
/// [`serve_with_shutdown`] does over cleartext.
///
/// Each connection's TLS handshake runs in its own task: it must begin within the first-bytes
/// timeout and end within [`ServerTls::handshake_timeout`](super::tls::ServerTls::handshake_timeout),
/// and counts toward the connection cap meanwhile. ALPN `h2` is served HTTP/2, anything else
/// HTTP/1.1. A client that sends cleartext HTTP to this port gets a 400 that says so. Keep a clone
/// of `tls` to [`reload`](super::tls::ServerTls::reload) the certificate while serving.
#[cfg(feature = "tls")]
pub async fn serve_tls_with_shutdown(
    listener: TcpListener,
    service: McpService,
    tls: super::tls::ServerTls,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    serve_mcp(listener, service, Some(tls_side(&tls)), shutdown).await
}

#[cfg(feature = "tls")]
fn tls_side(tls: &super::tls::ServerTls) -> TlsSide {
    TlsSide {
        acceptor: tls.acceptor(),
        timeout: tls.timeout(),
    }
}

async fn serve_mcp(
    listener: TcpListener,
    service: McpService,
    tls: Option<TlsSide>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let (limits, stats, server) = listener_setup(&service);
    let handler = move |req: Request<RequestBody>| {
        let svc = service.clone();
        async move { svc.handle(req).await }
    };
    // Listen streams end with their final result, which lets their connections close.
    accept_loop(
        listener,
        handler,
        shutdown,
        move || server.shutdown(),
        limits,
        stats,
        tls,
    )
    .await
}

/// Serves `service` behind the service `wrap` makes of it (an auth layer, say) on `listener` until
/// `shutdown` resolves, exactly as [`serve_with_shutdown`] does otherwise.
///
/// Requests reach the front service with an [`IncomingBody`]; whatever it passes on reaches
/// `service`. The listener's limits and timeouts are those of `service`'s configuration.
pub async fn serve_wrapped_with_shutdown<S>(
    listener: TcpListener,
    service: McpService,
    wrap: impl FnOnce(McpService) -> S,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError>
where
    S: FrontService,
    S::Future: Send + 'static,
{
    serve_front(listener, service, wrap, None, shutdown).await
}

/// Serves `service` behind the service `wrap` makes of it over HTTPS, as
/// [`serve_wrapped_with_shutdown`] does over cleartext and [`serve_tls_with_shutdown`] does
/// without a front service.
#[cfg(feature = "tls")]
pub async fn serve_tls_wrapped_with_shutdown<S>(
    listener: TcpListener,
    service: McpService,
    wrap: impl FnOnce(McpService) -> S,
    tls: super::tls::ServerTls,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError>
where
    S: FrontService,
    S::Future: Send + 'static,
{
    serve_front(listener, service, wrap, Some(tls_side(&tls)), shutdown).await
}

/// What [`serve_wrapped_with_shutdown`] can put in front of [`McpService`]: a service of
/// [`IncomingBody`] requests answered with [`McpBody`] responses, never failing, that each
/// connection can clone.
pub trait FrontService:
    tower_service::Service<
        Request<IncomingBody>,
        Response = Response<McpBody>,
        Error = std::convert::Infallible,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> FrontService for S where
    S: tower_service::Service<
            Request<IncomingBody>,
            Response = Response<McpBody>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

async fn serve_front<S>(
    listener: TcpListener,
    service: McpService,
    wrap: impl FnOnce(McpService) -> S,
    tls: Option<TlsSide>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError>
where
    S: FrontService,
    S::Future: Send + 'static,
{
    let (limits, stats, server) = listener_setup(&service);
    let front = wrap(service);
    let handler = move |req: Request<RequestBody>| {
        let mut svc = front.clone();
        async move {
            let ready = std::future::poll_fn(|cx| svc.poll_ready(cx)).await;
            let result = match ready {
                Ok(()) => svc.call(req.map(IncomingBody)).await,
                Err(never) => Err(never),
            };
            match result {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
    };
    accept_loop(
        listener,
        handler,
        shutdown,
        move || server.shutdown(),
        limits,
        stats,
        tls,
    )
    .await
}

/// The limits of the MCP listener, its connection counters and the server it serves.
fn listener_setup(service: &McpService) -> (Limits, Arc<ConnectionStats>, kelson_server::Server) {
    let config = service.config();
    let limits = Limits {
        drain: config.drain,
        first_bytes: config.first_bytes_timeout,
        max_body: config.max_body,
        idle: config.idle_timeout,
        write: config.write_timeout,
        response_memory: config.response_memory as u64,
        max_connections: config.max_connections,
        per_address: config.max_connections_per_address,
        h2_streams: config.h2_max_concurrent_streams,
        max_header: config.max_header_bytes,
    };
    let server = service.server().clone();
    let stats = server
        .metrics()
        .map(kelson_server::Metrics::connections)
        .unwrap_or_default();
    (limits, stats, server)
}

/// The body of a request as the accept loop hands it to a service in front of [`McpService`]
/// (see [`serve_wrapped_with_shutdown`]): streamed from hyper for h2c, read whole (within the
/// body limit) for HTTP/1.1.
pub struct IncomingBody(RequestBody);

impl std::fmt::Debug for IncomingBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IncomingBody")
    }
}

impl http_body::Body for IncomingBody {
    type Data = bytes::Bytes;
    type Error = crate::server::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().0).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.0.size_hint()
    }
}

/// Serves metrics alone on `listener` until `shutdown` resolves: the separate metrics address.
pub async fn serve_metrics(
    listener: TcpListener,
    service: MetricsService,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let defaults = crate::server::HttpConfig::default();
    let limits = Limits {
        drain: METRICS_DRAIN,
        first_bytes: METRICS_FIRST_BYTES,
        max_body: METRICS_MAX_BODY,
        idle: defaults.idle_timeout,
        write: defaults.write_timeout,
        response_memory: defaults.response_memory as u64,
        max_connections: METRICS_MAX_CONNECTIONS,
        per_address: None,
        h2_streams: defaults.h2_max_concurrent_streams,
        max_header: defaults.max_header_bytes,
    };
    let handler = move |req: Request<RequestBody>| std::future::ready(service.handle(&req));
    // The metrics listener's own connections are not the MCP listener's to count.
    let stats = Arc::new(ConnectionStats::default());
    accept_loop(listener, handler, shutdown, || {}, limits, stats, None).await
}

/// The TLS side of a listener: what each connection's handshake needs.
#[cfg(feature = "tls")]
#[derive(Clone)]
struct TlsSide {
    acceptor: tokio_rustls::TlsAcceptor,
    timeout: Duration,
}

/// Without the `tls` feature, a listener never has a TLS side.
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
enum TlsSide {}

/// What a listener and its connections are bounded by.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// How long requests in flight may finish after shutdown begins.
    drain: Duration,
    /// How long a new connection may stay silent, and an HTTP/1.1 request take to arrive once
    /// begun; zero waits forever.
    first_bytes: Duration,
    /// The longest HTTP/1.1 body read.
    max_body: usize,
    idle: Duration,
    write: Duration,
    response_memory: u64,
    max_connections: usize,
    /// The most connections from one IP address; `None`: no such limit.
    per_address: Option<usize>,
    h2_streams: u32,
    /// The largest request header section (h1 head, h2 header list).
    max_header: usize,
}

/// The default of [`HttpConfig::max_connections`](crate::server::HttpConfig::max_connections): the limit
/// of open files less a reserve, within 16 and 10,000.
pub(crate) fn default_max_connections() -> usize {
    let limit = open_files_limit().unwrap_or(1024);
    let reserve = (limit / 8).max(64);
    limit.saturating_sub(reserve).clamp(16, 10_000)
}

/// The soft limit of open files of this process, from /proc on Linux (`std` has no `getrlimit`).
fn open_files_limit() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line["Max open files".len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(usize::MAX);
    }
    soft.parse().ok()
}

/// A connection being served: counted in the listener's cap (and its address's, when there is
/// one) and the metrics until dropped.
struct Open {
    count: Arc<AtomicUsize>,
    stats: Arc<ConnectionStats>,
    address: Option<(Arc<PerAddress>, IpAddr)>,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
        self.stats.ended();
        if let Some((counts, ip)) = &self.address {
            counts.release(*ip);
        }
    }
}

/// Open connections per client IP address, kept only when there is a limit per address.
#[derive(Default)]
struct PerAddress {
    open: std::sync::Mutex<std::collections::HashMap<IpAddr, usize>>,
}

impl PerAddress {
    /// Counts one more connection from `ip` unless it has `limit` open already.
    fn take(&self, ip: IpAddr, limit: usize) -> bool {
        let mut open = self.open.lock().expect("per-address lock");
        let count = open.entry(ip).or_default();
        if *count >= limit {
            return false;
        }
        *count += 1;
        true
    }

    fn release(&self, ip: IpAddr) {
        let mut open = self.open.lock().expect("per-address lock");
        if let Some(count) = open.get_mut(&ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&ip);
            }
        }
    }
}

/// Accepts connections and serves each with `handler` until `shutdown` resolves; then stops
/// accepting, calls `on_stop`, and drains within the drain time. A connection that sends nothing
/// within the first-bytes time (unless zero) is closed, and so is an HTTP/1.1 connection whose
/// request head, once begun, or whose body, once its head is read, takes longer than that.
/// HTTP/1.1 bodies longer than the limit are not read. Beyond the most connections, a new one is
/// closed at once; when accepting fails for want of file descriptors or memory, the loop backs off
/// (up to a second) instead of spinning, and says so at most every 10 s.
async fn accept_loop<H, F>(
    listener: TcpListener,
    handler: H,
    shutdown: impl Future<Output = ()>,
    on_stop: impl FnOnce(),
    limits: Limits,
    stats: Arc<ConnectionStats>,
    tls: Option<TlsSide>,
) -> Result<(), ServeError>
where
    H: Fn(Request<RequestBody>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<McpBody>> + Send + 'static,
{
    let h1_settings = h1::Settings {
        max_body: limits.max_body,
        head_timeout: limits.first_bytes,
        idle_timeout: limits.idle,
        write_timeout: limits.write,
        response_memory: limits.response_memory,
        max_head: limits.max_header,
    };
    let h2_settings = h2::Settings {
        idle_timeout: limits.idle,
        write_timeout: limits.write,
        response_memory: limits.response_memory,
    };
    let mut http2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    http2.max_concurrent_streams(limits.h2_streams);
    http2.max_header_list_size(u32::try_from(limits.max_header).unwrap_or(u32::MAX));
    let per_address = limits.per_address.map(|_| Arc::new(PerAddress::default()));
    // On shutdown every connection is asked to finish what it serves and close; those still open
    // when the drain time is over are dropped, which closes them and cancels their requests
    // (without this they would run on after this function returned).
    let stop = Stop::new();
    let connections = TaskTracker::new();
    // Connections that have not yet said which protocol they speak are closed as soon as the
    // server stops accepting: they have no request to finish.
    let stopping = CancellationToken::new();
    let open = Arc::new(AtomicUsize::new(0));
    let mut backoff = Duration::ZERO;
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) if out_of_resources(&e) => {
                    // Out of file descriptors or memory: back off instead of spinning or dying;
                    // connections that end meanwhile give some back.
                    stats.accept_error();
                    backoff = (backoff * 2).clamp(Duration::from_millis(10), MAX_BACKOFF);
                    static WARN: Throttle = Throttle::new();
                    throttled_warn!(WARN, error = %e, ?backoff, "accepting a connection failed; backing off");
                    tokio::select! {
                        biased;
                        () = &mut shutdown => break,
                        () = tokio::time::sleep(backoff) => continue,
                    }
                }
                // The client gave up before it was accepted, and the like: nothing to wait for.
                Err(e) if transient(&e) => continue,
                Err(e) => return Err(ServeError::Listener(e)),
            },
        };
        backoff = Duration::ZERO;
        if open.load(Ordering::Relaxed) >= limits.max_connections {
            // At the cap: close it now rather than leave it in the kernel's queue, where the
            // client would wait without knowing.
            drop(stream);
            stats.refused();
            static WARN: Throttle = Throttle::new();
            throttled_warn!(
                WARN,
                max_connections = limits.max_connections,
                "refused a connection: the most connections allowed are open"
            );
            continue;
        }
        // One address may not hold more than its share (an IPv4 client seen on an IPv6 socket
        // counts as its IPv4 address).
        let address = match (&per_address, limits.per_address) {
            (Some(counts), Some(limit)) => {
                let ip = peer.ip().to_canonical();
                if !counts.take(ip, limit) {
                    drop(stream);
                    stats.refused_per_address();
                    static WARN: Throttle = Throttle::new();
                    throttled_warn!(
                        WARN,
                        %ip,
                        limit,
                        "refused a connection: its address has the most connections allowed open"
                    );
                    continue;
                }
                Some((counts.clone(), ip))
            }
            _ => None,
        };
        open.fetch_add(1, Ordering::Relaxed);
        stats.opened();
        let guard = Open {
            count: open.clone(),
            stats: stats.clone(),
            address,
        };
        // Small JSON-RPC messages must not wait for Nagle's algorithm.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        // Every request learns the address it came from: handshake-era sessions of anonymous
        // callers are counted per address.
        let handler = {
            let handler = handler.clone();
            move |mut req: Request<RequestBody>| {
                req.extensions_mut().insert(ClientAddr(peer));
                handler(req)
            }
        };
        let http2 = http2.clone();
        let (stop, stopping) = (stop.clone(), stopping.clone());
        #[cfg(feature = "tls")]
        if let Some(tls) = &tls {
            let tls = tls.clone();
            let settings = (h1_settings, h2_settings);
            connections.spawn(async move {
                serve_tls_conn(
                    stream, peer, tls, handler, http2, stop, stopping, limits, settings, guard,
                )
                .await;
            });
            continue;
        }
        #[cfg(not(feature = "tls"))]
        if let Some(never) = &tls {
            match *never {}
        }
        connections.spawn(async move {
            let _open = guard;
            let version = tokio::select! {
                v = sniff_within(&stream, limits.first_bytes) => v,
                () = stopping.cancelled() => return,
            };
            match version {
                Ok(Version::H1) => {
                    let stats = _open.stats.clone();
                    // The connection reads the stop signal itself, between requests. `Watched`
                    // keeps it on the heap, so that the task does not hold it twice (once as
                    // captured and once while awaiting it).
                    let conn = h1::serve(stream, handler, stop.clone(), h1_settings, stats);
                    if let Some(Err(e)) = Watched::new(conn, |_: Pin<&mut _>| {}, stop).await {
                        trace_conn_error(peer, &e);
                    }
                }
                Ok(Version::H2) => {
                    let stats = _open.stats.clone();
                    let conn = h2::serve(stream, handler, &http2, stop, h2_settings, stats);
                    if let Some(Err(e)) = conn.await {
                        trace_conn_error(peer, &*e);
                    }
                }
                Err(e) => {
                    if e.kind() == std::io::ErrorKind::TimedOut {
                        _open.stats.closed(CloseReason::ReadTimeout);
                    }
                    tracing::debug!(%peer, error = %e, "connection closed before its first request");
                }
            }
        });
    }
    stopping.cancel();
    drop(listener);
    on_stop();
    stop.drain();
    connections.close();
    if tokio::time::timeout(limits.drain, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            drain = ?limits.drain,
            "connections still open after the drain time; closing them"
        );
        stop.cut_off();
        connections.wait().await;
    }
    Ok(())
}

/// Serves one connection over TLS: waits for its first byte within the first-bytes time, answers
/// cleartext HTTP with a 400, runs the handshake within the handshake time, and serves the protocol
/// ALPN agreed on.
#[cfg(feature = "tls")]
#[allow(clippy::too_many_arguments)]
async fn serve_tls_conn<H, F>(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    tls: TlsSide,
    handler: H,
    http2: hyper::server::conn::http2::Builder<TokioExecutor>,
    stop: Arc<Stop>,
    stopping: CancellationToken,
    limits: Limits,
    (h1_settings, h2_settings): (h1::Settings, h2::Settings),
    open: Open,
) where
    H: Fn(Request<RequestBody>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<McpBody>> + Send + 'static,
{
    let first = tokio::select! {
        first = first_byte_within(&stream, limits.first_bytes) => first,
        () = stopping.cancelled() => return,
    };
    match first {
        // A TLS connection opens with a handshake record (RFC 8446 §5.1).
        Ok(0x16) => {}
        Ok(_) => {
            tracing::debug!(%peer, "cleartext on the HTTPS listener; answered 400");
            super::tls::refuse_cleartext(stream).await;
            return;
        }
        Err(e) => {
            if e.kind() == std::io::ErrorKind::TimedOut {
                open.stats.closed(CloseReason::ReadTimeout);
            }
            tracing::debug!(%peer, error = %e, "connection closed before its first request");
            return;
        }
    }
    let handshake = tls.acceptor.accept(stream);
    let handshake = async {
        if tls.timeout.is_zero() {
            return handshake.await;
        }
        tokio::time::timeout(tls.timeout, handshake)
            .await
            .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
    };
    let stream = tokio::select! {
        stream = handshake => stream,
        () = stopping.cancelled() => return,
    };
    let stream = match stream {
        Ok(stream) => stream,
        Err(e) => {
            if e.kind() == std::io::ErrorKind::TimedOut {
                open.stats.closed(CloseReason::ReadTimeout);
            }
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            return;
        }
    };
    let stats = open.stats.clone();
    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
        let conn = h2::serve(stream, handler, &http2, stop, h2_settings, stats);
        if let Some(Err(e)) = conn.await {
            trace_conn_error(peer, &*e);
        }
    } else {
        let conn = h1::serve(stream, handler, stop.clone(), h1_settings, stats);
        if let Some(Err(e)) = Watched::new(conn, |_: Pin<&mut _>| {}, stop).await {
            trace_conn_error(peer, &e);
        }
    }
    drop(open);
}

/// The first byte the client sends, without consuming it; `TimedOut` after `limit` (unless zero).
#[cfg(feature = "tls")]
async fn first_byte_within(stream: &tokio::net::TcpStream, limit: Duration) -> std::io::Result<u8> {
    let peek = async {
        let mut byte = [0u8; 1];
        match stream.peek(&mut byte).await? {
            0 => Err(std::io::ErrorKind::UnexpectedEof.into()),
            _ => Ok(byte[0]),
        }
    };
    if limit.is_zero() {
        return peek.await;
    }
    tokio::time::timeout(limit, peek)
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

/// The HTTP/2 connection preface (RFC 9113 §3.4), which an h2c client with prior knowledge sends
/// first.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

enum Version {
    H1,
    H2,
}

/// [`sniff`], giving up after `limit` (unless zero) with a `TimedOut` error.
async fn sniff_within(stream: &tokio::net::TcpStream, limit: Duration) -> std::io::Result<Version> {
    if limit.is_zero() {
        return sniff(stream).await;
    }
    tokio::time::timeout(limit, sniff(stream))
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

/// Which protocol the client speaks, read with `peek` so that nothing is consumed: the connection
/// is then read from its first byte, with no rewinding wrapper in between.
/// An HTTP/1.1 request differs from the preface by its second byte at the latest.
///
/// A preface split across packets leaves bytes in the socket that a `peek` sees again at once, so
/// peeking in a loop would spin (one wake-up per millisecond per connection, when it slept in
/// between). Instead, the readiness the runtime recorded is cleared after a peek that saw only
/// part of the preface, and the task sleeps until the kernel reports new bytes (or the peer's
/// closing). Clearing is safe from the race with bytes that arrive meanwhile: tokio clears only
/// the readiness event the peek saw, not a newer one.
async fn sniff(stream: &tokio::net::TcpStream) -> std::io::Result<Version> {
    use tokio::io::Interest;
    loop {
        let ready = stream.ready(Interest::READABLE).await?;
        match stream.try_io(Interest::READABLE, || peek_version(stream)) {
            Ok(version) => return Ok(version),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Part of the preface and then the peer's end of sending: no preface will come.
                if ready.is_read_closed() {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Peeks at what has arrived without waiting: `WouldBlock` when it is nothing, or only part of
/// the preface.
fn peek_version(stream: &tokio::net::TcpStream) -> std::io::Result<Version> {
    let mut buf = [0u8; H2_PREFACE.len()];
    let mut read = tokio::io::ReadBuf::new(&mut buf);
    // The caller waits for readiness itself; this context only lets `poll_peek` run once.
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let n = match stream.poll_peek(&mut cx, &mut read) {
        std::task::Poll::Ready(n) => n?,
        std::task::Poll::Pending => return Err(std::io::ErrorKind::WouldBlock.into()),
    };
    let seen = read.filled();
    if n == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    if seen != &H2_PREFACE[..n] {
        return Ok(Version::H1);
    }
    if n == H2_PREFACE.len() {
        return Ok(Version::H2);
    }
    Err(std::io::ErrorKind::WouldBlock.into())
}

/// Accepting failed for want of resources that connections ending give back: file descriptors
/// (EMFILE, ENFILE), buffers (ENOBUFS) or memory (ENOMEM).
fn out_of_resources(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::OutOfMemory
        || e.raw_os_error()
            .is_some_and(|code| matches!(code, 12 | 23 | 24 | 105))
}

/// Accepting failed for this connection only.
fn transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock | TimedOut
    )
}

fn trace_conn_error(peer: SocketAddr, e: &(dyn std::error::Error + 'static)) {
    tracing::debug!(%peer, error = %e, "connection ended with an error");
}

/// Resolves on SIGINT or, on Unix, SIGTERM: what [`serve`] stops on, for servers that run other
/// listeners beside it and stop them together.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt as _;
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A connected pair: what the client writes, the server side sniffs.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        (client, server)
    }

    #[tokio::test]
    async fn an_http1_request_is_told_apart_by_its_first_bytes() {
        let (mut client, server) = pair().await;
        // "PO" already differs from "PR": no need to wait for more.
        client.write_all(b"PO").await.expect("write");
        assert!(matches!(sniff(&server).await, Ok(Version::H1)));
        let (mut client, server) = pair().await;
        client
            .write_all(b"GET / HTTP/1.1\r\n\r\n")
            .await
            .expect("write");
        assert!(matches!(sniff(&server).await, Ok(Version::H1)));
    }

    #[tokio::test]
    async fn a_preface_split_across_writes_is_h2_and_nothing_is_consumed() {
        let (mut client, server) = pair().await;
        client.write_all(&H2_PREFACE[..10]).await.expect("write");
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            client.write_all(&H2_PREFACE[10..]).await.expect("write");
            client
        });
        assert!(matches!(sniff(&server).await, Ok(Version::H2)));
        let _client = writer.await.expect("writer");
        // hyper must still find the whole preface on the socket.
        let mut buf = [0u8; 24];
        let n = server.peek(&mut buf).await.expect("peek");
        assert_eq!(&buf[..n], H2_PREFACE);
    }

    #[tokio::test]
    async fn a_connection_closed_before_speaking_is_an_error() {
        let (client, server) = pair().await;
        drop(client);
        assert!(sniff(&server).await.is_err());
    }

    #[tokio::test]
    async fn a_partial_preface_is_waited_for_without_waking() {
        let (mut client, server) = pair().await;
        client.write_all(b"P").await.expect("write");
        // Count the times the sniffer runs while the rest does not come: it must sleep until new
        // bytes arrive, not look again and again.
        let mut sniffing = std::pin::pin!(sniff(&server));
        let mut polls = 0;
        let counted = std::future::poll_fn(|cx| {
            polls += 1;
            sniffing.as_mut().poll(cx)
        });
        let waited = tokio::time::timeout(Duration::from_millis(300), counted).await;
        assert!(waited.is_err(), "no protocol can be told from one byte");
        assert!(polls <= 3, "the sniffer woke {polls} times in 300 ms");
        // The rest arrives: it wakes, and the connection is h2.
        client.write_all(&H2_PREFACE[1..]).await.expect("write");
        assert!(matches!(sniff(&server).await, Ok(Version::H2)));
    }

    #[tokio::test]
    async fn a_partial_preface_then_closing_is_an_error_at_once() {
        let (mut client, server) = pair().await;
        client.write_all(b"PRI * HTTP").await.expect("write");
        client.shutdown().await.expect("shutdown");
        let sniffed = tokio::time::timeout(Duration::from_secs(5), sniff(&server)).await;
        assert!(
            matches!(sniffed, Ok(Err(_))),
            "{:?}",
            sniffed.map(|r| r.is_ok())
        );
    }
}
