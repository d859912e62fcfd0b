//! The legacy session's GET stream against a scripted 2025-11-25 server whose GET requests the test
//! answers one by one: opened right after the handshake with the session and revision headers,
//! shared by every legacy listen, server requests answered with a POST, a request's progress and
//! log routed to it, reopened when it drops (a 409 on the way retried), a 405 remembered, a 404
//! taken as the end of the session, and closed with the client.

use std::convert::Infallible;
use std::future::IntoFuture as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use http::{HeaderMap, Method, Request, Response};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kelson_client::{Client, ClientBuilder, Error, ListenEvent, Subscription};
use kelson_types::{ListRootsResult, LoggingLevel, Root, SubscriptionFilter};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::harness::{text, within};
use crate::http_only::{Scripted, respond};

/// One request the server received (POST or DELETE).
#[derive(Clone, Debug)]
struct Seen {
    method: Method,
    headers: HeaderMap,
    body: Value,
}

/// A GET waiting for the test's answer.
struct Get {
    headers: HeaderMap,
    answer: oneshot::Sender<GetAnswer>,
}

enum GetAnswer {
    Refuse(u16, Value),
    Stream(mpsc::UnboundedReceiver<Bytes>),
}

impl Get {
    /// Refuses the GET with `status` and a JSON-RPC error body, as the TypeScript SDK v1 does.
    fn refuse(self, status: u16, message: &str) {
        let body =
            json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": message}, "id": null});
        let _ = self.answer.send(GetAnswer::Refuse(status, body));
    }

    /// Opens the event stream; the test writes to it through the returned handle and ends it by
    /// dropping the handle.
    fn stream(self) -> Pusher {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = self.answer.send(GetAnswer::Stream(rx));
        Pusher(tx)
    }
}

/// The server's end of an open GET stream.
struct Pusher(mpsc::UnboundedSender<Bytes>);

impl Pusher {
    fn send(&self, message: Value) {
        self.0
            .send(Bytes::from(format!("data: {message}\n\n")))
            .expect("the GET stream is open");
    }

    /// Resolves once the client has closed the stream.
    async fn closed(&self) {
        self.0.closed().await;
    }
}

/// A call the server holds until the test answers it.
struct Held {
    body: Value,
    answer: oneshot::Sender<Value>,
}

#[derive(Default)]
struct Record {
    seen: Mutex<Vec<Seen>>,
    changed: Notify,
}

/// A legacy server: the handshake (session `s-1`), `tools/call` answers "ok" (the tool `slow`
/// waits for the test), `resources/subscribe` and DELETE succeed, responses and notifications get
/// 202, and each GET waits for the test's answer.
struct LegacyServer {
    url: String,
    gets: mpsc::UnboundedReceiver<Get>,
    held: mpsc::UnboundedReceiver<Held>,
    record: Arc<Record>,
    _stop: oneshot::Sender<()>,
}

type Body = BoxBody<Bytes, Infallible>;

impl LegacyServer {
    async fn start() -> LegacyServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, mut stopped) = oneshot::channel::<()>();
        let (get_tx, gets) = mpsc::unbounded_channel();
        let (held_tx, held) = mpsc::unbounded_channel();
        let record = Arc::new(Record::default());
        let server_record = record.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    _ = &mut stopped => return,
                    accepted = listener.accept() => accepted.unwrap(),
                };
                let get_tx = get_tx.clone();
                let held_tx = held_tx.clone();
                let record = server_record.clone();
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let (get_tx, held_tx, record) =
                                (get_tx.clone(), held_tx.clone(), record.clone());
                            async move {
                                Ok::<_, Infallible>(handle(req, &get_tx, &held_tx, &record).await)
                            }
                        });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        LegacyServer {
            url: format!("http://{addr}/mcp"),
            gets,
            held,
            record,
            _stop: stop,
        }
    }

    /// The next GET the client sends.
    async fn next_get(&mut self) -> Get {
        within(self.gets.recv()).await.expect("the server runs")
    }

    /// Fails if a GET arrived that the test did not take.
    fn assert_no_get(&mut self) {
        assert!(self.gets.try_recv().is_err(), "an unexpected GET");
    }

    /// The next call held by the server.
    async fn next_held(&mut self) -> Held {
        within(self.held.recv()).await.expect("the server runs")
    }

    fn seen(&self) -> Vec<Seen> {
        self.record.seen.lock().unwrap().clone()
    }

    /// The JSON-RPC methods POSTed so far, in order.
    fn methods(&self) -> Vec<String> {
        self.seen()
            .iter()
            .filter_map(|s| s.body["method"].as_str().map(str::to_owned))
            .collect()
    }

    /// Waits for a request satisfying `pred`.
    async fn wait_for(&self, pred: impl Fn(&Seen) -> bool) -> Seen {
        within(async {
            loop {
                let changed = self.record.changed.notified();
                if let Some(seen) = self.seen().into_iter().find(|s| pred(s)) {
                    return seen;
                }
                changed.await;
            }
        })
        .await
    }
}

async fn handle(
    req: Request<hyper::body::Incoming>,
    gets: &mpsc::UnboundedSender<Get>,
    held: &mpsc::UnboundedSender<Held>,
    record: &Record,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    if parts.method == Method::GET {
        let (answer, answered) = oneshot::channel();
        let _ = gets.send(Get {
            headers: parts.headers,
            answer,
        });
        return match answered.await {
            Ok(GetAnswer::Stream(rx)) => {
                let frames = futures_util::stream::unfold(rx, |mut rx| async move {
                    let chunk = rx.recv().await?;
                    Some((Ok::<_, Infallible>(Frame::data(chunk)), rx))
                });
                Response::builder()
                    .header("content-type", "text/event-stream")
                    .header("mcp-session-id", "s-1")
                    .body(BodyExt::boxed(StreamBody::new(frames)))
                    .unwrap()
            }
            Ok(GetAnswer::Refuse(status, body)) => Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body.to_string())).boxed())
                .unwrap(),
            Err(_) => Response::builder()
                .status(500)
                .body(Full::new(Bytes::new()).boxed())
                .unwrap(),
        };
    }
    let bytes = body.collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    record.seen.lock().unwrap().push(Seen {
        method: parts.method.clone(),
        headers: parts.headers,
        body: body.clone(),
    });
    record.changed.notify_waiters();
    if parts.method == Method::DELETE {
        return Response::new(Full::new(Bytes::new()).boxed());
    }
    let answer = match body["method"].as_str() {
        Some("server/discover") => Scripted::Error(400, -32000, "Bad Request: No valid session ID"),
        Some("initialize") => Scripted::ResultWith(
            json!({"protocolVersion": "2025-11-25",
                   "capabilities": {"tools": {"listChanged": true},
                                    "prompts": {"listChanged": true}},
                   "serverInfo": {"name": "scripted-legacy", "version": "1"}}),
            vec![("mcp-session-id", "s-1")],
        ),
        Some("tools/call") if body["params"]["name"] == "slow" => {
            let (answer, answered) = oneshot::channel();
            let _ = held.send(Held {
                body: body.clone(),
                answer,
            });
            Scripted::Result(answered.await.unwrap_or(Value::Null))
        }
        Some("tools/call") => {
            Scripted::Result(json!({"content": [{"type": "text", "text": "ok"}]}))
        }
        // Notifications, and the client's answers to server requests.
        _ if body.get("id").is_none() || body.get("method").is_none() => Scripted::Status(202),
        _ => Scripted::Error(200, -32601, "Method not found"),
    };
    respond(&body, answer).map(BodyExt::boxed)
}

fn roots_client() -> ClientBuilder {
    Client::builder().on_roots(|()| async {
        Ok(ListRootsResult {
            roots: vec![Root::new("file:///scripted-root")],
        })
    })
}

/// Connects in a task, because connecting waits for the server's answer to the first GET.
fn connect(url: &str, builder: ClientBuilder) -> tokio::task::JoinHandle<Client> {
    let url = url.to_owned();
    tokio::spawn(async move {
        builder
            .connect_http(&url)
            .await
            .expect("the client connects")
    })
}

fn filter(tools: bool, prompts: bool) -> SubscriptionFilter {
    SubscriptionFilter {
        tools_list_changed: tools.then_some(true),
        prompts_list_changed: prompts.then_some(true),
        ..SubscriptionFilter::default()
    }
}

fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

async fn next(subscription: &mut Subscription) -> ListenEvent {
    within(subscription.next())
        .await
        .expect("the listen is open")
        .expect("the listen has not failed")
}

/// The end of a listen: one disconnection error, then nothing.
async fn assert_disconnected(subscription: &mut Subscription) {
    let end = within(subscription.next()).await;
    assert!(
        matches!(end, Some(Err(Error::Disconnected { .. }))),
        "{end:?}"
    );
    assert!(within(subscription.next()).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_get_stream_is_opened_after_the_handshake_shared_and_reopened() {
    let mut server = LegacyServer::start().await;
    let connecting = connect(&server.url, roots_client());

    // One GET, right after notifications/initialized, with the session and the revision; connect
    // waits for its answer, so the stream is in place before the first call.
    let get = server.next_get().await;
    assert_eq!(
        server.methods(),
        ["server/discover", "initialize", "notifications/initialized"]
    );
    assert_eq!(get.headers["mcp-session-id"], "s-1");
    assert_eq!(get.headers["mcp-protocol-version"], "2025-11-25");
    assert!(
        get.headers["accept"]
            .to_str()
            .unwrap()
            .contains("text/event-stream")
    );
    assert!(get.headers.get("last-event-id").is_none());
    let first = get.stream();
    let client = within(connecting).await.unwrap();

    // A server request on it, with no listen open, goes to the roots handler; the answer is POSTed
    // in the session.
    first.send(json!({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}));
    let answer = server.wait_for(|s| s.body["id"] == "srv-1").await;
    assert_eq!(
        answer.body["result"]["roots"][0]["uri"],
        "file:///scripted-root"
    );
    assert_eq!(answer.headers["mcp-session-id"], "s-1");
    assert_eq!(answer.headers["mcp-protocol-version"], "2025-11-25");

    // Two listens at once read the same stream, each getting what it asked for.
    let mut tools = within(client.listen(filter(true, false))).await.unwrap();
    let mut both = within(client.listen(filter(true, true))).await.unwrap();
    first.send(notification("notifications/prompts/list_changed"));
    first.send(notification("notifications/tools/list_changed"));
    assert_eq!(next(&mut tools).await, ListenEvent::ToolsListChanged);
    assert_eq!(next(&mut both).await, ListenEvent::PromptsListChanged);
    assert_eq!(next(&mut both).await, ListenEvent::ToolsListChanged);
    server.assert_no_get();

    // A request's progress and log messages may come on the GET stream: they reach the call.
    let progress = Arc::new(Mutex::new(Vec::new()));
    let logs = Arc::new(Mutex::new(Vec::new()));
    let (p, l) = (progress.clone(), logs.clone());
    let call = client
        .call_tool("slow", json!({}))
        .on_progress(move |n| p.lock().unwrap().push(n.progress))
        .on_log(LoggingLevel::Info, move |m| {
            l.lock().unwrap().push(m.data.clone())
        });
    let script = async {
        let held = server.next_held().await;
        let token = held.body["params"]["_meta"]["progressToken"].clone();
        assert_eq!(token, held.body["id"]);
        first.send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": 1, "total": 2}}));
        first.send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": "someone-else", "progress": 9}}));
        first.send(json!({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "data": "working"}}));
        while progress.lock().unwrap().is_empty() || logs.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = held
            .answer
            .send(json!({"content": [{"type": "text", "text": "slow done"}]}));
    };
    let (result, ()) = within(async { tokio::join!(call.into_future(), script) }).await;
    let result = result.unwrap();
    assert_eq!(text(&result), "slow done");
    assert_eq!(*progress.lock().unwrap(), [1.0]);
    assert_eq!(*logs.lock().unwrap(), [json!("working")]);

    // The server drops the stream: the client opens it again, retrying after a 409 (the server has
    // not noticed yet that the old one is gone), and the listens carry on.
    drop(first);
    server
        .next_get()
        .await
        .refuse(409, "Conflict: Only one SSE stream is allowed per session");
    let get = server.next_get().await;
    assert_eq!(get.headers["mcp-session-id"], "s-1");
    let third = get.stream();
    third.send(notification("notifications/tools/list_changed"));
    assert_eq!(next(&mut tools).await, ListenEvent::ToolsListChanged);
    assert_eq!(next(&mut both).await, ListenEvent::ToolsListChanged);
    third.send(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    let pong = server.wait_for(|s| s.body["id"] == 7).await;
    assert_eq!(pong.body["result"], json!({}));

    // Dropping one listen leaves the stream to the other.
    drop(both);
    third.send(notification("notifications/tools/list_changed"));
    assert_eq!(next(&mut tools).await, ListenEvent::ToolsListChanged);

    // Closing closes the stream and ends the session; the open listen ends with an error, and the
    // stream is not opened again.
    within(client.close()).await.unwrap();
    within(third.closed()).await;
    let delete = server.wait_for(|s| s.method == Method::DELETE).await;
    assert_eq!(delete.headers["mcp-session-id"], "s-1");
    assert_disconnected(&mut tools).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.assert_no_get();
    let err = within(client.listen(filter(true, false)))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Disconnected { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_405_on_the_get_is_remembered() {
    let mut server = LegacyServer::start().await;
    let connecting = connect(&server.url, roots_client());
    server.next_get().await.refuse(405, "Method not allowed.");
    let client = within(connecting).await.unwrap();

    // The client carries on without the stream.
    let result = within(client.call_tool("t", json!({}))).await.unwrap();
    assert_eq!(text(&result), "ok");
    for _ in 0..2 {
        let err = within(client.listen(filter(true, false)))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{err:?}");
        assert!(err.to_string().contains("405"), "{err}");
    }
    // Never asked again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.assert_no_get();
    within(client.close()).await.unwrap();
    server.wait_for(|s| s.method == Method::DELETE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_opens_are_retried_and_a_404_ends_the_session() {
    let mut server = LegacyServer::start().await;
    let connecting = connect(&server.url, roots_client());
    // The first attempt fails: connect does not wait for the retries.
    server.next_get().await.refuse(503, "try later");
    let client = within(connecting).await.unwrap();
    let mut listen = within(client.listen(filter(true, false))).await.unwrap();
    let first = server.next_get().await.stream();
    first.send(notification("notifications/tools/list_changed"));
    assert_eq!(next(&mut listen).await, ListenEvent::ToolsListChanged);

    // The session is gone: the stream ends for good, and so do the listens.
    drop(first);
    server.next_get().await.refuse(404, "Session not found");
    assert_disconnected(&mut listen).await;
    let err = within(client.listen(filter(true, false)))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Disconnected { .. }), "{err:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.assert_no_get();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_closes_the_get_stream() {
    let mut server = LegacyServer::start().await;
    let connecting = connect(&server.url, roots_client());
    let stream = server.next_get().await.stream();
    let client = within(connecting).await.unwrap();
    let other = client.clone();
    drop(client);
    stream.send(notification("notifications/tools/list_changed"));
    // A clone keeps the connection, and the stream, alive.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!stream.0.is_closed());
    drop(other);
    within(stream.closed()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.assert_no_get();
}
