//! What the observer hook costs on the hot path: a whole `tools/call` through `Server::handle`
//! (decode, route, validate, call, encode) with no observer, with `Metrics`, and with `Metrics`
//! plus a `RequestLog` whose target is disabled; then the probe alone. One thread, then two
//! threads sharing one server (the counters are shared atomics).
//!
//! Run: `cargo bench -p kelson-server --bench observe`. Prints the best of several rounds in ns per
//! request; compare the rows, not the absolute numbers, across machines.

use std::hint::black_box;
use std::time::{Duration, Instant};

use kelson_server::observe::{Metrics, RequestLog, Transport};
use kelson_server::transport::{Outcome, RequestIo};
use kelson_server::{RequestContext, Server, ServerBuilder};
use kelson_types::{CallToolResult, JsonObject, Method, Tool};
use serde_json::{Value, json};

const ROUNDS: usize = 7;
const PER_ROUND: u32 = 50_000;

fn builder() -> ServerBuilder {
    Server::builder("bench", "0.0.1").tool_handler(
        Tool::new(
            "echo",
            json!({"type": "object", "properties": {"text": {"type": "string"}}})
                .as_object()
                .unwrap()
                .clone(),
        ),
        |_ctx: RequestContext, args: JsonObject| async move {
            Ok(CallToolResult::text(
                args.get("text").and_then(Value::as_str).unwrap_or_default(),
            ))
        },
    )
}

fn request() -> Vec<u8> {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            },
            "name": "echo", "arguments": {"text": "hello"}
        }
    })
    .to_string()
    .into_bytes()
}

/// Best ns per request over `ROUNDS` rounds, on `threads` threads sharing `server`.
fn handle_ns(server: &Server, threads: usize) -> f64 {
    let body = request();
    let mut best = Duration::MAX;
    for _ in 0..ROUNDS {
        let elapsed = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let rt = tokio::runtime::Builder::new_current_thread()
                            .build()
                            .unwrap();
                        rt.block_on(async {
                            let start = Instant::now();
                            for _ in 0..PER_ROUND {
                                let reply = server
                                    .handle(black_box(&body), RequestIo::plain(server))
                                    .await;
                                black_box(reply);
                            }
                            start.elapsed()
                        })
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap())
                .max()
                .unwrap()
        });
        best = best.min(elapsed);
    }
    best.as_nanos() as f64 / f64::from(PER_ROUND)
}

/// Best ns for one probe from start to finish (what a transport adds per request), on `threads`
/// threads sharing `server`.
fn probe_ns(server: &Server, threads: usize) -> f64 {
    let id = kelson_jsonrpc::Id::Int(1);
    let n = PER_ROUND * 10;
    let mut best = Duration::MAX;
    for _ in 0..ROUNDS {
        let elapsed = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let start = Instant::now();
                        for _ in 0..n {
                            let mut probe = server.probe(Transport::Http);
                            probe.set_request(black_box(&id), black_box(&Method::CallTool));
                            probe.finish(Outcome::Success);
                        }
                        start.elapsed()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap())
                .max()
                .unwrap()
        });
        best = best.min(elapsed);
    }
    best.as_nanos() as f64 / f64::from(n)
}

fn main() {
    let plain = builder().build().unwrap();
    let metrics = builder().metrics(Metrics::new()).build().unwrap();
    let both = builder()
        .metrics(Metrics::new())
        .observer(RequestLog::new())
        .build()
        .unwrap();
    println!("tools/call through Server::handle, ns per request (best of {ROUNDS} x {PER_ROUND})");
    println!("{:<42} {:>10} {:>12}", "", "1 thread", "2 threads");
    for (name, server) in [
        ("no observer", &plain),
        ("metrics", &metrics),
        ("metrics + request log (target disabled)", &both),
    ] {
        println!(
            "{name:<42} {:>10.0} {:>12.0}",
            handle_ns(server, 1),
            handle_ns(server, 2)
        );
    }
    println!();
    println!("one probe, start to finish, ns");
    println!("{:<42} {:>10} {:>12}", "", "1 thread", "2 threads");
    for (name, server) in [
        ("no observer", &plain),
        ("metrics", &metrics),
        ("metrics + request log (target disabled)", &both),
    ] {
        println!(
            "{name:<42} {:>10.1} {:>12.1}",
            probe_ns(server, 1),
            probe_ns(server, 2)
        );
    }
}
