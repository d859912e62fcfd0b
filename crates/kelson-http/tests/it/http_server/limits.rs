//! The limits on connections: the idle timeout on both protocols (and not while a stream is
//! open; also for an HTTP/2 client that answers nothing), the cap on open connections and the cap
//! per client address, the write timeout for clients that stop reading, the memory of large
//! responses, HTTP/2's concurrent streams, and the size of a request's header section on both
//! protocols.

use std::time::Duration;

use http::StatusCode;
use kelson_http::server::ListenerConfig;
use serde_json::json;
use tokio::io::AsyncReadExt as _;
use tokio::net::TcpStream;

use super::fixture::full_server;
use super::harness::{
    Client, Post, Settings, SseStream, TestServer, test_config, test_listener, within,
};

fn echo(id: i64, text: &str) -> Post {
    Post::tool(id, "echo", json!({"text": text}))
}

fn config(change: impl FnOnce(&mut ListenerConfig)) -> ListenerConfig {
    let mut config = test_listener();
    change(&mut config);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_of_both_protocols_are_closed_after_the_idle_timeout() {
    let idle = Duration::from_millis(300);
    let srv = TestServer::start_with(full_server, config(|c| c.idle_timeout = idle)).await;
    for h2 in [false, true] {
        let mut client = if h2 {
            Client::h2(srv.addr).await
        } else {
            Client::h1(srv.addr).await
        };
        // Requests that keep coming keep the connection.
        for id in 0..4 {
            tokio::time::sleep(idle / 2).await;
            client.send(&echo(id, "hi")).await.tool_text(json!(id));
        }
        let quiet = tokio::time::Instant::now();
        client.wait_closed().await;
        assert!(quiet.elapsed() >= idle * 3 / 4, "h2: {h2}");
    }
    // An HTTP/2 connection that never opened a stream is idle from its preface on.
    let mut silent = Client::h2(srv.addr).await;
    silent.wait_closed().await;
}

/// The frame types in `wire`, a run of HTTP/2 frames (RFC 9113 §4.1), as far as they are whole.
fn frame_types(wire: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    let mut rest = wire;
    while rest.len() >= 9 {
        let len = usize::from(rest[0]) << 16 | usize::from(rest[1]) << 8 | usize::from(rest[2]);
        if rest.len() < 9 + len {
            break;
        }
        types.push(rest[3]);
        rest = &rest[9 + len..];
    }
    types
}

/// An HTTP/2 client that sends its preface and then nothing, reading what the server sends but
/// never answering it (not the PING that follows GOAWAY), is closed soon after the idle timeout.
/// Before, hyper waited for the PING's answer after the idle GOAWAY, and such a client kept its
/// connection forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_h2_client_that_never_answers_is_closed() {
    use tokio::io::AsyncWriteExt as _;
    let idle = Duration::from_millis(300);
    let srv = TestServer::start_with(full_server, config(|c| c.idle_timeout = idle)).await;
    let mut conn = TcpStream::connect(srv.addr).await.expect("connect");
    conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .expect("the preface");
    // An empty SETTINGS frame, never followed by the acknowledgement of the server's.
    conn.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0])
        .await
        .expect("SETTINGS");
    let started = tokio::time::Instant::now();
    let mut wire = Vec::new();
    let read_to_end = async {
        let mut buf = [0u8; 1024];
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => wire.extend_from_slice(&buf[..n]),
            }
        }
    };
    // The idle timeout, then a second's grace for the answer to GOAWAY's PING, and some slack.
    let bound = idle + Duration::from_secs(3);
    assert!(
        tokio::time::timeout(bound, read_to_end).await.is_ok(),
        "still open {bound:?} after the preface"
    );
    assert!(started.elapsed() >= idle * 3 / 4, "{:?}", started.elapsed());
    let types = frame_types(&wire);
    assert!(types.contains(&0x7), "a GOAWAY before closing: {types:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_with_an_open_stream_is_not_idle() {
    let idle = Duration::from_millis(200);
    let srv = TestServer::start_with(full_server, config(|c| c.idle_timeout = idle)).await;
    for h2 in [false, true] {
        let mut client = if h2 {
            Client::h2(srv.addr).await
        } else {
            Client::h1(srv.addr).await
        };
        let listen = Post::call(
            1,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        );
        let mut stream = SseStream::new(client.open(&listen).await);
        stream.next().await.expect("the acknowledgement");
        tokio::time::sleep(idle * 4).await;
        assert!(!client.is_closed(), "h2: {h2}");
        if h2 {
            // The same connection still serves requests beside the stream.
            let mut other = client.stream_handle();
            other.send(&echo(2, "still")).await.tool_text(json!(2));
        }
        drop(stream);
        // Once the stream is gone, the connection is idle and closes.
        client.wait_closed().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_are_closed_at_once() {
    let srv = TestServer::start_with(full_server, config(|c| c.max_connections = 2)).await;
    let mut first = Client::h1(srv.addr).await;
    let mut second = Client::h2(srv.addr).await;
    first.send(&echo(1, "a")).await.tool_text(json!(1));
    second.send(&echo(2, "b")).await.tool_text(json!(2));
    // The third is accepted and closed without a byte.
    let mut third = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf = [0u8; 16];
    let read = within("the refused connection closing", third.read(&mut buf)).await;
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    // When one of the two goes, a new connection is served.
    drop(first);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut fourth = Client::h1(srv.addr).await;
    fourth.send(&echo(4, "d")).await.tool_text(json!(4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_client_that_stops_reading_is_dropped_after_the_write_timeout() {
    let http = {
        let mut edited = test_config();
        edited.max_body = 16 * 1024 * 1024;
        edited
    };
    let listener = config(|c| c.write_timeout = Duration::from_millis(300));
    let srv = TestServer::start_with(full_server, Settings { http, listener }).await;
    let mut client = Client::h2(srv.addr).await;
    // More than the client's flow-control windows: the rest waits for it to read.
    let text = "x".repeat(8 * 1024 * 1024);
    let response = client.open(&echo(1, &text)).await;
    assert_eq!(response.status(), StatusCode::OK);
    // The body is never read.
    client.wait_closed().await;
    drop(response);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_response_without_memory_left_gets_503_on_both_protocols() {
    let srv = TestServer::start_with(full_server, config(|c| c.response_memory = 256 * 1024)).await;
    let large = "x".repeat(300 * 1024);
    for h2 in [false, true] {
        let mut client = if h2 {
            Client::h2(srv.addr).await
        } else {
            Client::h1(srv.addr).await
        };
        let reply = client.send(&echo(1, &large)).await;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "h2: {h2}");
        assert_eq!(reply.headers["retry-after"], "1");
        // A response within the memory is served on a fresh connection.
        let mut client = if h2 {
            Client::h2(srv.addr).await
        } else {
            Client::h1(srv.addr).await
        };
        let small = "y".repeat(100 * 1024);
        assert_eq!(
            client.send(&echo(2, &small)).await.tool_text(json!(2)),
            small
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_h2_concurrent_stream_limit_is_a_setting() {
    let srv =
        TestServer::start_with(full_server, config(|c| c.h2_max_concurrent_streams = 1)).await;
    let client = Client::h2(srv.addr).await;
    let mut first = client.stream_handle();
    // One whole exchange first: the answer comes after the server's SETTINGS on the connection, so
    // the client has applied its stream limit before the test opens two streams. Otherwise a
    // client that has not read them yet may open the second stream at once and have it refused.
    first.send(&echo(0, "settled")).await.tool_text(json!(0));
    let gated = Post::tool(
        1,
        "slow",
        json!({"tag": "one", "steps": 1, "stepMs": 1, "gate": "release"}),
    );
    let running = tokio::spawn(async move { first.send(&gated).await });
    srv.probes.wait_for("started:one").await;
    // A second stream must wait for the first to end.
    let mut second = client.stream_handle();
    let waiting = tokio::spawn(async move { second.send(&echo(2, "after")).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "a second stream ran beside the first"
    );
    srv.probes.record("release");
    running.await.expect("the first stream").tool_text(json!(1));
    let reply = within("the second stream", waiting).await.expect("joins");
    assert_eq!(reply.tool_text(json!(2)), "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_is_held_to_its_cap_and_others_are_served() {
    let srv = TestServer::start_with(
        full_server,
        config(|c| c.max_connections_per_address = Some(2)),
    )
    .await;
    let here: std::net::IpAddr = [127, 0, 0, 1].into();
    let there: std::net::IpAddr = [127, 0, 0, 2].into();
    let mut first = Client::h1_from(srv.addr, here).await;
    let mut second = Client::h1_from(srv.addr, here).await;
    first.send(&echo(1, "a")).await.tool_text(json!(1));
    second.send(&echo(2, "b")).await.tool_text(json!(2));
    // A third from the same address is accepted and closed without a byte.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::new(here, 0)).unwrap();
    let mut third = socket.connect(srv.addr).await.expect("connect");
    let mut buf = [0u8; 16];
    let read = within("the refused connection closing", third.read(&mut buf)).await;
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    // Another address is served meanwhile.
    let mut other = Client::h1_from(srv.addr, there).await;
    other.send(&echo(3, "c")).await.tool_text(json!(3));
    // When one of the first two goes, its address gets a connection again.
    drop(first);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut again = Client::h1_from(srv.addr, here).await;
    again.send(&echo(4, "d")).await.tool_text(json!(4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_section_over_the_limit_is_431_on_both_protocols() {
    let srv = TestServer::start_with(full_server, config(|c| c.max_header_bytes = 4096)).await;
    for h2 in [false, true] {
        let mut client = if h2 {
            Client::h2(srv.addr).await
        } else {
            Client::h1(srv.addr).await
        };
        // A header within the limit is served.
        let fits = echo(1, "a").header("x-note", &"n".repeat(1024));
        client.send(&fits).await.tool_text(json!(1));
        let over = echo(2, "b").header("x-note", &"n".repeat(8192));
        let response = client.open(&over).await;
        assert_eq!(
            response.status(),
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "h2: {h2}"
        );
        // The server serves the next request (HTTP/1.1 on a new connection: it closed that one).
        let mut next = if h2 {
            Client::h2(srv.addr).await
        } else {
            Client::h1(srv.addr).await
        };
        next.send(&echo(3, "c")).await.tool_text(json!(3));
    }
}
