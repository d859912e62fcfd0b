//! The official Python SDK's client (`mcp` 2.x) forced to the handshake era (`mode="legacy"`:
//! `initialize`, no `server/discover` probe) against `kelson serve`, over stdio and over HTTP with
//! sessions: it lists and calls the SQL tools, reads a table resource, and answers the write
//! approval through its elicitation callback, which reaches it as a real `elicitation/create`
//! request (on the pipe; on HTTP, on the response stream of the call that needs it).

use serde_json::{Value, json};

use super::{Scratch, check_sql_steps, plan, run_approving, stdio_command};
use crate::serve::support::Serve;

fn run(scratch: &Scratch, target: &[String]) -> Value {
    let mut command = super::installed().python("interop/py_serve_client.py");
    command
        .args(["legacy", &plan(json!({}))])
        .args(target)
        .env("KELSON_DATA_DIR", &scratch.data)
        .env_remove("KELSON_LOG");
    let summary = run_approving(scratch, command, |event| panic!("unexpected stop {event}"));
    check_sql_steps(&summary);
    let pretty = serde_json::to_string_pretty(&summary).unwrap();
    assert_eq!(summary["negotiatedVersion"], "2025-11-25", "{pretty}");
    assert_eq!(summary["serverName"], "kelson", "{pretty}");
    assert_eq!(summary["wire"]["sentInitialize"], true, "{pretty}");
    let methods = summary["wire"]["methods"].as_array().unwrap();
    assert!(!methods.contains(&json!("server/discover")), "{pretty}");
    assert_eq!(summary["wire"]["metaVersions"], json!([]), "{pretty}");
    summary
}

#[test]
fn legacy_mode_over_stdio() {
    if super::peers().is_none() {
        return;
    }
    let scratch = Scratch::new();
    let mut target = vec!["stdio".to_owned()];
    target.extend(stdio_command(&scratch.serve_args()));
    let summary = run(&scratch, &target);
    let pretty = serde_json::to_string_pretty(&summary).unwrap();
    assert_eq!(summary["wire"]["headerVersions"], json!([]), "{pretty}");
}

#[test]
fn legacy_mode_over_http() {
    if super::peers().is_none() {
        return;
    }
    let scratch = Scratch::new();
    let args = scratch.serve_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&scratch.data, &args);
    let summary = run(&scratch, &["http".to_owned(), serve.url.clone()]);
    let pretty = serde_json::to_string_pretty(&summary).unwrap();
    // Every request after initialize named the negotiated version.
    assert_eq!(
        summary["wire"]["headerVersions"],
        json!(["2025-11-25"]),
        "{pretty}"
    );
}
