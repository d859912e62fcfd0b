//! `--json` prints what the server sent: every member, in its order, nothing added; and a JSON-RPC
//! error as `{"error": ...}` on stdout, with the usual exit status.

use serde_json::{Value, json};

use crate::harness::{HttpServer, mcp};
use crate::legacy::legacy_server;

#[test]
fn json_is_the_result_as_sent() {
    let server = legacy_server();
    let run = mcp(&["tools", "--json", "--stdio", &server], "");
    run.expect_code(0);
    assert_eq!(
        run.json()["tools"][0]["execution"],
        json!({"taskSupport": "optional"}),
        "{}",
        run.stdout
    );

    // discover: a legacy server has no discover result; its initialize result is what it sent.
    let run = mcp(&["discover", "--json", "--stdio", &server], "");
    run.expect_code(0);
    assert_eq!(
        run.json(),
        json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
               "serverInfo": {"name": "sh-legacy", "version": "1"}})
    );

    let run = mcp(&["call", "legacy_echo", "--json", "--stdio", &server], "");
    run.expect_code(0);
    // Re-indented only: the order, the number as written, no resultType.
    assert_eq!(
        run.stdout,
        "{\n  \"content\": [\n    {\n      \"type\": \"text\",\n      \"text\": \"hi\"\n    }\n  ],\n  \
         \"zeta\": 1.50,\n  \"alpha\": {\n    \"later\": true\n  }\n}\n"
    );
}

#[test]
fn json_rpc_errors_are_printed_on_stdout() {
    let run = mcp(
        &["call", "legacy_fail", "--json", "--stdio", &legacy_server()],
        "",
    );
    run.expect_code(2);
    assert_eq!(
        run.json(),
        json!({"error": {"code": -32602, "message": "Unknown tool: legacy_fail",
                         "data": {"tool": "legacy_fail"}}})
    );
    assert!(
        run.stderr.contains("JSON-RPC error -32602"),
        "{}",
        run.stderr
    );

    let http = HttpServer::start();
    let run = http.run(&["call", "no_such_tool", "--json"], "");
    run.expect_code(2);
    assert_eq!(run.json()["error"]["code"], -32602, "{}", run.stdout);
    // Without --json stdout stays empty.
    let run = http.run(&["call", "no_such_tool"], "");
    run.expect_code(2);
    assert_eq!(run.stdout, "");
}

#[test]
fn modern_results_keep_their_members() {
    let http = HttpServer::start();
    let run = http.run(&["discover", "--json"], "");
    run.expect_code(0);
    let value: Value = run.json();
    assert_eq!(value["resultType"], "complete");
    assert!(value["capabilities"]["tools"].is_object());
    let run = http.run(&["call", "cli_echo", "--arg", "count=2", "--json"], "");
    run.expect_code(0);
    assert_eq!(run.json()["structuredContent"], json!({"count": 2}));
}
