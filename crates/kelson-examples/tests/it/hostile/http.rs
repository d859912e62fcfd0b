//! The HTTP-only cases: header bytes and sizes, Host and Origin, a trickled body, legacy session
//! ids.

use super::*;

// ---- HTTP only ----

/// Sends `request` on a new connection and expects `status` with a JSON-RPC error body without an
/// id, then (if the server said so) the connection closed, then an ordinary call served, on a
/// new connection if that one was closed. Returns the refusal.
async fn refused(
    server: &HttpFixture,
    what: &str,
    request: &[u8],
    status: u16,
    says: &str,
) -> Reply {
    let mut conn = server.connect().await;
    let reply = conn.exchange(request).await;
    assert_eq!(reply.status, status, "{what}: {reply:?}");
    let body = reply.json();
    assert_eq!(body["error"]["code"], -32600, "{what}: {body}");
    assert!(body.get("id").is_none(), "{what}: {body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{what}: {message}");
    if reply.closes() {
        conn.expect_closed().await;
        conn = server.connect().await;
    }
    let follow = conn.exchange(&server.simple_call(0)).await;
    assert_eq!(text(&follow.json()), SIMPLE, "{what}: then {follow:?}");
    reply
}

#[tokio::test]
async fn control_characters_in_header_values_are_refused() {
    // RFC 9110 section 5.5: CR, LF and NUL are never part of a field value; the request head is
    // refused whole (400) and the connection, whose framing is now in doubt, closed.
    let server = HttpFixture::start().await;
    let body = call(1, "test_simple_text", json!({})).to_string();
    let with = |line: &[u8]| {
        Post::mcp("tools/call", Some("test_simple_text"), body.clone())
            .header("", line)
            .bytes(&server.authority())
    };
    let cases: [(&str, &[u8]); 6] = [
        ("a CR", b"X-Note: a\rb"),
        ("a NUL", b"X-Note: a\0b"),
        ("a NUL in Mcp-Name", b"Mcp-Name: test_simple_text\0"),
        // RFC 9112 section 2.2 lets a recipient read a bare LF as a line end, as httparse does:
        // the rest of the value is then a line without a colon.
        ("an LF", b"X-Note: a\nb"),
        // And when the rest looks like a field, it cannot smuggle a second framing.
        ("an LF before a length", b"X-Note: a\nContent-Length: 0"),
        ("an obsolete line fold", b"X-Note: a\r\n b"),
    ];
    for (what, line) in cases {
        let request = with(line);
        let says = if what.contains("length") {
            "Content-Length"
        } else {
            "malformed"
        };
        let reply = refused(&server, what, &request, 400, says).await;
        assert!(reply.closes(), "{what}: {reply:?}");
    }
}

#[tokio::test]
async fn a_one_mebibyte_header_is_431() {
    // The head is bounded (64 KiB by default): the server answers as soon as it is passed,
    // without buffering the rest, and closes the connection.
    let server = HttpFixture::start().await;
    let body = call(1, "test_simple_text", json!({})).to_string();
    let value = vec![b'a'; 1024 * 1024];
    let request = Post::mcp("tools/call", Some("test_simple_text"), body)
        .header("X-Big", &value)
        .bytes(&server.authority());
    let reply = refused(&server, "1 MiB header", &request, 431, "header size limit").await;
    assert!(reply.closes(), "{reply:?}");
}

#[tokio::test]
async fn spoofed_host_and_origin_are_403() {
    // spec 2026-07-28 basic/transports/streamable-http: servers MUST validate Origin and answer
    // an invalid one with 403; a loopback server refuses other Hosts (DNS rebinding).
    let server = HttpFixture::start().await;
    let port = server.addr.port();
    let body = call(1, "test_simple_text", json!({})).to_string();
    let post = || Post::mcp("tools/call", Some("test_simple_text"), body.clone());
    let spoofed_host = |host: &str| post().bytes(host);
    let origin = |origin: &str| {
        post()
            .header("Origin", origin.as_bytes())
            .bytes(&server.authority())
    };
    let rebinding = format!("evil.example:{port}");
    refused(
        &server,
        "a foreign Host",
        &spoofed_host("evil.example"),
        403,
        "Host",
    )
    .await;
    refused(
        &server,
        "a foreign Host:port",
        &spoofed_host(&rebinding),
        403,
        "Host",
    )
    .await;
    refused(
        &server,
        "a foreign Origin",
        &origin("http://evil.example"),
        403,
        "Origin",
    )
    .await;
    let same_port = format!("http://evil.example:{port}");
    refused(
        &server,
        "a foreign Origin:port",
        &origin(&same_port),
        403,
        "Origin",
    )
    .await;
    refused(&server, "a null Origin", &origin("null"), 403, "Origin").await;
    // A loopback Origin on any port is the local client it should be.
    let mut conn = server.connect().await;
    let local = conn
        .exchange(&origin(&format!("http://localhost:{port}")))
        .await;
    assert_eq!(text(&local.json()), SIMPLE);
}

#[tokio::test]
async fn a_body_trickling_one_byte_a_second_gets_408() {
    // The fixture binary has no flag for its read timeout, so the same fixture is served here
    // by the library with a short one. `first_bytes_timeout` bounds the whole head, and a body
    // that did not come with it: a client that keeps sending a byte a second (each gap shorter
    // than the timeout) is still cut off.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = kelson_http::server::HttpConfig::default();
    config.policy = kelson_http::server::OriginPolicy::for_bind(addr);
    let mut limits = kelson_http::server::ListenerConfig::default();
    limits.first_bytes_timeout = Duration::from_secs(2);
    let server = kelson_examples::conformance::build_server().expect("the fixture builds");
    let service = kelson_http::server::McpService::new(server, config);
    let serving = kelson_http::server::serve(listener, service)
        .listener_config(limits)
        .with_graceful_shutdown(std::future::pending());
    let serving = tokio::spawn(serving.into_future());
    let body = call(1, "test_simple_text", json!({})).to_string();
    let post = Post::mcp("tools/call", Some("test_simple_text"), body.clone());
    let authority = addr.to_string();

    let trickle = |prefix: Vec<u8>, slow: Vec<u8>| async move {
        let mut conn = Conn::open(addr).await;
        let started = Instant::now();
        conn.stream.write_all(&prefix).await.unwrap();
        let (mut r, mut w) = conn.stream.split();
        let drip = async {
            for byte in slow {
                if w.write_all(&[byte]).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            std::future::pending::<()>().await;
        };
        let reply = tokio::select! {
            reply = read_response(&mut r, &mut conn.buf) => reply,
            () = drip => unreachable!(),
        };
        let took = started.elapsed();
        conn.expect_closed().await;
        (reply, took)
    };
    let body_slowly = trickle(post.head(&authority, body.len()), body.clone().into_bytes());
    let head = post.bytes(&authority);
    let head_slowly = trickle(head[..10].to_vec(), head[10..].to_vec());
    let ((body_reply, body_took), (head_reply, head_took)) = tokio::join!(body_slowly, head_slowly);
    for (what, reply, took) in [
        ("body", body_reply, body_took),
        ("head", head_reply, head_took),
    ] {
        assert_eq!(reply.status, 408, "{what}: {reply:?}");
        let says = reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(says.contains("did not arrive in time"), "{what}: {says}");
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(15),
            "{what}: {took:?}"
        );
    }
    let mut conn = Conn::open(addr).await;
    let follow = conn.exchange(&post.bytes(&authority)).await;
    assert_eq!(text(&follow.json()), SIMPLE);
    serving.abort();
}

#[tokio::test]
async fn legacy_session_ids_that_were_never_issued_are_404() {
    // spec 2025-11-25 basic/transports/streamable-http: a request with a session id the server
    // does not know gets 404, and the client starts again with initialize. (A session that
    // exists but was opened by another principal is answered the same way: kelson-http's
    // tests/it/http_server/scopes.rs, `a_handshake_era_session_serves_only_the_caller_that_opened_it`;
    // the fixture binary has no authentication to show it with.)
    let server = HttpFixture::start().await;
    // What a handshake-era client sends: its version, its session, no Mcp-Method.
    let legacy = |session: &[u8], body: &Value| {
        Post::mcp("", None, body.to_string())
            .without("Mcp-Method")
            .header("MCP-Protocol-Version", b"2025-11-25")
            .header("Mcp-Session-Id", session)
            .bytes(&server.authority())
    };
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"roots": []}});
    let forged = b"0123456789abcdef0123456789abcdef";
    for (what, body) in [
        ("a request", &list),
        ("a notification", &note),
        ("an answer", &answer),
    ] {
        let request = legacy(forged, body);
        refused(&server, what, &request, 404, "no such session").await;
    }
    // GET (the session's stream) and DELETE (its end) of a forged session.
    for verb in ["GET", "DELETE"] {
        let request = format!(
            "{verb} /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {}\r\n\r\n",
            server.authority(),
            std::str::from_utf8(forged).unwrap()
        );
        refused(&server, verb, request.as_bytes(), 404, "no such session").await;
    }
    // A 2026-07-28 request has no session: a session id on it is ignored, never looked up
    // (spec 2026-07-28 basic/versioning).
    let modern = call("modern", "test_simple_text", json!({}));
    let post = Post::mcp("tools/call", Some("test_simple_text"), modern.to_string())
        .header("Mcp-Session-Id", forged)
        .bytes(&server.authority());
    let served = server.connect().await.exchange(&post).await;
    assert_eq!(text(&served.json()), SIMPLE);
    // An id that could never have been issued (spec: visible ASCII) is malformed: 400.
    for bad in [&b"has space"[..], &[b'a'; 300][..], "caf\u{e9}".as_bytes()] {
        refused(
            &server,
            "a malformed id",
            &legacy(bad, &list),
            400,
            "Mcp-Session-Id",
        )
        .await;
    }
}
