//! The stdio transport: bad lines, notifications, line limits, concurrency, cancellation, panics.

use serde_json::{Value, json};

use crate::client::{Fixture, default_caps, error, is_response, meta_with_caps, text};

/// An error response without any `id` member (not even `null`), as for unreadable requests.
fn is_idless_error(m: &Value, code: i64) -> bool {
    m.get("id").is_none() && m["error"]["code"] == code
}

#[tokio::test]
async fn a_line_that_is_not_json_is_a_parse_error_without_an_id() {
    let mut server = Fixture::start().await;
    server
        .send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\":")
        .await;
    let (_, e) = server
        .wait_for("a parse error", |m| m.get("error").is_some())
        .await;
    assert!(is_idless_error(&e, -32700), "{e}");
    assert!(e.as_object().unwrap().get("id").is_none(), "{e}");

    // Bytes that are not UTF-8 are not JSON text either.
    server
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\xff\"}")
        .await;
    server
        .wait_count("two parse errors", 2, |m| is_idless_error(m, -32700))
        .await;

    // The server keeps serving.
    let response = server.call_tool("test_simple_text", json!({})).await;
    assert_eq!(
        text(&response),
        "This is a simple text response for testing."
    );
    server.finish().await;
}

#[tokio::test]
async fn valid_json_that_is_not_a_request_is_an_invalid_request() {
    let mut server = Fixture::start().await;
    let meta = meta_with_caps(default_caps());

    // Readable ids are echoed.
    let with_ids = [
        (
            json!(1),
            json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}),
        ),
        (
            json!("two"),
            json!({"id": "two", "method": "tools/list", "params": {"_meta": meta}}),
        ),
        (
            json!(3),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": [1, 2]}),
        ),
        (
            json!(4),
            json!({"jsonrpc": "2.0", "id": 4, "method": 7, "params": {"_meta": meta}}),
        ),
    ];
    for (id, message) in &with_ids {
        server.send(message).await;
        let response = server.response(id.clone()).await;
        error(&response, -32600);
    }

    // No readable id: no id member at all.
    let without_ids = [
        json!([{"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": meta}}]),
        json!(42),
        json!("tools/list"),
        json!({"jsonrpc": "2.0", "id": null, "method": "tools/list", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list", "params": {"_meta": meta}}),
        // A notification with malformed params is a malformed message, not a notification.
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "bogus"}),
    ];
    for (n, message) in without_ids.iter().enumerate() {
        server.send(message).await;
        server
            .wait_count(&format!("invalid request {n}"), n + 1, |m| {
                is_idless_error(m, -32600)
            })
            .await;
    }
    // A batch is refused whole: its inner request is never served.
    let log = server.finish().await;
    assert!(!log.iter().any(is_response(5)), "{log:#?}");
    assert_eq!(log.len(), with_ids.len() + without_ids.len(), "{log:#?}");
}

#[tokio::test]
async fn notifications_are_never_answered() {
    let mut server = Fixture::start().await;
    let meta = meta_with_caps(default_caps());
    let notifications = [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": null}}),
        json!({"jsonrpc": "2.0", "method": "unknown/notification", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "method": "tools/list", "params": {"_meta": meta}}),
    ];
    for n in &notifications {
        server.send(n).await;
    }
    // A response from the client is not answered either: clients never send responses.
    server
        .send(&json!({"jsonrpc": "2.0", "id": 77, "result": {}}))
        .await;
    let response = server.call_tool("test_simple_text", json!({})).await;
    text(&response);
    let log = server.finish().await;
    assert_eq!(log, vec![response], "only the request is answered");
}

#[tokio::test]
async fn an_over_long_line_gets_an_error_and_the_server_keeps_serving() {
    let mut server = Fixture::start_with(&["--max-message", "2048"]).await;
    let padding = "x".repeat(4096);
    let long = json!({
        "jsonrpc": "2.0", "id": 1000, "method": "tools/call",
        "params": {"_meta": meta_with_caps(default_caps()), "name": "test_simple_text", "arguments": {"pad": padding}}
    });
    server.send(&long).await;
    let (_, e) = server
        .wait_for("the over-long line's error", |m| m.get("error").is_some())
        .await;
    assert!(is_idless_error(&e, -32600), "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("2048"),
        "the error should name the limit: {e}"
    );

    // A message just under the limit is served.
    let response = server
        .call_tool("test_custom_header", json!({"region": "r".repeat(1500)}))
        .await;
    assert_eq!(text(&response), format!("Region: {}", "r".repeat(1500)));
    let log = server.finish().await;
    assert!(!log.iter().any(is_response(1000)), "{log:#?}");
}

#[tokio::test]
async fn the_default_limit_is_four_mebibytes() {
    let mut server = Fixture::start().await;
    let padding = "x".repeat(4 * 1024 * 1024 + 16);
    let long = json!({
        "jsonrpc": "2.0", "id": 1000, "method": "tools/call",
        "params": {"_meta": meta_with_caps(default_caps()), "name": "test_simple_text", "arguments": {"pad": padding}}
    });
    server.send(&long).await;
    let (_, e) = server
        .wait_for("the over-long line's error", |m| m.get("error").is_some())
        .await;
    assert!(is_idless_error(&e, -32600), "{e}");
    text(&server.call_tool("test_simple_text", json!({})).await);
    server.finish().await;
}

#[tokio::test]
async fn a_fast_request_overtakes_a_slow_one() {
    let mut server = Fixture::start().await;
    let slow = server
        .request(
            "tools/call",
            json!({"name": "test_slow", "arguments": {"ms": 5000}}),
        )
        .await;
    let fast = server
        .request("tools/call", json!({"name": "test_simple_text"}))
        .await;
    let (fast_at, _) = server
        .wait_for("the fast response", is_response(fast))
        .await;
    let (slow_at, slow_response) = server
        .wait_for("the slow response", is_response(slow))
        .await;
    assert!(fast_at < slow_at, "the slow request answered first");
    assert_eq!(text(&slow_response), "Waited 5000 ms");
    server.finish().await;
}

#[tokio::test]
async fn an_id_in_flight_cannot_be_reused() {
    let mut server = Fixture::start().await;
    server
        .send_request(
            9,
            "tools/call",
            json!({"name": "test_slow", "arguments": {"ms": 30000}}),
        )
        .await;
    server
        .send_request(9, "tools/call", json!({"name": "test_simple_text"}))
        .await;
    let response = server.response(9).await;
    error(&response, -32600);
    server
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}))
        .await;
    let log = server.finish().await;
    assert_eq!(
        log.iter().filter(|m| is_response(9)(m)).count(),
        1,
        "{log:#?}"
    );
}

#[tokio::test]
async fn a_cancelled_request_is_never_answered() {
    let mut server = Fixture::start().await;
    // The handler returns as soon as it sees the cancellation, so a response would follow at once
    // if the transport did not suppress it.
    let slow = server
        .request(
            "tools/call",
            json!({"name": "test_slow", "arguments": {"ms": 30000}}),
        )
        .await;
    let with_token = server
        .request(
            "tools/call",
            json!({"_meta": crate::client::meta_plus(json!({"progressToken": "p"})), "name": "test_slow", "arguments": {"ms": 30000}}),
        )
        .await;
    for id in [slow, with_token] {
        server
            .send(&json!({
                "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "the test changed its mind"}
            }))
            .await;
    }
    // A cancel for a string id that looks like the integer one changes nothing.
    let other = server
        .request(
            "tools/call",
            json!({"name": "test_slow", "arguments": {"ms": 300}}),
        )
        .await;
    server
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": other.to_string()}}))
        .await;
    assert_eq!(text(&server.response(other).await), "Waited 300 ms");

    let later = server.call_tool("test_simple_text", json!({})).await;
    text(&later);
    let log = server.finish().await;
    assert!(!log.iter().any(is_response(slow)), "{log:#?}");
    assert!(!log.iter().any(is_response(with_token)), "{log:#?}");
}

#[tokio::test]
async fn a_panicking_handler_fails_only_its_own_request() {
    let mut server = Fixture::start().await;
    let slow = server
        .request(
            "tools/call",
            json!({"name": "test_slow", "arguments": {"ms": 200}}),
        )
        .await;
    let response = server.call_tool("test_panic", json!({})).await;
    let e = error(&response, -32603);
    assert!(
        !e["message"].as_str().unwrap().contains("deliberate"),
        "the panic message is for the logs, not the client: {e}"
    );
    assert_eq!(text(&server.response(slow).await), "Waited 200 ms");
    text(&server.call_tool("test_simple_text", json!({})).await);
    // And again: a panic does not poison anything.
    error(&server.call_tool("test_panic", json!({})).await, -32603);
    text(&server.call_tool("test_simple_text", json!({})).await);
    server.finish().await;
}

#[tokio::test]
async fn closing_stdin_lets_requests_in_flight_finish_and_exits_zero() {
    let mut server = Fixture::start().await;
    let slow = server
        .request(
            "tools/call",
            json!({"name": "test_slow", "arguments": {"ms": 300}}),
        )
        .await;
    let log = server.finish().await;
    let response = log
        .iter()
        .find(|m| is_response(slow)(m))
        .expect("the slow answer");
    assert_eq!(text(response), "Waited 300 ms");
}
