//! `mcp bench` run as a user would: against the fixture over loopback HTTP and stdio, against a
//! port where nothing listens, against a wrong path, an unknown tool, and a handshake-era server
//! (`@modelcontextprotocol/server-everything`). A run passes only when the answers are the
//! expected ones; otherwise it says what came back and exits non-zero.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::{HttpServer, mcp, stdio_server};

/// A loopback port where nothing listens.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

#[test]
fn nothing_listening_ends_the_run_at_once_with_exit_3() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    for limit in [&["-d", "1s"][..], &["-n", "10"][..]] {
        let started = Instant::now();
        let mut args = vec!["bench", "--url", &url, "--list-tools"];
        args.extend_from_slice(limit);
        let run = mcp(&args, "");
        run.expect_code(3);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
        assert!(
            run.stderr.contains("cannot connect to 127.0.0.1:")
                && run.stderr.contains("is the server running?"),
            "{}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }
}

#[test]
fn a_good_run_passes_and_a_request_limit_is_exact() {
    let server = HttpServer::start();
    let run = mcp(
        &[
            "bench",
            "--url",
            &server.url,
            "--call",
            "test_simple_text",
            "-c",
            "16",
            "-n",
            "500",
            "--warmup",
            "200ms",
            "--json",
        ],
        "",
    );
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["requests"], 500, "{report}");
    assert_eq!(report["ok"], 500, "{report}");
    assert_eq!(report["passed"], true, "{report}");
    assert_eq!(report["exit_code"], 0, "{report}");
}

#[test]
fn a_wrong_path_fails_the_run_and_shows_the_answer() {
    let server = HttpServer::start();
    let url = server.url.replace("/mcp", "/nope");
    let run = mcp(
        &[
            "bench",
            "--url",
            &url,
            "--list-tools",
            "-d",
            "300ms",
            "--warmup",
            "0s",
        ],
        "",
    );
    run.expect_code(3);
    assert!(run.stdout.contains("http_404"), "{}", run.stdout);
    assert!(
        run.stdout.contains("hint:") && run.stdout.contains("/mcp"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains("requests failed (100.0%; most often http_404"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unknown_tool_fails_the_run_with_the_servers_error_in_the_json_report() {
    let server = HttpServer::start();
    let run = mcp(
        &[
            "bench",
            "--url",
            &server.url,
            "--call",
            "no_such_tool",
            "-n",
            "20",
            "--warmup",
            "0s",
            "--json",
        ],
        "",
    );
    run.expect_code(2);
    let report = run.json();
    assert_eq!(report["passed"], false, "{report}");
    assert_eq!(report["ok"], 0, "{report}");
    assert_eq!(report["errors"]["jsonrpc_-32602"], 20, "{report}");
    let sample = report["error_samples"]["jsonrpc_-32602"]
        .as_str()
        .expect("a sample answer");
    assert!(sample.contains("no_such_tool"), "{sample}");
    assert!(report["failure"].as_str().unwrap().contains("20 of 20"));
}

#[test]
fn a_tolerated_share_of_errors_passes() {
    // Half the mix fails (an unknown URI): with --max-errors 60% the run passes, with 40% it fails.
    let server = HttpServer::start();
    for (share, code) in [("60%", 0), ("0.4", 2)] {
        let run = mcp(
            &[
                "bench",
                "--url",
                &server.url,
                "--mix",
                "call=1,read=1",
                "--call",
                "test_simple_text",
                "--read",
                "test://no-such-resource",
                "-n",
                "40",
                "--warmup",
                "0s",
                "-c",
                "1",
                "--max-errors",
                share,
            ],
            "",
        );
        run.expect_code(code);
    }
    let run = mcp(
        &[
            "bench",
            "--url",
            &server.url,
            "--list-tools",
            "--max-errors",
            "lots",
        ],
        "",
    );
    run.expect_code(4);
    assert!(run.stderr.contains("--max-errors"), "{}", run.stderr);
}

#[test]
fn a_server_lost_during_the_run_ends_it() {
    let server = HttpServer::start();
    let url = server.url.clone();
    let bench = std::thread::spawn(move || {
        mcp(
            &[
                "bench",
                "--url",
                &url,
                "--list-tools",
                "-n",
                "100000000",
                "--warmup",
                "0s",
                "-c",
                "2",
            ],
            "",
        )
    });
    std::thread::sleep(Duration::from_millis(700));
    let stopped = Instant::now();
    drop(server);
    let run = bench.join().expect("the bench thread");
    run.expect_code(3);
    assert!(
        stopped.elapsed() < Duration::from_secs(20),
        "{:?}",
        stopped.elapsed()
    );
    assert!(run.stderr.contains("lost the server"), "{}", run.stderr);
}

#[test]
fn over_stdio_a_good_run_passes() {
    let run = mcp(
        &[
            "bench",
            "--stdio",
            &stdio_server(),
            "--call",
            "test_simple_text",
            "-n",
            "200",
            "--warmup",
            "0s",
            "--json",
        ],
        "",
    );
    run.expect_code(0);
    assert_eq!(run.json()["requests"], 200);
}

/// server-everything, the handshake-era reference server, from the installed peers.
fn everything() -> (PathBuf, PathBuf) {
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers");
    let node = peers.join("node_modules/.bin/node");
    let script = peers.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        node.exists() && script.exists(),
        "the peers are not installed under {}: run scripts/peers-install",
        peers.display()
    );
    (node, script)
}

#[test]
fn a_handshake_era_server_over_stdio_fails_the_run_with_a_hint() {
    let (node, script) = everything();
    let command = format!("'{}' '{}' stdio", node.display(), script.display());
    let run = mcp(
        &[
            "bench",
            "--stdio",
            &command,
            "--list-tools",
            "-n",
            "20",
            "--warmup",
            "0s",
        ],
        "",
    );
    run.expect_code(2);
    assert!(run.stdout.contains("handshake-era"), "{}", run.stdout);
}

#[test]
fn a_handshake_era_server_over_http_fails_the_run_with_a_hint() {
    let (node, script) = everything();
    let port = closed_port();
    let mut child = std::process::Command::new(node)
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("server-everything starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let run = mcp(
        &[
            "bench",
            "--url",
            &url,
            "--list-tools",
            "-n",
            "20",
            "--warmup",
            "0s",
            "--json",
        ],
        "",
    );
    let _ = child.kill();
    let _ = child.wait();
    run.expect_code(3);
    let report = run.json();
    assert_eq!(report["passed"], false, "{report}");
    let samples = report["error_samples"].as_object().expect("samples");
    assert!(
        samples.keys().any(|k| k.starts_with("http_400")),
        "{report}"
    );
}
