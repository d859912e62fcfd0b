//! What needs the tool definition: `Mcp-Param-*` headers (`x-mcp-header` in spec 2026-07-28
//! basic/transports/streamable-http), client capabilities (-32021), and the errors answered in
//! band.

use http::StatusCode;
use kelson_http::encode_value;
use serde_json::{Value, json};

use super::harness::{Post, TestServer, meta_with};

const TOKEN: &str = "progressToken";

/// `region` with `arguments`, and its `Mcp-Param-*` headers set as given (`None`: not sent).
fn region(id: i64, arguments: Value, region: Option<&str>, count: Option<&str>) -> Post {
    let mut post = Post::tool(id, "region", arguments);
    if let Some(r) = region {
        post = post.header("Mcp-Param-Region", r);
    }
    if let Some(c) = count {
        post = post.header("Mcp-Param-Count", c);
    }
    post
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matching_param_headers_are_accepted() {
    let srv = TestServer::start().await;
    let args = json!({"region": "eu-west1", "count": 42});
    for count in ["42", "42.0", "4.2e1", " 42 "] {
        let reply = srv
            .send(&region(1, args.clone(), Some("eu-west1"), Some(count)))
            .await;
        assert_eq!(
            reply.tool_text(json!(1)),
            "region=eu-west1 count=42",
            "{count}"
        );
    }

    // Values that are not header-safe travel as the sentinel.
    for value in ["Zürich", " padded ", "line1\nline2"] {
        let reply = srv
            .send(&region(
                2,
                json!({"region": value}),
                Some(&encode_value(value)),
                None,
            ))
            .await;
        assert_eq!(
            reply.tool_text(json!(2)),
            format!("region={value} count=none")
        );
    }

    // A value that only looks like part of a sentinel is a literal, as the official conformance
    // scenario `http-custom-header-server-validation` checks.
    for literal in ["SGVsbG8=", "=?base64?SGVsbG8=", "=?BASE64?SGVsbG8=?="] {
        let reply = srv
            .send(&region(3, json!({"region": literal}), Some(literal), None))
            .await;
        assert_eq!(
            reply.tool_text(json!(3)),
            format!("region={literal} count=none")
        );
    }
    // And the sentinel of "Hello" is "Hello".
    let reply = srv
        .send(&region(
            4,
            json!({"region": "Hello"}),
            Some("=?base64?SGVsbG8=?="),
            None,
        ))
        .await;
    assert_eq!(reply.tool_text(json!(4)), "region=Hello count=none");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_param_header_is_a_header_mismatch() {
    let srv = TestServer::start().await;
    for post in [
        region(5, json!({"region": "eu", "count": 42}), Some("eu"), None),
        region(5, json!({"region": "eu", "count": 42}), None, Some("42")),
        region(5, json!({"region": "test-value"}), None, None),
    ] {
        let error = srv
            .send(&post)
            .await
            .error(StatusCode::BAD_REQUEST, -32020, Some(json!(5)));
        assert!(
            error["message"].as_str().unwrap().contains("Mcp-Param-"),
            "{error}"
        );
    }
    // A value absent from the body expects no header.
    let reply = srv
        .send(&region(6, json!({"region": "eu"}), Some("eu"), None))
        .await;
    assert_eq!(reply.tool_text(json!(6)), "region=eu count=none");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_param_header_that_differs_from_the_body_is_a_header_mismatch() {
    let srv = TestServer::start().await;
    let args = json!({"region": "eu-west1", "count": 42});
    for (r, c) in [
        ("eu-west1", "41"),
        ("eu-west1", "42.5"),
        ("eu-west1", "forty-two"),
        ("us-east1", "42"),
        ("EU-WEST1", "42"),
    ] {
        srv.send(&region(7, args.clone(), Some(r), Some(c)))
            .await
            .error(StatusCode::BAD_REQUEST, -32020, Some(json!(7)));
    }
    // A header for a value the body does not have.
    srv.send(&region(8, json!({"region": "eu"}), Some("eu"), Some("1")))
        .await
        .error(StatusCode::BAD_REQUEST, -32020, Some(json!(8)));
}

/// A sentinel with bad padding or bad characters is 400 / -32020: the spec page only says invalid
/// characters are, but SEP-2243's test cases and the official conformance scenario
/// `http-custom-header-server-validation` count these too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_param_sentinel_is_a_header_mismatch() {
    let srv = TestServer::start().await;
    for header in [
        "=?base64?SGVsbG8?=",
        "=?base64?SGVs!!!bG8=?=",
        "=?base64?=?=",
    ] {
        srv.send(&region(9, json!({"region": "Hello"}), Some(header), None))
            .await
            .error(StatusCode::BAD_REQUEST, -32020, Some(json!(9)));
    }
}

/// A request that asks for progress (so would be answered with SSE) is still refused with a 400
/// and a JSON body when its `Mcp-Param-*` headers are wrong or its client lacks a capability.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_requests_are_refused_with_json_too() {
    let srv = TestServer::start().await;
    let call = |name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    let cases = [
        // Count mismatch.
        (
            call("region", json!({"region": "eu", "count": 42})),
            vec![("Mcp-Param-Region", "eu"), ("Mcp-Param-Count", "41")],
            -32020,
        ),
        // Count header missing.
        (
            call("region", json!({"region": "eu", "count": 42})),
            vec![("Mcp-Param-Region", "eu")],
            -32020,
        ),
        // Bad sentinel.
        (
            call("region", json!({"region": "Hello"})),
            vec![("Mcp-Param-Region", "=?base64?SGVsbG8?=")],
            -32020,
        ),
        // No sampling capability.
        (call("sample", json!({})), vec![], -32021),
    ];
    for (body, headers, code) in cases {
        for extra in [
            json!({TOKEN: "tok"}),
            json!({"io.modelcontextprotocol/logLevel": "debug"}),
        ] {
            let mut body = body.clone();
            body["params"]["_meta"] = meta_with(extra);
            let mut post = Post::rpc(body);
            for (name, value) in &headers {
                post = post.header(name, value);
            }
            let reply = srv.send(&post).await;
            assert_ne!(reply.content_type(), "text/event-stream");
            reply.error(StatusCode::BAD_REQUEST, code, Some(json!(10)));
        }
    }
}

/// A tool that needs sampling, called by a client that did not declare it on this request:
/// 400 / -32021 with `requiredCapabilities` as an object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_client_capability_is_400() {
    let srv = TestServer::start().await;
    let error = srv.send(&Post::tool(11, "sample", json!({}))).await.error(
        StatusCode::BAD_REQUEST,
        -32021,
        Some(json!(11)),
    );
    assert_eq!(
        error["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );

    // Declared on this request: the server asks for the completion (MRTR), in band.
    let with_sampling = Post::tool_with_meta(
        12,
        "sample",
        json!({}),
        json!({"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}),
    );
    let result = srv.send(&with_sampling).await.result(json!(12));
    assert_eq!(result["resultType"], "input_required", "{result}");
    assert_eq!(
        result["inputRequests"]["hello"]["method"], "sampling/createMessage",
        "{result}"
    );
}

/// An unknown tool is -32602 answered in band (200); arguments that fail the input schema are a
/// tool error the model can read (`isError: true`), also 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_errors_are_answered_in_band() {
    let srv = TestServer::start().await;
    let error = srv
        .send(&Post::tool(13, "no_such_tool", json!({})))
        .await
        .error(StatusCode::OK, -32602, Some(json!(13)));
    assert!(error["message"].as_str().unwrap().contains("no_such_tool"));

    for arguments in [
        json!({"text": 5}),
        json!({}),
        json!({"text": "a", "extra": 1}),
    ] {
        let reply = srv.send(&Post::tool(14, "echo", arguments.clone())).await;
        let result = reply.result(json!(14));
        assert_eq!(result["isError"], true, "{arguments}: {result}");
        assert_eq!(result["resultType"], "complete");
        assert!(result["content"][0]["text"].is_string(), "{result}");
    }
}
