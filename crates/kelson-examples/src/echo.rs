//! The `echo` server used by the benchmarks: one tool, `echo`, that returns its `text` argument as a
//! text block and as `structuredContent`.

use kelson_server::{BuildError, Json, Server, ToolDef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The arguments of `echo`.
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
        .build()
}

/// The `echo` tool.
pub async fn echo(EchoArgs { text }: EchoArgs) -> Json<EchoOutput> {
    Json(EchoOutput { text })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kelson_server::transport::{Reply, RequestIo};

    #[tokio::test]
    async fn echo_returns_text_and_structured_content() {
        let server = build_server().unwrap();
        let request = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let Some(Reply::Message(reply)) = server.handle(request, RequestIo::plain(&server)).await
        else {
            panic!("no reply")
        };
        let v: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(
            v["result"]["structuredContent"],
            serde_json::json!({"text": "hi"})
        );
        assert_eq!(v["result"]["content"][0]["type"], "text");
        assert_eq!(v["result"]["resultType"], "complete");
    }
}
