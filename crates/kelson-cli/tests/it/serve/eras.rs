//! `kelson serve` and the two eras: handshake-era hosts served by default over HTTP (sessions, or
//! stateless with `--legacy-http stateless`) and over stdio, and `--eras modern` refusing them
//! with the supported version.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::Stdio;

use serde_json::{Value, json};

use super::support::{Serve, TempDir, http, serve_refused};
use crate::harness::command;

const JSON_HEADERS: &[(&str, &str)] = &[
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "old-host", "version": "1"}
    }})
    .to_string()
}

fn post(url: &str, extra: &[(&str, &str)], body: &str) -> (u16, Option<String>, Value) {
    let mut headers = JSON_HEADERS.to_vec();
    headers.extend_from_slice(extra);
    let reply = http(url, "POST", &headers, body);
    let json = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
    (
        reply.status,
        reply.header("mcp-session-id").map(str::to_owned),
        json,
    )
}

#[test]
fn handshake_era_hosts_get_a_session_over_http_by_default() {
    let scratch = TempDir::new();
    let serve = Serve::start(scratch.path(), &[]);
    assert!(
        serve
            .log()
            .contains("and 2025-11-25/06-18/03-26 to hosts that start with initialize"),
        "{}",
        serve.log()
    );
    let (status, session, reply) = post(&serve.url, &[], &initialize());
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["result"]["protocolVersion"], "2025-06-18");
    let session = session.expect("a session id");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let (status, _, tools) = post(&serve.url, &headers, &list);
    assert_eq!(status, 200, "{tools}");
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"query"), "{names:?}");
    assert!(tools["result"].get("resultType").is_none());
}

#[test]
fn the_stateless_mode_mints_no_session() {
    let scratch = TempDir::new();
    let serve = Serve::start(scratch.path(), &["--legacy-http", "stateless"]);
    assert!(serve.log().contains("stateless"), "{}", serve.log());
    let (status, session, reply) = post(&serve.url, &[], &initialize());
    assert_eq!(status, 200, "{reply}");
    assert_eq!(session, None);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "list_tables", "arguments": {}}})
    .to_string();
    let (status, _, result) = post(&serve.url, &[("MCP-Protocol-Version", "2025-06-18")], &call);
    assert_eq!(status, 200, "{result}");
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("orders"),
        "{result}"
    );
}

/// `initialize` over `kelson serve --stdio ARGS`: the first line it answers.
fn stdio_initialize(data: &std::path::Path, args: &[&str]) -> Value {
    let mut all = vec!["serve", "--stdio"];
    all.extend_from_slice(args);
    let mut child = command(&all)
        .env("KELSON_DATA_DIR", data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kelson serve starts");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", initialize()).unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    let _ = child.wait();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

#[test]
fn stdio_serves_both_eras_unless_told_modern() {
    let scratch = TempDir::new();
    let both = stdio_initialize(scratch.path(), &[]);
    assert_eq!(both["result"]["protocolVersion"], "2025-06-18", "{both}");
    let modern = stdio_initialize(scratch.path(), &["--eras", "modern"]);
    assert_eq!(modern["error"]["code"], -32022, "{modern}");
    assert_eq!(
        modern["error"]["data"]["supported"],
        json!(["2026-07-28"]),
        "{modern}"
    );
}

#[test]
fn a_modern_only_http_server_refuses_initialize() {
    let scratch = TempDir::new();
    let config = scratch.join("kelson.toml");
    std::fs::write(&config, "[server]\neras = \"modern\"\n").unwrap();
    let serve = Serve::start(scratch.path(), &["--config", config.to_str().unwrap()]);
    assert!(serve.log().contains("2026-07-28 only"), "{}", serve.log());
    let (status, session, reply) = post(&serve.url, &[], &initialize());
    assert_eq!(status, 400, "{reply}");
    assert_eq!(reply["error"]["code"], -32022);
    assert_eq!(session, None);
}

#[test]
fn era_settings_are_checked() {
    let scratch = TempDir::new();
    let config = scratch.join("kelson.toml");
    for (text, want) in [
        (
            "[server]\neras = \"old\"\n",
            "server.eras: unknown variant `old`, expected `both` or `modern`",
        ),
        (
            "[http]\nlegacy = \"sticky\"\n",
            "http.legacy: unknown variant `sticky`, expected `sessions` or `stateless`",
        ),
        (
            "[http]\nmax_sessions = 0\n",
            "http.max_sessions: must be at least 1 (line 2)",
        ),
        (
            "[http]\nsession_idle = 0\n",
            "http.session_idle: must be more than zero (line 2)",
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        let run = serve_refused(scratch.path(), &["--config", config.to_str().unwrap()]);
        assert!(run.stderr.contains(want), "{text}: {}", run.stderr);
    }
    let run = serve_refused(scratch.path(), &["--eras", "old"]);
    run.expect_code(4);
    assert!(
        run.stderr.contains("possible values: both, modern"),
        "{}",
        run.stderr
    );
}
