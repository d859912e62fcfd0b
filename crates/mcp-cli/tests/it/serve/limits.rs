//! `mcp serve`'s SQL limits under hostile queries: a single value over the byte budget.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{Serve, TempDir, meta, post, sqlite_file};

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
