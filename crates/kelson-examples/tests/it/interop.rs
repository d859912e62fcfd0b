//! The official SDKs' clients against our server: the TypeScript SDK v2 client
//! (`@modelcontextprotocol/client`) and the Python SDK client (`mcp` 2.x), both pinned to
//! 2026-07-28, run their interop script (`peers/interop/ts-client.mjs`, `py_client.py`) against
//! `interop-server` over stdio and over Streamable HTTP, and print a JSON summary that these tests
//! check step by step, including the protocol revision that actually went over the wire.
//!
//! The peers come from `scripts/peers-install` (npm and PyPI, pinned); without them these tests
//! return at once and say so in one line (they fail under `KELSON_REQUIRE_ALL`, as `scripts/test`
//! runs them).

use std::process::Stdio;
use std::time::Duration;

use kelson_examples::interop::{GREETING_TEXT, SERVER_NAME};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

/// How long one client script may run: each of its steps has its own 15 s bound.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

const VERSION: &str = "2026-07-28";

/// The installed peers: the official clients these tests run.
struct Peers(kelson_testenv::Peers);

impl Peers {
    /// The peers, when installed; `None` (said in one line) when one is missing.
    fn get() -> Option<Peers> {
        kelson_testenv::Peers::get(&[
            "node_modules/.bin/node",
            "node_modules/@modelcontextprotocol/client/package.json",
            ".venv/bin/python",
        ])
        .map(Peers)
    }

    /// The command that runs one client script, without its target.
    fn client(&self, sdk: Sdk) -> Command {
        Command::from(match sdk {
            Sdk::TypeScript => self.0.node("interop/ts-client.mjs"),
            Sdk::Python => self.0.python("interop/py_client.py"),
        })
    }
}

#[derive(Clone, Copy, Debug)]
enum Sdk {
    TypeScript,
    Python,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Transport {
    Stdio,
    Http,
}

/// `interop-server --http 127.0.0.1:0`, and the URL it printed.
async fn http_server() -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_interop-server"))
        .args(["--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("interop-server starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("interop-server prints its address in time")
        .expect("stdout is readable")
        .expect("interop-server printed a line");
    let url = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    (child, url)
}

/// Runs one official client against our server and returns its summary.
async fn run_client(sdk: Sdk, transport: Transport) -> Value {
    let peers = Peers::get().expect("the test checked that the peers are installed");
    let mut command = peers.client(sdk);
    let _server = match transport {
        Transport::Stdio => {
            command
                .arg("stdio")
                .arg(env!("CARGO_BIN_EXE_interop-server"))
                .arg("--stdio");
            None
        }
        Transport::Http => {
            let (server, url) = http_server().await;
            command.arg("http").arg(url);
            Some(server)
        }
    };
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(CLIENT_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("the {sdk:?} client did not finish in {CLIENT_TIMEOUT:?}"))
        .expect("the client script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let summary: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "the {sdk:?} client printed no summary (status {}).\nstdout:\n{stdout}\nstderr:\n{stderr}",
                output.status
            )
        });
    assert!(
        summary["errors"].as_array().is_some_and(Vec::is_empty) && output.status.success(),
        "the {sdk:?} client over {transport:?} reported errors (status {}):\n{}\nstderr:\n{stderr}",
        output.status,
        serde_json::to_string_pretty(&summary).unwrap()
    );
    summary
}

/// Every step of the interop script, and the revision spoken.
fn check(summary: &Value, transport: Transport) {
    let pretty = serde_json::to_string_pretty(summary).unwrap();
    let steps = &summary["steps"];
    // The revision actually spoken: what the SDK negotiated, what every request's `_meta` named,
    // what every HTTP request's MCP-Protocol-Version header named, and no handshake.
    assert_eq!(summary["era"], "modern", "{pretty}");
    assert_eq!(summary["negotiatedVersion"], VERSION, "{pretty}");
    assert_eq!(
        summary["wire"]["metaVersions"],
        json!([VERSION]),
        "{pretty}"
    );
    assert_eq!(summary["wire"]["sentInitialize"], false, "{pretty}");
    let headers = if transport == Transport::Http {
        json!([VERSION])
    } else {
        json!([])
    };
    assert_eq!(summary["wire"]["headerVersions"], headers, "{pretty}");
    let methods = summary["wire"]["methods"].as_array().unwrap();
    for method in [
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "subscriptions/listen",
    ] {
        assert!(
            methods.contains(&json!(method)),
            "{method} not sent: {pretty}"
        );
    }

    assert_eq!(steps["discover"]["serverName"], SERVER_NAME, "{pretty}");
    assert!(
        steps["discover"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!(VERSION)),
        "{pretty}"
    );
    assert_eq!(
        steps["listTools"],
        json!(["add", "ask_name", "change_tools", "count_with_progress"]),
        "{pretty}"
    );
    assert_eq!(steps["add"], "5", "{pretty}");
    assert_eq!(steps["progress"]["result"], "counted to 3", "{pretty}");
    let progress: Vec<(f64, f64)> = steps["progress"]["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["progress"].as_f64().unwrap(),
                p["total"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(progress, [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)], "{pretty}");
    assert_eq!(
        steps["listResources"],
        json!(["interop://greeting"]),
        "{pretty}"
    );
    assert_eq!(steps["read"], GREETING_TEXT, "{pretty}");
    assert_eq!(steps["listPrompts"], json!(["greet"]), "{pretty}");
    assert_eq!(steps["prompt"], "Please greet interop.", "{pretty}");
    // MRTR: the SDK's elicitation handler was asked, and its answer reached the tool.
    assert_eq!(
        steps["elicitation"]["asked"],
        json!(["What is your name?"]),
        "{pretty}"
    );
    assert_eq!(
        steps["elicitation"]["result"], "Hello, interop!",
        "{pretty}"
    );
    assert_eq!(
        steps["listen"]["honored"]["toolsListChanged"], true,
        "{pretty}"
    );
    assert_eq!(steps["listen"]["trigger"], "tools changed", "{pretty}");
    assert_eq!(
        steps["listen"]["received"],
        json!(["notifications/tools/list_changed"]),
        "{pretty}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_client_over_stdio() {
    if Peers::get().is_none() {
        return;
    }
    let summary = run_client(Sdk::TypeScript, Transport::Stdio).await;
    check(&summary, Transport::Stdio);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_client_over_http() {
    if Peers::get().is_none() {
        return;
    }
    let summary = run_client(Sdk::TypeScript, Transport::Http).await;
    check(&summary, Transport::Http);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_over_stdio() {
    if Peers::get().is_none() {
        return;
    }
    let summary = run_client(Sdk::Python, Transport::Stdio).await;
    check(&summary, Transport::Stdio);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_over_http() {
    if Peers::get().is_none() {
        return;
    }
    let summary = run_client(Sdk::Python, Transport::Http).await;
    check(&summary, Transport::Http);
}
