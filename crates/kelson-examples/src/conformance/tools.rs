//! The plain tools: content kinds, tool errors, progress, logging, list mutations, the JSON Schema
//! 2020-12 tool, the `x-mcp-header` tool, the capability check, and two robustness fixtures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kelson_server::{HandlerError, RequestContext, ServerBuilder, ToolResult};
use kelson_types::{
    CallToolResult, ContentBlock, ErrorObject, GetPromptResult, Id, JsonObject, LoggingLevel,
    Prompt, PromptMessage, TextResourceContents, Tool,
};
use serde_json::{Value, json};

use super::{PNG_1X1, WAV_MIN, no_arguments, object};

/// The logger name on the fixture's log messages.
const LOGGER: &str = "conformance-test-server";

/// The longest a `test_slow` call may ask to wait.
const MAX_SLOW_MS: u64 = 60_000;

pub(super) fn register(builder: ServerBuilder) -> ServerBuilder {
    let tool = |name: &str, description: &str| {
        Tool::new(name, no_arguments()).with_description(description)
    };
    builder
        .tool(
            tool("test_simple_text", "Returns a simple text content block"),
            simple_text,
        )
        .tool(
            tool("test_image_content", "Returns an image content block (a 1x1 PNG)"),
            image_content,
        )
        .tool(
            tool("test_audio_content", "Returns an audio content block (a minimal WAV)"),
            audio_content,
        )
        .tool(
            tool("test_embedded_resource", "Returns an embedded text resource"),
            embedded_resource,
        )
        .tool(
            tool(
                "test_multiple_content_types",
                "Returns text, image and embedded resource content together",
            ),
            multiple_content_types,
        )
        .tool(
            tool(
                "test_tool_with_logging",
                "Sends three info log messages while it runs, when the request sets a logLevel",
            ),
            tool_with_logging,
        )
        .tool(
            tool(
                "test_logging_tool",
                "Logs at debug, info, warning and error; only the levels the request's logLevel allows are sent",
            ),
            logging_tool,
        )
        .tool(
            tool(
                "test_tool_with_progress",
                "Reports progress three times, 50 ms apart, when the request carries a progressToken",
            ),
            tool_with_progress,
        )
        .tool(
            tool(
                "test_error_handling",
                "Always fails with a tool execution error (isError: true)",
            ),
            error_handling,
        )
        .tool(
            Tool::new("json_schema_2020_12_tool", json_schema_2020_12())
                .with_description(
                    "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
                ),
            json_schema_tool,
        )
        .tool(
            tool(
                "test_missing_capability",
                "Needs the client's sampling capability: without it the call fails with -32021",
            ),
            missing_capability,
        )
        .tool(
            tool(
                "test_trigger_tool_change",
                "Registers and removes a transient tool, so listeners get tools/list_changed",
            ),
            trigger_tool_change,
        )
        .tool(
            tool(
                "test_trigger_prompt_change",
                "Registers and removes a transient prompt, so listeners get prompts/list_changed",
            ),
            trigger_prompt_change,
        )
        .tool(
            Tool::new(
                "test_custom_header",
                object(json!({
                    "type": "object",
                    "properties": {
                        "region": {
                            "type": "string",
                            "description": "Region, mirrored into the Mcp-Param-Region header",
                            "x-mcp-header": "Region"
                        }
                    },
                    "required": ["region"],
                    "additionalProperties": false
                })),
            )
            .with_description(
                "Echoes a parameter mirrored into the Mcp-Param-Region header (SEP-2243)",
            ),
            custom_header,
        )
        .tool(
            Tool::new(
                "test_slow",
                object(json!({
                    "type": "object",
                    "properties": {
                        "ms": {
                            "type": "integer",
                            "minimum": 0,
                            "maximum": MAX_SLOW_MS,
                            "description": "How long to wait, in milliseconds (default 1000)"
                        }
                    },
                    "additionalProperties": false
                })),
            )
            .with_description(
                "Robustness fixture: waits `ms` milliseconds, or until the request is cancelled, then answers",
            ),
            slow,
        )
        .tool(
            tool(
                "test_panic",
                "Robustness fixture: its handler panics; the server must answer -32603 for this call only",
            ),
            panic_tool,
        )
}

async fn simple_text(_ctx: RequestContext, _args: JsonObject) -> ToolResult {
    Ok(CallToolResult::text(
        "This is a simple text response for testing.",
    ))
}

async fn image_content(_ctx: RequestContext, _args: JsonObject) -> ToolResult {
    Ok(CallToolResult::new(vec![ContentBlock::image(
        PNG_1X1,
        "image/png",
    )]))
}

async fn audio_content(_ctx: RequestContext, _args: JsonObject) -> ToolResult {
    Ok(CallToolResult::new(vec![ContentBlock::audio(
        WAV_MIN,
        "audio/wav",
    )]))
}

async fn embedded_resource(_ctx: RequestContext, _args: JsonObject) -> ToolResult {
    Ok(CallToolResult::new(vec![ContentBlock::embedded(
        TextResourceContents::new(
            "test://embedded-resource",
            "This is an embedded resource content.",
        )
        .with_mime_type("text/plain"),
    )]))
}

async fn multiple_content_types(_ctx: RequestContext, _args: JsonObject) -> ToolResult {
    Ok(CallToolResult::new(vec![
        ContentBlock::text("Multiple content types test:"),
        ContentBlock::image(PNG_1X1, "image/png"),
        ContentBlock::embedded(
            TextResourceContents::new(
                "test://mixed-content-resource",
                json!({"test": "data", "value": 123}).to_string(),
            )
            .with_mime_type("application/json"),
        ),
    ]))
}

/// Waits `duration`, or returns false as soon as the request is cancelled.
async fn pause(ctx: &RequestContext, duration: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(duration) => true,
        () = ctx.cancelled() => false,
    }
}

async fn tool_with_logging(ctx: RequestContext, _args: JsonObject) -> ToolResult {
    // spec 2026-07-28 server/utilities/logging: without a logLevel in this request's _meta nothing is
    // sent; the context filters by level, so the pauses are only taken when someone listens.
    let messages = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    let listening = ctx.log_enabled(LoggingLevel::Info);
    for (i, message) in messages.into_iter().enumerate() {
        if i > 0 && listening && !pause(&ctx, Duration::from_millis(50)).await {
            return Err(HandlerError::failed("cancelled"));
        }
        ctx.log(LoggingLevel::Info, Some(LOGGER), message);
    }
    Ok(CallToolResult::text(
        "Tool with logging executed successfully",
    ))
}

async fn logging_tool(ctx: RequestContext, _args: JsonObject) -> ToolResult {
    for level in [
        LoggingLevel::Debug,
        LoggingLevel::Info,
        LoggingLevel::Warning,
        LoggingLevel::Error,
    ] {
        ctx.log(
            level,
            Some(LOGGER),
            json!({"message": format!("a {} message", level.as_str())}),
        );
    }
    Ok(CallToolResult::text("Logging evaluated"))
}

async fn tool_with_progress(ctx: RequestContext, _args: JsonObject) -> ToolResult {
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 && !pause(&ctx, Duration::from_millis(50)).await {
            return Err(HandlerError::failed("cancelled"));
        }
        ctx.progress(
            step,
            Some(100.0),
            Some(&format!("Completed step {step} of 100")),
        );
    }
    // The result names the token, so a caller can see which request it answers.
    let text = match &ctx.meta().progress_token {
        Some(Id::Str(s)) => s.to_string(),
        Some(Id::Int(n)) => n.to_string(),
        None => "no progress token".to_owned(),
    };
    Ok(CallToolResult::text(text))
}

async fn error_handling(_ctx: RequestContext, _args: JsonObject) -> ToolResult {
    Ok(CallToolResult::error(
        "This tool intentionally returns an error for testing",
    ))
}

/// The input schema the `json-schema-2020-12` scenario looks for, keyword for keyword.
fn json_schema_2020_12() -> JsonObject {
    object(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string"}
                }
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    }))
}

async fn json_schema_tool(_ctx: RequestContext, args: JsonObject) -> ToolResult {
    Ok(CallToolResult::text(format!(
        "JSON Schema 2020-12 tool called with: {}",
        Value::Object(args)
    )))
}

async fn missing_capability(ctx: RequestContext, _args: JsonObject) -> ToolResult {
    // spec 2026-07-28 basic (capabilities): a request that cannot proceed without a capability the
    // client did not declare on this request fails with -32021 naming it as a ClientCapabilities
    // object.
    if !ctx.client_capabilities().supports_sampling() {
        return Err(ErrorObject::missing_client_capability(
            json!({"sampling": {}}),
            "test_missing_capability needs sampling",
        )
        .into());
    }
    Ok(CallToolResult::text("Success"))
}

/// Names transient registrations uniquely, so concurrent triggers never collide.
static TRANSIENT: AtomicU64 = AtomicU64::new(0);

async fn trigger_tool_change(ctx: RequestContext, _args: JsonObject) -> ToolResult {
    // A real registry change, so the notification comes from the same path as any other change;
    // the transient tool is removed again so that tools/list stays what it was.
    let name = format!(
        "test_transient_tool_{}",
        TRANSIENT.fetch_add(1, Ordering::Relaxed)
    );
    let tool = Tool::new(&name, no_arguments())
        .with_description("A transient tool registered by test_trigger_tool_change");
    ctx.server()
        .add_tool(tool, simple_text)
        .map_err(HandlerError::failed)?;
    ctx.server().remove_tool(&name);
    Ok(CallToolResult::text("Mutation triggered"))
}

async fn trigger_prompt_change(ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let name = format!(
        "test_transient_prompt_{}",
        TRANSIENT.fetch_add(1, Ordering::Relaxed)
    );
    let prompt = Prompt::new(&name)
        .with_description("A transient prompt registered by test_trigger_prompt_change");
    ctx.server()
        .add_prompt_handler(prompt, |_ctx: RequestContext, _args| async move {
            Ok(GetPromptResult::new(vec![PromptMessage::user_text(
                "A transient prompt",
            )]))
        })
        .map_err(HandlerError::failed)?;
    ctx.server().remove_prompt(&name);
    Ok(CallToolResult::text("Mutation triggered"))
}

async fn custom_header(_ctx: RequestContext, args: JsonObject) -> ToolResult {
    // The input schema has already required a string.
    let region = args
        .get("region")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(CallToolResult::text(format!("Region: {region}")))
}

async fn slow(ctx: RequestContext, args: JsonObject) -> ToolResult {
    let ms = args
        .get("ms")
        .and_then(Value::as_u64)
        .unwrap_or(1000)
        .min(MAX_SLOW_MS);
    if pause(&ctx, Duration::from_millis(ms)).await {
        Ok(CallToolResult::text(format!("Waited {ms} ms")))
    } else {
        // Nothing is sent for a cancelled request; this result only ends the handler.
        Ok(CallToolResult::text("Cancelled"))
    }
}

async fn panic_tool(_ctx: RequestContext, _args: JsonObject) -> ToolResult {
    panic!("test_panic: a deliberate panic (robustness fixture)")
}
