//! Serving the test server over loopback HTTP or an in-memory stdio pipe, and recording what it
//! received.

use std::convert::Infallible;
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kelson_client::{Client, ClientBuilder};
use kelson_http::server::{HttpConfig, McpService, serve};
use kelson_server::Server;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, duplex};
use tokio::net::TcpListener;
use tokio::sync::{Notify, oneshot};

/// The bound on any wait in these tests: generous, because waits end as soon as what they wait
/// for happens.
pub const TIMEOUT: Duration = Duration::from_secs(20);

pub async fn within<F: IntoFuture>(f: F) -> F::Output {
    tokio::time::timeout(TIMEOUT, f.into_future())
        .await
        .expect("timed out waiting")
}

/// Which transport a test runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Http,
    Stdio,
}

/// One message the server received, with its HTTP headers (HTTP only).
#[derive(Clone, Debug)]
pub struct Received {
    pub headers: Option<HeaderMap>,
    pub body: Value,
    /// When it arrived.
    pub at: std::time::Instant,
}

/// What reached the server, in order.
#[derive(Clone, Default)]
pub struct Wire {
    inner: Arc<WireInner>,
}

#[derive(Default)]
struct WireInner {
    received: Mutex<Vec<Received>>,
    closed_bodies: AtomicUsize,
    changed: Notify,
}

impl Wire {
    fn record(&self, headers: Option<HeaderMap>, bytes: &[u8]) {
        let body = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        self.inner.received.lock().unwrap().push(Received {
            headers,
            body,
            at: std::time::Instant::now(),
        });
        self.inner.changed.notify_waiters();
    }

    pub fn received(&self) -> Vec<Received> {
        self.inner.received.lock().unwrap().clone()
    }

    /// The bodies of the requests of `method`.
    pub fn requests(&self, method: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.body["method"] == method && r.body.get("id").is_some())
            .collect()
    }

    pub fn count(&self, method: &str) -> usize {
        self.requests(method).len()
    }

    /// Waits until a received message satisfies `pred`.
    pub async fn wait_for(&self, pred: impl Fn(&Received) -> bool) -> Received {
        within(async {
            loop {
                let changed = self.inner.changed.notified();
                if let Some(r) = self.received().into_iter().find(|r| pred(r)) {
                    return r;
                }
                changed.await;
            }
        })
        .await
    }

    /// How many HTTP response bodies the server side has dropped.
    pub fn closed_bodies(&self) -> usize {
        self.inner.closed_bodies.load(Ordering::SeqCst)
    }

    pub async fn wait_closed_bodies(&self, n: usize) {
        within(async {
            loop {
                let changed = self.inner.changed.notified();
                if self.closed_bodies() >= n {
                    return;
                }
                changed.await;
            }
        })
        .await;
    }
}

struct BodyClosed(Wire);

impl Drop for BodyClosed {
    fn drop(&mut self) {
        self.0.inner.closed_bodies.fetch_add(1, Ordering::SeqCst);
        self.0.inner.changed.notify_waiters();
    }
}

/// A served test server and a client connected to it.
pub struct Served {
    pub client: Client,
    pub wire: Wire,
    _stop: Option<oneshot::Sender<()>>,
}

pub async fn connect(kind: Kind, server: Server, builder: ClientBuilder) -> Served {
    match kind {
        Kind::Http => http(server, HttpConfig::default(), builder).await,
        Kind::Stdio => stdio(server, builder).await,
    }
}

/// Serves `McpService` on 127.0.0.1:0 with a recording hyper loop in front of it.
pub async fn http(server: Server, config: HttpConfig, builder: ClientBuilder) -> Served {
    let wire = Wire::default();
    let (addr, stop) = serve_recording(McpService::new(server, config), wire.clone()).await;
    let url = format!("http://{addr}/mcp");
    let client = within(builder.connect_http(&url))
        .await
        .expect("the client connects over HTTP");
    Served {
        client,
        wire,
        _stop: Some(stop),
    }
}

async fn serve_recording(service: McpService, wire: Wire) -> (SocketAddr, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, mut stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                _ = &mut stopped => return,
                accepted = listener.accept() => accepted.unwrap(),
            };
            let service = service.clone();
            let wire = wire.clone();
            tokio::spawn(async move {
                let hyper_service =
                    hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                        let service = service.clone();
                        let wire = wire.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let bytes = body
                                .collect()
                                .await
                                .map(|c| c.to_bytes())
                                .unwrap_or_default();
                            wire.record(Some(parts.headers.clone()), &bytes);
                            let response = service
                                .handle(Request::from_parts(parts, Full::new(bytes)))
                                .await;
                            let (parts, body) = response.into_parts();
                            let guard = BodyClosed(wire);
                            let body = body.map_frame(move |frame| {
                                let _ = &guard;
                                frame
                            });
                            Ok::<_, Infallible>(Response::from_parts(parts, body))
                        }
                    });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), hyper_service)
                    .await;
            });
        }
    });
    (addr, stop)
}

/// Serves with the crate's own accept loop, `serve`; returns the URL.
pub async fn serve_plain(server: Server, config: HttpConfig) -> (String, oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let serving =
        serve(listener, McpService::new(server, config)).with_graceful_shutdown(async move {
            let _ = stopped.await;
        });
    tokio::spawn(serving.into_future());
    (format!("http://{addr}/mcp"), stop)
}

/// Serves over an in-memory pipe with the stdio framing; the client's lines are recorded on their
/// way to the server.
pub async fn stdio(server: Server, builder: ClientBuilder) -> Served {
    let wire = Wire::default();
    let (client_w, tap_r) = duplex(1 << 20);
    let (mut tap_w, server_r) = duplex(1 << 20);
    let (server_w, client_r) = duplex(1 << 20);
    let tap = wire.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(tap_r).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tap.record(None, line.as_bytes());
            if tap_w
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
        let _ = tap_w.shutdown().await;
    });
    tokio::spawn(kelson_server::stdio::serve_stream(
        server,
        server_r,
        server_w,
        Default::default(),
    ));
    let client = within(builder.connect_stream(client_r, client_w))
        .await
        .expect("the client connects over stdio");
    Served {
        client,
        wire,
        _stop: None,
    }
}

/// The text of the first content block.
pub fn text(result: &kelson_types::CallToolResult) -> &str {
    result.content[0].as_text().expect("a text block")
}

/// Runs a test body once per transport.
#[macro_export]
macro_rules! both {
    ($name:ident, $body:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn http() {
                super::$body($crate::harness::Kind::Http).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stdio() {
                super::$body($crate::harness::Kind::Stdio).await;
            }
        }
    };
}
