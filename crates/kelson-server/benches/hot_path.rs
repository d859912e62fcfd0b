//! Micro-benchmarks of the request hot path, with criterion.
//!
//! - `validate/typical_call`: input-schema validation of a typical tool call (the target is at most
//!   one microsecond);
//! - `handle/tools_call_echo`: a whole `tools/call` through `Server::handle` (decode, `_meta`,
//!   route, validate, call, encode);
//! - `handle/tools_list_1000`: `tools/list` with 1,000 registered tools, which is served from a
//!   page encoded once per registry generation.
//!
//! Run: `cargo bench -p kelson-server --bench hot_path`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kelson_server::transport::{Reply, RequestIo};
use kelson_server::{RequestContext, Server, ToolDef, schema};
use kelson_types::{CallToolResult, JsonObject, Tool};
use serde_json::{Value, json};

fn typical_schema() -> JsonObject {
    json!({
        "type": "object",
        "properties": {
            "sql": {"type": "string", "minLength": 1, "maxLength": 100000},
            "database": {"type": "string", "enum": ["main", "analytics"]},
            "params": {"type": "array", "maxItems": 100, "items": {"type": ["string", "number", "boolean", "null"]}},
            "max_rows": {"type": "integer", "minimum": 1, "maximum": 10000}
        },
        "required": ["sql"],
        "additionalProperties": false
    })
    .as_object()
    .expect("an object")
    .clone()
}

fn validation(c: &mut Criterion) {
    let compiled = schema::compile_input(&typical_schema()).expect("the schema compiles");
    let args = json!({
        "sql": "select name, email from customers where country = ? order by name",
        "database": "main",
        "params": ["NZ"],
        "max_rows": 100
    });
    assert!(compiled.is_valid(&args));
    c.bench_function("validate/typical_call", |b| {
        b.iter(|| black_box(compiled.validate(black_box(&args)).is_ok()))
    });
}

fn request(method: &str, params: Value) -> Vec<u8> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .expect("serializes")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

fn handle(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let echo_schema =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let mut builder = Server::builder("bench", "0.0.1").tool_handler(
        Tool::new("echo", echo_schema.as_object().expect("object").clone())
            .with_description("echo"),
        |_ctx: RequestContext, args: JsonObject| async move {
            Ok(CallToolResult::text(
                args.get("text").and_then(Value::as_str).unwrap_or_default(),
            ))
        },
    );
    // The same tool through the function API: typed arguments decoded from the validated value,
    // a String result. Against `handle/tools_call_echo`, what the extraction costs per call.
    builder = builder.tool(
        ToolDef::new("echo_fn")
            .description("echo")
            .input_schema(echo_schema.as_object().expect("object").clone()),
        |EchoArgs { text }: EchoArgs| async move { text },
    );
    for i in 0..1000 {
        builder = builder.tool_handler(
            Tool::new(format!("tool_{i:04}"), typical_schema()).with_description("a tool"),
            |_ctx: RequestContext, _args: JsonObject| async move { Ok(CallToolResult::text("ok")) },
        );
    }
    let server = builder.build().expect("the server builds");
    let call = request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hello"}}),
    );
    let call_fn = request(
        "tools/call",
        json!({"name": "echo_fn", "arguments": {"text": "hello"}}),
    );
    let list = request("tools/list", json!({}));
    let run = |bytes: &[u8]| {
        runtime.block_on(async {
            match server.handle(bytes, RequestIo::plain(&server)).await {
                Some(Reply::Message(m)) => m.body.len(),
                _ => 0,
            }
        })
    };
    assert!(run(&call) > 0);
    assert!(run(&call_fn) > 0);
    assert!(run(&list) > 0);
    c.bench_function("handle/tools_call_echo", |b| {
        b.iter(|| black_box(run(black_box(&call))))
    });
    c.bench_function("handle/tools_call_echo_fn", |b| {
        b.iter(|| black_box(run(black_box(&call_fn))))
    });
    c.bench_function("handle/tools_list_1000", |b| {
        b.iter(|| black_box(run(black_box(&list))))
    });
}

criterion_group!(benches, validation, handle);
criterion_main!(benches);
