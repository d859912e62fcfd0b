//! `--era auto|modern|legacy` on the client verbs: against our dual-era fixture (over loopback HTTP
//! and `conformance-server --stdio`) forcing legacy gives a legacy session (discover shows the
//! initialize result) and forcing modern a modern one; against the handshake-era reference server
//! (server-everything) forcing modern fails clearly, with exit 2 and a hint; against a modern-only
//! `kelson serve`, forcing legacy gets its refusal.

use serde_json::Value;

use crate::harness::{Everything, HttpServer, Run, everything_stdio, mcp, stdio_server};
use crate::serve::support::{Serve, TempDir};

/// `kelson discover --json ARGS` on the fixture, over HTTP and over stdio.
fn discover_both(args: &[&str]) -> Vec<Run> {
    let server = HttpServer::start();
    let mut http = vec!["discover", "--json"];
    http.extend_from_slice(args);
    let over_http = server.run(&http, "");
    let stdio = stdio_server();
    let mut over_stdio = vec!["discover", "--json", "--stdio", &stdio];
    over_stdio.extend_from_slice(args);
    vec![over_http, mcp(&over_stdio, "")]
}

#[test]
fn forcing_legacy_on_the_dual_era_fixture_gives_a_legacy_session() {
    for run in discover_both(&["--era", "legacy"]) {
        run.expect_code(0);
        let result = run.json();
        // The initialize result as the server sent it, not a discover result.
        assert_eq!(result["protocolVersion"], "2025-11-25", "{result}");
        assert!(result["serverInfo"]["name"].is_string(), "{result}");
        assert!(result.get("supportedVersions").is_none(), "{result}");
        assert!(result.get("resultType").is_none(), "{result}");
    }
    // Without --era, and with --era modern, the same fixture answers discover.
    for args in [&[][..], &["--era", "modern"][..]] {
        for run in discover_both(args) {
            run.expect_code(0);
            let result: Value = run.json();
            let versions = result["supportedVersions"].as_array().expect("versions");
            assert!(versions.iter().any(|v| v == "2026-07-28"), "{result}");
        }
    }
}

#[test]
fn a_call_works_in_each_forced_era() {
    let server = HttpServer::start();
    let stdio = stdio_server();
    for era in ["legacy", "modern"] {
        let run = server.run(&["call", "test_simple_text", "--era", era], "");
        run.expect_code(0);
        assert!(!run.stdout.trim().is_empty(), "{era}: {}", run.stdout);
        let run = mcp(
            &["call", "test_simple_text", "--era", era, "--stdio", &stdio],
            "",
        );
        run.expect_code(0);
        assert!(!run.stdout.trim().is_empty(), "{era}: {}", run.stdout);
    }
    // The human discover says which era it speaks.
    let run = server.run(&["discover", "--era", "legacy"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains("2025-11-25 (legacy, with initialize)"),
        "{}",
        run.stdout
    );
}

#[track_caller]
fn refused_as_not_modern(run: &Run) {
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("the server does not speak the modern protocol (2026-07-28): it answered server/discover with"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("--era legacy"),
        "a hint: {}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn forcing_modern_on_a_handshake_era_server_fails_clearly() {
    let Some(stdio) = everything_stdio() else {
        return;
    };
    refused_as_not_modern(&mcp(&["tools", "--era", "modern", "--stdio", &stdio], ""));
    let Some(server) = Everything::start() else {
        return;
    };
    let run = mcp(&["tools", "--era", "modern", "--url", &server.url], "");
    refused_as_not_modern(&run);
    assert!(run.stderr.contains("HTTP 400"), "{}", run.stderr);
    // Detected, or forced to legacy, the same server works.
    for era in ["auto", "legacy"] {
        let run = mcp(&["tools", "--era", era, "--url", &server.url], "");
        run.expect_code(0);
        assert!(run.stdout.contains("get-sum"), "{era}: {}", run.stdout);
    }
    let run = mcp(&["tools", "--era", "legacy", "--stdio", &stdio], "");
    run.expect_code(0);
    assert!(run.stdout.contains("get-sum"), "{}", run.stdout);
}

#[test]
fn a_silent_server_forced_to_modern_is_reported_as_silent() {
    let run = mcp(
        &[
            "tools",
            "--era",
            "modern",
            "--timeout",
            "1s",
            "--stdio",
            "sleep 30",
        ],
        "",
    );
    run.expect_code(3);
    assert!(
        run.stderr
            .contains(r#"the server "sleep 30" said nothing on its stdout within 1s"#),
        "{}",
        run.stderr
    );
}

#[test]
fn forcing_legacy_on_a_modern_only_server_gets_its_refusal_and_a_hint() {
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &["--eras", "modern"]);
    let run = serve.run(&["tools", "--era", "legacy"], "");
    run.expect_code(2);
    assert!(
        run.stderr.contains("initialize: JSON-RPC error -32022"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("the server speaks only the modern protocol: leave out --era legacy"),
        "{}",
        run.stderr
    );
    serve.run(&["tools", "--era", "modern"], "").expect_code(0);
}

#[test]
fn an_unknown_era_is_a_usage_error() {
    let run = mcp(&["tools", "--era", "2025", "--stdio", "true"], "");
    run.expect_code(4);
    assert!(run.stderr.contains("--era"), "{}", run.stderr);
    let run = mcp(
        &["bench", "--era", "old", "--stdio", "true", "--list-tools"],
        "",
    );
    run.expect_code(4);
}
