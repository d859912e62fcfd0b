//! A server on a real loopback socket, and clients that speak to it over HTTP/1.1, HTTP/2 (h2c) or
//! raw TCP.

mod client;
mod raw;
mod sse;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use kelson_http::server::{HttpConfig, ListenerConfig, McpService, ServeError, serve};
use kelson_server::Server;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use client::{Client, Post, Reply, tool_text};
pub use raw::{raw_exchange, raw_request};
pub use sse::SseStream;

use super::fixture::{PATIENCE, Probes, full_server};

/// The protocol revision every well-formed request names.
pub const VERSION: &str = "2026-07-28";

/// The body type of every request the tests send.
pub type ReqBody = BoxBody<Bytes, Infallible>;

/// Fails the test if `fut` takes longer than [`PATIENCE`].
pub fn within<F: std::future::Future>(
    what: &'static str,
    fut: F,
) -> impl std::future::Future<Output = F::Output> {
    let timed = tokio::time::timeout(PATIENCE, fut);
    async move {
        match timed.await {
            Ok(v) => v,
            Err(_) => panic!("{what}: nothing after {PATIENCE:?}"),
        }
    }
}

/// The endpoint settings of most tests: the defaults.
pub fn test_config() -> HttpConfig {
    HttpConfig::default()
}

/// The listener settings of most tests: defaults, with a drain long enough for a busy machine.
pub fn test_listener() -> ListenerConfig {
    {
        let mut edited = ListenerConfig::default();
        edited.drain = Duration::from_secs(60);
        edited
    }
}

/// What a test server is started with: the endpoint's settings and the listener's, each
/// [`test_config`] or [`test_listener`] unless given.
pub struct Settings {
    pub http: HttpConfig,
    pub listener: ListenerConfig,
}

impl From<HttpConfig> for Settings {
    fn from(http: HttpConfig) -> Self {
        Settings {
            http,
            listener: test_listener(),
        }
    }
}

impl From<ListenerConfig> for Settings {
    fn from(listener: ListenerConfig) -> Self {
        Settings {
            http: test_config(),
            listener,
        }
    }
}

/// A server started by `serve(..).with_graceful_shutdown(..)` on `127.0.0.1:0`, stopped when
/// dropped.
pub struct TestServer {
    pub addr: std::net::SocketAddr,
    pub server: Server,
    pub probes: Arc<Probes>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), ServeError>>>,
}

impl TestServer {
    /// The full fixture with [`test_config`].
    pub async fn start() -> Self {
        Self::start_with(full_server, test_config()).await
    }

    /// A server built by `build`, served with `settings`.
    pub async fn start_with(
        build: fn(Arc<Probes>) -> Server,
        settings: impl Into<Settings>,
    ) -> Self {
        let Settings {
            http: config,
            listener: limits,
        } = settings.into();
        let probes = Arc::new(Probes::default());
        let server = build(probes.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        let (stop, stopped) = oneshot::channel::<()>();
        let service = McpService::new(server.clone(), config);
        let serving = serve(listener, service)
            .listener_config(limits)
            .with_graceful_shutdown(async move {
                // A dropped sender stops the server too.
                let _ = stopped.await;
            });
        let task = tokio::spawn(serving.into_future());
        TestServer {
            addr,
            server,
            probes,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// `127.0.0.1:PORT`, the `Host` a well-behaved client sends.
    pub fn authority(&self) -> String {
        self.addr.to_string()
    }

    /// Sends one request on a fresh HTTP/1.1 connection and reads the whole response.
    pub async fn send(&self, post: &Post) -> Reply {
        Client::h1(self.addr).await.send(post).await
    }

    /// Starts the graceful shutdown.
    pub fn trigger_shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Waits for the served future to return.
    pub async fn join(&mut self) -> Result<(), ServeError> {
        let task = self.task.take().expect("joined once");
        within("serve_with_shutdown returning", task)
            .await
            .expect("the serve task does not panic")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The `_meta` of a well-formed request: version, no optional client capability, client info.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "http-it-client", "version": "1.0.0"}
    })
}

/// [`meta`] with `extra` keys added or replaced.
pub fn meta_with(extra: Value) -> Value {
    let mut meta = meta();
    let target = meta.as_object_mut().unwrap();
    for (k, v) in extra.as_object().expect("extra _meta keys are an object") {
        target.insert(k.clone(), v.clone());
    }
    meta
}
