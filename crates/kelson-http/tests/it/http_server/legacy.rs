//! Handshake-era clients (2025-03-26 to 2025-11-25) on the same endpoint: sessions minted at
//! `initialize`, required afterwards, ended by `DELETE` or by idleness, the GET stream of change
//! notifications, server-to-client requests on a POST's SSE stream, the stateless mode, and modern
//! requests beside them with no state leaking between the two.

use std::time::Duration;

use http::{Method, StatusCode};
use kelson_http::server::{HttpConfig, LegacyMode};
use serde_json::{Value, json};

use super::fixture::{UNICODE_URI, full_server};
use super::harness::{Client, Post, Reply, SseStream, TestServer, test_config, within};

const LEGACY: &str = "2025-11-25";

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A legacy POST: the body as is, the session and version headers of that era.
fn legacy(body: &Value, session: Option<&str>) -> Post {
    let mut post = Post::bare(serde_json::to_vec(body).unwrap());
    if let Some(id) = session {
        post = post
            .header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", LEGACY);
    }
    post
}

fn initialize(capabilities: Value) -> Value {
    rpc(
        0,
        "initialize",
        json!({
            "protocolVersion": LEGACY,
            "capabilities": capabilities,
            "clientInfo": {"name": "old-host", "version": "1"}
        }),
    )
}

/// `initialize` then `notifications/initialized`; returns the session id.
async fn open_session(srv: &TestServer, capabilities: Value) -> String {
    let mut client = Client::h1(srv.addr).await;
    let reply = client
        .send_any(&legacy(&initialize(capabilities), None))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let result = reply.json()["result"].clone();
    assert_eq!(result["protocolVersion"], LEGACY, "{result}");
    assert!(result.get("resultType").is_none(), "{result}");
    let id = reply.headers["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = client.send_any(&legacy(&note, Some(&id))).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED);
    id
}

async fn send(srv: &TestServer, post: &Post) -> Reply {
    Client::h1(srv.addr).await.send_any(post).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_serves_legacy_requests_and_modern_ones_stay_stateless() {
    let srv = TestServer::start().await;
    let session = open_session(&srv, json!({})).await;

    let list = send(
        &srv,
        &legacy(&rpc(1, "tools/list", json!({})), Some(&session)),
    )
    .await;
    assert_eq!(list.status, StatusCode::OK);
    let tools = list.json();
    assert!(
        tools["result"]["tools"].as_array().unwrap().len() > 3,
        "{tools}"
    );
    assert!(tools["result"].get("resultType").is_none(), "{tools}");
    assert!(list.headers.get("mcp-session-id").is_none());

    let call = rpc(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let echoed = send(&srv, &legacy(&call, Some(&session))).await.json();
    assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
    assert!(echoed["result"].get("resultType").is_none());

    // A JSON-RPC error of a legacy request is answered with 200, as that era does.
    let unknown = rpc(3, "tools/call", json!({"name": "nope", "arguments": {}}));
    let reply = send(&srv, &legacy(&unknown, Some(&session))).await;
    reply.error(StatusCode::OK, -32602, Some(json!(3)));
    let ping = send(&srv, &legacy(&rpc(4, "ping", json!({})), Some(&session))).await;
    assert_eq!(ping.json()["result"], json!({}));

    // A modern request naming the session is served statelessly, as if the header were absent.
    let modern = Client::h1(srv.addr)
        .await
        .send(&Post::tool(5, "echo", json!({"text": "modern"})).header("Mcp-Session-Id", &session))
        .await;
    assert_eq!(modern.result(json!(5))["resultType"], "complete");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_required_checked_and_ended() {
    let srv = TestServer::start().await;
    let list = rpc(1, "tools/list", json!({}));
    // No session: the modern refusal of a request without `_meta` (400, -32602, the id echoed).
    send(&srv, &legacy(&list, None))
        .await
        .error(StatusCode::BAD_REQUEST, -32602, Some(json!(1)));
    // An unknown session is 404; a malformed one 400.
    send(
        &srv,
        &legacy(&list, Some("0123456789abcdef0123456789abcdef")),
    )
    .await
    .refused(StatusCode::NOT_FOUND);
    let bad = legacy(&list, None).header("Mcp-Session-Id", "has space");
    send(&srv, &bad).await.refused(StatusCode::BAD_REQUEST);
    // `ping` needs no session.
    let ping = send(&srv, &legacy(&rpc(2, "ping", json!({})), None)).await;
    assert_eq!(ping.json()["result"], json!({}));

    let session = open_session(&srv, json!({})).await;
    // A session id from another server (or one that ended) is unknown here.
    let other = TestServer::start().await;
    let elsewhere = open_session(&other, json!({})).await;
    send(&srv, &legacy(&list, Some(&elsewhere)))
        .await
        .refused(StatusCode::NOT_FOUND);
    // An unsupported version header is refused.
    let wrong = legacy(&list, Some(&session)).header("MCP-Protocol-Version", "2024-01-01");
    send(&srv, &wrong).await.refused(StatusCode::BAD_REQUEST);

    let delete = Post::bare("")
        .method(Method::DELETE)
        .without("content-type")
        .header("Mcp-Session-Id", &session);
    assert_eq!(send(&srv, &delete).await.status, StatusCode::OK);
    send(&srv, &legacy(&list, Some(&session)))
        .await
        .refused(StatusCode::NOT_FOUND);
    send(&srv, &delete).await.refused(StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_starts_a_session_whatever_version_its_header_names() {
    // A dual-era host that spoke 2026-07-28 here before (or offers it) may still send that header
    // with its handshake; so may one that remembers an older session's version.
    for (mode, header) in [
        (LegacyMode::Sessions, "2026-07-28"),
        (LegacyMode::Sessions, "2025-06-18"),
        (LegacyMode::Stateless, "2026-07-28"),
    ] {
        let config = {
            let mut edited = test_config();
            edited.legacy = mode;
            edited
        };
        let srv = TestServer::start_with(full_server, config).await;
        let mut offer = initialize(json!({}));
        offer["params"]["protocolVersion"] = json!("2026-07-28");
        let post = legacy(&offer, None).header("MCP-Protocol-Version", header);
        let reply = send(&srv, &post).await;
        assert_eq!(reply.status, StatusCode::OK, "{mode:?} {header}");
        assert_eq!(reply.json()["result"]["protocolVersion"], LEGACY);
        assert_eq!(
            reply.headers.contains_key("mcp-session-id"),
            mode == LegacyMode::Sessions,
            "{mode:?} {header}"
        );
    }
    // Any other request naming the modern version without its envelope is still refused.
    let srv = TestServer::start().await;
    let list =
        legacy(&rpc(1, "tools/list", json!({})), None).header("MCP-Protocol-Version", "2026-07-28");
    send(&srv, &list)
        .await
        .error(StatusCode::BAD_REQUEST, -32602, Some(json!(1)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_get_stream_carries_list_changes_and_subscribed_updates() {
    let srv = TestServer::start().await;
    let session = open_session(&srv, json!({})).await;
    let get = Post::bare("")
        .method(Method::GET)
        .without("content-type")
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &session);
    let mut client = Client::h1(srv.addr).await;
    let mut stream = SseStream::new(client.open_any(&get).await);

    let subscribe = rpc(1, "resources/subscribe", json!({"uri": UNICODE_URI}));
    let reply = send(&srv, &legacy(&subscribe, Some(&session))).await;
    assert_eq!(reply.json()["result"], json!({}));
    // Give the stream a moment to be listening before the events are sent.
    tokio::time::sleep(Duration::from_millis(100)).await;
    srv.server.notify_resource_updated("test://not-subscribed");
    srv.server.notify_resource_updated(UNICODE_URI);
    let update = stream.next().await.expect("an update");
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    assert_eq!(update["params"]["uri"], UNICODE_URI);
    srv.server.remove_tool("echo");
    let changed = stream.next().await.expect("a list change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");

    // Ending the session ends its stream.
    let delete = Post::bare("")
        .method(Method::DELETE)
        .without("content-type")
        .header("Mcp-Session-Id", &session);
    assert_eq!(send(&srv, &delete).await.status, StatusCode::OK);
    assert!(stream.next().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_and_answers_naming_an_unusable_session_are_refused_as_requests_are() {
    let srv = TestServer::start().await;
    let session = open_session(&srv, json!({})).await;
    let delete = Post::bare("")
        .method(Method::DELETE)
        .without("content-type")
        .header("Mcp-Session-Id", &session);
    assert_eq!(send(&srv, &delete).await.status, StatusCode::OK);

    // spec 2025-11-25 streamable-http: a message naming an ended session is answered 404, so its
    // host starts again with initialize; a malformed id is 400.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = json!({"jsonrpc": "2.0", "id": "s1", "result": {}});
    for body in [&note, &answer] {
        send(&srv, &legacy(body, Some(&session)))
            .await
            .refused(StatusCode::NOT_FOUND);
        let bad = legacy(body, None).header("Mcp-Session-Id", "has space");
        send(&srv, &bad).await.refused(StatusCode::BAD_REQUEST);
    }
    // Without a session header, or from a modern client, a notification concerns no session.
    assert_eq!(
        send(&srv, &legacy(&note, None)).await.status,
        StatusCode::ACCEPTED
    );
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    let modern = legacy(&cancel, None)
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2026-07-28");
    assert_eq!(send(&srv, &modern).await.status, StatusCode::ACCEPTED);
}

/// Nothing arrives on `stream` for a while.
async fn quiet(stream: &mut SseStream) -> bool {
    tokio::time::timeout(Duration::from_millis(300), stream.next())
        .await
        .is_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_notification_goes_out_on_one_of_the_sessions_streams() {
    // spec 2025-11-25 streamable-http: a client may keep several GET streams open (hosts open a
    // second one a few seconds after the first); each message goes out on only one of them.
    let srv = TestServer::start().await;
    let session = open_session(&srv, json!({})).await;
    let get = Post::bare("")
        .method(Method::GET)
        .without("content-type")
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", &session);
    let mut first_client = Client::h1(srv.addr).await;
    let mut first = SseStream::new(first_client.open_any(&get).await);
    let mut second_client = Client::h1(srv.addr).await;
    let mut second = SseStream::new(second_client.open_any(&get).await);
    tokio::time::sleep(Duration::from_millis(100)).await;

    let subscribe = rpc(1, "resources/subscribe", json!({"uri": UNICODE_URI}));
    let reply = send(&srv, &legacy(&subscribe, Some(&session))).await;
    assert_eq!(reply.json()["result"], json!({}));

    // The newest stream carries it, and only that one.
    srv.server.notify_resource_updated(UNICODE_URI);
    let update = second.next().await.expect("an update");
    assert_eq!(update["method"], "notifications/resources/updated");
    assert!(quiet(&mut first).await, "the same message went out twice");

    // Once it closes, the one left takes over (as soon as the server has seen it close).
    drop(second);
    drop(second_client);
    let mut attempts = 0;
    let update = loop {
        srv.server.notify_resource_updated(UNICODE_URI);
        if let Ok(update) = tokio::time::timeout(Duration::from_millis(200), first.next()).await {
            break update.expect("an update");
        }
        attempts += 1;
        assert!(attempts < 50, "the remaining stream never took over");
    };
    assert_eq!(update["params"]["uri"], UNICODE_URI);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_request_goes_out_on_the_post_stream_and_the_answer_resumes_the_handler() {
    let srv = TestServer::start().await;
    let session = open_session(&srv, json!({"sampling": {}})).await;
    let call = rpc(7, "tools/call", json!({"name": "sample", "arguments": {}}));
    let mut client = Client::h1(srv.addr).await;
    let mut stream = SseStream::new(client.open_any(&legacy(&call, Some(&session))).await);
    let asked = stream.next().await.expect("the server's request");
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    assert_eq!(
        asked["params"]["messages"][0]["content"]["text"],
        "Say hello"
    );

    // An answer for nothing asked, or from another session, is refused.
    let stray = json!({"jsonrpc": "2.0", "id": "s-nothing-1", "result": {}});
    send(&srv, &legacy(&stray, Some(&session)))
        .await
        .refused(StatusCode::BAD_REQUEST);
    let other = open_session(&srv, json!({"sampling": {}})).await;
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"
    }});
    send(&srv, &legacy(&answer, Some(&other)))
        .await
        .refused(StatusCode::BAD_REQUEST);

    let accepted = send(&srv, &legacy(&answer, Some(&session))).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED);
    let done = stream.next().await.expect("the final response");
    assert_eq!(done["id"], 7, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("hello"), "{done}");
    assert!(done["result"].get("resultType").is_none());
    stream.expect_end().await;
    assert_eq!(srv.server.outbound_waiting(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_request_cancelled_midway_is_cancelled_on_the_client() {
    let srv = TestServer::start().await;
    let session = open_session(&srv, json!({"sampling": {}})).await;
    let call = rpc(8, "tools/call", json!({"name": "sample", "arguments": {}}));
    let mut client = Client::h1(srv.addr).await;
    let mut stream = SseStream::new(client.open_any(&legacy(&call, Some(&session))).await);
    let asked = stream.next().await.expect("the server's request");
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}});
    assert_eq!(
        send(&srv, &legacy(&cancel, Some(&session))).await.status,
        StatusCode::ACCEPTED
    );
    let note = stream.next().await.expect("the server cancels its request");
    assert_eq!(note["method"], "notifications/cancelled", "{note}");
    assert_eq!(note["params"]["requestId"], asked["id"]);
    within("the pending request forgotten", async {
        while srv.server.outbound_waiting() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

fn stateless_config() -> HttpConfig {
    {
        let mut edited = test_config();
        edited.legacy = LegacyMode::Stateless;
        edited
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stateless_mode_mints_no_session_and_serves_each_request_alone() {
    let srv = TestServer::start_with(full_server, stateless_config()).await;
    let mut client = Client::h1(srv.addr).await;
    let init = client.send_any(&legacy(&initialize(json!({})), None)).await;
    assert_eq!(init.json()["result"]["protocolVersion"], LEGACY);
    assert!(init.headers.get("mcp-session-id").is_none());
    let call = rpc(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "alone"}}),
    );
    let echoed = send(
        &srv,
        &legacy(&call, None).header("MCP-Protocol-Version", LEGACY),
    )
    .await;
    assert_eq!(echoed.json()["result"]["content"][0]["text"], "alone");
    // Input requests still work, inside the POST's stream.
    let sample = rpc(2, "tools/call", json!({"name": "sample", "arguments": {}}));
    let mut stream = SseStream::new(client.open_any(&legacy(&sample, None)).await);
    let asked = stream.next().await.expect("the server's request");
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "hi there"}, "model": "m"
    }});
    assert_eq!(
        send(&srv, &legacy(&answer, None)).await.status,
        StatusCode::ACCEPTED
    );
    let done = stream.next().await.expect("the final response");
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hi there")
    );
    // No sessions: GET and DELETE are 405 even with a session header.
    let get = Post::bare("")
        .method(Method::GET)
        .without("content-type")
        .header("Mcp-Session-Id", "0123");
    send(&srv, &get)
        .await
        .refused(StatusCode::METHOD_NOT_ALLOWED);
}

fn bounded_config() -> HttpConfig {
    {
        let mut edited = test_config();
        edited.max_sessions = 3;
        edited.session_idle = Duration::from_millis(300);
        edited
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_bounded_in_number_and_idle_time() {
    let srv = TestServer::start_with(full_server, bounded_config()).await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(open_session(&srv, json!({})).await);
    }
    let full = send(&srv, &legacy(&initialize(json!({})), None)).await;
    full.refused(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(full.headers["retry-after"], "5");
    // Idle sessions end; then there is room again, and the old ids are unknown.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let fresh = open_session(&srv, json!({})).await;
    let list = rpc(1, "tools/list", json!({}));
    send(&srv, &legacy(&list, Some(&sessions[0])))
        .await
        .refused(StatusCode::NOT_FOUND);
    let ok = send(&srv, &legacy(&list, Some(&fresh))).await;
    assert_eq!(ok.status, StatusCode::OK);
}

/// A GET of the session's stream, resuming after `last_event_id` when given.
fn session_get(session: &str, last_event_id: Option<&str>) -> Post {
    let get = Post::bare("")
        .method(Method::GET)
        .without("content-type")
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", session);
    match last_event_id {
        Some(id) => get.header("Last-Event-ID", id),
        None => get,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_get_stream_resumes_after_the_last_event_it_received() {
    // spec 2025-11-25 streamable-http ("Resumability and Redelivery"): event ids are unique across
    // the session's streams; a client reconnecting with Last-Event-ID gets what the broken stream
    // was sent after that event, and what happened while no stream was open, once each.
    let srv = TestServer::start().await;
    let session = open_session(&srv, json!({})).await;
    let subscribe = rpc(1, "resources/subscribe", json!({"uri": UNICODE_URI}));
    let reply = send(&srv, &legacy(&subscribe, Some(&session))).await;
    assert_eq!(reply.json()["result"], json!({}));

    let mut client = Client::h1(srv.addr).await;
    let mut stream = SseStream::new(client.open_any(&session_get(&session, None)).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    srv.server.notify_resource_updated(UNICODE_URI);
    stream.next().await.expect("the first update");
    let first = stream.last_event_id();
    assert!(
        first.parse::<u64>().is_ok(),
        "a numeric event id: {first:?}"
    );
    srv.server.notify_resource_updated(UNICODE_URI);
    stream.next().await.expect("the second update");
    let second = stream.last_event_id();
    assert_ne!(first, second, "each event has an id of its own");
    // The connection breaks; the client had processed only the first event. Meanwhile a tool goes.
    drop(stream);
    drop(client);
    tokio::time::sleep(Duration::from_millis(100)).await;
    srv.server.remove_tool("echo");
    tokio::time::sleep(Duration::from_millis(100)).await;

    let mut client = Client::h1(srv.addr).await;
    let mut stream = SseStream::new(client.open_any(&session_get(&session, Some(&first))).await);
    let replayed = stream.next().await.expect("the replayed update");
    assert_eq!(replayed["method"], "notifications/resources/updated");
    assert_eq!(stream.last_event_id(), second, "replayed with its own id");
    let missed = stream
        .next()
        .await
        .expect("what happened while disconnected");
    assert_eq!(missed["method"], "notifications/tools/list_changed");
    let last = stream.last_event_id();
    assert!(quiet(&mut stream).await, "something was sent twice");
    drop(stream);
    drop(client);

    // Resuming after the newest event replays nothing; the stream goes on with what comes next.
    let mut client = Client::h1(srv.addr).await;
    let mut stream = SseStream::new(client.open_any(&session_get(&session, Some(&last))).await);
    assert!(quiet(&mut stream).await, "nothing was missed");
    srv.server.notify_resource_updated(UNICODE_URI);
    stream.next().await.expect("a new update");
    assert!(stream.last_event_id().parse::<u64>().unwrap() > last.parse::<u64>().unwrap());

    // An id the server never wrote is ignored, as if the header were absent.
    let mut other = Client::h1(srv.addr).await;
    let mut ignored = SseStream::new(
        other
            .open_any(&session_get(&session, Some("not-an-id")))
            .await,
    );
    assert!(quiet(&mut ignored).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumption_never_replays_what_another_stream_carried_and_resyncs_when_too_old() {
    let srv = TestServer::start().await;
    let session = open_session(&srv, json!({})).await;
    let subscribe = rpc(1, "resources/subscribe", json!({"uri": UNICODE_URI}));
    send(&srv, &legacy(&subscribe, Some(&session))).await;

    let mut first_client = Client::h1(srv.addr).await;
    let mut first = SseStream::new(first_client.open_any(&session_get(&session, None)).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    srv.server.notify_resource_updated(UNICODE_URI);
    first.next().await.expect("an update on the first stream");
    let on_first = first.last_event_id();

    // A second stream takes over; what it carries belongs to it alone.
    let mut second_client = Client::h1(srv.addr).await;
    let mut second = SseStream::new(second_client.open_any(&session_get(&session, None)).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    srv.server.notify_resource_updated(UNICODE_URI);
    second.next().await.expect("an update on the second stream");
    drop((first, first_client));
    let mut again_client = Client::h1(srv.addr).await;
    let mut again = SseStream::new(
        again_client
            .open_any(&session_get(&session, Some(&on_first)))
            .await,
    );
    assert!(
        quiet(&mut again).await,
        "replayed an event another stream carried"
    );
    drop((again, again_client, second, second_client));

    // Many events later the first id is forgotten: the client is told to re-list instead. (A new
    // stream carries them: the server may not have seen the others close yet.)
    let mut third_client = Client::h1(srv.addr).await;
    let mut third = SseStream::new(third_client.open_any(&session_get(&session, None)).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..80 {
        srv.server.notify_resource_updated(UNICODE_URI);
        third.next().await.expect("an update");
    }
    drop((third, third_client));
    let mut late_client = Client::h1(srv.addr).await;
    let mut late = SseStream::new(
        late_client
            .open_any(&session_get(&session, Some(&on_first)))
            .await,
    );
    let mut methods = Vec::new();
    while let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(300), late.next()).await {
        methods.push(m["method"].as_str().unwrap_or_default().to_owned());
    }
    assert!(
        methods.contains(&"notifications/resources/list_changed".to_owned())
            && methods.contains(&"notifications/tools/list_changed".to_owned()),
        "{methods:?}"
    );
}
