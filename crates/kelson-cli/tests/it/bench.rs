//! `kelson bench` run as a user would: against the fixture over loopback HTTP and stdio, against a
//! port where nothing listens, against a wrong path, a tool the server lacks, a handshake-era server
//! (`@modelcontextprotocol/server-everything`, measured as legacy once probed), and `kelson serve`
//! forced to its legacy side over HTTP (sessions and stateless) and stdio. A run passes only when
//! the answers are the expected ones; otherwise it says what came back and exits non-zero.

use std::time::{Duration, Instant};

use crate::harness::{Everything, HttpServer, everything_stdio, mcp, stdio_server};
use crate::serve::support::{Serve, TempDir, mcp_in, stdio_serve};

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
    // The fixture speaks both eras: probed, it is measured as modern.
    assert_eq!(report["era"], "modern", "{report}");
    assert_eq!(report["protocol_version"], "2026-07-28", "{report}");
}

#[test]
fn a_wrong_path_fails_the_run_and_shows_the_answer() {
    let server = HttpServer::start();
    let url = server.url.replace("/mcp", "/nope");
    // Probed, a bare 404 may be a handshake-era server (spec basic/versioning): the handshake
    // fails, with the hint.
    let run = mcp(&["bench", "--url", &url, "--list-tools", "-n", "5"], "");
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("the legacy handshake failed: initialize: HTTP 404")
            && run.stderr.contains("is the URL's path right"),
        "{}",
        run.stderr
    );
    let run = mcp(
        &[
            "bench",
            "--url",
            &url,
            "--era",
            "modern",
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
fn a_tool_the_server_lacks_fails_at_once_before_any_load() {
    // Ten minutes asked for: only a refusal before the load ends the run within the harness's
    // bound on one run.
    let server = HttpServer::start();
    let stdio = stdio_server();
    let targets: [&[&str]; 3] = [
        &["--url", &server.url],
        &["--url", &server.url, "--era", "legacy"],
        &["--stdio", &stdio],
    ];
    for target in targets {
        let mut args = vec!["bench", "--call", "test_simple_txt", "-d", "10m", "--json"];
        args.extend_from_slice(target);
        let run = mcp(&args, "");
        run.expect_code(2);
        assert!(
            run.stderr.contains(
                "--call \"test_simple_txt\": the server lists no tool named \"test_simple_txt\"; \
                 did you mean \"test_simple_text\"?"
            ),
            "{target:?}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "no report: {}", run.stdout);
    }
    // In a mix too, and with no name near.
    let run = mcp(
        &[
            "bench",
            "--url",
            &server.url,
            "--mix",
            "call=1,list=1",
            "--call",
            "no_such_tool",
            "-d",
            "10m",
        ],
        "",
    );
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("no tool named \"no_such_tool\" (kelson tools lists them)"),
        "{}",
        run.stderr
    );
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

/// The JSON report of a run that must pass with exactly `n` requests, all answered as expected.
#[track_caller]
fn passed(run: &crate::harness::Run, n: u64, era: &str) -> serde_json::Value {
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["requests"], n, "{report}");
    assert_eq!(report["ok"], n, "{report}");
    assert_eq!(report["errors"], serde_json::json!({}), "{report}");
    assert_eq!(report["passed"], true, "{report}");
    assert_eq!(report["era"], era, "{report}");
    report
}

#[test]
fn a_handshake_era_server_over_stdio_is_probed_and_measured_as_legacy() {
    let Some(everything) = everything_stdio() else {
        return;
    };
    let run = mcp(
        &[
            "bench",
            "--stdio",
            &everything,
            "--list-tools",
            "-n",
            "50",
            "--warmup",
            "0s",
            "--json",
        ],
        "",
    );
    let report = passed(&run, 50, "legacy");
    assert_eq!(report["protocol_version"], "2025-11-25", "{report}");
}

#[test]
fn a_handshake_era_server_over_http_is_probed_and_measured_per_connection_session() {
    let Some(server) = Everything::start() else {
        return;
    };
    let run = mcp(
        &[
            "bench",
            "--url",
            &server.url,
            "--mix",
            "list=1,call=1",
            "--call",
            "get-sum",
            "--args",
            r#"{"a": 2, "b": 3}"#,
            "-c",
            "4",
            "-n",
            "60",
            "--warmup",
            "0s",
            "--json",
        ],
        "",
    );
    let report = passed(&run, 60, "legacy");
    assert_eq!(report["protocol_version"], "2025-11-25", "{report}");
    // The human report says which era was measured.
    let run = mcp(
        &[
            "bench",
            "--url",
            &server.url,
            "--list-tools",
            "-n",
            "10",
            "--warmup",
            "0s",
        ],
        "",
    );
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("protocol    2025-11-25 (legacy: initialize once per connection)"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_handshake_era_server_forced_modern_over_stdio_fails_the_run_with_a_hint() {
    let Some(everything) = everything_stdio() else {
        return;
    };
    let run = mcp(
        &[
            "bench",
            "--stdio",
            &everything,
            "--era",
            "modern",
            "--list-tools",
            "-n",
            "20",
            "--warmup",
            "0s",
        ],
        "",
    );
    run.expect_code(2);
    assert!(
        run.stdout.contains("handshake-era") && run.stdout.contains("--era legacy"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_handshake_era_server_forced_modern_over_http_fails_the_run() {
    let Some(server) = Everything::start() else {
        return;
    };
    let run = mcp(
        &[
            "bench",
            "--url",
            &server.url,
            "--era",
            "modern",
            "--list-tools",
            "-n",
            "20",
            "--warmup",
            "0s",
            "--json",
        ],
        "",
    );
    run.expect_code(3);
    let report = run.json();
    assert_eq!(report["passed"], false, "{report}");
    assert_eq!(report["era"], "modern", "{report}");
    let samples = report["error_samples"].as_object().expect("samples");
    assert!(
        samples.keys().any(|k| k.starts_with("http_400")),
        "{report}"
    );
}

/// `kelson bench --era legacy` against `serve`: `n` requests of a mix of calls and lists over 4
/// connections.
fn bench_legacy_http(serve: &Serve, n: u64) -> crate::harness::Run {
    mcp(
        &[
            "bench",
            "--url",
            &serve.url,
            "--era",
            "legacy",
            "--mix",
            "call=3,list=1",
            "--call",
            "list_tables",
            "-c",
            "4",
            "-n",
            &n.to_string(),
            "--warmup",
            "50ms",
            "--json",
        ],
        "",
    )
}

#[test]
fn mcp_serve_forced_legacy_over_http_sessions_passes_and_ends_its_sessions() {
    let scratch = TempDir::new();
    // Room for one run's sessions only: the second run passes only if the first ended its own.
    let serve = Serve::start(&scratch.join("data"), &["--max-sessions", "4"]);
    for _ in 0..2 {
        let report = passed(&bench_legacy_http(&serve, 400), 400, "legacy");
        assert_eq!(report["protocol_version"], "2025-11-25", "{report}");
    }
}

#[test]
fn a_handshake_refused_for_want_of_sessions_ends_the_run_and_the_sessions_it_opened() {
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &["--max-sessions", "2"]);
    let bench = |connections: &str| {
        mcp(
            &[
                "bench",
                "--url",
                &serve.url,
                "--era",
                "legacy",
                "--list-tools",
                "-c",
                connections,
                "-n",
                "20",
                "--json",
            ],
            "",
        )
    };
    // Four connections, room for two sessions: two handshakes get 503.
    let run = bench("4");
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("the legacy handshake failed: initialize: HTTP 503"),
        "{}",
        run.stderr
    );
    // The two sessions it did open were ended: two connections find room.
    passed(&bench("2"), 20, "legacy");
}

#[test]
fn mcp_serve_forced_legacy_over_stateless_http_passes() {
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &["--legacy-http", "stateless"]);
    passed(&bench_legacy_http(&serve, 300), 300, "legacy");
}

#[test]
fn mcp_serve_forced_legacy_over_stdio_passes() {
    let scratch = TempDir::new();
    let data = scratch.join("data");
    let run = mcp_in(
        &data,
        &[
            "bench",
            "--stdio",
            &stdio_serve(&[]),
            "--era",
            "legacy",
            "--call",
            "list_tables",
            "-n",
            "300",
            "--warmup",
            "0s",
            "--json",
        ],
        "",
    );
    passed(&run, 300, "legacy");
    // Without --era, the same server is probed and measured as modern.
    let run = mcp_in(
        &data,
        &[
            "bench",
            "--stdio",
            &stdio_serve(&[]),
            "--call",
            "list_tables",
            "-n",
            "100",
            "--warmup",
            "0s",
            "--json",
        ],
        "",
    );
    passed(&run, 100, "modern");
}

#[test]
fn a_modern_only_server_refuses_the_legacy_handshake() {
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &["--eras", "modern"]);
    let run = bench_legacy_http(&serve, 10);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("the legacy handshake failed: initialize: JSON-RPC error -32022"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

/// A short soak of `kelson serve`: the mixed load, listen streams and abandoned calls run, the
/// server's memory, descriptors and tasks are sampled (to the CSV file too), and they stay flat.
#[test]
fn a_short_soak_of_mcp_serve_samples_its_resources_and_passes() {
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &["--metrics-addr", "127.0.0.1:0"]);
    let metrics = serve.metrics_url().expect("the metrics address is logged");
    let csv = scratch.join("samples.csv");
    let pid = serve.pid().to_string();
    let run = mcp(
        &[
            "bench",
            "--soak",
            "--url",
            &serve.url,
            "--mix",
            "call=4,list=1",
            "--call",
            "query",
            "--args",
            r#"{"sql": "select count(*) from orders"}"#,
            "-c",
            "4",
            "-d",
            "4s",
            "--sample-every",
            "250ms",
            "--pid",
            &pid,
            "--metrics",
            &metrics,
            "--samples",
            csv.to_str().unwrap(),
            "--json",
        ],
        "",
    );
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["passed"], true, "{report}");
    assert!(report["answered"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["failed"], 0, "{report}");
    assert!(report["listen_streams"].as_u64().unwrap() > 0, "{report}");
    assert!(report["abandoned_calls"].as_u64().unwrap() > 0, "{report}");
    let resources: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["resource"].as_str().unwrap())
        .collect();
    assert_eq!(resources, ["rss_kib", "fds", "tasks"]);
    let written = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines[0], "seconds,rss_kib,fds,tasks,answered,failed");
    assert!(lines.len() > 10, "{written}");
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.split(',').filter(|f| !f.is_empty()).count() == 6),
        "{written}"
    );
}

/// `--arg KEY=VALUE` as `kelson call` takes it (here a required argument, which a call without it
/// fails for); `--args` with one JSON object still works.
#[test]
fn call_arguments_are_given_with_arg_like_kelson_call() {
    let server = HttpServer::start();
    let bench = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--url",
            &server.url,
            "--call",
            "test_custom_header",
            "-c",
            "2",
            "-n",
            "20",
            "--warmup",
            "0s",
            "--json",
        ];
        args.extend_from_slice(extra);
        mcp(&args, "")
    };
    let run = bench(&["--arg", "region=eu-west"]);
    run.expect_code(0);
    assert_eq!(run.json()["ok"], 20, "{}", run.stdout);
    let run = bench(&["--args", r#"{"region": "eu-west"}"#]);
    run.expect_code(0);
    assert_eq!(run.json()["ok"], 20, "{}", run.stdout);
    // Without it every call is refused: the run fails, as a protocol error.
    let run = bench(&[]);
    assert_ne!(run.code, Some(0), "{}", run.stdout);
    assert_eq!(run.json()["passed"], false, "{}", run.stdout);
    // A value that is neither KEY=VALUE nor a JSON object is a usage error, before any load.
    let run = bench(&["--arg", "region"]);
    run.expect_code(4);
    assert!(
        run.stderr
            .contains("--arg \"region\": expected KEY=VALUE or a JSON object"),
        "{}",
        run.stderr
    );
}
