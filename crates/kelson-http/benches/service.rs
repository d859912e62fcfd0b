//! The cost of the HTTP layer around the runtime: one `tools/call` through `McpService::handle`
//! (headers, body, standard-header checks, dispatch, response), in process, without sockets.
//!
//! Run: `cargo bench -p kelson-http --features server --bench service`.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt as _, Full};
use kelson_http::server::{HttpConfig, McpService};
use kelson_server::{RequestContext, Server};
use kelson_types::{CallToolResult, JsonObject, Tool};
use serde_json::{Value, json};

fn service(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let schema =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let server = Server::builder("bench", "0.0.1")
        .tool_handler(
            Tool::new("echo", schema.as_object().expect("object").clone()).with_description("echo"),
            |_ctx: RequestContext, args: JsonObject| async move {
                Ok(CallToolResult::text(
                    args.get("text").and_then(Value::as_str).unwrap_or_default(),
                ))
            },
        )
        .build()
        .expect("builds");
    let service = McpService::new(server, HttpConfig::default());
    let body = Bytes::from(
        serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hello, benchmark"}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}
            }}
        }))
        .expect("serializes"),
    );
    let request = || {
        http::Request::post("/mcp")
            .header("host", "127.0.0.1:8080")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo")
            .body(Full::new(body.clone()))
            .expect("a request")
    };
    let run = |req| {
        runtime.block_on(async {
            let response = service.handle(req).await;
            response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes().len())
                .unwrap_or(0)
        })
    };
    assert!(run(request()) > 0);
    c.bench_function("service/tools_call_echo", |b| {
        b.iter(|| black_box(run(black_box(request()))))
    });
}

criterion_group!(benches, service);
criterion_main!(benches);
