//! Errors a new user meets in the first hour, said in words: `https://` to a plain HTTP server,
//! a tool name with a typo, and, under `--json`, failures that are not JSON-RPC errors printed on
//! stdout as an error object too.

use crate::harness::{HttpServer, mcp};

/// A loopback port where nothing listens.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

#[test]
fn https_to_a_plain_http_server_says_it_does_not_speak_tls() {
    let server = HttpServer::start();
    let plain = server.url.clone();
    let https = plain.replacen("http://", "https://", 1);
    let run = mcp(&["tools", "--url", &https], "");
    run.expect_code(3);
    assert!(
        run.stderr.contains("the server does not speak TLS"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!("try --url {plain}")),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("InvalidContentType"),
        "rustls's words are replaced: {}",
        run.stderr
    );
    // The URL it suggests works.
    mcp(&["tools", "--url", &plain], "").expect_code(0);
}

#[test]
fn a_tool_name_with_a_typo_gets_the_closest_names() {
    let server = HttpServer::start();
    let run = server.run(&["call", "test_simple_txt"], "");
    run.expect_code(2);
    assert!(
        run.stderr.contains("JSON-RPC error -32602")
            && run.stderr.contains("did you mean \"test_simple_text\"?"),
        "{}",
        run.stderr
    );
    // Said before the call too, on the note that the server does not list it.
    assert!(
        run.stderr.contains(
            "does not list a tool named \"test_simple_txt\" (did you mean \"test_simple_text\"?)"
        ),
        "{}",
        run.stderr
    );
    // Two letters swapped.
    let run = server.run(&["call", "cli_ehco"], "");
    run.expect_code(2);
    assert!(
        run.stderr.contains("did you mean \"cli_echo\"?"),
        "{}",
        run.stderr
    );
    // Under --json stdout keeps the server's error as it was.
    let run = server.run(&["call", "test_simple_txt", "--json"], "");
    run.expect_code(2);
    assert_eq!(run.json()["error"]["code"], -32602, "{}", run.stdout);
    // Nothing near: no guess.
    let run = server.run(&["call", "deploy_to_production"], "");
    run.expect_code(2);
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);
}

#[test]
fn json_prints_transport_errors_on_stdout_too() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let run = mcp(&["tools", "--json", "--url", &url], "");
    run.expect_code(3);
    let error = &run.json()["error"];
    assert_eq!(error["kind"], "transport", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("connection refused"),
        "{error}"
    );
    assert_eq!(error["hint"], "is the server running?", "{error}");
    assert!(error.get("code").is_none(), "no JSON-RPC code: {error}");
    // stderr says it as before.
    assert!(run.stderr.contains("connection refused"), "{}", run.stderr);

    // A server that exits at once: the same shape, for a call.
    let run = mcp(&["call", "x", "--json", "--stdio", "false"], "");
    run.expect_code(3);
    assert_eq!(run.json()["error"]["kind"], "transport", "{}", run.stdout);

    // A local timeout is told apart from the transport.
    let server = HttpServer::start();
    let run = server.run(
        &[
            "call",
            "test_slow",
            "--arg",
            "ms=5000",
            "--timeout",
            "0.5",
            "--json",
        ],
        "",
    );
    run.expect_code(3);
    assert_eq!(run.json()["error"]["kind"], "timeout", "{}", run.stdout);

    // Without --json stdout stays empty.
    let run = mcp(&["tools", "--url", &url], "");
    run.expect_code(3);
    assert_eq!(run.stdout, "");
}
