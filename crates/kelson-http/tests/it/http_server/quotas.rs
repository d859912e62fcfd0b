//! Handshake-era sessions shared fairly: each caller (a principal behind an auth layer, else a
//! client address) holds at most its share, and all of them together at most what the server's
//! budget of kept bytes allows.
//!
//! The review's attack: with OAuth on, one user opened all 10,000 sessions in 14 s and every
//! other user's `initialize` got 503 for the 30-minute idle time. Now a caller at its share ends
//! its own oldest idle session to open another, and is refused only when all of its own are in
//! use; other callers are not affected.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Method, Request, Response, StatusCode};
use kelson_http::server::{ClientAddr, HttpConfig, IncomingBody, McpBody, McpService, serve};
use kelson_server::{Principal, Server};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::fixture::{Probes, full_server};
use super::harness::{Client, Post, Reply, SseStream, test_config};

const LEGACY: &str = "2025-11-25";

/// Stands in for an auth layer and for the network: `x-test-principal` becomes the request's
/// principal, `x-test-addr` the address it came from.
#[derive(Clone)]
struct Front(McpService);

impl tower_service::Service<Request<IncomingBody>> for Front {
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<McpBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<IncomingBody>) -> Self::Future {
        let header = |req: &Request<IncomingBody>, name: &str| {
            req.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        if let Some(subject) = header(&req, "x-test-principal") {
            req.extensions_mut()
                .insert(Principal::builder(subject).build());
        }
        if let Some(addr) = header(&req, "x-test-addr") {
            req.extensions_mut()
                .insert(ClientAddr(addr.parse().expect("a socket address")));
        }
        let mut inner = self.0.clone();
        Box::pin(async move { tower_service::Service::call(&mut inner, req).await })
    }
}

struct Fronted {
    addr: std::net::SocketAddr,
    _stop: oneshot::Sender<()>,
}

async fn start(server: Server, config: HttpConfig) -> Fronted {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let service = McpService::new(server, config);
    let serving = serve(listener, service)
        .wrap(Front)
        .with_graceful_shutdown(async move {
            let _ = stopped.await;
        });
    tokio::spawn(serving.into_future());
    Fronted { addr, _stop: stop }
}

fn config(per_caller: usize) -> HttpConfig {
    let mut config = test_config();
    config.max_sessions_per_caller = per_caller;
    config
}

fn initialize(capabilities: Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY,
            "capabilities": capabilities,
            "clientInfo": {"name": "old-host", "version": "1"}
        }}),
    )
    .unwrap()
}

/// Who a request is from: `("x-test-principal", "alice")` or `("x-test-addr", "203.0.113.5:1")`.
type Who<'a> = (&'a str, &'a str);

async fn open(srv: &Fronted, who: Who<'_>) -> Reply {
    Client::h1(srv.addr)
        .await
        .send_any(&Post::bare(initialize(json!({}))).header(who.0, who.1))
        .await
}

async fn opened(srv: &Fronted, who: Who<'_>) -> String {
    let reply = open(srv, who).await;
    assert_eq!(reply.status, StatusCode::OK, "{who:?}: {:?}", reply.body);
    reply.headers["mcp-session-id"].to_str().unwrap().to_owned()
}

async fn ping(srv: &Fronted, who: Who<'_>, session: &str) -> StatusCode {
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).unwrap();
    let post = Post::bare(body)
        .header(who.0, who.1)
        .header("Mcp-Session-Id", session)
        .header("MCP-Protocol-Version", LEGACY);
    Client::h1(srv.addr).await.send_any(&post).await.status
}

/// Opens the session's GET stream, which keeps it in use while the stream is open.
async fn hold(srv: &Fronted, who: Who<'_>, session: &str) -> SseStream {
    let get = Post::bare("")
        .method(Method::GET)
        .without("content-type")
        .header("Accept", "text/event-stream")
        .header(who.0, who.1)
        .header("Mcp-Session-Id", session)
        .header("MCP-Protocol-Version", LEGACY);
    SseStream::new(Client::h1(srv.addr).await.open_any(&get).await)
}

/// A caller at its share: its own oldest idle session makes room, then all in use means 503, and
/// another caller is not affected. `alice` and `bob` name two callers the same way.
async fn shares_hold(srv: &Fronted, alice: Who<'_>, bob: Who<'_>) {
    let first = opened(srv, alice).await;
    let second = opened(srv, alice).await;
    // Used since the first: the first is the oldest, and it ends to make room for a third.
    assert_eq!(ping(srv, alice, &second).await, StatusCode::OK);
    let third = opened(srv, alice).await;
    assert_eq!(ping(srv, alice, &first).await, StatusCode::NOT_FOUND);
    assert_eq!(ping(srv, alice, &second).await, StatusCode::OK);

    // Both of hers in use: the next is refused, naming why.
    let _a = hold(srv, alice, &second).await;
    let _b = hold(srv, alice, &third).await;
    let refused = open(srv, alice).await;
    refused.refused(StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        String::from_utf8_lossy(&refused.body).contains("this caller"),
        "{:?}",
        refused.body
    );
    assert_eq!(refused.headers["retry-after"], "5");

    // Bob has a share of his own.
    let bobs = opened(srv, bob).await;
    assert_eq!(ping(srv, bob, &bobs).await, StatusCode::OK);
    assert_eq!(ping(srv, alice, &third).await, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_principal_holds_its_share_of_the_sessions() {
    let srv = start(full_server(Arc::new(Probes::default())), config(2)).await;
    shares_hold(
        &srv,
        ("x-test-principal", "alice"),
        ("x-test-principal", "bob"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_callers_hold_a_share_per_address() {
    let srv = start(full_server(Arc::new(Probes::default())), config(2)).await;
    shares_hold(
        &srv,
        ("x-test-addr", "203.0.113.5:4000"),
        ("x-test-addr", "198.51.100.7:4000"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ipv6_prefix_is_one_caller_and_loopback_is_not_counted() {
    let srv = start(full_server(Arc::new(Probes::default())), config(1)).await;
    // Two addresses of one /64 share one session: the second ends the first.
    let first = opened(&srv, ("x-test-addr", "[2001:db8:1:2::1]:4000")).await;
    let second = opened(&srv, ("x-test-addr", "[2001:db8:1:2::ffff]:4000")).await;
    let same = ("x-test-addr", "[2001:db8:1:2::1]:4000");
    assert_eq!(ping(&srv, same, &first).await, StatusCode::NOT_FOUND);
    assert_eq!(ping(&srv, same, &second).await, StatusCode::OK);
    // Another /64 is another caller.
    let other = opened(&srv, ("x-test-addr", "[2001:db8:1:3::1]:4000")).await;
    assert_eq!(ping(&srv, same, &second).await, StatusCode::OK);
    assert_eq!(
        ping(&srv, ("x-test-addr", "[2001:db8:1:3::1]:4000"), &other).await,
        StatusCode::OK
    );
    // Every local client shares the loopback address: they are not counted as one caller.
    let local = ("x-test-addr", "127.0.0.1:5000");
    let a = opened(&srv, local).await;
    let b = opened(&srv, local).await;
    assert_eq!(ping(&srv, local, &a).await, StatusCode::OK);
    assert_eq!(ping(&srv, local, &b).await, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_stay_within_the_budget_of_what_they_keep() {
    // Room for what two sessions of `initialize` declare, not three.
    let declared = r#"{}"#.len() + r#"{"name":"old-host","version":"1"}"#.len();
    assert_eq!(declared, 35);
    let build = |_: Arc<Probes>| -> Server {
        let mut config = kelson_server::ServerConfig::default();
        config.sessions.memory = 2 * 35 * kelson_server::DECLARATION_FACTOR + 10;
        super::fixture::full_builder(Arc::new(Probes::default()))
            .config(config)
            .build()
            .unwrap()
    };
    let srv = start(build(Arc::default()), test_config()).await;
    let who = ("x-test-principal", "alice");
    opened(&srv, who).await;
    opened(&srv, who).await;
    let refused = open(&srv, who).await;
    refused.refused(StatusCode::SERVICE_UNAVAILABLE);
    // Oversized declarations are refused with -32602 (with 200, as that era answers errors).
    let big = json!({"experimental": {"x": "y".repeat(20_000)}});
    let reply = Client::h1(srv.addr)
        .await
        .send_any(&Post::bare(initialize(big)).header(who.0, who.1))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body["error"]["code"], -32602, "{body}");
}
