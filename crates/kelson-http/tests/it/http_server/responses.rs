//! How requests and notifications are answered: 202 for notifications, `application/json` for
//! plain requests, and a request-scoped SSE stream when the request asks for progress or logs.

use http::StatusCode;
use serde_json::{Value, json};

use super::harness::{Client, Post, SseStream, TestServer, tool_text};

const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// spec 2026-07-28 streamable-http: an accepted notification gets 202 and no body. No `_meta` and
/// no MCP header is needed (header requirements for notifications are not defined).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_are_202_with_an_empty_body() {
    let srv = TestServer::start().await;
    for body in [
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "com.example/anything", "params": {"x": [1, 2]}}),
    ] {
        let reply = srv
            .send(&Post::bare(serde_json::to_vec(&body).unwrap()))
            .await;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{body}");
        assert!(reply.body.is_empty(), "{body}: {:?}", reply.body);
        assert!(!reply.headers.contains_key("content-type"), "{body}");
    }
}

/// A request that asks for no notifications is answered with one JSON body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_requests_are_answered_with_json() {
    let srv = TestServer::start().await;
    let mut client = Client::h1(srv.addr).await;

    let discover = client
        .send(&Post::call(1, "server/discover", json!({})))
        .await
        .result(json!(1));
    assert_eq!(discover["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "http-it"
    );

    let list = client
        .send(&Post::call("two", "tools/list", json!({})))
        .await
        .result(json!("two"));
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in ["echo", "slow", "region", "sample", "chatty"] {
        assert!(names.contains(&tool), "{names:?}");
    }

    // A slow tool without a progress token: no stream, just the result.
    let reply = client
        .send(&Post::tool(
            3,
            "slow",
            json!({"tag": "plain", "steps": 2, "stepMs": 1}),
        ))
        .await;
    assert_eq!(reply.tool_text(json!(3)), "slow plain done");
    assert!(reply.headers.contains_key("content-length"));
}

/// Reads a whole SSE response: the notifications in order, then the final message, then the end.
async fn read_stream(stream: &mut SseStream) -> (Vec<Value>, Value) {
    let mut notes = Vec::new();
    loop {
        let message = stream
            .next()
            .await
            .expect("the stream ends with a response");
        if message.get("id").is_some() {
            stream.expect_end().await;
            stream.assert_plain_framing();
            return (notes, message);
        }
        assert!(message["method"].is_string(), "{message}");
        notes.push(message);
    }
}

/// spec 2026-07-28 basic/patterns/progress and basic/transports/streamable-http: a request with a
/// `progressToken` gets an SSE stream with its progress notifications before the final result, and
/// the stream ends right after the result. The spec leaves the SSE framing open; ours is one
/// message per event, with no `id:` or `retry:`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_streamed_before_the_result() {
    let srv = TestServer::start().await;
    let mut client = Client::h1(srv.addr).await;
    for (id, token) in [(json!(1), json!("tok-1")), (json!("s-2"), json!(77))] {
        let post = Post::tool_with_meta(
            id.clone(),
            "slow",
            json!({"tag": "p", "steps": 3, "stepMs": 1}),
            json!({"progressToken": token}),
        );
        // Keep-alive: both requests travel on one connection.
        let mut stream = SseStream::new(client.open(&post).await);
        let (notes, last) = read_stream(&mut stream).await;

        assert_eq!(notes.len(), 3, "{notes:?}");
        for (i, note) in notes.iter().enumerate() {
            assert_eq!(note["method"], "notifications/progress", "{note}");
            assert!(note.get("id").is_none(), "{note}");
            assert_eq!(note["params"]["progressToken"], token, "{note}");
            assert_eq!(note["params"]["progress"], (i + 1) as f64, "{note}");
            assert_eq!(note["params"]["total"], 3.0, "{note}");
            // Progress never carries a subscription id.
            assert!(note["params"].get("_meta").is_none(), "{note}");
        }
        assert_eq!(last["id"], id);
        assert_eq!(tool_text(&last["result"]), "slow p done");
    }
}

fn log_lines(notes: &[Value]) -> Vec<(String, String)> {
    notes
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .map(|n| {
            (
                n["params"]["level"].as_str().unwrap().to_owned(),
                n["params"]["data"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// spec 2026-07-28 server/utilities/logging: with a `logLevel`, log messages at or above it travel
/// on the request's stream; without one, none is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_follow_the_requested_level() {
    let srv = TestServer::start().await;
    let mut client = Client::h1(srv.addr).await;

    let cases = [
        (
            "warning",
            vec![("warning", "warning-line"), ("error", "error-line")],
        ),
        (
            "debug",
            vec![
                ("debug", "debug-line"),
                ("info", "info-line"),
                ("warning", "warning-line"),
                ("error", "error-line"),
            ],
        ),
        ("critical", vec![]),
    ];
    for (level, expected) in cases {
        let post = Post::tool_with_meta(1, "chatty", json!({}), json!({LOG_LEVEL: level}));
        let mut stream = SseStream::new(client.open(&post).await);
        let (notes, last) = read_stream(&mut stream).await;
        let expected: Vec<(String, String)> = expected
            .into_iter()
            .map(|(l, d)| (l.to_owned(), d.to_owned()))
            .collect();
        assert_eq!(log_lines(&notes), expected, "logLevel {level}");
        assert_eq!(notes.len(), expected.len(), "{notes:?}");
        for note in &notes {
            assert_eq!(note["params"]["logger"], "chatty");
        }
        assert_eq!(tool_text(&last["result"]), "logged");
    }

    // A progress token but no log level: a stream, but no log message on it.
    let post = Post::tool_with_meta(2, "chatty", json!({}), json!({"progressToken": 5}));
    let mut stream = SseStream::new(client.open(&post).await);
    let (notes, last) = read_stream(&mut stream).await;
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(last["id"], 2);

    // Neither: a JSON response, so nothing could precede the result.
    let reply = client.send(&Post::tool(3, "chatty", json!({}))).await;
    assert_eq!(reply.tool_text(json!(3)), "logged");

    // An invalid level is a malformed `_meta`.
    let post = Post::tool_with_meta(4, "chatty", json!({}), json!({LOG_LEVEL: "verbose"}));
    client
        .send(&post)
        .await
        .error(StatusCode::BAD_REQUEST, -32602, Some(json!(4)));
}

/// [`super::fixture::full_server`] with two tools that fail after reporting progress: one with a
/// tool error, one with a JSON-RPC error.
fn late_failures(probes: std::sync::Arc<super::fixture::Probes>) -> kelson_server::Server {
    super::fixture::full_builder(probes)
        .tool(
            "fails_late",
            |ctx: kelson_server::RequestContext| async move {
                ctx.progress(1.0, Some(3.0), Some("one"));
                ctx.progress(2.0, Some(3.0), Some("two"));
                Err::<String, _>(kelson_server::HandlerError::failed(
                    "the disk filled up at step 3",
                ))
            },
        )
        .tool(
            "breaks_late",
            |ctx: kelson_server::RequestContext| async move {
                ctx.progress(1.0, None, Some("one"));
                Err::<String, _>(kelson_server::HandlerError::protocol(
                    kelson_jsonrpc::ErrorObject::internal_error("the backend went away"),
                ))
            },
        )
        .build()
        .expect("builds")
}

/// A handler that fails after it reported progress: the stream carries the progress and then the
/// failure as the request's one response (a tool error, or a JSON-RPC error), on both protocols,
/// and the connection serves the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_after_progress_ends_the_stream_with_it() {
    let srv = TestServer::start_with(late_failures, super::harness::test_config()).await;
    for h2 in [false, true] {
        let mut client = if h2 {
            Client::h2(srv.addr).await
        } else {
            Client::h1(srv.addr).await
        };
        let call = Post::tool_with_meta(1, "fails_late", json!({}), json!({"progressToken": "p"}));
        let response = client.open(&call).await;
        assert_eq!(response.status(), StatusCode::OK);
        let mut stream = SseStream::new(response);
        let mut messages = Vec::new();
        while let Some(m) = stream.next().await {
            messages.push(m);
        }
        let steps: Vec<&Value> = messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| &m["params"]["message"])
            .collect();
        assert_eq!(steps, [&json!("one"), &json!("two")], "h2: {h2}");
        let last = messages.last().unwrap();
        assert_eq!(last["id"], 1);
        assert_eq!(last["result"]["isError"], true, "{last}");
        assert_eq!(
            last["result"]["content"][0]["text"],
            "the disk filled up at step 3"
        );

        let call = Post::tool_with_meta(2, "breaks_late", json!({}), json!({"progressToken": "q"}));
        let mut stream = SseStream::new(client.open(&call).await);
        let mut messages = Vec::new();
        while let Some(m) = stream.next().await {
            messages.push(m);
        }
        assert_eq!(messages[0]["method"], "notifications/progress");
        let last = messages.last().unwrap();
        assert_eq!(last["id"], 2);
        assert_eq!(last["error"]["code"], -32603, "{last}");

        let reply = client
            .send(&Post::tool(3, "echo", json!({"text": "after"})))
            .await;
        assert_eq!(reply.tool_text(json!(3)), "after");
    }
}
