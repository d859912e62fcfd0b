//! `kelson serve`'s SQL limits under hostile or slow queries: a single value over the byte budget,
//! and quick queries beside slow ones (enough read connections, a bounded wait for one, the queue
//! in the metrics).

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{Serve, TempDir, http, meta, post, sqlite_file, wait_until};

/// Counts to a hundred billion: it runs until the query timeout stops it.
const SLOW: &str = "with recursive n(x) as (select 1 union all select x + 1 from n where x < 100000000000) select count(*) from n";

/// `tools/call` of `query` with `sql` over a fresh HTTP connection: the tool result, and how long
/// the server took to answer.
fn query(url: &str, sql: &str) -> (Value, Duration) {
    let started = Instant::now();
    let reply = post(
        url,
        "tools/call",
        Some("query"),
        json!({"name": "query", "arguments": {"sql": sql}, "_meta": meta(false)}),
    );
    (reply["result"].clone(), started.elapsed())
}

/// The text of a tool result that must be an error.
#[track_caller]
fn tool_error(result: &Value) -> &str {
    assert_eq!(
        result["isError"],
        json!(true),
        "expected a tool error: {result}"
    );
    result["content"][0]["text"].as_str().expect("a text")
}

/// `select randomblob(60000000)` used to build its 60 MB (seconds, and over 200 MB of memory for
/// the value and its JSON) before the byte budget cut it; SQLite's length limit, set from
/// `--max-bytes`, refuses it before anything is allocated.
#[test]
fn a_value_over_the_byte_budget_is_refused_at_once() {
    let scratch = TempDir::new();
    let db = scratch.join("t.db");
    sqlite_file(&db, "CREATE TABLE t (a); INSERT INTO t VALUES (1);");
    let db_arg = format!("sqlite:{}", db.display());
    let serve = Serve::start(
        &scratch.join("data"),
        &["--db", &db_arg, "--max-bytes", "100000"],
    );
    let (result, took) = query(&serve.url, "select randomblob(60000000)");
    let message = tool_error(&result);
    // Four times the budget, at least 1 MiB.
    assert!(
        message.contains("larger than 1048576 bytes") && message.contains("--max-bytes"),
        "{message}"
    );
    assert!(took < Duration::from_secs(1), "answered after {took:?}");
    // The server goes on answering, and a value within the budget comes back whole.
    let (result, _) = query(
        &serve.url,
        "select length(randomblob(500000)), hex(zeroblob(4))",
    );
    assert_eq!(
        result["structuredContent"]["rows"],
        json!([[500000, "00000000"]]),
        "{result}"
    );
}

/// A server on an SQLite file with `flags`, and its metrics URL.
fn serve_sqlite(scratch: &TempDir, flags: &[&str]) -> (Serve, String) {
    let db = scratch.join("t.db");
    sqlite_file(&db, "CREATE TABLE t (a); INSERT INTO t VALUES (1);");
    let db_arg = format!("sqlite:{}", db.display());
    let mut args = vec!["--db", &db_arg, "--metrics"];
    args.extend_from_slice(flags);
    let serve = Serve::start(&scratch.join("data"), &args);
    let metrics = serve.metrics_url().expect("the metrics URL");
    (serve, metrics)
}

/// Starts `n` slow queries, each over a connection of its own.
fn start_slow(url: &str, n: usize) -> Vec<JoinHandle<(Value, Duration)>> {
    (0..n)
        .map(|_| {
            let url = url.to_owned();
            std::thread::spawn(move || query(&url, SLOW))
        })
        .collect()
}

/// A pool gauge of the `main` database's read pool, from a scrape.
fn read_pool(metrics_url: &str, family: &str) -> i64 {
    let body = http(metrics_url, "GET", &[], "").body;
    let series = format!("{family}{{database=\"main\",pool=\"read\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(series.as_str()))
        .unwrap_or_else(|| panic!("no {series} in\n{body}"))
        .parse()
        .expect("a number")
}

/// The default pool has room for a quick query while two slow ones run (it had two read
/// connections, so `select 1` waited for a slow query to be stopped).
#[test]
fn a_third_query_runs_while_two_slow_ones_do() {
    let scratch = TempDir::new();
    let (serve, metrics) = serve_sqlite(&scratch, &["--query-timeout", "4s"]);
    assert!(read_pool(&metrics, "mcp_sql_pool_connections") >= 4);
    let slow = start_slow(&serve.url, 2);
    wait_until("two slow queries run", || {
        read_pool(&metrics, "mcp_sql_pool_connections_in_use") == 2
    });
    let (result, took) = query(&serve.url, "select a from t");
    assert_eq!(
        result["structuredContent"]["rows"],
        json!([[1]]),
        "{result}"
    );
    assert!(took < Duration::from_secs(1), "answered after {took:?}");
    for call in slow {
        let (result, _) = call.join().unwrap();
        assert!(
            tool_error(&result).contains("stopped after 4 s"),
            "{result}"
        );
    }
}

/// With every read connection taken, a call waits `--connection-wait` and is refused as busy,
/// and the metrics show it in the queue meanwhile.
#[test]
fn a_call_that_waits_too_long_for_a_connection_is_refused_as_busy() {
    let scratch = TempDir::new();
    let flags = [
        "--read-connections",
        "2",
        "--connection-wait",
        "1500ms",
        "--query-timeout",
        "6s",
    ];
    let (serve, metrics) = serve_sqlite(&scratch, &flags);
    assert_eq!(read_pool(&metrics, "mcp_sql_pool_connections"), 2);
    let slow = start_slow(&serve.url, 2);
    wait_until("two slow queries run", || {
        read_pool(&metrics, "mcp_sql_pool_connections_in_use") == 2
    });
    let url = serve.url.clone();
    let third = std::thread::spawn(move || query(&url, "select 1"));
    wait_until("the third call waits", || {
        read_pool(&metrics, "mcp_sql_pool_calls_waiting") == 1
    });
    let (result, took) = third.join().unwrap();
    let message = tool_error(&result);
    assert!(
        message.contains("busy")
            && message.contains("all 2 connections")
            && message.contains("1500 ms"),
        "{message}"
    );
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(5),
        "answered after {took:?}"
    );
    assert_eq!(read_pool(&metrics, "mcp_sql_pool_calls_waiting"), 0);
    for call in slow {
        call.join().unwrap();
    }
    let (result, _) = query(&serve.url, "select a from t");
    assert_eq!(
        result["structuredContent"]["rows"],
        json!([[1]]),
        "{result}"
    );
}

/// `--handler-timeout` stops a call that runs past it, whatever it is waiting for: the client gets
/// a tool error that says so, the statement is interrupted on the engine (the one read connection
/// is free again at once), and the next call is served.
#[test]
fn a_call_past_the_handler_deadline_is_stopped_and_the_next_is_served() {
    let scratch = TempDir::new();
    let db = scratch.join("t.db");
    sqlite_file(&db, "CREATE TABLE t (a); INSERT INTO t VALUES (1);");
    let db_arg = format!("sqlite:{}", db.display());
    let serve = Serve::start(
        &scratch.join("data"),
        &[
            "--db",
            &db_arg,
            "--handler-timeout",
            "300ms",
            "--query-timeout",
            "10m",
            "--read-connections",
            "1",
        ],
    );
    let (result, took) = query(&serve.url, SLOW);
    let message = tool_error(&result);
    assert_eq!(
        message,
        "The tool query did not finish within 300 ms and was stopped."
    );
    assert!(took < Duration::from_secs(5), "answered after {took:?}");
    // With one read connection, this waits unless the slow statement was interrupted.
    let (result, took) = query(&serve.url, "select a from t");
    assert_eq!(
        result["structuredContent"]["rows"],
        json!([[1]]),
        "{result}"
    );
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
}
