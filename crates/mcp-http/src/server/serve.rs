//! Accepting connections: HTTP/1.1 with keep-alive and HTTP/2 over cleartext (h2c), one task per
//! connection and none per request, and a graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{McpBody, McpService, MetricsService};

/// How long a metrics listener lets scrapes in progress finish after shutdown begins.
const METRICS_DRAIN: Duration = Duration::from_secs(2);

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
pub async fn serve_with_shutdown(
    listener: TcpListener,
    service: McpService,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let drain = service.config().drain;
    let server = service.server().clone();
    let handler = move |req: Request<Incoming>| {
        let svc = service.clone();
        async move { svc.handle(req).await }
    };
    // Listen streams end with their final result, which lets their connections close.
    accept_loop(
        listener,
        handler,
        shutdown,
        move || server.shutdown(),
        drain,
    )
    .await
}

/// Serves metrics alone on `listener` until `shutdown` resolves: the separate metrics address.
pub async fn serve_metrics(
    listener: TcpListener,
    service: MetricsService,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let handler = move |req: Request<Incoming>| std::future::ready(service.handle(&req));
    accept_loop(listener, handler, shutdown, || {}, METRICS_DRAIN).await
}

/// Accepts connections and serves each with `handler` until `shutdown` resolves; then stops
/// accepting, calls `on_stop`, and drains within `drain`.
async fn accept_loop<H, F>(
    listener: TcpListener,
    handler: H,
    shutdown: impl Future<Output = ()>,
    on_stop: impl FnOnce(),
    drain: Duration,
) -> Result<(), ServeError>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<McpBody>> + Send + 'static,
{
    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    // Connections still open when the drain time is over are dropped, which closes them and
    // cancels their requests; without this they would run on after this function returned.
    let connections = TaskTracker::new();
    let cut_off = CancellationToken::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) if transient(&e) => {
                    // Out of file descriptors and the like: back off instead of spinning or dying.
                    tracing::warn!(error = %e, "accept failed; retrying");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                Err(e) => return Err(ServeError::Listener(e)),
            },
        };
        // Small JSON-RPC messages must not wait for Nagle's algorithm.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let handler = handler.clone();
        let hyper_service = hyper::service::service_fn(move |req| {
            let response = handler(req);
            async move { Ok::<_, std::convert::Infallible>(response.await) }
        });
        let conn = builder
            .serve_connection(TokioIo::new(stream), hyper_service)
            .into_owned();
        let conn = graceful.watch(conn);
        let cut_off = cut_off.clone();
        connections.spawn(async move {
            tokio::select! {
                result = conn => if let Err(e) = result {
                    trace_conn_error(peer, &*e);
                },
                () = cut_off.cancelled() => {}
            }
        });
    }
    drop(listener);
    on_stop();
    if tokio::time::timeout(drain, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            ?drain,
            "connections still open after the drain time; closing them"
        );
        cut_off.cancel();
    }
    connections.close();
    connections.wait().await;
    Ok(())
}

fn transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock | TimedOut
    ) || e
        .raw_os_error()
        .is_some_and(|code| code == 24 || code == 23)
}

fn trace_conn_error(peer: SocketAddr, e: &(dyn std::error::Error + 'static)) {
    tracing::debug!(%peer, error = %e, "connection ended with an error");
}

/// Resolves on SIGINT or, on Unix, SIGTERM.
pub(crate) async fn shutdown_signal() {
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
