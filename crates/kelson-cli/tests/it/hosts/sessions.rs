//! The session bounds docs/serve/hosts.md names, through the binary: `--max-sessions` and
//! `--session-idle` as the start-up log states them, `initialize` refused with 503 beyond the
//! bound, and an idle session ended (404) so that a new one fits.

use serde_json::json;

use crate::serve::support::{HttpReply, Serve, TempDir, http, wait_until};

const LEGACY: &str = "2025-11-25";

fn initialize(url: &str) -> HttpReply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "host", "version": "1"}
    }})
    .to_string();
    http(
        url,
        "POST",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        &body,
    )
}

fn list_tools(url: &str, session: &str) -> HttpReply {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    http(
        url,
        "POST",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", LEGACY),
            ("Mcp-Session-Id", session),
        ],
        &body,
    )
}

#[test]
fn the_readme_session_flags_reach_the_server() {
    let scratch = TempDir::new();
    let serve = Serve::start(
        scratch.path(),
        &["--max-sessions", "1000", "--session-idle", "10m"],
    );
    assert!(
        serve
            .log()
            .contains("Mcp-Session-Id sessions, at most 1000, ended after 600 s unused"),
        "{}",
        serve.log()
    );
}

#[test]
fn sessions_are_bounded_in_number_and_idle_time() {
    let scratch = TempDir::new();
    let serve = Serve::start(
        scratch.path(),
        &["--max-sessions", "1", "--session-idle", "1s"],
    );
    let first = initialize(&serve.url);
    assert_eq!(first.status, 200, "{}", first.body);
    let session = first
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let full = initialize(&serve.url);
    assert_eq!(full.status, 503, "{}", full.body);
    assert_eq!(full.header("retry-after"), Some("5"));

    // Unused for a second, the session ends (a request on it would keep it alive, so only new
    // handshakes knock): then there is room again, and its id is unknown.
    let mut minted = None;
    wait_until("the idle session ends", || {
        let reply = initialize(&serve.url);
        minted = reply.header("mcp-session-id").map(str::to_owned);
        reply.status == 200
    });
    assert!(minted.is_some_and(|id| id != session));
    assert_eq!(list_tools(&serve.url, &session).status, 404);
}
