//! The official TypeScript SDK v1 client (`@modelcontextprotocol/sdk` 1.x) against `kelson serve`,
//! over stdio, Streamable HTTP with sessions and stateless HTTP: it negotiates 2025-11-25, lists and
//! calls the SQL tools, reads a table resource, subscribes to a file of the root (and, where the
//! transport has a stream for it, gets `notifications/resources/updated` once the test changes the
//! file), and answers the `execute` approval through its elicitation handler: declined, nothing is
//! written; accepted, exactly one row changes.

use serde_json::{Value, json};

use super::{Scratch, check_sql_steps, plan, run_approving, stdio_command};
use crate::serve::support::{Serve, http};

const LEGACY: &str = "2025-11-25";

/// Runs the client on `target` (`stdio COMMAND...` or `http URL`), changing the watched file when
/// it waits for that; returns its summary after the checks every transport shares.
fn run(scratch: &Scratch, target: &[String], await_update: bool) -> Value {
    let mut command = super::installed().node("interop/ts-v1-serve-client.mjs");
    command
        .arg(plan(json!({
            "subscribe": scratch.watched_uri(),
            "awaitUpdate": await_update,
        })))
        .args(target)
        .env("KELSON_DATA_DIR", &scratch.data)
        .env_remove("KELSON_LOG");
    let summary = run_approving(scratch, command, |event| {
        assert_eq!(event["awaiting"], "update", "unexpected stop {event}");
        scratch.change_watched();
    });
    check_sql_steps(&summary);

    let pretty = serde_json::to_string_pretty(&summary).unwrap();
    assert_eq!(summary["negotiatedVersion"], LEGACY, "{pretty}");
    assert_eq!(summary["serverInfo"]["name"], "kelson", "{pretty}");
    let resources = summary["steps"]["listResources"]
        .as_array()
        .expect("resources");
    assert!(resources.contains(&json!(super::TABLE)), "{pretty}");
    let root = format!("file://{}/", scratch.root.display());
    assert!(resources.contains(&json!(root)), "{pretty}");
    // The handshake era, and nothing of 2026-07-28.
    let methods = summary["wire"]["methods"].as_array().unwrap();
    for method in [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        assert!(
            methods.contains(&json!(method)),
            "{method} not sent: {pretty}"
        );
    }
    assert!(!methods.contains(&json!("server/discover")), "{pretty}");
    summary
}

/// The HTTP exchanges the client made, as (HTTP method, JSON-RPC method, status).
fn exchanges(summary: &Value) -> Vec<(String, String, u64)> {
    summary["wire"]["http"]
        .as_array()
        .expect("http exchanges")
        .iter()
        .map(|e| {
            (
                e["method"].as_str().unwrap().to_owned(),
                e["rpc"].as_str().unwrap_or("").to_owned(),
                e["status"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[test]
fn over_stdio() {
    if super::peers().is_none() {
        return;
    }
    let scratch = Scratch::new();
    let mut target = vec!["stdio".to_owned()];
    target.extend(stdio_command(&scratch.serve_args()));
    let summary = run(&scratch, &target, true);
    let pretty = serde_json::to_string_pretty(&summary).unwrap();
    assert_eq!(
        summary["steps"]["subscribe"],
        json!({"answered": {}, "updates": [scratch.watched_uri()]}),
        "{pretty}"
    );
}

#[test]
fn over_http_with_sessions() {
    if super::peers().is_none() {
        return;
    }
    let scratch = Scratch::new();
    let args = scratch.serve_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&scratch.data, &args);
    assert!(
        serve.log().contains("Mcp-Session-Id sessions"),
        "{}",
        serve.log()
    );
    let summary = run(&scratch, &["http".to_owned(), serve.url.clone()], true);
    let pretty = serde_json::to_string_pretty(&summary).unwrap();
    assert_eq!(
        summary["steps"]["subscribe"],
        json!({"answered": {}, "updates": [scratch.watched_uri()]}),
        "{pretty}"
    );

    // As a host does it: initialize, the notification POSTed (202), the GET stream opened right
    // after it (200), answers to the approval questions POSTed (202), and DELETE at the end (200).
    let exchanges = exchanges(&summary);
    assert_eq!(
        exchanges[0],
        ("POST".into(), "initialize".into(), 200),
        "{pretty}"
    );
    assert_eq!(
        exchanges[1],
        ("POST".into(), "notifications/initialized".into(), 202),
        "{pretty}"
    );
    assert!(
        exchanges.contains(&("GET".into(), String::new(), 200)),
        "{pretty}"
    );
    let answers: Vec<_> = exchanges.iter().filter(|e| e.1 == "response").collect();
    assert_eq!(answers.len(), 2, "{pretty}");
    assert!(answers.iter().all(|e| e.2 == 202), "{pretty}");
    assert_eq!(
        exchanges.last(),
        Some(&("DELETE".into(), String::new(), 200)),
        "{pretty}"
    );
    // Every request after initialize named the session and the negotiated version.
    let wire = summary["wire"]["http"].as_array().unwrap();
    let session = wire[1]["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();
    assert_eq!(session.len(), 32, "{pretty}");
    for exchange in &wire[1..] {
        assert_eq!(exchange["sessionId"], session.as_str(), "{pretty}");
        assert_eq!(exchange["protocolVersion"], LEGACY, "{pretty}");
    }

    // The DELETE ended the session: its id is unknown now.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let reply = http(
        &serve.url,
        "POST",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", LEGACY),
            ("Mcp-Session-Id", &session),
        ],
        &body,
    );
    assert_eq!(reply.status, 404, "{}\n{}", reply.head, reply.body);
}

#[test]
fn over_http_stateless() {
    if super::peers().is_none() {
        return;
    }
    let scratch = Scratch::new();
    let mut args = scratch.serve_args();
    args.extend(["--legacy-http".to_owned(), "stateless".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&scratch.data, &args);
    assert!(serve.log().contains("stateless"), "{}", serve.log());
    let summary = run(&scratch, &["http".to_owned(), serve.url.clone()], false);
    let pretty = serde_json::to_string_pretty(&summary).unwrap();
    // The subscription is answered; with no stream to carry updates, none is promised.
    assert_eq!(
        summary["steps"]["subscribe"],
        json!({"answered": {}, "updates": []}),
        "{pretty}"
    );
    // No session: no id, the GET stream refused with 405 (which the client takes as "none"), and
    // nothing to DELETE.
    let wire = summary["wire"]["http"].as_array().unwrap();
    assert!(wire.iter().all(|e| e["sessionId"].is_null()), "{pretty}");
    let exchanges = exchanges(&summary);
    assert!(
        exchanges.contains(&("GET".into(), String::new(), 405)),
        "{pretty}"
    );
    assert!(!exchanges.iter().any(|e| e.0 == "DELETE"), "{pretty}");
    for exchange in &wire[1..] {
        assert_eq!(exchange["protocolVersion"], LEGACY, "{pretty}");
    }
}
