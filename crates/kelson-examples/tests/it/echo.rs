//! `echo-server --http`, the benchmarks' server, as `kelson bench` drives it: `tools/list` names
//! both tools, `echo` answers with text and `structuredContent`, `echo_text` with text only.

use std::io::{Read as _, Write as _};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::ready::first_line_on_stderr;

/// A running `echo-server --http 127.0.0.1:0`, killed when dropped.
struct EchoServer {
    child: Child,
    authority: String,
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl EchoServer {
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_echo-server"))
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("echo-server starts");
        let line = first_line_on_stderr(&mut child).expect("echo-server says where it serves");
        let authority = line
            .strip_prefix("echo-server serving MCP at http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        EchoServer { child, authority }
    }

    /// One POST of a 2026-07-28 request with its standard headers; the answer's JSON body.
    fn ask(&self, method: &str, name: Option<&str>, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
        let name_header = name
            .map(|n| format!("Mcp-Name: {n}\r\n"))
            .unwrap_or_default();
        let mut stream = std::net::TcpStream::connect(&self.authority).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {method}\r\n{name_header}Content-Length: {}\r\n\r\n{body}",
            self.authority,
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("an answer");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let (_, body) = answer.split_once("\r\n\r\n").expect("a body");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }
}

#[test]
fn echo_server_lists_echo_and_echo_text() {
    let server = EchoServer::start();
    let v = server.ask("tools/list", None, json!({}));
    let tools = v["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "echo_text"]);
    assert!(tools[0].get("outputSchema").is_some(), "{}", tools[0]);
    assert!(tools[1].get("outputSchema").is_none(), "{}", tools[1]);
}

#[test]
fn echo_answers_structured_and_echo_text_text_only() {
    let server = EchoServer::start();
    let args = json!({"text": "hello, benchmark"});
    let echo = server.ask(
        "tools/call",
        Some("echo"),
        json!({"name": "echo", "arguments": args}),
    );
    assert_eq!(echo["result"]["structuredContent"], args, "{echo}");
    assert_eq!(echo["result"]["content"][0]["type"], "text");

    let text = server.ask(
        "tools/call",
        Some("echo_text"),
        json!({"name": "echo_text", "arguments": args}),
    );
    let result = &text["result"];
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": "hello, benchmark"}])
    );
    assert_eq!(result["resultType"], "complete");
    assert!(result.get("structuredContent").is_none(), "{result}");
    assert!(result.get("isError").is_none(), "{result}");
}
