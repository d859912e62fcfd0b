//! spec 2026-07-28 basic/patterns/cancellation: over Streamable HTTP, a client cancels by closing
//! the request's SSE stream or the connection; the server MUST treat that as cancellation, SHOULD
//! stop promptly, and MUST NOT send anything further for the request.
//!
//! The `slow` tool records `cancelled:TAG` when its context's `cancelled()` fires, and `stopped:TAG`
//! when the handler ends, by returning or by being dropped. Every test waits for both with a
//! generous bound instead of sleeping, and checks that the handler never ran to its end.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::harness::{Client, Post, SseStream, TestServer, meta, meta_with, raw_request, within};

/// How promptly a handler must see its cancellation.
const PROMPTLY: Duration = Duration::from_secs(10);

/// Waits until the handler of `tag` has seen its cancellation and stopped working.
async fn assert_cancelled(srv: &TestServer, tag: &str) {
    srv.probes
        .wait_for_within(&format!("cancelled:{tag}"), PROMPTLY)
        .await;
    srv.probes
        .wait_for_within(&format!("stopped:{tag}"), PROMPTLY)
        .await;
    assert!(!srv.probes.saw(&format!("finished:{tag}")));
}

/// Long enough never to finish during a test: 1000 steps of 100 ms.
fn endless(tag: &str) -> Value {
    json!({"tag": tag, "steps": 1000, "stepMs": 100})
}

fn streamed_call(id: i64, tag: &str) -> Post {
    Post::tool_with_meta(id, "slow", endless(tag), json!({"progressToken": tag}))
}

/// The client reads the first progress notification of a slow call, then closes the stream. Over
/// HTTP/1.1 that closes the connection; over HTTP/2 it resets the stream only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_sse_stream_cancels_the_handler() {
    let srv = TestServer::start().await;
    for (tag, h2) in [("sse-h1", false), ("sse-h2", true)] {
        let mut client = if h2 {
            Client::h2(srv.addr).await
        } else {
            Client::h1(srv.addr).await
        };
        let mut stream = SseStream::new(client.open(&streamed_call(1, tag)).await);
        let first = stream.next().await.expect("a progress notification");
        assert_eq!(first["method"], "notifications/progress", "{first}");
        assert!(!srv.probes.saw(&format!("cancelled:{tag}")));

        drop(stream);
        assert_cancelled(&srv, tag).await;

        if h2 {
            // The connection outlives the reset stream.
            let reply = client
                .send(&Post::tool(2, "echo", json!({"text": "still here"})))
                .await;
            assert_eq!(reply.tool_text(json!(2)), "still here");
        } else {
            client.wait_closed().await;
        }
    }
}

/// A plain JSON call (no progress token, so no stream) whose client goes away: the whole TCP
/// connection closed mid-call (HTTP/1.1), or the HTTP/2 stream reset before any response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_a_plain_call_cancels_the_handler() {
    let srv = TestServer::start().await;

    // HTTP/1.1 over raw TCP: the request is written whole, then the socket is closed.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "slow", "arguments": endless("tcp"), "_meta": meta()}})
    .to_string();
    let mut tcp = TcpStream::connect(srv.addr).await.unwrap();
    let request = raw_request(
        &srv.authority(),
        &[
            "MCP-Protocol-Version: 2026-07-28",
            "Mcp-Method: tools/call",
            "Mcp-Name: slow",
        ],
        &body,
    );
    // Keep-alive, so that only the close ends the exchange.
    let request = String::from_utf8(request)
        .unwrap()
        .replace("Connection: close\r\n", "");
    tcp.write_all(request.as_bytes()).await.unwrap();
    srv.probes.wait_for("started:tcp").await;
    drop(tcp);
    assert_cancelled(&srv, "tcp").await;

    // HTTP/2: the response future is dropped once the handler runs, which resets the stream.
    let mut client = Client::h2(srv.addr).await;
    let post = Post::tool(2, "slow", endless("h2-plain"));
    tokio::select! {
        reply = client.open(&post) => panic!("answered before being cancelled: {reply:?}"),
        () = srv.probes.wait_for("started:h2-plain") => {}
    }
    assert_cancelled(&srv, "h2-plain").await;
    let reply = client
        .send(&Post::tool(3, "echo", json!({"text": "ok"})))
        .await;
    assert_eq!(reply.tool_text(json!(3)), "ok");
}

/// Reads whatever the server still sends until it closes the connection.
async fn rest_of(tcp: &mut TcpStream) -> String {
    let mut rest = Vec::new();
    within(
        "the server closing the connection",
        tcp.read_to_end(&mut rest),
    )
    .await
    .expect("read to the end");
    String::from_utf8_lossy(&rest).into_owned()
}

/// Nothing further is sent for a cancelled request. A client that shuts down its sending side
/// can still read, so this is where "nothing more" is observable: the server treats the
/// end of the request stream mid-exchange as the client leaving, cancels the handler, and closes
/// without a response, on both the plain JSON and the SSE path. (The handler tries to report
/// progress and returns a result after it sees the cancellation; neither may appear.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_sent_after_cancellation() {
    let srv = TestServer::start().await;
    let headers: &[&str] = &[
        "MCP-Protocol-Version: 2026-07-28",
        "Mcp-Method: tools/call",
        "Mcp-Name: slow",
    ];

    // Plain JSON: not even a response head has been sent.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "slow", "arguments": endless("half-plain"), "_meta": meta()}})
    .to_string();
    let mut tcp = TcpStream::connect(srv.addr).await.unwrap();
    tcp.write_all(&raw_request(&srv.authority(), headers, &body))
        .await
        .unwrap();
    srv.probes.wait_for("started:half-plain").await;
    tcp.shutdown().await.unwrap();
    assert_cancelled(&srv, "half-plain").await;
    let rest = rest_of(&mut tcp).await;
    assert_eq!(rest, "", "sent after cancellation");

    // SSE: the head and the first progress notification have been sent; nothing else may follow.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "slow", "arguments": endless("half-sse"),
                                 "_meta": meta_with(json!({"progressToken": "half"}))}})
    .to_string();
    let mut tcp = TcpStream::connect(srv.addr).await.unwrap();
    tcp.write_all(&raw_request(&srv.authority(), headers, &body))
        .await
        .unwrap();
    let mut seen = Vec::new();
    within("the first progress notification", async {
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("step 1") {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "the server closed early");
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    let head = String::from_utf8_lossy(&seen).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    tcp.shutdown().await.unwrap();
    assert_cancelled(&srv, "half-sse").await;
    let rest = rest_of(&mut tcp).await;
    for forbidden in [
        "\"result\"",
        "\"error\"",
        "after-cancel",
        "late half-sse",
        "\"id\"",
    ] {
        assert!(
            !rest.contains(forbidden),
            "{forbidden} sent after cancellation: {rest:?}"
        );
    }
}

/// This process's resident memory, in KiB (Linux).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Opens a streamed call of the slow tool, reads its first progress notification, and drops the
/// connection: a client that leaves mid-SSE.
async fn leave_mid_sse(srv: &TestServer, id: u64, tag: &str) {
    let headers: &[&str] = &[
        "MCP-Protocol-Version: 2026-07-28",
        "Mcp-Method: tools/call",
        "Mcp-Name: slow",
    ];
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": "slow", "arguments": endless(tag),
                                 "_meta": meta_with(json!({"progressToken": id}))}})
    .to_string();
    let mut tcp = TcpStream::connect(srv.addr).await.unwrap();
    tcp.write_all(&raw_request(&srv.authority(), headers, &body))
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("notifications/progress") {
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(n > 0, "the server closed early");
        seen.extend_from_slice(&buf[..n]);
    }
    drop(tcp);
}

/// Ten thousand clients that leave in the middle of an SSE response: each handler sees its
/// cancellation promptly (the median within 100 ms), and afterwards the server holds no task and
/// no memory more than before them: every request's task, stream and buffers were freed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_clients_leaving_mid_sse_leave_nothing_behind() {
    let srv = std::sync::Arc::new(TestServer::start().await);
    // How fast a handler learns of it, one client at a time.
    let mut delays = Vec::new();
    for i in 0..21 {
        let tag = format!("prompt-{i}");
        leave_mid_sse(&srv, i, &tag).await;
        let left = std::time::Instant::now();
        srv.probes
            .wait_for_within(&format!("cancelled:{tag}"), PROMPTLY)
            .await;
        delays.push(left.elapsed());
    }
    delays.sort();
    assert!(
        delays[delays.len() / 2] <= Duration::from_millis(100),
        "median {:?} of {delays:?}",
        delays[delays.len() / 2]
    );

    // Warm up, then measure what is alive: tasks of this runtime (the server's among them) and
    // the memory of the process.
    let churn = |from: u64, count: u64| {
        let srv = srv.clone();
        async move {
            let workers = 16;
            let mut all = Vec::new();
            for w in 0..workers {
                let srv = srv.clone();
                all.push(tokio::spawn(async move {
                    let mut id = from + w;
                    while id < from + count {
                        leave_mid_sse(&srv, id, "churn").await;
                        id += workers;
                    }
                }));
            }
            for task in all {
                task.await.unwrap();
            }
        }
    };
    let settle = |baseline: usize| async move {
        // The handlers stop within their step time (100 ms) once cancelled.
        for _ in 0..200 {
            if tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks()
                <= baseline
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    churn(1_000, 500).await;
    let tasks_before = settle(usize::MAX).await;
    let tasks_before = settle(tasks_before).await;
    let rss_before = rss_kib();
    churn(10_000, 10_000).await;
    let tasks_after = settle(tasks_before).await;
    let rss_after = rss_kib();
    assert!(
        tasks_after <= tasks_before,
        "{tasks_after} tasks alive after the churn, {tasks_before} before"
    );
    // The test's own record of events grows by about 10,000 entries (about 1 MiB); anything
    // kept per request by the server would be several times that.
    assert!(
        rss_after <= rss_before + 6 * 1024,
        "RSS grew from {rss_before} KiB to {rss_after} KiB"
    );
}
