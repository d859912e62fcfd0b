//! HTTP-level rules that come before the JSON-RPC message is read: path, method, Host and Origin,
//! Accept, Content-Type, body size, and the shape of the message.

use http::{Method, StatusCode};
use kelson_http::server::OriginPolicy;
use serde_json::{Value, json};

use super::fixture::full_server;
use super::harness::{Client, Post, TestServer, meta, raw_exchange, raw_request, test_config};

fn discover(id: i64) -> Post {
    Post::call(id, "server/discover", json!({}))
}

/// spec 2026-07-28 basic/transports/streamable-http: no GET stream and no session to DELETE, so
/// a modern client's GET and DELETE get 405 with `Allow: POST`, whatever legacy headers they
/// carry; a handshake-era one's (no modern `MCP-Protocol-Version`) without a session get 400, since
/// this endpoint serves GET and DELETE to sessions (2025-11-25 streamable-http: a server that
/// requires a session id answers a request without one with 400).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_delete_are_405_with_allow_post() {
    // A modern client on a dual-era server, and any client on a modern-only server with a session
    // named: 405, as a modern endpoint answers.
    let dual = TestServer::start().await;
    let modern = TestServer::start_with(
        super::fixture::modern_only_server,
        super::harness::test_config(),
    )
    .await;
    for (srv, session, version) in [
        (&dual, None, Some("2026-07-28")),
        (&modern, Some("legacy-session-1"), None),
    ] {
        for method in [Method::GET, Method::DELETE] {
            let mut post = Post::bare("")
                .method(method.clone())
                .without("content-type")
                .header("Accept", "text/event-stream")
                .header("Last-Event-ID", "42");
            if let Some(id) = session {
                post = post.header("Mcp-Session-Id", id);
            }
            if let Some(version) = version {
                post = post.header("MCP-Protocol-Version", version);
            }
            let reply = srv.send(&post).await;
            reply.refused(StatusCode::METHOD_NOT_ALLOWED);
            assert_eq!(reply.headers["allow"], "POST", "{method}");
        }
    }
    // A handshake-era GET or DELETE without its session: 400, naming the header it needs.
    for method in [Method::GET, Method::DELETE] {
        let reply = dual
            .send(
                &Post::bare("")
                    .method(method.clone())
                    .without("content-type")
                    .header("Accept", "text/event-stream"),
            )
            .await;
        reply.refused(StatusCode::BAD_REQUEST);
        assert!(reply.headers.get("allow").is_none(), "{method}");
        assert!(
            String::from_utf8_lossy(&reply.body).contains("Mcp-Session-Id"),
            "{method}: {:?}",
            reply.body
        );
    }
    // Any other method: 405, with every method the endpoint serves.
    let reply = dual
        .send(&Post::bare("").method(Method::PUT).without("content-type"))
        .await;
    reply.refused(StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(reply.headers["allow"], "GET, POST, DELETE");
    // A dual-era server keeps handshake-era sessions: an unknown one is 404 (2025-11-25
    // streamable-http), so that the client initializes again.
    for method in [Method::GET, Method::DELETE] {
        let reply = dual
            .send(
                &Post::bare("")
                    .method(method.clone())
                    .without("content-type")
                    .header("Accept", "text/event-stream")
                    .header("Mcp-Session-Id", "legacy-session-1"),
            )
            .await;
        reply.refused(StatusCode::NOT_FOUND);
    }
}

/// spec 2026-07-28 basic/transports/streamable-http: `Mcp-Session-Id` and `Last-Event-ID` are
/// ignored, and no session id is ever minted or echoed
/// ([`Client::open`](super::harness::Client::open) checks every response for one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_session_headers_are_ignored() {
    let srv = TestServer::start().await;
    let reply = srv
        .send(
            &discover(1)
                .header("Mcp-Session-Id", "legacy-session-1")
                .header("Last-Event-ID", "7"),
        )
        .await;
    let result = reply.result(json!(1));
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));

    let streamed = srv
        .send(
            &Post::tool_with_meta(
                2,
                "echo",
                json!({"text": "hi"}),
                json!({"progressToken": "p"}),
            )
            .header("Mcp-Session-Id", "legacy-session-1")
            .header("Last-Event-ID", "7"),
        )
        .await;
    assert_eq!(streamed.status, StatusCode::OK);
    assert_eq!(streamed.content_type(), "text/event-stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_path_is_404() {
    let srv = TestServer::start().await;
    for path in ["/", "/other", "/mcp/", "/mcp/extra"] {
        let reply = srv.send(&discover(1).path(path)).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(reply.body.len(), 0, "{path}");
    }
}

/// spec 2026-07-28 streamable-http (Security): an `Origin` that is present and not allowed is a
/// 403, with a JSON-RPC error body without `id`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_origin_is_403() {
    let srv = TestServer::start().await;
    for origin in [
        "http://evil.example.com",
        "https://localhost.evil.example.com",
        "null",
    ] {
        let reply = srv.send(&discover(1).header("Origin", origin)).await;
        reply.refused(StatusCode::FORBIDDEN);
    }
    let port = srv.addr.port();
    for origin in [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        "http://[::1]".to_owned(),
    ] {
        let reply = srv.send(&discover(1).header("Origin", &origin)).await;
        reply.result(json!(1));
    }
}

/// DNS-rebinding protection (conformance `dns-rebinding-protection`): a loopback server refuses a
/// `Host` that is not a loopback name, and accepts every loopback name with any port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_must_be_a_loopback_name() {
    let srv = TestServer::start().await;
    let port = srv.addr.port();
    for host in [
        "evil.example.com".to_owned(),
        format!("evil.example.com:{port}"),
        format!("127.0.0.1.evil.example.com:{port}"),
    ] {
        let reply = srv.send(&discover(1).header("Host", &host)).await;
        reply.refused(StatusCode::FORBIDDEN);
    }
    // Without a Host field an HTTP/1.1 request is malformed (RFC 9112 §3.2: 400), and so is one
    // with two; either way it never reaches the endpoint.
    let reply = srv.send(&discover(1).without("Host")).await;
    reply.refused(StatusCode::BAD_REQUEST);

    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_owned(),
    ] {
        let reply = srv.send(&discover(2).header("Host", &host)).await;
        reply.result(json!(2));
    }
}

/// A `server/discover` request's body, and its standard header lines, for raw requests.
fn raw_discover() -> (String, [&'static str; 2]) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                      "params": {"_meta": meta()}})
    .to_string();
    (
        body,
        [
            "MCP-Protocol-Version: 2026-07-28",
            "Mcp-Method: server/discover",
        ],
    )
}

/// Hosts are parsed exactly: an IP literal followed by anything but a port is malformed (400), not
/// `[::1]`; an origin like it is not allowed (403); a second `Origin` is refused (403), not read
/// for its first value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bracketed_host_with_a_tail_or_a_second_origin_is_refused() {
    let srv = TestServer::start().await;
    for host in ["[::1].evil.com", "[::1]evil.com:80", "[::1]:80.evil.com"] {
        let reply = srv.send(&discover(1).header("Host", host)).await;
        reply.refused(StatusCode::BAD_REQUEST);
    }
    let reply = srv
        .send(&discover(1).header("Origin", "http://[::1].evil.com:80"))
        .await;
    reply.refused(StatusCode::FORBIDDEN);
    let (body, [version, method]) = raw_discover();
    let twice = raw_request(
        &srv.authority(),
        &[
            version,
            method,
            "Origin: http://localhost",
            "Origin: http://evil.example.com",
        ],
        &body,
    );
    raw_exchange(srv.addr, &twice)
        .await
        .refused(StatusCode::FORBIDDEN);
    let once = raw_request(
        &srv.authority(),
        &[version, method, "Origin: http://localhost"],
        &body,
    );
    raw_exchange(srv.addr, &once).await.result(json!(1));
}

/// RFC 9112 §3.2.2: with an absolute-form request target, the target's authority is the host and
/// `Host` is ignored, so the target is what the policy checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absolute_form_target_is_the_host() {
    let srv = TestServer::start().await;
    let (body, lines) = raw_discover();
    let absolute = |target: &str| {
        String::from_utf8(raw_request(&srv.authority(), &lines, &body))
            .unwrap()
            .replacen("POST /mcp ", &format!("POST {target} "), 1)
    };
    let foreign = absolute("http://evil.example.com/mcp");
    raw_exchange(srv.addr, foreign.as_bytes())
        .await
        .refused(StatusCode::FORBIDDEN);
    let local = absolute(&format!("http://localhost:{}/mcp", srv.addr.port()));
    raw_exchange(srv.addr, local.as_bytes())
        .await
        .result(json!(1));
}

/// RFC 9113 §8.3.1: on HTTP/2 a `Host` that differs from `:authority` makes the request
/// malformed, whichever of the two is the foreign one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_h2_a_host_that_differs_from_the_authority_is_refused() {
    let srv = TestServer::start().await;
    let mut client = Client::h2(srv.addr).await;
    let reply = client
        .send(&discover(1).header("Host", "evil.example.com"))
        .await;
    reply.refused(StatusCode::BAD_REQUEST);
    let reply = client
        .send(&discover(2).header("Host", &srv.authority()))
        .await;
    reply.result(json!(2));
    let reply = client.send(&discover(3)).await;
    reply.result(json!(3));
}

/// Behind a reverse proxy that forwards the public host name, `allow_host` is the one setting a
/// loopback server needs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reverse_proxy_host_can_be_allowed() {
    let config = {
        let mut edited = test_config();
        edited.policy = OriginPolicy::loopback().allow_host("mcp.example.com");
        edited
    };
    let srv = TestServer::start_with(full_server, config).await;
    for post in [
        discover(1).header("Host", "mcp.example.com"),
        discover(1).header("Host", "mcp.example.com:443"),
        discover(1)
            .header("Host", "mcp.example.com")
            .header("Origin", "https://mcp.example.com"),
        discover(1).header("Host", &format!("localhost:{}", srv.addr.port())),
    ] {
        srv.send(&post).await.result(json!(1));
    }
    let reply = srv
        .send(&discover(1).header("Host", "other.example.com"))
        .await;
    reply.refused(StatusCode::FORBIDDEN);
    let reply = srv
        .send(
            &discover(1)
                .header("Host", "mcp.example.com")
                .header("Origin", "https://evil.example.com"),
        )
        .await;
    reply.refused(StatusCode::FORBIDDEN);
}

/// spec 2026-07-28 streamable-http: the client lists both `application/json` and
/// `text/event-stream`; anything less is a 406.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_must_list_both_types() {
    let srv = TestServer::start().await;
    for accept in [
        Some("application/json"),
        Some("text/event-stream"),
        Some("text/html"),
        None,
    ] {
        let post = match accept {
            Some(a) => discover(1).header("Accept", a),
            None => discover(1).without("Accept"),
        };
        let reply = srv.send(&post).await;
        reply.refused(StatusCode::NOT_ACCEPTABLE);
    }
    for accept in [
        "text/event-stream, application/json",
        "application/json;q=0.9, text/event-stream;q=0.5",
        "*/*",
    ] {
        let reply = srv.send(&discover(2).header("Accept", accept)).await;
        reply.result(json!(2));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_type_must_be_json() {
    let srv = TestServer::start().await;
    for post in [
        discover(1).header("Content-Type", "text/plain"),
        discover(1).header("Content-Type", "application/x-www-form-urlencoded"),
        discover(1).without("Content-Type"),
    ] {
        srv.send(&post)
            .await
            .refused(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }
    let reply = srv
        .send(&discover(2).header("Content-Type", "application/json; charset=utf-8"))
        .await;
    reply.result(json!(2));
}

/// A body over `max_body` is a 413 whether its size is announced (`Content-Length`) or only found
/// out while reading (chunked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_413() {
    const LIMIT: usize = 1024;
    let config = {
        let mut edited = test_config();
        edited.max_body = LIMIT;
        edited
    };
    let srv = TestServer::start_with(full_server, config).await;
    let big = Post::tool(1, "echo", json!({"text": "x".repeat(4 * LIMIT)}));
    srv.send(&big).await.refused(StatusCode::PAYLOAD_TOO_LARGE);
    srv.send(&big.clone().chunked(256))
        .await
        .refused(StatusCode::PAYLOAD_TOO_LARGE);

    // Just under the limit, in either framing, is served.
    let overhead = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": ""}, "_meta": super::harness::meta()}
    }))
    .unwrap()
    .len();
    let text = "y".repeat(LIMIT - overhead);
    let fits = Post::tool(2, "echo", json!({ "text": text }));
    assert_eq!(srv.send(&fits).await.tool_text(json!(2)), text);
    assert_eq!(srv.send(&fits.chunked(100)).await.tool_text(json!(2)), text);
}

/// A body that is not JSON: 400 / -32700, without an id since none could be read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_json_is_a_parse_error() {
    let srv = TestServer::start().await;
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"#,
        "not json at all",
        "",
    ] {
        let reply = srv.send(&Post::bare(body)).await;
        reply.error(StatusCode::BAD_REQUEST, -32700, None);
    }
}

/// spec 2026-07-28 basic: there are no batches; an array is an invalid request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_an_invalid_request() {
    let srv = TestServer::start().await;
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": super::harness::meta()}
    });
    let reply = srv
        .send(
            &Post::bare(serde_json::to_vec(&json!([request])).unwrap())
                .header("MCP-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", "server/discover"),
        )
        .await;
    reply.error(StatusCode::BAD_REQUEST, -32600, None);
}

/// spec 2026-07-28 streamable-http: posting a JSON-RPC response is forbidden.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_posted_by_the_client_is_refused() {
    let srv = TestServer::start().await;
    for response in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32601, "message": "no"}}),
    ] {
        let reply = srv
            .send(&Post::bare(serde_json::to_vec(&response).unwrap()))
            .await;
        let body: Value = reply.json();
        reply.refused(StatusCode::BAD_REQUEST);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("response"),
            "{body}"
        );
    }
}
