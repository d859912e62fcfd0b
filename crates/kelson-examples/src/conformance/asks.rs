//! The tools the suite's handshake-era scenarios (`--requirements 2025-11-25`) call to see the
//! server ask the client for something: sampling and elicitation, with defaults (SEP-1034) and
//! every enum form (SEP-1330).
//!
//! They are written once, like every handler: over a legacy session the runtime turns each ask
//! into a server-to-client request; over 2026-07-28 the same tools answer `input_required`.

use kelson_server::{HandlerError, RequestContext, ServerBuilder, ToolResult};
use kelson_types::{
    CallToolResult, CreateMessageRequestParams, ElicitAction, ElicitRequestFormParams,
    ElicitResult, JsonObject, SamplingMessage, SamplingMessageContentBlock, Tool,
};
use serde_json::{Value, json};

use super::{no_arguments, object};

pub(super) fn register(builder: ServerBuilder) -> ServerBuilder {
    let one_string = |name: &str, description: &str| {
        object(json!({
            "type": "object",
            "properties": {name: {"type": "string", "description": description}},
            "required": [name]
        }))
    };
    builder
        .tool(
            Tool::new(
                "test_sampling",
                one_string("prompt", "The prompt to send to the client's model"),
            )
            .with_description("Asks the client's model to answer the prompt (sampling)"),
            sampling,
        )
        .tool(
            Tool::new(
                "test_elicitation",
                one_string("message", "The message to show the user"),
            )
            .with_description("Asks the user for a username and an e-mail address"),
            elicitation,
        )
        .tool(
            Tool::new("test_elicitation_sep1034_defaults", no_arguments())
                .with_description("Asks with a form whose every field has a default (SEP-1034)"),
            defaults,
        )
        .tool(
            Tool::new("test_elicitation_sep1330_enums", no_arguments())
                .with_description("Asks with a form of every enum form (SEP-1330)"),
            enums,
        )
}

fn argument<'a>(args: &'a JsonObject, name: &str) -> Result<&'a str, HandlerError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| HandlerError::invalid_params(format_args!("{name} is required")))
}

/// A form from its JSON, as the suite words it.
fn form(message: &str, schema: Value) -> Result<ElicitRequestFormParams, HandlerError> {
    serde_json::from_value(json!({"mode": "form", "message": message, "requestedSchema": schema}))
        .map_err(HandlerError::failed)
}

fn completed(answer: &ElicitResult) -> String {
    let action = match answer.action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    };
    let content = serde_json::to_string(&answer.content).unwrap_or_default();
    format!("Elicitation completed: action={action}, content={content}")
}

async fn sampling(mut ctx: RequestContext, args: JsonObject) -> ToolResult {
    let prompt = argument(&args, "prompt")?;
    let answer = ctx.create_message(
        "sampling",
        CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100),
    )?;
    let text: Vec<&str> = answer
        .content
        .blocks()
        .iter()
        .filter_map(|b| match b {
            SamplingMessageContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    Ok(CallToolResult::text(format!(
        "LLM response: {}",
        text.join(" ")
    )))
}

async fn elicitation(mut ctx: RequestContext, args: JsonObject) -> ToolResult {
    let message = argument(&args, "message")?;
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    });
    let answer = ctx.elicit("user", form(message, schema)?)?;
    let action = match answer.action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    };
    let content = serde_json::to_string(&answer.content).unwrap_or_default();
    Ok(CallToolResult::text(format!(
        "User response: action={action}, content={content}"
    )))
}

async fn defaults(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }
    });
    let answer = ctx.elicit("defaults", form("Review the defaults", schema)?)?;
    Ok(CallToolResult::text(completed(&answer)))
}

async fn enums(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}
            ]}}
        }
    });
    let answer = ctx.elicit("enums", form("Pick from every kind of list", schema)?)?;
    Ok(CallToolResult::text(completed(&answer)))
}
