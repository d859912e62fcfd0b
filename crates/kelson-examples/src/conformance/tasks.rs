//! The tasks-extension fixtures (`io.modelcontextprotocol/tasks`, SEP-2663): tools that never,
//! may, or must run as tasks, fail in both ways a task can, and ask for input during a task or
//! before it starts. Names and texts follow the suite's `tasks-*` scenarios.

use std::time::Duration;

use kelson_server::{
    HandlerError, RequestContext, ServerBuilder, TaskStart, TaskSupport, ToolDef, ToolResult,
};
use kelson_types::{
    BooleanSchema, CallToolResult, ElicitAction, ElicitRequestFormParams, ElicitResult,
    ElicitValue, ErrorObject, InputRequest, JsonObject, RequestedSchema, StringSchema, Tool,
};
use serde_json::{Value, json};

use super::{no_arguments, object};

/// The longest a `slow_compute` call may ask to work.
const MAX_SECONDS: f64 = 3600.0;

pub(super) fn register(builder: ServerBuilder) -> ServerBuilder {
    let tool = |name: &str, description: &str, schema: JsonObject| {
        ToolDef::from(Tool::new(name, schema).with_description(description))
    };
    builder
        .tool(
            tool(
                "greet",
                "Greets someone by name; always answers at once, never as a task",
                object(json!({
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Who to greet"}},
                    "required": ["name"]
                })),
            ),
            greet,
        )
        .tool(
            tool(
                "slow_compute",
                "Works for the given number of seconds; a task when the client supports tasks",
                object(json!({
                    "type": "object",
                    "properties": {
                        "seconds": {"type": "number", "minimum": 0, "maximum": MAX_SECONDS,
                                    "description": "How long to work"},
                        "label": {"type": "string", "description": "A name for the job"}
                    },
                    "required": ["seconds"]
                })),
            )
            .tasks(TaskSupport::Optional),
            slow_compute,
        )
        .tool(
            tool(
                "failing_job",
                "Runs only as a task, which ends with a tool error (isError)",
                no_arguments(),
            )
            .tasks(TaskSupport::Required),
            failing_job,
        )
        .tool(
            tool(
                "protocol_error_job",
                "A task that fails with a JSON-RPC error (status failed)",
                no_arguments(),
            )
            .tasks(TaskSupport::Optional),
            protocol_error_job,
        )
        .tool(
            tool(
                "confirm_delete",
                "A task that asks for a confirmation (key confirm) before it deletes the file",
                object(json!({
                    "type": "object",
                    "properties": {"filename": {"type": "string", "description": "The file"}},
                    "required": ["filename"]
                })),
            )
            .tasks(TaskSupport::Optional),
            confirm_delete,
        )
        .tool(
            tool(
                "multi_input",
                "A task that asks for two answers at once (keys first and second)",
                no_arguments(),
            )
            .tasks(TaskSupport::Optional),
            multi_input,
        )
        .tool(
            tool(
                "test_tool_with_task",
                "Asks for the user's name over MRTR (key user_name), then greets them from a task",
                no_arguments(),
            )
            .tasks(TaskSupport::Required)
            .task_start(TaskStart::OnRequest),
            tool_with_task,
        )
}

async fn greet(_ctx: RequestContext, args: JsonObject) -> ToolResult {
    let name = args.get("name").and_then(Value::as_str).unwrap_or("World");
    Ok(CallToolResult::text(format!("Hello, {name}!")))
}

async fn slow_compute(ctx: RequestContext, args: JsonObject) -> ToolResult {
    let seconds = args
        .get("seconds")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
        .clamp(0.0, MAX_SECONDS);
    let label = args.get("label").and_then(Value::as_str).unwrap_or("job");
    let total = Duration::from_secs_f64(seconds);
    let step = Duration::from_millis(250);
    let started = tokio::time::Instant::now();
    while started.elapsed() < total {
        let left = total.saturating_sub(started.elapsed()).min(step);
        tokio::select! {
            () = tokio::time::sleep(left) => {}
            () = ctx.cancelled() => return Err("cancelled".into()),
        }
        let done = started.elapsed().as_secs_f64().min(seconds);
        ctx.progress(
            done,
            Some(seconds),
            Some(&format!("{label}: {done:.1} of {seconds} s")),
        );
    }
    Ok(CallToolResult::text(format!(
        "slow_compute {label} done after {seconds}s"
    )))
}

async fn failing_job(_ctx: RequestContext, _args: JsonObject) -> ToolResult {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Err("the job failed: the input could not be processed".into())
}

async fn protocol_error_job(_ctx: RequestContext, _args: JsonObject) -> ToolResult {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Err(HandlerError::protocol(ErrorObject::internal_error(
        "the job's backend failed",
    )))
}

/// The value of `field` in an accepted form, if any.
fn accepted<'a>(answer: &'a ElicitResult, field: &str) -> Option<&'a ElicitValue> {
    if answer.action != ElicitAction::Accept {
        return None;
    }
    answer.content.as_ref()?.get(field)
}

async fn confirm_delete(mut ctx: RequestContext, args: JsonObject) -> ToolResult {
    let filename = args
        .get("filename")
        .and_then(Value::as_str)
        .unwrap_or("the file")
        .to_owned();
    let form = ElicitRequestFormParams::new(
        format!("Delete {filename}?"),
        RequestedSchema::new().required_property("confirm", BooleanSchema::new()),
    );
    let answer = ctx.elicit("confirm", form)?;
    let text = match accepted(&answer, "confirm").map(ElicitValue::as_bool) {
        Some(Some(false)) | None => format!("Kept {filename}: the deletion was declined"),
        Some(_) => format!("Deleted {filename}"),
    };
    Ok(CallToolResult::text(text))
}

async fn multi_input(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let ask = |n: &str| {
        InputRequest::Elicit(
            ElicitRequestFormParams::new(
                format!("The {n} name?"),
                RequestedSchema::new().required_property("name", StringSchema::new()),
            )
            .into(),
        )
    };
    let first = ctx.request_input("first", ask("first"))?.cloned();
    let second = ctx.request_input("second", ask("second"))?.cloned();
    ctx.require_inputs()?;
    let name = |answer: Option<Value>| {
        answer
            .and_then(|a| serde_json::from_value::<ElicitResult>(a).ok())
            .and_then(|a| {
                accepted(&a, "name")
                    .and_then(ElicitValue::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "(none)".to_owned())
    };
    Ok(CallToolResult::text(format!(
        "Got {} and {}",
        name(first),
        name(second)
    )))
}

async fn tool_with_task(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let form = ElicitRequestFormParams::new(
        "What is your name?",
        RequestedSchema::new().required_property("name", StringSchema::new()),
    );
    let answer = ctx.elicit("user_name", form)?;
    let name = accepted(&answer, "name")
        .or_else(|| accepted(&answer, "user_name"))
        .and_then(ElicitValue::as_str)
        .unwrap_or("stranger")
        .to_owned();
    // The input is in: the rest runs as a task.
    ctx.run_as_task();
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(CallToolResult::text(format!("Hello, {name}!")))
}
