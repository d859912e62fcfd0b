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
        run.stderr.contains("could not start the server"),
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
            "said nothing on its stdout within 2s; does it serve MCP on stdio? mcp serve does \
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
}
