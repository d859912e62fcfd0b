//! Accepting connections: HTTP/1.1 with keep-alive (served by [`super::h1`]) and HTTP/2 over
//! cleartext (h2c, served by hyper), one task per connection and none per request, and a graceful
//! shutdown. With the `tls` feature, the same over TLS ([`super::tls`]): the handshake runs in the
//! connection's task, and ALPN picks the protocol.

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

use super::ListenerConfig;
use super::h1::{self, RequestBody};
use super::h2;
use super::sniff::{Version, sniff_within};
use super::stop::{Stop, Watched};
use super::throttle::{Throttle, throttled_warn};
use crate::server::endpoint::{ClientAddr, McpBody};

/// The longest back-off after accepting failed for want of resources.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listening socket failed.
    #[error("the listening socket failed: {0}")]
    Listener(#[source] std::io::Error),
}

/// The TLS side of a listener: what each connection's handshake needs.
#[cfg(feature = "tls")]
pub(crate) use super::tls::TlsSide;

/// Without the `tls` feature, a listener never has a TLS side.
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
pub(crate) enum TlsSide {}

/// What a listener and its connections are bounded by.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// How long requests in flight may finish after shutdown begins.
    pub(crate) drain: Duration,
    /// How long a new connection may stay silent, and an HTTP/1.1 request take to arrive once
    /// begun; zero waits forever.
    pub(crate) first_bytes: Duration,
    /// The longest HTTP/1.1 body read.
    pub(crate) max_body: usize,
    pub(crate) idle: Duration,
    pub(crate) write: Duration,
    pub(crate) response_memory: u64,
    pub(crate) max_connections: usize,
    /// The most connections from one IP address; `None`: no such limit.
    pub(crate) per_address: Option<usize>,
    pub(crate) h2_streams: u32,
    /// The largest request header section (h1 head, h2 header list).
    pub(crate) max_header: usize,
}

impl Limits {
    /// The limits of `config`, with HTTP/1.1 bodies read up to `max_body`.
    pub(crate) fn new(config: &ListenerConfig, max_body: usize) -> Self {
        Limits {
            drain: config.drain,
            first_bytes: config.first_bytes_timeout,
            max_body,
            idle: config.idle_timeout,
            write: config.write_timeout,
            response_memory: config.response_memory as u64,
            max_connections: config.max_connections,
            per_address: config.max_connections_per_address,
            h2_streams: config.h2_max_concurrent_streams,
            max_header: config.max_header_bytes,
        }
    }
}

/// A connection being served: counted in the listener's cap (and its address's, when there is
/// one) and the metrics until dropped.
pub(crate) struct Open {
    count: Arc<AtomicUsize>,
    pub(crate) stats: Arc<ConnectionStats>,
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
pub(crate) async fn run<H, F>(
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
                super::tls::serve_conn(
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

pub(crate) fn trace_conn_error(peer: SocketAddr, e: &(dyn std::error::Error + 'static)) {
    tracing::debug!(%peer, error = %e, "connection ended with an error");
}
