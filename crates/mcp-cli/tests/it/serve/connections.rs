//! Connections a hostile or careless client holds open, through the binary: partial HTTP/2
//! prefaces, idle connections of both protocols under a small descriptor limit, and slow readers
//! of large responses. CPU time and memory are read from /proc.

use std::io::Write as _;
use std::net::TcpStream;
use std::time::Duration;

use super::support::{Serve, TempDir, cpu_ticks, post};

/// USER_HZ on Linux: the unit of the CPU times in /proc/PID/stat.
const TICKS_PER_S: u64 = 100;

/// `host:port` of a server's URL.
fn authority(serve: &Serve) -> String {
    let rest = serve.url.strip_prefix("http://").expect("an http URL");
    rest[..rest.find('/').expect("a path")].to_owned()
}

/// The server still answers a fresh client.
#[track_caller]
fn still_serves(serve: &Serve) {
    let meta = super::support::meta(false);
    let reply = post(
        &serve.url,
        "server/discover",
        None,
        serde_json::json!({"_meta": meta}),
    );
    assert!(reply["result"]["supportedVersions"].is_array(), "{reply}");
}

/// Connections that send the first byte of the HTTP/2 preface and nothing more cost the server
/// (almost) no CPU while it waits for the rest: it waits for readiness rather than looking again
/// every millisecond (1,500 of them took 1.8 cores before).
#[test]
fn partial_prefaces_cost_no_cpu() {
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &["--read-timeout", "60s"]);
    let addr = authority(&serve);
    let mut held = Vec::with_capacity(1500);
    for _ in 0..1500 {
        let mut conn = TcpStream::connect(&addr).expect("connect");
        conn.write_all(b"P").expect("send one byte");
        held.push(conn);
    }
    // Let the server take them all in, then measure.
    std::thread::sleep(Duration::from_millis(500));
    let pid = serve.pid();
    let window = Duration::from_secs(3);
    let before = cpu_ticks(pid);
    std::thread::sleep(window);
    let used = (cpu_ticks(pid) - before) as f64 / TICKS_PER_S as f64;
    let per_second = used / window.as_secs_f64();
    eprintln!("1,500 partial prefaces: {per_second:.3} CPU-seconds per second");
    assert!(
        per_second < 0.2,
        "1,500 partial prefaces cost {per_second:.2} CPU-seconds per second"
    );
    still_serves(&serve);
    drop(held);
}
