//! Serving what open.rs built, once its listeners are bound: over stdio, or over HTTP with the
//! metrics on the same listener or on one of their own, HTTPS reloaded on SIGHUP, authorization in
//! front, `GET /` pointing at the endpoint, and a shutdown that makes no new tasks, turns
//! readiness off for the grace period and then drains.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use futures_util::FutureExt as _;
use kelson_http::server::{Health, McpService, MetricsService, ServerTls};
use kelson_server::stdio;
use tokio::net::TcpListener;

use super::exit::Failure;
use super::listen::{Landing, WithLanding, client_url};
use super::open::Served;
use super::settings::Settings;
use super::{eras_line, http_config, listener_config, policy};

/// The metrics' own listener, bound, and the flag or key that gave its address.
pub(super) type MetricsListener = (TcpListener, &'static str);

/// Serves on stdin and stdout until the end of the input (signals keep their default action).
pub(super) async fn stdio(
    settings: &Settings,
    served: Served,
    metrics: Option<MetricsListener>,
) -> Result<(), Failure> {
    tracing::info!("{}", eras_line(settings, true));
    let config = {
        let mut edited = stdio::StdioConfig::default();
        edited.max_line = settings.http.max_message;
        edited
    };
    let metrics = metrics_service(settings, &served, metrics)?;
    if let Some((_, service, local)) = &metrics {
        announce_metrics(*local, service.path());
    }
    let (stop_metrics, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    let server = served.server.clone();
    let serving = async {
        let result = stdio::serve_stdio(server, config)
            .await
            .context("serving on stdio");
        drop(stop_metrics);
        result
    };
    let stopped = async {
        let _ = metrics_stopped.await;
    };
    let (result, ()) = tokio::join!(serving, serve_metrics(metrics, stopped));
    drop(served);
    result.map_err(Failure::Serving)
}

/// What the HTTP listener needs besides the server: read before anything was announced.
pub(super) struct Front {
    /// HTTPS, when served.
    pub tls: Option<ServerTls>,
    /// The authorization layer's authenticator, when there is one.
    pub auth: Option<Arc<kelson_auth::Authenticator>>,
    /// SIGHUP, listened for before the address is announced (with HTTPS).
    pub hangups: Option<Hangups>,
}

/// Serves HTTP on `listener` until SIGTERM or Ctrl-C, then drains.
pub(super) async fn http(
    settings: &Settings,
    served: Served,
    listener: TcpListener,
    metrics: Option<MetricsListener>,
    front: Front,
) -> Result<(), Failure> {
    let Front { tls, auth, hangups } = front;
    let server = served.server.clone();
    let metrics = metrics_service(settings, &served, metrics)?;
    let mut config = http_config(settings);
    let limits = listener_config(settings);
    let health = readiness(
        &served.databases,
        served.broker.as_ref(),
        served.gateway.as_ref(),
    );
    config.health = Some(health.clone());
    let local = listener
        .local_addr()
        .context("reading the bound address")
        .map_err(Failure::Serving)?;
    if let Some((_, service, local)) = &metrics {
        announce_metrics(*local, service.path());
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    if let Some(path) = &config.metrics_path {
        tracing::info!("serving metrics on {scheme}://{local}{path}");
    }
    tracing::info!("serving MCP on {scheme}://{local}{}", config.path);
    tracing::info!(
        "health on {scheme}://{local}{} and {}",
        health.live_path(),
        health.ready_path()
    );
    // The next step for someone who just started it.
    tracing::info!(
        "try it: kelson tools --url {}",
        client_url(scheme, local, &config.path)
    );
    let landing = Landing::new(
        &config.path,
        scheme,
        policy(settings, settings.http.bind),
        (
            health.live_path().to_owned(),
            health.ready_path().to_owned(),
        ),
    );

    // One signal stops both listeners; the metrics one also stops if the server stops otherwise.
    // From the signal on no call becomes a task (the client would be handed a task that this
    // stopping server abandons), and readiness goes false for the grace period, so that balancers
    // stop sending; then requests in flight finish or are stopped.
    let grace = settings.http.shutdown_grace;
    let draining = health.clone();
    let stopping = server.clone();
    let signal = async move {
        kelson_http::server::shutdown_signal().await;
        stopping.stop_new_tasks();
        draining.set_draining();
        if !grace.is_zero() {
            tracing::info!(
                "stopping in {} ms; {} answers 503 meanwhile",
                grace.as_millis(),
                draining.ready_path()
            );
            tokio::time::sleep(grace).await;
        }
    }
    .shared();
    let mcp_signal = signal.clone();
    let (stop_metrics, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = async {
        let service = McpService::new(server, config);
        let open_paths = [health.live_path(), health.ready_path()];
        let serve = kelson_http::server::serve(listener, service)
            .listener_config(limits)
            .with_graceful_shutdown(mcp_signal);
        let (serve, reloading) = match tls {
            Some(tls) => {
                let hangups = hangups.unwrap_or_else(Hangups::listen);
                let reloading = tokio::spawn(reload_on_hangup(tls.clone(), hangups));
                (serve.tls(tls), Some(reloading))
            }
            None => (serve, None),
        };
        let outcome = match auth {
            Some(auth) => {
                let layer = kelson_auth::AuthLayer::new(auth).open_paths(open_paths);
                serve
                    .wrap(|s| WithLanding::new(tower_layer::Layer::layer(&layer, s), landing))
                    .await
            }
            None => serve.wrap(|s| WithLanding::new(s, landing)).await,
        };
        if let Some(reloading) = reloading {
            reloading.abort();
        }
        let result = outcome.context("serving HTTP");
        drop(stop_metrics);
        result
    };
    let stopped = async move {
        tokio::select! {
            () = signal => {}
            _ = metrics_stopped => {}
        }
    };
    let (result, ()) = tokio::join!(serving, serve_metrics(metrics, stopped));
    drop(served);
    result.map_err(Failure::Serving)
}

/// The metrics' own listener with its service, when they have one.
fn metrics_service(
    settings: &Settings,
    served: &Served,
    listener: Option<MetricsListener>,
) -> Result<Option<(TcpListener, MetricsService, SocketAddr)>, Failure> {
    let (Some(settings_m), Some(metrics), Some((listener, _))) = (
        &settings.observability.metrics,
        served.server.metrics(),
        listener,
    ) else {
        return Ok(None);
    };
    let local = listener
        .local_addr()
        .context("reading the bound metrics address")
        .map_err(Failure::Serving)?;
    let service =
        MetricsService::new(metrics.clone(), policy(settings, local)).with_path(&settings_m.path);
    Ok(Some((listener, service, local)))
}

/// Liveness, and readiness that needs every database to answer `SELECT 1` (within 2 s), the
/// broker, if there is one, to be connected, and a gateway to have at least one upstream
/// connected: one vendor's server being down must not take the others' tools off the load
/// balancer, so an upstream that is down is named in the answer without failing it alone.
fn readiness(
    databases: &[kelson_sql::Database],
    broker: Option<&kelson_broker::Broker>,
    gateway: Option<&kelson_gateway::Gateway>,
) -> Health {
    const PING: std::time::Duration = std::time::Duration::from_secs(2);
    let mut health = Health::new().timeout(PING + std::time::Duration::from_millis(500));
    for db in databases {
        let db = db.clone();
        health = health.check(format!("database {}", db.name()), move || {
            let db = db.clone();
            async move { db.ping(PING).await }
        });
    }
    if let Some(broker) = broker {
        let broker = broker.clone();
        health = health.check("broker", move || {
            let up = broker.is_connected();
            let describe = broker.describe();
            let why = broker.last_error();
            async move {
                match (up, why) {
                    (true, _) => Ok(()),
                    (false, Some(why)) => Err(format!("not connected to {describe}: {why}")),
                    (false, None) => Err(format!("not connected to {describe}")),
                }
            }
        });
    }
    if let Some(gateway) = gateway {
        let gateway = gateway.clone();
        health = health.check("upstreams", move || {
            let states = gateway.upstreams();
            async move {
                let ready = states
                    .iter()
                    .filter(|(_, s)| matches!(s, kelson_gateway::State::Ready { .. }))
                    .count();
                if ready > 0 {
                    return Ok(());
                }
                let named: Vec<String> = states
                    .iter()
                    .map(|(name, state)| match state {
                        kelson_gateway::State::Down { reason } => {
                            format!("{name}: down ({reason})")
                        }
                        _ => format!("{name}: connecting"),
                    })
                    .collect();
                Err(format!("no upstream connected: {}", named.join("; ")))
            }
        });
    }
    health
}

/// SIGHUP, listened for (on Unix; elsewhere there is none).
pub(super) struct Hangups(#[cfg(unix)] Option<tokio::signal::unix::Signal>);

impl Hangups {
    pub(super) fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::hangup()) {
                Ok(hangups) => Hangups(Some(hangups)),
                Err(e) => {
                    tracing::warn!(
                        "cannot listen for SIGHUP ({e}); the certificate will not be reloaded"
                    );
                    Hangups(None)
                }
            }
        }
        #[cfg(not(unix))]
        Hangups()
    }

    /// The next SIGHUP; `false` when there will be none.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        if let Some(signal) = &mut self.0 {
            return signal.recv().await.is_some();
        }
        false
    }
}

/// Reads the certificate and key again on every SIGHUP: new connections get the new certificate,
/// open ones keep theirs, and files that do not load leave the old certificate in use.
async fn reload_on_hangup(tls: ServerTls, mut hangups: Hangups) {
    while hangups.next().await {
        match tls.reload() {
            Ok(()) => tracing::info!(
                "SIGHUP: reloaded the certificate {} and key {}",
                tls.cert_path().display(),
                tls.key_path().display()
            ),
            Err(e) => tracing::error!("SIGHUP: {e}; still serving the previous certificate"),
        }
    }
}

/// Says where the metrics' own listener is (tests read this line), with a warning off loopback.
fn announce_metrics(local: SocketAddr, path: &str) {
    if !local.ip().is_loopback() {
        tracing::warn!(
            "serving metrics on {local}, which is not a loopback address: anyone who can reach it \
             can read them"
        );
    }
    tracing::info!("serving metrics on http://{local}{path}");
}

/// Serves the metrics on their own listener, if they have one, until `shutdown`; a failure of
/// that listener is logged and leaves the MCP server running.
async fn serve_metrics(
    metrics: Option<(TcpListener, MetricsService, SocketAddr)>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let Some((listener, service, local)) = metrics else {
        return;
    };
    let serving = kelson_http::server::serve(listener, service).with_graceful_shutdown(shutdown);
    if let Err(e) = serving.await {
        tracing::error!("metrics on {local}: {e}; no longer served");
    }
}
