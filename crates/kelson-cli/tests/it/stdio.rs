//! The client commands over stdio, against the `conformance-server` binary.

use crate::harness::{mcp, stdio_server};

#[test]
fn commands_over_stdio() {
    let server = stdio_server();
    let run = mcp(&["discover", "--stdio", &server], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains("2026-07-28 (stateless)"),
        "{}",
        run.stdout
    );

    let run = mcp(&["tools", "--stdio", &server], "");
    run.expect_code(0);
    assert!(run.stdout.contains("test_simple_text"), "{}", run.stdout);

    let run = mcp(&["call", "test_simple_text", "--stdio", &server], "");
    run.expect_code(0);
    assert_eq!(run.stdout, "This is a simple text response for testing.\n");

    let value = mcp(
        &["read", "test://static-text", "--json", "--stdio", &server],
        "",
    )
    .json();
    assert_eq!(value["contents"][0]["uri"], "test://static-text");

    let run = mcp(&["call", "test_tool_with_progress", "--stdio", &server], "");
    run.expect_code(0);
    assert!(run.stderr.contains("progress: 50/100"), "{}", run.stderr);

    mcp(&["call", "test_error_handling", "--stdio", &server], "").expect_code(1);
    mcp(&["prompt", "no_such_prompt", "--stdio", &server], "").expect_code(2);
}

#[test]
fn a_server_that_cannot_start_is_a_transport_error() {
    let run = mcp(&["tools", "--stdio", "/nonexistent/mcp-server --stdio"], "");
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("command not found: /nonexistent/mcp-server"),
        "{}",
        run.stderr
    );
    // A child that exits at once.
    let run = mcp(&["tools", "--stdio", "sh -c 'exit 0'"], "");
    run.expect_code(3);
}

#[test]
fn a_child_that_exits_says_so_with_its_status() {
    let run = mcp(
        &["tools", "--stdio", "sh -c 'echo \"no config\" >&2; exit 3'"],
        "",
    );
    run.expect_code(3);
    assert!(
        run.stderr.contains(
            "the server \"sh -c 'echo \\\"no config\\\" >&2; exit 3'\" exited with status 3 \
             before answering; does it serve MCP on stdio?"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("no config"), "{}", run.stderr);
}

#[test]
fn a_child_that_prints_text_is_shown_with_what_it_printed() {
    let started = std::time::Instant::now();
    let run = mcp(
        &[
            "tools",
            "--stdio",
            "sh -c 'echo Serving HTTP on port 8000; exec sleep 30'",
        ],
        "",
    );
    run.expect_code(3);
    // A second of grace, not the 10 s of the era probe.
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
    assert!(
        run.stderr.contains(
            "printed text that is not JSON-RPC on its stdout: \"Serving HTTP on port 8000\"; \
             does it serve MCP on stdio?"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn mcp_serve_without_stdio_is_silent_and_the_hint_says_stdio() {
    let data = crate::serve::support::TempDir::new();
    let line = format!("'{}' serve --http 127.0.0.1:0", crate::harness::mcp_path());
    let run = crate::serve::support::mcp_in(
        data.path(),
        &["tools", "--stdio", &line, "--timeout", "1"],
        "",
    );
    run.expect_code(3);
    assert!(
        run.stderr.contains(
            "said nothing on its stdout within 2s; does it serve MCP on stdio? kelson serve does \
             with --stdio (it serves HTTP without it)"
        ),
        "{}",
        run.stderr
    );
    // What it said on stderr shows what it does instead.
    assert!(
        run.stderr.contains("serving MCP on http://"),
        "{}",
        run.stderr
    );
    // And the wait was announced when the probe's time was up.
    assert!(
        run.stderr.starts_with(
            "note: the server has not answered for 1s; waiting up to 1s more (--timeout)\n"
        ),
        "{}",
        run.stderr
    );
}

/// A modern stdio server in POSIX sh that talks on stderr about every request it reads, and
/// crashes on `tools/call`: written to a file in `dir`, and the `--stdio` line that runs it.
fn chatty_server(dir: &std::path::Path) -> String {
    let script = r#"
while IFS= read -r line; do
  echo "chatter: read a line" >&2
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"server/discover"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}}\n' "$id";;
    *'"method":"tools/list"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","tools":[{"name":"crash","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"public"}}\n' "$id";;
    *'"method":"tools/call"'*)
      i=0
      while [ $i -lt 30 ]; do echo "backtrace frame $i" >&2; i=$((i+1)); done
      echo "panicked: the crash tool crashed" >&2
      exit 101;;
    *'"id":'*)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n' "$id";;
  esac
done
"#;
    let path = dir.join("chatty.sh");
    std::fs::write(&path, script).unwrap();
    format!("sh '{}'", path.display())
}

#[test]
fn a_server_stderr_is_shown_on_request_or_when_it_fails() {
    let dir = crate::serve::support::TempDir::new();
    let server = chatty_server(dir.path());
    // Kept out of the output of a command that works ...
    let run = mcp(&["tools", "--stdio", &server], "");
    run.expect_code(0);
    assert!(run.stdout.contains("crash"), "{}", run.stdout);
    assert_eq!(run.stderr, "");
    // ... shown as it comes with --server-stderr ...
    let run = mcp(&["tools", "--server-stderr", "--stdio", &server], "");
    run.expect_code(0);
    assert!(
        run.stderr.contains("chatter: read a line"),
        "{}",
        run.stderr
    );
    // ... and its last 20 lines when the server fails, with how it ended.
    let run = mcp(&["call", "crash", "--stdio", &server], "");
    run.expect_code(3);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(
        lines[0].starts_with("error: the connection to the server ended")
            && lines[0].ends_with("; the server exited with status 101"),
        "{}",
        run.stderr
    );
    assert_eq!(
        lines[1], "the server's stderr ended with:",
        "{}",
        run.stderr
    );
    assert_eq!(lines.len(), 22, "{}", run.stderr);
    assert_eq!(lines[2], "  backtrace frame 11");
    assert_eq!(lines[21], "  panicked: the crash tool crashed");
    // A JSON-RPC error is the server working: no stderr.
    let run = mcp(&["prompt", "nothing", "--stdio", &server], "");
    run.expect_code(2);
    assert!(!run.stderr.contains("chatter"), "{}", run.stderr);
}

#[test]
fn a_missing_command_says_so_in_the_client_and_the_load_tool() {
    let run = mcp(&["tools", "--stdio", "no-such-mcp-server --stdio"], "");
    run.expect_code(3);
    assert_eq!(run.stderr, "error: command not found: no-such-mcp-server\n");
    let run = mcp(
        &[
            "bench",
            "--stdio",
            "no-such-mcp-server --stdio",
            "--list-tools",
            "-n",
            "10",
        ],
        "",
    );
    run.expect_code(3);
    assert!(
        run.stderr.contains("command not found: no-such-mcp-server"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_load_tool_splits_its_command_like_the_client() {
    // Words, not a shell: `$HOME` reaches the program as written. (Through `sh -c` it was
    // expanded, and the server then saw a different argument than `kelson tools` gives it.)
    let dir = crate::serve::support::TempDir::new();
    let script = dir.join("args.sh");
    std::fs::write(&script, "printf '%s\\n' \"$1\" >&2\n").unwrap();
    let line = format!("sh '{}' '$HOME'", script.display());
    let run = mcp(
        &[
            "bench",
            "--server-stderr",
            "--stdio",
            &line,
            "--list-tools",
            "-n",
            "1",
        ],
        "",
    );
    assert!(run.stderr.lines().any(|l| l == "$HOME"), "{}", run.stderr);
    let run = mcp(&["tools", "--server-stderr", "--stdio", &line], "");
    assert!(run.stderr.lines().any(|l| l == "$HOME"), "{}", run.stderr);
}
