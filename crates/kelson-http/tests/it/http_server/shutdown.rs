//! `serve(..).with_graceful_shutdown(..)`: stop accepting, end listen streams with their final result, let every
//! request in flight finish with its real result, close idle connections.

use std::io::ErrorKind;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::fixture::full_server;
use super::harness::{
    Client, Post, Reply, SseStream, TestServer, meta, raw_request, test_listener, tool_text, within,
};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A `slow` call that waits at its first step until the probe event `release` is recorded.
fn gated(id: i64, tag: &str) -> Post {
    Post::tool(
        id,
        "slow",
        json!({"tag": tag, "steps": 3, "stepMs": 1, "gate": "release"}),
    )
}

fn gated_streamed(id: i64, tag: &str) -> Post {
    Post::tool_with_meta(
        id,
        "slow",
        json!({"tag": tag, "steps": 3, "stepMs": 1, "gate": "release"}),
        json!({"progressToken": tag}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_loses_no_request() {
    let mut srv = TestServer::start().await;
    let addr = srv.addr;

    // Two listen streams, over HTTP/1.1 and HTTP/2, with integer and string ids.
    let mut listens = Vec::new();
    for (id, h2) in [(json!(424_242), false), (json!("listen-h2"), true)] {
        let mut client = if h2 {
            Client::h2(addr).await
        } else {
            Client::h1(addr).await
        };
        let post = Post::call(
            id.clone(),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        );
        let mut stream = SseStream::new(client.open(&post).await);
        let ack = stream.next().await.expect("an acknowledgement");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        listens.push((id, client, stream));
    }

    // An idle keep-alive connection, which shutdown closes.
    let mut idle = Client::h1(addr).await;
    idle.send(&Post::call(1, "tools/list", json!({})))
        .await
        .result(json!(1));

    // Requests in flight: plain and streamed, HTTP/1.1 and HTTP/2. Each waits at a gate until the
    // shutdown is well under way, so they are certainly in flight across it.
    let mut plain = Vec::new();
    for (i, h2) in [(10, false), (11, false), (12, false), (13, true)] {
        let tag = format!("plain-{i}");
        let post = gated(i, &tag);
        plain.push((
            i,
            tag,
            tokio::spawn(async move {
                let mut client = if h2 {
                    Client::h2(addr).await
                } else {
                    Client::h1(addr).await
                };
                client.send(&post).await
            }),
        ));
    }
    let mut streamed = Vec::new();
    for (i, h2) in [(20, false), (21, false), (22, true)] {
        let tag = format!("sse-{i}");
        let post = gated_streamed(i, &tag);
        streamed.push((
            i,
            tag,
            tokio::spawn(async move {
                let mut client = if h2 {
                    Client::h2(addr).await
                } else {
                    Client::h1(addr).await
                };
                let mut stream = SseStream::new(client.open(&post).await);
                let mut messages: Vec<Value> = Vec::new();
                while let Some(m) = stream.next().await {
                    messages.push(m);
                }
                assert!(stream.error.is_none(), "{:?}", stream.error);
                messages
            }),
        ));
    }
    let tags: Vec<String> = plain
        .iter()
        .map(|(_, tag, _)| tag.clone())
        .chain(streamed.iter().map(|(_, tag, _)| tag.clone()))
        .collect();
    for tag in &tags {
        srv.probes.wait_for(&format!("started:{tag}")).await;
    }

    srv.trigger_shutdown();

    // Every listen stream ends with the listen request's result, then closes.
    for (id, _client, stream) in &mut listens {
        let last = stream.next().await.expect("the final result");
        assert_eq!(&last["id"], id, "{last}");
        assert_eq!(last["result"]["resultType"], "complete", "{last}");
        assert_eq!(&last["result"]["_meta"][SUBSCRIPTION_ID], id, "{last}");
        stream.expect_end().await;
    }

    // The listener is closed before listen streams are ended, so new connections are refused.
    let refused = TcpStream::connect(addr)
        .await
        .expect_err("no new connection after shutdown");
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused, "{refused}");

    // The idle connection is closed; the requests in flight are still waiting at the gate.
    idle.wait_closed().await;
    let finished = |tag: &String| srv.probes.saw(&format!("finished:{tag}"));
    assert!(
        !tags.iter().any(finished),
        "a request ended before it was released"
    );
    for (_, tag, task) in &plain {
        assert!(
            !task.is_finished(),
            "{tag} was answered before it was released"
        );
    }
    for (_, tag, task) in &streamed {
        assert!(
            !task.is_finished(),
            "{tag} was answered before it was released"
        );
    }

    srv.probes.record("release");
    for (i, tag, task) in plain {
        let reply: Reply = task.await.expect("the client task");
        assert_eq!(reply.tool_text(json!(i)), format!("slow {tag} done"));
    }
    for (i, tag, task) in streamed {
        let messages = task.await.expect("the client task");
        assert_eq!(messages.len(), 4, "{messages:?}");
        let last = &messages[3];
        assert_eq!(last["id"], i);
        assert_eq!(tool_text(&last["result"]), format!("slow {tag} done"));
    }

    srv.join().await.expect("serving ends cleanly");
    TcpStream::connect(addr)
        .await
        .expect_err("still no new connection");
}

/// A request still running when the drain time is over is cut off: its connection is closed and
/// its handler cancelled, instead of being left to run on after the served future returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_drain_time_are_cut_off() {
    let config = {
        let mut edited = test_listener();
        edited.drain = Duration::from_millis(200);
        edited
    };
    let mut srv = TestServer::start_with(full_server, config).await;

    // A plain call over raw TCP, and a streamed one, both held at a gate that never opens.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "slow", "_meta": meta(),
                                 "arguments": {"tag": "stuck", "steps": 2, "stepMs": 1,
                                               "gate": "never"}}})
    .to_string();
    let mut tcp = TcpStream::connect(srv.addr).await.unwrap();
    let headers: &[&str] = &[
        "MCP-Protocol-Version: 2026-07-28",
        "Mcp-Method: tools/call",
        "Mcp-Name: slow",
    ];
    tcp.write_all(&raw_request(&srv.authority(), headers, &body))
        .await
        .unwrap();
    let mut client = Client::h1(srv.addr).await;
    let post = Post::tool_with_meta(
        2,
        "slow",
        json!({"tag": "stuck-sse", "steps": 2, "stepMs": 1, "gate": "never"}),
        json!({"progressToken": 2}),
    );
    let mut stream = SseStream::new(client.open(&post).await);
    assert_eq!(
        stream.next().await.expect("the first progress")["method"],
        "notifications/progress"
    );
    srv.probes.wait_for("started:stuck").await;

    srv.trigger_shutdown();
    srv.join().await.expect("serving ends after the drain time");

    // Both connections are closed without a response, and both handlers are stopped.
    let mut rest = Vec::new();
    within(
        "the server closing the connection",
        tcp.read_to_end(&mut rest),
    )
    .await
    .expect("read to the end");
    assert_eq!(String::from_utf8_lossy(&rest), "", "no response");
    assert_eq!(stream.next().await, None);
    assert!(stream.error.is_some(), "the stream is cut, not ended");
    client.wait_closed().await;
    for tag in ["stuck", "stuck-sse"] {
        srv.probes.wait_for(&format!("cancelled:{tag}")).await;
        srv.probes.wait_for(&format!("stopped:{tag}")).await;
        assert!(!srv.probes.saw(&format!("finished:{tag}")));
    }
}

/// A connection that never says anything is closed after the configured time, and one that speaks
/// in time is served as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_is_closed_after_the_first_bytes_timeout() {
    let config = {
        let mut edited = test_listener();
        edited.first_bytes_timeout = Duration::from_millis(200);
        edited
    };
    let srv = TestServer::start_with(full_server, config).await;
    let mut silent = TcpStream::connect(srv.addr).await.unwrap();
    let mut rest = Vec::new();
    within(
        "the server closing the silent connection",
        silent.read_to_end(&mut rest),
    )
    .await
    .expect("read to the end");
    assert!(rest.is_empty(), "nothing is sent to a silent connection");

    let mut client = Client::h1(srv.addr).await;
    let post = Post::tool_with_meta(1, "echo", json!({"text": "in time"}), json!({}));
    let response = client.open(&post).await;
    assert_eq!(response.status(), 200);
}
