//! A stopping server makes no task: a call that may become one is answered when the shutdown
//! stops it (with a tool error saying so), a call that runs past its `TaskStart::After` once
//! [`Server::stop_new_tasks`] was called stays a plain call, and a tool that starts every call as
//! a task refuses new calls.

use std::time::Duration;

use kelson_types::{CallToolResult, JsonObject};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::router::{Reply, RequestIo};
use crate::{Principal, RequestContext, Server, TaskStart, TaskSupport, ToolDef};

/// A tool that runs until it is cancelled, then says so; it may become a task after 200 ms. And
/// one that always starts as a task.
fn server() -> Server {
    let waits = |ctx: RequestContext, _: JsonObject| async move {
        ctx.cancellation_token().cancelled().await;
        Ok(CallToolResult::error("The wait was cancelled."))
    };
    Server::builder("stopping", "1")
        .tool_handler(
            ToolDef::new("wait")
                .tasks(TaskSupport::Optional)
                .task_start(TaskStart::After(Duration::from_millis(200))),
            waits,
        )
        .tool_handler(
            ToolDef::new("background")
                .tasks(TaskSupport::Optional)
                .task_start(TaskStart::Immediately),
            waits,
        )
        .build()
        .expect("builds")
}

/// `tools/call` of `tool` declaring the tasks extension; the response.
async fn call(server: &Server, tool: &str) -> Value {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {kelson_types::TASKS_EXTENSION: {}}},
        }},
    })
    .to_string();
    let io = RequestIo {
        principal: Principal::anonymous(),
        cancel: CancellationToken::new(),
        sink: None,
        guard: None,
        close: None,
        probe: None,
    };
    match server.handle(body.as_bytes(), io).await {
        Some(Reply::Message(m)) => serde_json::from_slice(&m.body).expect("JSON"),
        other => panic!("not a single response: {other:?}"),
    }
}

#[track_caller]
fn assert_stopped(reply: &Value) {
    let result = &reply["result"];
    assert_ne!(result["resultType"], "task", "{reply}");
    assert_eq!(result["isError"], true, "{reply}");
    assert_eq!(
        result["content"][0]["text"],
        "The server is shutting down: the call was stopped before it finished. The wait was \
         cancelled.",
        "{reply}"
    );
}

#[tokio::test]
async fn a_call_stopped_by_the_shutdown_is_answered_and_never_becomes_a_task() {
    let server = server();
    let stopping = server.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stopping.shutdown();
    });
    // Stopped before it would have become a task, and answered then.
    assert_stopped(&call(&server, "wait").await);
}

#[tokio::test]
async fn once_the_server_stops_making_tasks_a_call_past_its_threshold_stays_a_call() {
    let server = server();
    server.stop_new_tasks();
    let stopping = server.clone();
    tokio::spawn(async move {
        // Well past the 200 ms after which the call would have become a task.
        tokio::time::sleep(Duration::from_millis(600)).await;
        stopping.shutdown();
    });
    assert_stopped(&call(&server, "wait").await);
    // A tool that starts every call as a task does not start.
    let reply = call(&server, "background").await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "The tool background was not started: the server is shutting down.",
        "{reply}"
    );
}
