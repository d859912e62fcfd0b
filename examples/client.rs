//! A client script: starts an MCP server (any command; stdio) or connects to a URL (Streamable
//! HTTP), lists its tools and calls one with JSON arguments.
//!
//! ```sh
//! cargo run --example client -- \
//!     target/debug/examples/quickstart add '{"a": 1, "b": 2}'
//! cargo run --example client -- http://127.0.0.1:8080/mcp echo '{"text": "hi"}'
//! ```
// In an application: `kelson = { version = "0.1", features = ["client"] }` and `kelson::client::Client`.
use kelson_client::Client;

#[tokio::main]
async fn main() -> kelson::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [server, tool, arguments] = args.as_slice() else {
        return Err("usage: client SERVER-COMMAND-OR-URL TOOL JSON-ARGUMENTS".into());
    };
    let client = if server.starts_with("http://") || server.starts_with("https://") {
        Client::builder().connect_http(server).await?
    } else {
        Client::builder()
            .connect_stdio(tokio::process::Command::new(server))
            .await?
    };
    println!("connected ({})", client.era().version());
    for tool in client.list_all_tools().await? {
        println!(
            "tool {}: {}",
            tool.name,
            tool.description.unwrap_or_default()
        );
    }
    let arguments: serde_json::Value = serde_json::from_str(arguments)?;
    let result = client.call_tool(tool, arguments).await?;
    for block in &result.content {
        if let Some(text) = block.as_text() {
            println!("{text}");
        }
    }
    if let Some(structured) = &result.structured_content {
        println!("structured: {structured}");
    }
    client.close().await?;
    if result.is_error() {
        return Err(format!("{tool} failed").into());
    }
    Ok(())
}
