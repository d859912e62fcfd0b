//! Faults `kelson serve` must come through without losing an answer or its footing: the client
//! closing stdout or stdin while requests are in flight, SIGTERM with requests in flight, the
//! database's connections cut under it (as a PostgreSQL restart cuts them), and the sample
//! database's file removed while it is served.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{Pg, Serve, TempDir, http, meta, pg_url, post, sqlite_file};
use crate::harness::mcp_path;

/// Counts for about a second on SQLite before it answers.
const SLOW_SQLITE: &str = "with recursive n(x) as (select 1 union all select x + 1 from n where x < 3000000) select count(*) from n";

/// A `tools/call` of `query` as one JSON-RPC line.
fn query_line(id: u64, sql: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "query", "arguments": {"sql": sql}, "_meta": meta(false)}})
    .to_string()
        + "\n"
}

/// `kelson serve --stdio` on a fresh data folder, its stderr kept.
fn stdio_serve(data: &TempDir) -> std::process::Child {
    Command::new(mcp_path())
        .args(["serve", "--stdio"])
        .env("KELSON_DATA_DIR", data.join("data"))
        .env_remove("KELSON_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kelson serve starts")
}

/// Waits for the process to exit, failing after 20 s; its stderr.
fn exit_of(mut child: std::process::Child) -> (std::process::ExitStatus, String) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kelson serve --stdio did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

/// A client that stops reading (closes its end of stdout) has left: the server stops reading
/// requests, cancels what is in flight, and exits 0 without a panic.
#[test]
fn stdout_closed_by_the_client_ends_the_server_cleanly() {
    let data = TempDir::new();
    let mut child = stdio_serve(&data);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdin
        .write_all(query_line(1, "select 1").as_bytes())
        .unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains(r#""id":1"#), "{line}");
    drop(stdout);
    // A slow request in flight, then more: the first answer it cannot write ends the session.
    let _ = stdin.write_all(query_line(2, SLOW_SQLITE).as_bytes());
    for id in 3..50 {
        if stdin
            .write_all(query_line(id, "select 1").as_bytes())
            .is_err()
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(stdin);
    let (status, stderr) = exit_of(child);
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("stdout is closed"), "{stderr}");
}

/// Closing stdin ends the session after the requests in flight: their answers still come.
#[test]
fn stdin_closed_mid_request_still_answers_what_is_in_flight() {
    let data = TempDir::new();
    let mut child = stdio_serve(&data);
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    stdin
        .write_all(query_line(7, SLOW_SQLITE).as_bytes())
        .unwrap();
    drop(stdin);
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let answer: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(answer["id"], 7);
    assert_eq!(
        answer["result"]["structuredContent"]["rows"],
        json!([[3_000_000]]),
        "{answer}"
    );
    let (status, stderr) = exit_of(child);
    assert!(status.success(), "{status:?}\n{stderr}");
}

/// Node's `child_process` (and so most hosts) gives a server a Unix socket pair for stdin and
/// stdout rather than pipes: served the same, to the end of input, and each socket is left
/// blocking for whoever shares it after the server exits.
#[test]
fn unix_sockets_for_stdin_and_stdout_are_served_and_left_blocking() {
    use std::io::Read as _;
    use std::os::unix::net::UnixStream;

    let data = TempDir::new();
    let (mut input, child_in) = UnixStream::pair().unwrap();
    let (output, child_out) = UnixStream::pair().unwrap();
    // The server's end of its stdout, also kept here: the file description it shares with us.
    let kept_out = child_out.try_clone().unwrap();
    let child = Command::new(mcp_path())
        .args(["serve", "--stdio"])
        .env("KELSON_DATA_DIR", data.join("data"))
        .env_remove("KELSON_LOG")
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(child_in)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(child_out)))
        .stderr(Stdio::piped())
        .spawn()
        .expect("kelson serve starts");
    let mut lines = BufReader::new(output);
    for id in 1..=3 {
        input
            .write_all(query_line(id, &format!("select {id} * 10")).as_bytes())
            .unwrap();
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], id, "{line}");
        assert_eq!(
            answer["result"]["structuredContent"]["rows"],
            json!([[id * 10]]),
            "{line}"
        );
    }
    input.shutdown(std::net::Shutdown::Write).unwrap();
    let (status, stderr) = exit_of(child);
    assert!(status.success(), "{status:?}\n{stderr}");
    // Blocking again: a read of the server's end of stdout (which nobody writes to) waits out
    // its timeout instead of failing at once with WouldBlock.
    kept_out
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let started = Instant::now();
    let mut byte = [0u8; 1];
    let read = (&kept_out).read(&mut byte);
    assert!(read.is_err(), "{read:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "the read returned after {:?}: the socket was left non-blocking",
        started.elapsed()
    );
}

/// SIGTERM with requests in flight: each is answered in full, new connections are refused once
/// the server has stopped accepting, and the process exits 0.
#[test]
fn sigterm_answers_every_request_in_flight_and_refuses_new_connections() {
    let scratch = TempDir::new();
    let mut serve = Serve::start(
        &scratch.join("data"),
        &[
            "--read-connections",
            "8",
            "--query-timeout",
            "1m",
            "--metrics-addr",
            "127.0.0.1:0",
        ],
    );
    let metrics = serve.metrics_url().expect("the metrics address is logged");
    let url = serve.url.clone();
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                post(
                    &url,
                    "tools/call",
                    Some("query"),
                    json!({"name": "query", "arguments": {"sql": SLOW_SQLITE}, "_meta": meta(false)}),
                )
            })
        })
        .collect();
    // Every call is in flight on the server before the signal.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = http(&metrics, "GET", &[], "").body;
        if text.lines().any(|l| l == "mcp_requests_in_flight 8") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the calls never all started:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = serve.stop().expect("the server stops on SIGTERM");
    assert!(status.success(), "{status:?}\n{}", serve.log());
    let mut answered = 0;
    for call in calls {
        let reply = call.join().expect("every call is answered");
        assert_eq!(
            reply["result"]["structuredContent"]["rows"],
            json!([[3_000_000]]),
            "{reply}"
        );
        answered += 1;
    }
    assert_eq!(answered, 8, "no answer lost");
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    assert!(
        std::net::TcpStream::connect(authority).is_err(),
        "new connections are refused"
    );
}

/// The database cuts every connection of the server's role, as a restart of PostgreSQL does: the
/// call in flight fails with a tool error that says what happened, and the next calls are served
/// on new connections.
#[test]
fn postgres_connections_cut_under_load_fail_the_call_in_flight_and_are_replaced() {
    if !kelson_testenv::postgres() {
        return;
    }
    let pg = Pg::new("CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2);");
    let scratch = TempDir::new();
    let serve = Serve::start(
        &scratch.join("data"),
        &[
            "--db",
            &pg_url(&pg.reader),
            "--read-connections",
            "2",
            "--query-timeout",
            "1m",
        ],
    );
    let call = |sql: &str| {
        post(
            &serve.url,
            "tools/call",
            Some("query"),
            json!({"name": "query", "arguments": {"sql": sql}, "_meta": meta(false)}),
        )
    };
    assert_eq!(
        call("select count(*) as n from t")["result"]["structuredContent"]["rows"],
        json!([[2]])
    );
    let url = serve.url.clone();
    let in_flight = std::thread::spawn(move || {
        post(
            &url,
            "tools/call",
            Some("query"),
            json!({"name": "query", "arguments": {"sql": "select pg_sleep(30)"}, "_meta": meta(false)}),
        )
    });
    let reader = pg.reader.clone();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pg.scalar(&format!(
        "select count(*) from pg_stat_activity where usename = '{reader}' and query like '%pg_sleep%' and state = 'active'"
    )) != "1"
    {
        assert!(Instant::now() < deadline, "the slow query never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let cut = pg.scalar(&format!(
        "select count(*) from (select pg_terminate_backend(pid) from pg_stat_activity where usename = '{reader}') k"
    ));
    assert_ne!(cut, "0");
    let failed = in_flight.join().unwrap();
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let message = failed["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        message.contains("terminat") || message.contains("connection"),
        "{message}"
    );
    // Every later call is served, on connections opened anew.
    for _ in 0..5 {
        let reply = call("select count(*) as n from t");
        assert_eq!(
            reply["result"]["structuredContent"]["rows"],
            json!([[2]]),
            "{reply}"
        );
    }
    assert!(!serve.log().contains("panicked"), "{}", serve.log());
}

/// The sample database's file removed while it is served: the server goes on answering, from the
/// connections that have it open or with a tool error that names the file, never a crash.
#[test]
fn the_sample_database_removed_while_serving_is_a_tool_error_at_worst() {
    let scratch = TempDir::new();
    let db = scratch.join("shop.db");
    sqlite_file(&db, "CREATE TABLE t (x); INSERT INTO t VALUES (1);");
    let db_arg = format!("sqlite:{}", db.display());
    let serve = Serve::start(&scratch.join("data"), &["--db", &db_arg]);
    let call = |sql: &str| {
        post(
            &serve.url,
            "tools/call",
            Some("query"),
            json!({"name": "query", "arguments": {"sql": sql}, "_meta": meta(false)}),
        )
    };
    assert_eq!(
        call("select x from t")["result"]["structuredContent"]["rows"],
        json!([[1]])
    );
    std::fs::remove_file(&db).unwrap();
    for _ in 0..5 {
        let reply = call("select x from t");
        let result = &reply["result"];
        if result["isError"] == json!(true) {
            let text = result["content"][0]["text"].as_str().unwrap();
            assert!(
                text.contains("shop.db") || text.contains("database"),
                "{text}"
            );
        } else {
            assert_eq!(result["structuredContent"]["rows"], json!([[1]]), "{reply}");
        }
    }
    // The server is still there for everything else.
    let tables = call("select name from sqlite_master");
    assert!(tables.get("result").is_some(), "{tables}");
    assert!(!serve.log().contains("panicked"), "{}", serve.log());
}
