//! Verbs that use what the server offers: lists it does not have, listens it cannot serve, a
//! capability it needs from us, and a legacy server's URL elicitation sent as an error.

use crate::harness::{HttpServer, mcp};
use crate::serve::support::{TempDir, mcp_in, stdio_serve};

#[test]
fn a_list_the_server_does_not_offer_is_empty_not_an_error() {
    // kelson serve offers tools and resources, not prompts.
    let data = TempDir::new();
    let server = stdio_serve(&[]);
    let run = mcp_in(data.path(), &["prompts", "--stdio", &server], "");
    run.expect_code(0);
    assert_eq!(run.stdout, "(this server offers no prompts)\n");
    let run = mcp_in(data.path(), &["prompts", "--json", "--stdio", &server], "");
    run.expect_code(0);
    assert_eq!(run.json(), serde_json::json!({"prompts": []}));
    assert!(
        run.stderr.contains("this server offers no prompts"),
        "{}",
        run.stderr
    );
    // Getting one is still an error, with what it means.
    let run = mcp_in(data.path(), &["prompt", "greet", "--stdio", &server], "");
    run.expect_code(2);
    assert!(
        run.stderr
            .ends_with("; this server offers no prompts (kelson discover shows what it offers)\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn listening_for_what_the_server_cannot_send_is_an_error() {
    let data = TempDir::new();
    let server = stdio_serve(&[]);
    // Before: "listening for nothing", until Ctrl-C.
    let run = mcp_in(
        data.path(),
        &["listen", "--prompts", "--stdio", &server],
        "",
    );
    run.expect_code(2);
    assert_eq!(
        run.stderr,
        "error: not supported by this server: prompt list changes (its capabilities lack \
         prompts.listChanged)\n"
    );
    // Without flags: what it announces, and nothing else.
    let live = crate::harness::Live::start_in(data.path(), &["listen", "--stdio", &server]);
    let seen = crate::harness::Live::wait_for(&live.stderr, "listening for");
    assert_eq!(
        seen.last().unwrap(),
        "listening for tool list changes, resource list changes (Ctrl-C to stop)"
    );
    let (status, _) = live.interrupt();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_server_that_needs_roots_points_at_root() {
    let server = HttpServer::start();
    let run = server.run(&["call", "cli_roots"], "");
    run.expect_code(2);
    assert!(run.stderr.contains("-32021"), "{}", run.stderr);
    assert!(
        run.stderr
            .ends_with("\nhint: the server needs roots: offer them with --root DIR (repeatable)\n"),
        "{}",
        run.stderr
    );
}

/// A 2025-11-25 stdio server in sh whose one tool answers -32042 (URL elicitation required).
const LEGACY_URL_SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh-url","version":"1"}}}\n' "$id";;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"authorize","inputSchema":{"type":"object"}}]}}\n' "$id";;
    *'"method":"tools/call"'*)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32042,"message":"This request requires more information.","data":{"elicitations":[{"mode":"url","elicitationId":"e1","url":"https://auth.example.com/connect?state=xyz","message":"Sign in to the example service"}]}}}\n' "$id";;
    *'"id":'*)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n' "$id";;
  esac
done
"#;

#[test]
fn a_url_elicitation_sent_as_an_error_gets_the_consent_prompt() {
    let dir = TempDir::new();
    let script = dir.join("url.sh");
    std::fs::write(&script, LEGACY_URL_SERVER).unwrap();
    let server = format!("sh '{}'", script.display());

    let run = mcp(&["call", "authorize", "--stdio", &server], "y\n");
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("The server asks you to open a URL: Sign in to the example service"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("URL: https://auth.example.com/connect?state=xyz"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.ends_with(
            "error: tools/call: the server needs the URL above opened first; run the command \
             again once you are done there\n"
        ),
        "{}",
        run.stderr
    );
    // Not the raw error.
    assert!(!run.stderr.contains("elicitationId"), "{}", run.stderr);

    let run = mcp(&["call", "authorize", "--stdio", &server], "n\n");
    run.expect_code(2);
    assert!(
        run.stderr.ends_with("opened first, which was declined\n"),
        "{}",
        run.stderr
    );
    let run = mcp(&["call", "authorize", "--no-input", "--stdio", &server], "");
    run.expect_code(2);
    assert!(
        run.stderr.ends_with("opened first, which was declined\n"),
        "{}",
        run.stderr
    );
}
