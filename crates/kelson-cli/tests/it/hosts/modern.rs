//! The TypeScript SDK v2 and Python clients pinned to 2026-07-28 against the same `kelson serve` the
//! handshake-era hosts use, with its defaults: no `initialize`, every request with the modern
//! `_meta` envelope (and on HTTP the matching `MCP-Protocol-Version`), and the write approval as a
//! 2026-07-28 input request answered through their elicitation handlers. And the TypeScript v2
//! client in its default mode, which hosts built on it get: still the handshake era.

use std::process::Command;

use serde_json::{Value, json};

use super::{Scratch, check_sql_steps, plan, run_approving, stdio_command};
use crate::serve::support::Serve;

const MODERN: &str = "2026-07-28";

#[derive(Clone, Copy, Debug)]
enum Sdk {
    TypeScript,
    Python,
}

fn client(sdk: Sdk, scratch: &Scratch, target: &[String]) -> Command {
    let peers = super::installed();
    let mut command = match sdk {
        Sdk::TypeScript => {
            let mut c = peers.node("interop/ts-serve-client.mjs");
            c.arg(plan(json!({})));
            c
        }
        Sdk::Python => {
            let mut c = peers.python("interop/py_serve_client.py");
            c.args([MODERN, &plan(json!({}))]);
            c
        }
    };
    command
        .args(target)
        .env("KELSON_DATA_DIR", &scratch.data)
        .env_remove("KELSON_LOG");
    command
}

fn check(summary: &Value, http: bool) {
    check_sql_steps(summary);
    let pretty = serde_json::to_string_pretty(summary).unwrap();
    assert_eq!(summary["negotiatedVersion"], MODERN, "{pretty}");
    assert_eq!(summary["wire"]["sentInitialize"], false, "{pretty}");
    assert_eq!(summary["wire"]["metaVersions"], json!([MODERN]), "{pretty}");
    let headers = if http { json!([MODERN]) } else { json!([]) };
    assert_eq!(summary["wire"]["headerVersions"], headers, "{pretty}");
}

#[test]
fn modern_clients_over_http() {
    if super::peers().is_none() {
        return;
    }
    let scratch = Scratch::new();
    let args = scratch.serve_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&scratch.data, &args);
    let target = ["http".to_owned(), serve.url.clone()];
    for sdk in [Sdk::TypeScript, Sdk::Python] {
        let summary = run_approving(&scratch, client(sdk, &scratch, &target), |event| {
            panic!("{sdk:?}: unexpected stop {event}")
        });
        check(&summary, true);
    }
}

#[test]
fn modern_clients_over_https_with_the_test_ca() {
    if super::peers().is_none() {
        return;
    }
    let scratch = Scratch::new();
    let ca = crate::certs::TestCa::new("kelson interop CA");
    let folder = scratch.data.parent().expect("the scratch folder");
    let ca_file = ca.write(folder, "ca.pem");
    let (cert, key) = ca
        .server(&["localhost", "127.0.0.1"], "interop", 7)
        .write(folder, "server");
    let mut args = scratch.serve_args();
    args.extend([
        "--tls-cert".to_owned(),
        cert.display().to_string(),
        "--tls-key".to_owned(),
        key.display().to_string(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&scratch.data, &args);
    assert!(serve.url.starts_with("https://"), "{}", serve.url);
    let target = ["http".to_owned(), serve.url.clone()];
    for sdk in [Sdk::TypeScript, Sdk::Python] {
        let mut command = client(sdk, &scratch, &target);
        // Each runtime's own way to trust a private CA: Node adds NODE_EXTRA_CA_CERTS to its
        // roots, httpx reads SSL_CERT_FILE instead of the system's.
        match sdk {
            Sdk::TypeScript => command.env("NODE_EXTRA_CA_CERTS", &ca_file),
            Sdk::Python => command.env("SSL_CERT_FILE", &ca_file),
        };
        let summary = run_approving(&scratch, command, |event| {
            panic!("{sdk:?}: unexpected stop {event}")
        });
        check(&summary, true);
    }
}

#[test]
fn modern_clients_over_stdio() {
    if super::peers().is_none() {
        return;
    }
    let scratch = Scratch::new();
    let mut target = vec!["stdio".to_owned()];
    target.extend(stdio_command(&scratch.serve_args()));
    for sdk in [Sdk::TypeScript, Sdk::Python] {
        let summary = run_approving(&scratch, client(sdk, &scratch, &target), |event| {
            panic!("{sdk:?}: unexpected stop {event}")
        });
        check(&summary, false);
    }
}

#[test]
fn typescript_v2_in_its_default_mode_speaks_the_handshake_era() {
    if super::peers().is_none() {
        return;
    }
    let scratch = Scratch::new();
    let args = scratch.serve_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(&scratch.data, &args);
    let mut command = super::installed().node("interop/ts-serve-client.mjs");
    command
        .arg(plan(json!({"pin": false})))
        .args(["http", &serve.url])
        .env_remove("KELSON_LOG");
    let summary = run_approving(&scratch, command, |event| panic!("unexpected stop {event}"));
    check_sql_steps(&summary);
    let pretty = serde_json::to_string_pretty(&summary).unwrap();
    assert_eq!(summary["era"], "legacy", "{pretty}");
    assert_eq!(summary["negotiatedVersion"], "2025-11-25", "{pretty}");
    assert_eq!(summary["wire"]["sentInitialize"], true, "{pretty}");
    assert_eq!(summary["wire"]["metaVersions"], json!([]), "{pretty}");
    assert_eq!(
        summary["wire"]["headerVersions"],
        json!(["2025-11-25"]),
        "{pretty}"
    );
}
