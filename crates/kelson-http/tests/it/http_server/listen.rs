//! `subscriptions/listen` over HTTP (spec 2026-07-28 basic/patterns/subscriptions and
//! basic/transports/streamable-http): an SSE stream that starts with the acknowledgement, stays
//! open with keep-alive comments, carries the notifications the client opted in to, and
//! unsubscribes when the client closes it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use kelson_http::server::{McpBody, McpService};
use kelson_server::RequestContext;
use kelson_types::{CallToolResult, GetPromptResult, JsonObject, Prompt, PromptMessage, Tool};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::fixture::{Probes, UNICODE_URI, full_server, tools_only_server};
use super::harness::{Client, Post, SseStream, TestServer, test_config};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

fn listen(id: impl Into<Value>, filter: Value) -> Post {
    Post::call(
        id,
        "subscriptions/listen",
        json!({ "notifications": filter }),
    )
}

/// Asserts the acknowledgement: the first message, tagged with the listen id, with the honoured
/// filter.
#[track_caller]
fn assert_ack(message: &Value, id: &Value, honoured: Value) {
    assert_eq!(
        message["method"], "notifications/subscriptions/acknowledged",
        "{message}"
    );
    assert!(message.get("id").is_none(), "{message}");
    assert_eq!(
        &message["params"]["_meta"][SUBSCRIPTION_ID], id,
        "{message}"
    );
    assert_eq!(message["params"]["notifications"], honoured, "{message}");
}

#[track_caller]
fn assert_note(message: &Value, method: &str, id: &Value) {
    assert_eq!(message["method"], method, "{message}");
    assert!(message.get("id").is_none(), "{message}");
    // The subscription id is the listen request's id verbatim, with its JSON type.
    assert_eq!(
        &message["params"]["_meta"][SUBSCRIPTION_ID], id,
        "{message}"
    );
}

fn late_tool(name: &str) -> Tool {
    Tool::without_arguments(name).with_description("Registered while the server runs")
}

async fn late_handler(_ctx: RequestContext, _args: JsonObject) -> kelson_server::ToolResult {
    Ok(CallToolResult::text("late tool here"))
}

/// The acknowledgement first, with only what this server honours; keep-alive comments while
/// idle; a `tools/list_changed` when a tool is registered at run time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_acknowledges_keeps_alive_and_reports_new_tools() {
    let config = {
        let mut edited = test_config();
        edited.keep_alive = Duration::from_millis(50);
        edited
    };
    let srv = TestServer::start_with(tools_only_server, config).await;
    // The conformance suite uses Date.now() ids: 13 digits must round-trip.
    let id = json!(1_766_000_000_123_i64);
    let post = listen(
        id.clone(),
        json!({
            "toolsListChanged": true,
            "promptsListChanged": true,
            "resourcesListChanged": true,
            "resourceSubscriptions": ["test://anything"]
        }),
    );
    let mut client = Client::h1(srv.addr).await;
    let mut stream = SseStream::new(client.open(&post).await);

    let ack = stream.next().await.expect("an acknowledgement");
    // This server has no prompts or resources, so only tool changes are honoured.
    assert_ack(&ack, &id, json!({"toolsListChanged": true}));
    assert_eq!(stream.comment_lines(), 0, "the acknowledgement comes first");

    // Idle: comment lines keep the stream alive.
    stream.wait_comments(3).await;

    srv.server
        .add_tool(late_tool("late"), late_handler)
        .expect("a tool can be added at run time");
    let note = stream.next().await.expect("a list_changed notification");
    assert_note(&note, "notifications/tools/list_changed", &id);

    // The new tool is there for everyone, while the stream stays open.
    let reply = srv.send(&Post::tool(2, "late", json!({}))).await;
    assert_eq!(reply.tool_text(json!(2)), "late tool here");

    assert!(srv.server.remove_tool("late"));
    let note = stream
        .next()
        .await
        .expect("another list_changed notification");
    assert_note(&note, "notifications/tools/list_changed", &id);
    stream.assert_plain_framing();
}

/// Prompt and resource notifications, filtered by what the listener asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_delivers_only_what_was_asked_for() {
    let srv = TestServer::start_with(full_server, test_config()).await;
    let id = json!("listen-ü-1");
    let post = listen(
        id.clone(),
        json!({
            "promptsListChanged": true,
            "toolsListChanged": false,
            "resourceSubscriptions": [UNICODE_URI]
        }),
    );
    let mut client = Client::h2(srv.addr).await;
    let mut stream = SseStream::new(client.open(&post).await);
    let ack = stream.next().await.expect("an acknowledgement");
    assert_ack(
        &ack,
        &id,
        json!({"promptsListChanged": true, "resourceSubscriptions": [UNICODE_URI]}),
    );

    // Not asked for: tool changes and other resources. Each is followed by something that was
    // asked for, which must be the next message.
    srv.server
        .add_tool(late_tool("unheard"), late_handler)
        .unwrap();
    srv.server.notify_resource_updated("test://docs/Basel");
    srv.server.notify_resource_updated(UNICODE_URI);
    let note = stream.next().await.expect("a resource update");
    assert_note(&note, "notifications/resources/updated", &id);
    assert_eq!(note["params"]["uri"], UNICODE_URI);

    srv.server
        .add_prompt_handler(
            Prompt::new("late_prompt").with_description("Added at run time"),
            |_ctx: RequestContext, _args| async move {
                Ok::<_, kelson_server::HandlerError>(GetPromptResult::new(vec![
                    PromptMessage::user_text("hi"),
                ]))
            },
        )
        .unwrap();
    let note = stream.next().await.expect("a prompt list change");
    assert_note(&note, "notifications/prompts/list_changed", &id);
}

/// A response body that records when hyper drops it.
struct Observed {
    inner: McpBody,
    probes: Arc<Probes>,
    tag: String,
}

impl Body for Observed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        self.probes.record(format!("dropped:{}", self.tag));
    }
}

/// Serves `service` like `serve` does (hyper-util's auto builder, one task per
/// connection), but records when each response body is dropped, tagged with the request's
/// `x-test-tag` header.
///
/// A listen stream's `ListenStream`, the hub subscription, lives in its response body: once the
/// body is dropped, the hub has nothing left to deliver to.
async fn serve_observed(service: McpService, probes: Arc<Probes>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let service = service.clone();
            let probes = probes.clone();
            let svc =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let service = service.clone();
                    let probes = probes.clone();
                    async move {
                        let tag = req
                            .headers()
                            .get("x-test-tag")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_owned();
                        let response = service.handle(req).await;
                        Ok::<_, Infallible>(response.map(|inner| Observed { inner, probes, tag }))
                    }
                });
            tokio::spawn(async move {
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

/// Closing the listen stream unsubscribes: the server drops the stream, and with it the hub
/// subscription, without any keep-alive write to find out (keep-alives are off here). Over
/// HTTP/1.1 closing the stream closes the connection; over HTTP/2 it resets one stream and the
/// connection stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_listen_stream_unsubscribes() {
    let probes = Arc::new(Probes::default());
    let server = tools_only_server(probes.clone());
    let config = {
        let mut edited = test_config();
        edited.keep_alive = Duration::ZERO;
        edited
    };
    let addr = serve_observed(McpService::new(server.clone(), config), probes.clone()).await;

    for (tag, h2) in [("listen-h1", false), ("listen-h2", true)] {
        let mut client = if h2 {
            Client::h2(addr).await
        } else {
            Client::h1(addr).await
        };
        let post = listen(tag, json!({"toolsListChanged": true})).header("x-test-tag", tag);
        let mut stream = SseStream::new(client.open(&post).await);
        assert_ack(
            &stream.next().await.expect("an acknowledgement"),
            &json!(tag),
            json!({"toolsListChanged": true}),
        );
        // While the stream is open, it is subscribed: a change reaches it.
        server.add_tool(late_tool(tag), late_handler).unwrap();
        assert_note(
            &stream.next().await.expect("a notification"),
            "notifications/tools/list_changed",
            &json!(tag),
        );
        assert!(!probes.saw(&format!("dropped:{tag}")));

        drop(stream);
        probes.wait_for(&format!("dropped:{tag}")).await;

        if h2 {
            // Only the stream was closed; the connection still serves requests.
            let reply = client
                .send(&Post::call(5, "tools/list", json!({})).header("x-test-tag", "after"))
                .await;
            reply.result(json!(5));
            assert!(!client.is_closed());
        } else {
            client.wait_closed().await;
        }
    }
}
