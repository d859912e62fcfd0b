//! `examples/elicitation.rs`, `examples/progress.rs` and `examples/templates.rs`, each started
//! over stdio and driven through the real client.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kelson_client::{Client, ErrorKind, Stderr};
use kelson_types::{ElicitAction, ElicitResult, ElicitValue};
use serde_json::json;
use tokio::process::Command;

use super::quickstart::example;

async fn connect(name: &str, builder: kelson_client::ClientBuilder) -> Client {
    builder
        .connect_stdio(Command::new(example(name)))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[tokio::test]
async fn the_elicitation_example_asks_and_greets() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let client = connect(
        "elicitation",
        Client::builder().on_elicit_form(move |params: kelson_types::ElicitRequestFormParams| {
            seen.lock().unwrap().push(params.message.clone());
            async move {
                let content =
                    BTreeMap::from([("name".to_owned(), ElicitValue::String("Ada".into()))]);
                Ok(ElicitResult::accept(content))
            }
        }),
    )
    .await;
    let reply = client.call_tool("greet", json!({})).await.expect("greet");
    assert_eq!(reply.content[0].as_text(), Some("Hello, Ada!"));
    assert_eq!(*asked.lock().unwrap(), ["Your name?"]);
    client.close().await.unwrap();

    // A user who declines is greeted all the same.
    let client = connect(
        "elicitation",
        Client::builder().on_elicit_form(|_| async {
            Ok(ElicitResult {
                action: ElicitAction::Decline,
                content: None,
            })
        }),
    )
    .await;
    let reply = client.call_tool("greet", json!({})).await.expect("greet");
    assert_eq!(reply.content[0].as_text(), Some("Hello, whoever you are."));
    client.close().await.unwrap();
}

#[tokio::test]
async fn the_progress_example_reports_every_step_and_stops_when_cancelled() {
    let client = connect("progress", Client::builder().stderr(Stderr::Capture)).await;
    let steps = Arc::new(Mutex::new(Vec::new()));
    let seen = steps.clone();
    let reply = client
        .call_tool("count", json!({"to": 3, "step_ms": 10}))
        .on_progress(move |p| seen.lock().unwrap().push((p.progress, p.total)))
        .await
        .expect("count");
    assert_eq!(reply.content[0].as_text(), Some("counted to 3"));
    assert_eq!(
        *steps.lock().unwrap(),
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );

    // A call given up on (its future dropped) is cancelled on the server: the handler sees the
    // cancellation at its first step and says so on stderr; the server goes on serving the next
    // call at once.
    let slow = client.call_tool("count", json!({"to": 1000, "step_ms": 1000}));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), slow)
            .await
            .is_err()
    );
    let given_up = std::time::Instant::now();
    loop {
        let stderr = client.stderr().await.unwrap_or_default();
        if stderr.contains("count: cancelled at 1 of 1000") {
            break;
        }
        assert!(
            given_up.elapsed() < Duration::from_secs(5),
            "the handler did not see the cancellation; stderr: {stderr}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let reply = client
        .call_tool("count", json!({"to": 1, "step_ms": 1}))
        .await
        .expect("count after a cancellation");
    assert_eq!(reply.content[0].as_text(), Some("counted to 1"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn the_templates_example_reads_notes_by_typed_id() {
    let client = connect("templates", Client::builder()).await;
    let templates = client
        .list_all_resource_templates()
        .await
        .expect("templates");
    assert_eq!(templates[0].uri_template, "notes://{id}");
    assert_eq!(
        templates[0].description.as_deref(),
        Some("One note by its number.")
    );

    let index = client.read_resource("notes://index").await.expect("index");
    let text = index.contents[0].clone();
    assert_eq!(text.mime_type(), Some("text/plain"));
    let note = client.read_resource("notes://2").await.expect("note 2");
    assert_eq!(note.contents[0].mime_type(), Some("text/markdown"));
    assert_eq!(
        serde_json::to_value(&note.contents[0]).unwrap()["text"],
        "# Ideas\n\nA faster MCP server."
    );
    for missing in ["notes://9", "notes://two"] {
        let err = client.read_resource(missing).await.expect_err(missing);
        assert_eq!(err.kind(), ErrorKind::Protocol, "{missing}: {err}");
    }
    client.close().await.unwrap();
}

/// `GET path` on `addr`, the body of a 200.
async fn get(addr: &str, path: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_axum_example_shares_its_state_with_the_mcp_tools() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(example("axum_app"))
        .args(["--http", &addr])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("starts");
    let url = format!("http://{addr}/mcp");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let client = loop {
        match Client::builder().connect_http(&url).await {
            Ok(client) => break client,
            Err(_) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("axum_app did not serve {url}: {e}"),
        }
    };
    assert_eq!(get(&addr, "/visits").await, "0");
    for expected in ["1", "2"] {
        let reply = client.call_tool("visit", json!({})).await.expect("visit");
        assert_eq!(reply.content[0].as_text(), Some(expected));
    }
    // The web route reads what the tool wrote.
    assert_eq!(get(&addr, "/visits").await, "2");
    child.kill().await.unwrap();
}

#[tokio::test]
async fn the_client_example_lists_and_calls_the_quickstart_tools() {
    let quickstart = example("quickstart");
    let output = Command::new(example("client"))
        .arg(&quickstart)
        .args(["add", r#"{"a": 1, "b": 2}"#])
        .output()
        .await
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.starts_with("connected (2026-07-28)\n"), "{stdout}");
    assert!(stdout.contains("tool add: Adds two numbers."), "{stdout}");
    assert!(
        stdout.contains("tool hits: Counts the calls of this tool."),
        "{stdout}"
    );
    assert!(stdout.contains(r#"structured: {"result":3.0}"#), "{stdout}");

    // A call the schema refuses is an error result, and the script says so.
    let output = Command::new(example("client"))
        .arg(&quickstart)
        .args(["add", r#"{"a": "one"}"#])
        .output()
        .await
        .expect("runs");
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("add failed"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
