//! The `echo` server used by the benchmarks: two tools taking the same `text` argument. `echo`
//! returns it as a text block and as `structuredContent` (with an `outputSchema`, against which
//! every result is validated); `echo_text` returns it as a text block only, the workload of peers
//! whose tools answer with text.

use kelson_server::{BuildError, Json, Server, ToolDef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The arguments of `echo` and `echo_text`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EchoArgs {
    /// The text to send back.
    pub text: String,
}

/// The structured result of `echo`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EchoOutput {
    /// The text that was sent.
    pub text: String,
}

/// Builds the echo server.
pub fn build_server() -> Result<Server, BuildError> {
    Server::builder("kelson-echo-server", env!("CARGO_PKG_VERSION"))
        .tool(
            ToolDef::new("echo").description(
                "Returns the given text unchanged, as text and as structured content.",
            ),
            echo,
        )
        .tool(
            ToolDef::new("echo_text")
                .description("Returns the given text unchanged, as text only."),
            echo_text,
        )
        .build()
}

/// The `echo` tool.
pub async fn echo(EchoArgs { text }: EchoArgs) -> Json<EchoOutput> {
    Json(EchoOutput { text })
}

/// The `echo_text` tool: no `outputSchema`, no `structuredContent`.
pub async fn echo_text(EchoArgs { text }: EchoArgs) -> String {
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use kelson_server::transport::{Reply, RequestIo};
    use serde_json::{Value, json};

    async fn ask(server: &Server, method: &str, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let bytes = serde_json::to_vec(&request).unwrap();
        let Some(Reply::Message(reply)) = server.handle(&bytes, RequestIo::plain(server)).await
        else {
            panic!("no reply")
        };
        serde_json::from_slice(&reply.body).unwrap()
    }

    #[tokio::test]
    async fn echo_returns_text_and_structured_content() {
        let server = build_server().unwrap();
        let v = ask(
            &server,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .await;
        assert_eq!(
            v["result"]["structuredContent"],
            serde_json::json!({"text": "hi"})
        );
        assert_eq!(v["result"]["content"][0]["type"], "text");
        assert_eq!(v["result"]["resultType"], "complete");
    }

    #[tokio::test]
    async fn echo_text_returns_text_only() {
        let server = build_server().unwrap();
        let v = ask(
            &server,
            "tools/call",
            json!({"name": "echo_text", "arguments": {"text": "hi"}}),
        )
        .await;
        let result = &v["result"];
        assert_eq!(result["content"], json!([{"type": "text", "text": "hi"}]));
        assert_eq!(result["resultType"], "complete");
        assert!(result.get("structuredContent").is_none(), "{result}");
        assert!(result.get("isError").is_none(), "{result}");
    }

    #[tokio::test]
    async fn echo_text_checks_its_arguments_as_echo_does() {
        let server = build_server().unwrap();
        for name in ["echo", "echo_text"] {
            let v = ask(
                &server,
                "tools/call",
                json!({"name": name, "arguments": {"text": 1}}),
            )
            .await;
            assert_eq!(v["result"]["isError"], true, "{name}: {v}");
        }
    }

    #[tokio::test]
    async fn both_tools_are_listed_and_only_echo_declares_an_output_schema() {
        let server = build_server().unwrap();
        let v = ask(&server, "tools/list", json!({})).await;
        let tools = v["result"]["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["echo", "echo_text"]);
        assert_eq!(tools[0]["inputSchema"], tools[1]["inputSchema"]);
        assert_eq!(tools[0]["outputSchema"]["type"], "object");
        assert!(tools[1].get("outputSchema").is_none(), "{}", tools[1]);
    }
}
