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
