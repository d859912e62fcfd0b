//! `examples/quickstart.rs` (macros) and `examples/quickstart_fn.rs` (functions): both serve the
//! same three tools, on stdio and on Streamable HTTP, with the schemas the types declare.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use kelson_client::Client;
use serde_json::json;
use tokio::process::Command;

/// An example binary that cargo built beside this test.
pub(crate) fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let debug = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/debug");
    let path = debug.join("examples").join(name);
    assert!(
        path.exists(),
        "{} was not built; `cargo test -p kelson` builds the examples",
        path.display()
    );
    path
}

async fn check(client: &Client) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "echo", "hits"]);

    let echo = &tools[1];
    assert_eq!(
        echo.description.as_deref(),
        Some("Returns the text unchanged.")
    );
    assert_eq!(echo.input_schema["properties"]["text"]["type"], "string");
    assert_eq!(echo.input_schema["required"], json!(["text"]));
    assert!(echo.annotations.as_ref().unwrap().is_read_only());

    let add = &tools[0];
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));
    let output = add
        .output_schema
        .as_ref()
        .expect("Json<f64> declares an outputSchema");
    assert_eq!(output["type"], "object");
    assert_eq!(output["properties"]["result"]["type"], "number");

    let hits = &tools[2];
    assert!(
        hits.input_schema.get("required").is_none(),
        "{:?}",
        hits.input_schema
    );

    let reply = client
        .call_tool("echo", json!({"text": "hi there"}))
        .await
        .expect("echo");
    assert_eq!(reply.content[0].as_text(), Some("hi there"));

    let reply = client
        .call_tool("add", json!({"a": 1.5, "b": 2}))
        .await
        .expect("add");
    assert_eq!(reply.structured_content, Some(json!({"result": 3.5})));

    // The state lives as long as the server: the count goes on from call to call.
    let first = client.call_tool("hits", json!({})).await.expect("hits");
    let second = client.call_tool("hits", json!({})).await.expect("hits");
    let count = |r: &kelson_types::CallToolResult| -> u64 {
        r.content[0].as_text().unwrap().parse().unwrap()
    };
    assert_eq!(count(&second), count(&first) + 1);

    // Arguments that break the generated schema are the model's to fix: an error result.
    let reply = client
        .call_tool("add", json!({"a": "one", "b": 2}))
        .await
        .expect("an isError result, not a protocol error");
    assert!(reply.is_error(), "{reply:?}");
}

async fn over_stdio(name: &str) {
    let client = Client::builder()
        .connect_stdio(Command::new(example(name)))
        .await
        .expect("connects over stdio");
    check(&client).await;
    client.close().await.expect("closes");
}

async fn over_http(name: &str) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(example(name))
        .args(["--http", &addr])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("starts");
    let url = format!("http://{addr}/mcp");
    let deadline = Instant::now() + Duration::from_secs(20);
    let client = loop {
        match Client::builder().connect_http(&url).await {
            Ok(client) => break client,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{name} did not serve {url}: {e}"),
        }
    };
    check(&client).await;
    child.kill().await.expect("stops");
}

#[tokio::test]
async fn the_macro_quickstart_serves_its_tools_over_stdio_and_http() {
    over_stdio("quickstart").await;
    over_http("quickstart").await;
}

#[tokio::test]
async fn the_function_quickstart_serves_the_same_tools() {
    over_stdio("quickstart_fn").await;
    over_http("quickstart_fn").await;
}

/// Lines of Rust as a code counter counts them: neither blank nor comments.
fn code_lines(source: &str) -> usize {
    source
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

#[test]
fn the_quickstarts_stay_short() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let read = |name: &str| std::fs::read_to_string(root.join(name)).expect("the example");
    let with_macros = code_lines(&read("quickstart.rs"));
    let without = code_lines(&read("quickstart_fn.rs"));
    assert!(
        with_macros <= 18,
        "quickstart.rs has {with_macros} lines of code"
    );
    assert!(
        without <= 26,
        "quickstart_fn.rs has {without} lines of code"
    );
}

/// The code of an example without its leading `//!` comment, as the documents show it.
fn code_of(source: &str) -> String {
    source
        .lines()
        .skip_while(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readme_and_the_guide_show_the_quickstarts_as_they_are() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |name: &str| std::fs::read_to_string(root.join(name)).expect(name);
    let with_macros = code_of(&read("examples/quickstart.rs"));
    let without = code_of(&read("examples/quickstart_fn.rs"));
    let readme = read("README.md");
    let guide = read("docs/guide/01-first-server.md");
    assert!(
        readme.contains(with_macros.trim()),
        "README.md's quickstart differs from examples/quickstart.rs"
    );
    assert!(
        guide.contains(with_macros.trim()),
        "the guide's quickstart differs from examples/quickstart.rs"
    );
    assert!(
        guide.contains(without.trim()),
        "the guide's function quickstart differs from examples/quickstart_fn.rs"
    );
}
