//! [`serve`]: an endpoint on a listener, the one way into this crate's accept loop.
//!
//! One builder in place of a function per combination (a shutdown future or the signals, TLS or
//! not, a front service or none): what is served is fixed by [`serve`]'s arguments, the rest is
//! set only where it differs from the defaults, and `.await` runs it, as with axum's
//! `serve(listener, app).with_graceful_shutdown(signal)`.
//!
//! The builder is generic over what it serves ([`Endpoint`]) so that each endpoint gets the accept
//! loop compiled for it: [`McpService`] alone is called directly, without the boxed future of its
//! `tower::Service` implementation, and a front service is called through `tower::Service` only
//! when there is one. Only the loop itself is boxed, once per listener, so that
//! [`IntoFuture`] can name it.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use kelson_server::observe::ConnectionStats;
use tokio::net::TcpListener;

use super::conn::{Limits, ListenerConfig, RequestBody, ServeError, TlsSide, accept};
use super::endpoint::{BoxError, McpBody, McpService, MetricsService};

/// How long a metrics listener lets scrapes in progress finish after shutdown begins.
const METRICS_DRAIN: Duration = Duration::from_secs(2);
/// How long a connection to the metrics listener may stay silent before it is closed.
const METRICS_FIRST_BYTES: Duration = Duration::from_secs(30);
/// The largest request body the metrics listener reads (its `GET`s have none).
const METRICS_MAX_BODY: usize = 64 * 1024;
/// The most connections the metrics listener keeps open: scrapers are few.
const METRICS_MAX_CONNECTIONS: usize = 64;

/// Serves `endpoint` on `listener`: an [`McpService`] (behind a front service if
/// [`wrap`](Serve::wrap) puts one there) or a [`MetricsService`] on an address of its own.
///
/// Nothing runs until the returned [`Serve`] is awaited. By default it serves cleartext HTTP/1.1
/// and h2c until SIGINT or SIGTERM ([`shutdown_signal`]), then shuts down gracefully, with the
/// [`ListenerConfig`] defaults (for a `MetricsService`, ones fitted to a few scrapers: a drain of
/// 2 s, at most 64 connections, bodies of at most 64 KiB read).
///
/// ```no_run
/// use kelson_http::server::{HttpConfig, ListenerConfig, McpService, OriginPolicy, serve};
///
/// # async fn run(server: kelson_server::Server) -> Result<(), Box<dyn std::error::Error>> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// let mut config = HttpConfig::default();
/// config.policy = OriginPolicy::for_bind(listener.local_addr()?);
/// let mut limits = ListenerConfig::default();
/// limits.max_connections = 500;
/// serve(listener, McpService::new(server, config))
///     .listener_config(limits)
///     .with_graceful_shutdown(async {
///         let _ = tokio::signal::ctrl_c().await;
///     })
///     .await?;
/// # Ok(())
/// # }
/// ```
pub fn serve<E: Endpoint>(listener: TcpListener, endpoint: E) -> Serve<E> {
    Serve {
        listener,
        endpoint,
        shutdown: Box::pin(shutdown_signal()),
        config: None,
        tls: None,
    }
}

/// An endpoint on a listener, as [`serve`] makes it: set what differs from the defaults, then
/// `.await` it (it is [`IntoFuture`]), or spawn its [`into_future`](IntoFuture::into_future).
///
/// Shutdown, on SIGINT or SIGTERM unless [`with_graceful_shutdown`](Self::with_graceful_shutdown)
/// names another signal, stops accepting, ends every open listen stream with its graceful final
/// result, lets requests in flight finish within the drain time ([`ListenerConfig::drain`]), and
/// closes idle connections. The future resolves once every connection is closed: those still busy
/// after the drain time are cut off, which cancels their requests.
///
/// The connections are bounded by the [`ListenerConfig`] timeouts and limits, and an MCP
/// listener's are counted in the server's [`Metrics`](kelson_server::Metrics), if it has them.
#[must_use = "nothing is served until the Serve is awaited"]
pub struct Serve<E> {
    listener: TcpListener,
    endpoint: E,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    config: Option<ListenerConfig>,
    #[cfg(feature = "tls")]
    tls: Option<super::ServerTls>,
    #[cfg(not(feature = "tls"))]
    tls: Option<std::convert::Infallible>,
}

impl<E> Serve<E> {
    /// Serves until `signal` resolves, instead of until SIGINT or SIGTERM.
    pub fn with_graceful_shutdown<F>(mut self, signal: F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.shutdown = Box::pin(signal);
        self
    }

    /// Bounds the listener and its connections with `config` instead of the defaults.
    pub fn listener_config(mut self, config: ListenerConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Serves HTTPS with `tls` instead of cleartext.
    ///
    /// Each connection's TLS handshake runs in its own task: it must begin within the first-bytes
    /// timeout and end within [`ServerTls::handshake_timeout`](super::ServerTls::handshake_timeout),
    /// and counts toward the connection cap meanwhile. ALPN `h2` is served HTTP/2, anything else
    /// HTTP/1.1. A client that sends cleartext HTTP to this port gets a 400 that says so. Keep a
    /// clone of `tls` to [`reload`](super::ServerTls::reload) the certificate while serving.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: super::ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }
}

impl Serve<McpService> {
    /// Serves the endpoint behind the service `wrap` makes of it (an auth layer, say:
    /// `|s| auth_layer.layer(s)`), with the listener's settings as they would be without it.
    ///
    /// Requests reach the front service with an [`IncomingBody`]; whatever it passes on reaches
    /// the endpoint. Layers that should all run go in the one closure (tower's `ServiceBuilder`
    /// stacks them).
    pub fn wrap<S>(self, wrap: impl FnOnce(McpService) -> S) -> Serve<Wrapped<S>>
    where
        S: FrontService,
        S::Future: Send + 'static,
    {
        let Serve {
            listener,
            endpoint,
            shutdown,
            config,
            tls,
        } = self;
        Serve {
            listener,
            endpoint: Wrapped {
                front: wrap(endpoint.clone()),
                endpoint,
            },
            shutdown,
            config,
            tls,
        }
    }
}

impl<E: Endpoint> IntoFuture for Serve<E> {
    type Output = Result<(), ServeError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<(), ServeError>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        #[cfg(feature = "tls")]
        let tls = self.tls.as_ref().map(super::ServerTls::side);
        #[cfg(not(feature = "tls"))]
        let tls: Option<TlsSide> = self.tls.map(|never| match never {});
        let setup = sealed::Setup {
            shutdown: self.shutdown,
            config: self.config,
            tls,
        };
        sealed::Sealed::serve_on(self.endpoint, self.listener, setup)
    }
}

impl<E: fmt::Debug> fmt::Debug for Serve<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Serve")
            .field("listener", &self.listener)
            .field("endpoint", &self.endpoint)
            .field("config", &self.config)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

/// What [`serve`] serves: an [`McpService`], an `McpService` behind a front service ([`Wrapped`],
/// made by [`Serve::wrap`]), or a [`MetricsService`]. Sealed: these are the endpoints the listener
/// knows how to call.
pub trait Endpoint: sealed::Sealed {}

impl Endpoint for McpService {}
impl Endpoint for MetricsService {}
impl<S> Endpoint for Wrapped<S>
where
    S: FrontService,
    S::Future: Send + 'static,
{
}

mod sealed {
    use super::*;

    /// What the listener needs besides the endpoint.
    pub struct Setup {
        pub(super) shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
        pub(super) config: Option<ListenerConfig>,
        pub(super) tls: Option<TlsSide>,
    }

    /// How an endpoint is served: its handler, limits and counters, and what stopping does.
    pub trait Sealed {
        /// The accept loop serving `self` on `listener`.
        fn serve_on(
            self,
            listener: TcpListener,
            setup: Setup,
        ) -> Pin<Box<dyn Future<Output = Result<(), ServeError>> + Send>>;
    }

    impl Sealed for McpService {
        fn serve_on(
            self,
            listener: TcpListener,
            setup: Setup,
        ) -> Pin<Box<dyn Future<Output = Result<(), ServeError>> + Send>> {
            let (limits, stats, server) = mcp_listener(&self, setup.config);
            let handler = move |req: Request<RequestBody>| {
                let svc = self.clone();
                async move { svc.handle(req).await }
            };
            // Listen streams end with their final result, which lets their connections close.
            Box::pin(accept::run(
                listener,
                handler,
                setup.shutdown,
                move || server.shutdown(),
                limits,
                stats,
                setup.tls,
            ))
        }
    }

    impl<S> Sealed for Wrapped<S>
    where
        S: FrontService,
        S::Future: Send + 'static,
    {
        fn serve_on(
            self,
            listener: TcpListener,
            setup: Setup,
        ) -> Pin<Box<dyn Future<Output = Result<(), ServeError>> + Send>> {
            let Wrapped { front, endpoint } = self;
            let (limits, stats, server) = mcp_listener(&endpoint, setup.config);
            // The front holds the endpoint from here on: once it is dropped, so is the endpoint.
            drop(endpoint);
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
            Box::pin(accept::run(
                listener,
                handler,
                setup.shutdown,
                move || server.shutdown(),
                limits,
                stats,
                setup.tls,
            ))
        }
    }

    impl Sealed for MetricsService {
        fn serve_on(
            self,
            listener: TcpListener,
            setup: Setup,
        ) -> Pin<Box<dyn Future<Output = Result<(), ServeError>> + Send>> {
            let config = setup.config.unwrap_or_else(|| ListenerConfig {
                drain: METRICS_DRAIN,
                first_bytes_timeout: METRICS_FIRST_BYTES,
                max_connections: METRICS_MAX_CONNECTIONS,
                max_connections_per_address: None,
                ..ListenerConfig::default()
            });
            let limits = Limits::new(&config, METRICS_MAX_BODY);
            let handler = move |req: Request<RequestBody>| std::future::ready(self.handle(&req));
            // The metrics listener's own connections are not the MCP listener's to count.
            let stats = Arc::new(ConnectionStats::default());
            Box::pin(accept::run(
                listener,
                handler,
                setup.shutdown,
                || {},
                limits,
                stats,
                setup.tls,
            ))
        }
    }
}

/// The limits of an MCP listener, its connection counters and the server it serves.
fn mcp_listener(
    service: &McpService,
    config: Option<ListenerConfig>,
) -> (Limits, Arc<ConnectionStats>, kelson_server::Server) {
    let limits = Limits::new(&config.unwrap_or_default(), service.config().max_body);
    let server = service.server().clone();
    let stats = server
        .metrics()
        .map(kelson_server::Metrics::connections)
        .unwrap_or_default();
    (limits, stats, server)
}

/// An [`McpService`] behind the front service `S`, as [`Serve::wrap`] puts it: what the listener
/// serves then.
pub struct Wrapped<S> {
    front: S,
    /// The endpoint itself, for the listener's settings and the server it stops.
    endpoint: McpService,
}

impl<S: fmt::Debug> fmt::Debug for Wrapped<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wrapped")
            .field("front", &self.front)
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

/// What [`Serve::wrap`] can put in front of [`McpService`]: a service of [`IncomingBody`] requests
/// answered with [`McpBody`] responses, never failing, that each connection can clone.
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

/// The body of a request as the listener hands it to a service in front of [`McpService`] (see
/// [`Serve::wrap`]): streamed from hyper for h2c, read whole (within the body limit) for HTTP/1.1.
pub struct IncomingBody(RequestBody);

impl fmt::Debug for IncomingBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IncomingBody")
    }
}

impl http_body::Body for IncomingBody {
    type Data = bytes::Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().0).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.0.size_hint()
    }
}

/// Resolves on SIGINT or, on Unix, SIGTERM: what [`Serve`] stops on unless told otherwise, for
/// servers that run other listeners beside it and stop them together.
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
