//! Two or three servers in one process, each with its own relay to a real broker on loopback
//! (NATS on 127.0.0.1:4222 and Redis on 127.0.0.1:6379, as the development machines and CI run
//! them; `.ci/run` starts them where they are not running), and listen streams that must hear of
//! each other's changes once, in order; and, with the feature `tls`, brokers of the tests' own
//! that speak TLS (`tls`).

#[cfg(feature = "tls")]
mod tls;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use kelson_broker::Broker;
use kelson_server::Server;
use kelson_server::transport::{ListenStream, Reply, RequestIo};
use serde_json::{Value, json};

const NATS: &str = "nats://127.0.0.1:4222";
const REDIS: &str = "redis://127.0.0.1:6379";
const WAIT: Duration = Duration::from_secs(10);

/// A channel no other test run uses.
fn channel(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("mcp.test.{test}.{}-{nanos}", std::process::id())
}

struct Instance {
    server: Server,
    broker: Broker,
}

async fn instance(url: &str, channel: &str) -> Instance {
    let broker = Broker::new(url, channel).unwrap();
    let server = Server::builder("relay-test", "1.0")
        .enable_tools()
        .enable_resources()
        .relay(Arc::new(broker.clone()))
        .build()
        .unwrap();
    broker.start(server.relay_inlet());
    assert!(
        broker.wait_connected(WAIT).await,
        "cannot reach the broker at {url}: is it running? (.ci/run starts it)"
    );
    Instance { server, broker }
}

async fn listen(server: &Server, notifications: Value) -> ListenStream {
    let request = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {
            "notifications": notifications,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
    .to_string();
    let Some(Reply::Listen(mut stream)) = server
        .handle(request.as_bytes(), RequestIo::plain(server))
        .await
    else {
        panic!("expected a listen stream")
    };
    let ack = next(&mut stream).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    stream
}

async fn next(stream: &mut ListenStream) -> Value {
    let message = tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("a message within 10 s")
        .expect("the stream is open");
    serde_json::from_slice(&message).unwrap()
}

/// What a notification says: the method's last part, and the URI if it has one.
fn said(message: &Value) -> String {
    let method = message["method"].as_str().unwrap_or("?");
    let method = method.rsplit('/').next().unwrap();
    match message["params"]["uri"].as_str() {
        Some(uri) => format!("{method} {uri}"),
        None => method.to_owned(),
    }
}

/// The notifications up to and including the one that says `last`.
async fn heard_until(stream: &mut ListenStream, last: &str) -> Vec<String> {
    heard_until_all(stream, &[last]).await
}

/// The notifications until each of `lasts` has been heard (sources are not ordered between them).
async fn heard_until_all(stream: &mut ListenStream, lasts: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    while !lasts.iter().all(|l| out.iter().any(|s| s == l)) {
        out.push(said(&next(stream).await));
    }
    out
}

async fn changes_cross_instances_once_and_in_order(url: &str, name: &str) {
    let channel = channel(name);
    let a = instance(url, &channel).await;
    let b = instance(url, &channel).await;
    let c = instance(url, &channel).await;
    let mut on_a = listen(
        &a.server,
        json!({"toolsListChanged": true, "resourceSubscriptions": ["sql://db/"]}),
    )
    .await;
    let mut on_c = listen(&c.server, json!({"resourceSubscriptions": ["sql://db/"]})).await;

    // A tool registered at run time on B.
    b.server.add_tool("late", || async { "ok" }).unwrap();
    assert_eq!(
        next(&mut on_a).await["method"],
        "notifications/tools/list_changed"
    );

    // Updates from B and from C, each source in its order; A's own once.
    for i in 0..20 {
        b.server.notify_resource_updated(&format!("sql://db/b{i}"));
    }
    for i in 0..5 {
        c.server.notify_resource_updated(&format!("sql://db/c{i}"));
    }
    a.server.notify_resource_updated("sql://db/a0");
    // Each source's own end marker: sources are ordered each in itself, not between them.
    b.server.notify_resource_updated("sql://db/end-b");
    c.server.notify_resource_updated("sql://db/end-c");
    let ends = ["updated sql://db/end-b", "updated sql://db/end-c"];
    let heard = heard_until_all(&mut on_a, &ends).await;
    let from = |prefix: &str| -> Vec<String> {
        heard
            .iter()
            .filter(|s| {
                s.starts_with(&format!("updated sql://db/{prefix}"))
                    || **s == format!("updated sql://db/end-{prefix}")
            })
            .cloned()
            .collect()
    };
    let b_expected: Vec<String> = (0..20)
        .map(|i| format!("updated sql://db/b{i}"))
        .chain(["updated sql://db/end-b".to_owned()])
        .collect();
    let c_expected: Vec<String> = (0..5)
        .map(|i| format!("updated sql://db/c{i}"))
        .chain(["updated sql://db/end-c".to_owned()])
        .collect();
    assert_eq!(from("b"), b_expected, "{heard:?}");
    assert_eq!(from("c"), c_expected, "{heard:?}");
    assert_eq!(from("a"), ["updated sql://db/a0"], "{heard:?}");
    // 21 + 6 + 1: nothing twice, nothing else.
    assert_eq!(heard.len(), 28, "{heard:?}");

    // C's listener heard the same, its own updates once.
    let all_three = [ends[0], ends[1], "updated sql://db/a0"];
    let heard_c = heard_until_all(&mut on_c, &all_three).await;
    assert_eq!(heard_c.len(), 28, "{heard_c:?}");

    // Changes made "locally" stay on their instance.
    kelson_server::relay::locally(|| b.server.notify_resource_updated("sql://db/local"));
    b.server.notify_resource_updated("sql://db/after");
    assert_eq!(said(&next(&mut on_a).await), "updated sql://db/after");

    let stats = b.broker.stats();
    assert!(stats.connected);
    assert_eq!(stats.published, 23, "{stats:?}");
    assert_eq!(stats.lost, 0, "{stats:?}");
    // A heard the tool list change, 20 + 1 + 1 from B, 6 from C: 29.
    assert_eq!(a.broker.stats().received, 29, "{:?}", a.broker.stats());
}

#[tokio::test]
async fn nats_carries_changes_between_instances_once_and_in_order() {
    if !kelson_testenv::nats() {
        return;
    }
    changes_cross_instances_once_and_in_order(NATS, "order").await;
}

#[tokio::test]
async fn redis_carries_changes_between_instances_once_and_in_order() {
    if !kelson_testenv::redis() {
        return;
    }
    changes_cross_instances_once_and_in_order(REDIS, "order").await;
}

#[tokio::test]
async fn instances_on_other_channels_hear_nothing() {
    if !kelson_testenv::nats() {
        return;
    }
    let a = instance(NATS, &channel("mine")).await;
    let b = instance(NATS, &channel("theirs")).await;
    let mut on_a = listen(&a.server, json!({"resourceSubscriptions": ["sql://db/"]})).await;
    b.server.notify_resource_updated("sql://db/theirs");
    a.server.notify_resource_updated("sql://db/mine");
    assert_eq!(said(&next(&mut on_a).await), "updated sql://db/mine");
}

/// A Redis server of the test's own, on a free port, that it can stop and start again.
struct OwnRedis {
    port: u16,
    child: Option<Child>,
}

impl OwnRedis {
    fn start(port: u16) -> OwnRedis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs (Debian's redis-server package; .ci/run installs it)");
        let mut redis = OwnRedis {
            port,
            child: Some(child),
        };
        redis.wait_up();
        redis
    }

    fn wait_up(&mut self) {
        let deadline = std::time::Instant::now() + WAIT;
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn while_the_broker_is_down_streams_stay_open_and_a_resync_follows_its_return() {
    if !kelson_testenv::program("redis-server") {
        return;
    }
    let port = free_port();
    let mut redis = OwnRedis::start(port);
    let url = format!("redis://127.0.0.1:{port}");
    let channel = channel("outage");
    let a = instance(&url, &channel).await;
    let b = instance(&url, &channel).await;
    let mut on_a = listen(
        &a.server,
        json!({"toolsListChanged": true, "resourceSubscriptions": ["sql://db/t"]}),
    )
    .await;
    b.server.notify_resource_updated("sql://db/t");
    assert_eq!(said(&next(&mut on_a).await), "updated sql://db/t");

    redis.stop();
    let deadline = std::time::Instant::now() + WAIT;
    while b.broker.is_connected() || a.broker.is_connected() {
        assert!(std::time::Instant::now() < deadline, "the loss went unseen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Changes made meanwhile are lost, and counted; the stream stays open.
    b.server.notify_resource_updated("sql://db/t");
    assert_eq!(b.broker.stats().lost, 1, "{:?}", b.broker.stats());
    assert!(b.broker.stats().disconnects >= 1);

    let mut redis = OwnRedis::start(port);
    assert!(a.broker.wait_connected(WAIT).await, "A reconnects");
    assert!(b.broker.wait_connected(WAIT).await, "B reconnects");
    // Each instance resyncs its own listeners when it reconnects, and asks the others to: A's
    // listener re-reads the tool list and its subscription, at least once.
    let resync = heard_until(&mut on_a, "updated sql://db/t").await;
    assert!(
        resync.contains(&"list_changed".to_owned()),
        "expected a resync, heard {resync:?}"
    );
    // And changes flow again.
    tokio::time::sleep(Duration::from_millis(200)).await;
    b.server.notify_resource_updated("sql://db/t");
    loop {
        // Other resync messages (B's request) may arrive first.
        if said(&next(&mut on_a).await) == "updated sql://db/t" {
            break;
        }
    }
    redis.stop();
}

#[tokio::test]
async fn a_refused_login_is_reported_and_retried_not_fatal() {
    if !kelson_testenv::program("nats-server") {
        return;
    }
    // NATS with a token it does not know: the connection is refused, the relay keeps trying.
    let port = free_port();
    let mut nats = Command::new("nats-server")
        .args([
            "-a",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--auth",
            "right-token",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nats-server runs (Debian's nats-server package; .ci/run installs it)");
    let deadline = std::time::Instant::now() + WAIT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "nats-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let channel = channel("auth");
    let wrong = Broker::new(&format!("nats://wrong-token@127.0.0.1:{port}"), &channel).unwrap();
    let server = Server::builder("t", "1")
        .relay(Arc::new(wrong.clone()))
        .build()
        .unwrap();
    wrong.start(server.relay_inlet());
    assert!(!wrong.wait_connected(Duration::from_millis(500)).await);

    // The right token gets in, and events flow.
    let right = instance(&format!("nats://right-token@127.0.0.1:{port}"), &channel).await;
    let other = instance(&format!("nats://right-token@127.0.0.1:{port}"), &channel).await;
    let mut on_right = listen(&right.server, json!({"resourceSubscriptions": ["x:/"]})).await;
    other.server.notify_resource_updated("x:/y");
    assert_eq!(said(&next(&mut on_right).await), "updated x:/y");
    let _ = nats.kill();
    let _ = nats.wait();
}
