//! How long a change made on one instance takes to reach a listen stream held by another, through
//! NATS and through Redis on loopback (the brokers `.ci/run` starts), next to the same listener on
//! the instance that made the change (no broker).
//!
//! `cargo bench -p kelson-broker --bench notify_latency` (add `-- --events N` for more samples).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use kelson_broker::Broker;
use kelson_server::Server;
use kelson_server::transport::{ListenStream, Reply, RequestIo};
use serde_json::json;

async fn instance(url: &str, channel: &str) -> (Server, Broker) {
    let broker = Broker::new(url, channel).expect("a broker URL");
    let server = Server::builder("bench", "1")
        .enable_resources()
        .relay(Arc::new(broker.clone()))
        .build()
        .expect("a server");
    broker.start(server.relay_inlet());
    assert!(
        broker.wait_connected(Duration::from_secs(5)).await,
        "no broker at {url} (scripts/brokers starts NATS and Redis)"
    );
    (server, broker)
}

async fn listen(server: &Server) -> ListenStream {
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {
            "notifications": {"resourceSubscriptions": ["bench:/"]},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
    .to_string();
    let io = RequestIo::plain(server);
    let Some(Reply::Listen(mut stream)) = server.handle(request.as_bytes(), io).await else {
        panic!("expected a listen stream")
    };
    stream.next().await.expect("the acknowledgement");
    stream
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn us(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e6)
}

/// One change at a time: made on `from`, timed until `to`'s stream yields it.
async fn latency(from: &Server, to: &mut ListenStream, events: usize) -> Vec<Duration> {
    let mut took = Vec::with_capacity(events);
    for i in 0..events {
        let start = Instant::now();
        from.notify_resource_updated(&format!("bench:/{i}"));
        tokio::time::timeout(Duration::from_secs(5), to.next())
            .await
            .expect("the change arrives")
            .expect("the stream stays open");
        took.push(start.elapsed());
    }
    took.sort();
    took
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let events = args
        .iter()
        .position(|a| a == "--events")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000usize);
    println!("| path | p50 µs | p99 µs | max µs |");
    println!("|---|---:|---:|---:|");
    // The floor: the listener on the instance that made the change.
    {
        let server = Server::builder("bench", "1")
            .enable_resources()
            .build()
            .unwrap();
        let mut stream = listen(&server).await;
        latency(&server, &mut stream, 200).await;
        let took = latency(&server, &mut stream, events).await;
        println!(
            "| same instance (no broker) | {} | {} | {} |",
            us(percentile(&took, 0.5)),
            us(percentile(&took, 0.99)),
            us(*took.last().unwrap()),
        );
    }
    let pid = std::process::id();
    let brokers = [
        ("NATS 2.9 (core pub/sub)", "nats://127.0.0.1:4222"),
        ("Redis 7.0 (pub/sub)", "redis://127.0.0.1:6379"),
    ];
    let mut paths = Vec::new();
    for (i, (_, url)) in brokers.iter().enumerate() {
        let channel = format!("mcp.bench.{pid}.{i}");
        let (a, ab) = instance(url, &channel).await;
        let (b, bb) = instance(url, &channel).await;
        let mut on_a = listen(&a).await;
        latency(&b, &mut on_a, 200).await;
        paths.push((a, b, on_a, ab, bb));
    }
    // Rounds alternate between the brokers, so that what else the machine does falls on both.
    let rounds = 5;
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); brokers.len()];
    for _ in 0..rounds {
        for (i, (_, b, on_a, _, _)) in paths.iter_mut().enumerate() {
            samples[i].extend(latency(b, on_a, events / rounds).await);
        }
    }
    for (i, (name, _)) in brokers.iter().enumerate() {
        let took = &mut samples[i];
        took.sort();
        println!(
            "| {name} | {} | {} | {} |",
            us(percentile(took, 0.5)),
            us(percentile(took, 0.99)),
            us(*took.last().unwrap()),
        );
    }
    println!(
        "\n{events} changes one at a time per path, in {rounds} rounds alternating between the brokers, after 200 for warm-up."
    );
}
