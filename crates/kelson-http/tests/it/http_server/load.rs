//! Many requests at once, on shared connections: HTTP/1.1 keep-alive and HTTP/2 over cleartext.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::harness::{Client, Post, Reply, SseStream, TestServer, tool_text};

/// Request `i` of a mixed load, and a check of its reply: ids of both JSON types, plain and
/// streamed answers, tools and lists.
fn request(i: usize) -> (Post, Box<dyn FnOnce(Reply) + Send>) {
    match i % 4 {
        0 => {
            let text = format!("message {i}");
            (
                Post::tool(i, "echo", json!({ "text": text })),
                Box::new(move |reply: Reply| assert_eq!(reply.tool_text(json!(i)), text)),
            )
        }
        1 => {
            let id = format!("list-{i}");
            (
                Post::call(id.clone(), "tools/list", json!({})),
                Box::new(move |reply: Reply| {
                    assert!(reply.result(json!(id))["tools"].is_array());
                }),
            )
        }
        2 => (
            Post::call(i, "server/discover", json!({})),
            Box::new(move |reply: Reply| {
                assert_eq!(
                    reply.result(json!(i))["supportedVersions"],
                    json!(["2026-07-28"])
                );
            }),
        ),
        _ => {
            let tag = format!("load-{i}");
            let id = format!("slow-{i}");
            (
                Post::tool_with_meta(
                    id.clone(),
                    "slow",
                    json!({"tag": tag, "steps": 2, "stepMs": 1}),
                    json!({"progressToken": i}),
                ),
                Box::new(move |reply: Reply| {
                    let events = reply.events();
                    assert_eq!(events.len(), 3, "{events:?}");
                    for progress in &events[..2] {
                        assert_eq!(progress["params"]["progressToken"], json!(i));
                    }
                    let last = &events[2];
                    assert_eq!(last["id"], json!(id));
                    assert_eq!(tool_text(&last["result"]), format!("slow {tag} done"));
                }),
            )
        }
    }
}

/// 200 requests started at once, sharing 8 HTTP/1.1 connections that stay open throughout: every
/// one is answered, and with the answer to that request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_requests_over_eight_keep_alive_connections() {
    let srv = TestServer::start().await;
    let mut connections = Vec::new();
    for _ in 0..8 {
        connections.push(Arc::new(Mutex::new(Client::h1(srv.addr).await)));
    }
    let mut tasks = Vec::new();
    for i in 0..200 {
        let conn = connections[i % 8].clone();
        tasks.push(tokio::spawn(async move {
            let (post, check) = request(i);
            let reply = conn.lock().await.send(&post).await;
            check(reply);
        }));
    }
    for task in tasks {
        task.await.expect("every request is answered correctly");
    }
    for conn in &connections {
        assert!(
            !conn.lock().await.is_closed(),
            "a keep-alive connection was closed"
        );
    }
}

/// HTTP/2 with prior knowledge (h2c): plain and streamed answers, and 100 concurrent streams on
/// one connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_prior_knowledge_works() {
    let srv = TestServer::start().await;
    let mut client = Client::h2(srv.addr).await;

    let reply = client
        .send(&Post::call(1, "server/discover", json!({})))
        .await;
    assert_eq!(
        reply.result(json!(1))["supportedVersions"],
        json!(["2026-07-28"])
    );

    let post = Post::tool_with_meta(
        2,
        "slow",
        json!({"tag": "h2", "steps": 2, "stepMs": 1}),
        json!({"progressToken": "h2"}),
    );
    let mut stream = SseStream::new(client.open(&post).await);
    let mut messages: Vec<Value> = Vec::new();
    while let Some(message) = stream.next().await {
        messages.push(message);
    }
    assert!(stream.error.is_none(), "{:?}", stream.error);
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[0]["method"], "notifications/progress");
    assert_eq!(messages[2]["id"], 2);
    stream.assert_plain_framing();

    let mut tasks = Vec::new();
    for i in 0..100 {
        let mut handle = client.stream_handle();
        tasks.push(tokio::spawn(async move {
            let (post, check) = request(i);
            check(handle.send(&post).await);
        }));
    }
    for task in tasks {
        task.await.expect("every stream is answered correctly");
    }
    assert!(!client.is_closed());
}
