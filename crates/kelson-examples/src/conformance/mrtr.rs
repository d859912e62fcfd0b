//! The multi round-trip fixtures (SEP-2322): tools and a prompt that answer `input_required` until
//! the client supplies what they asked for.
//!
//! The runtime seals `requestState`, keeps only answers to what was asked when a state comes back,
//! and refuses a tampered state or one issued for another request; these handlers only ask.

use kelson_server::{HandlerError, RequestContext, ServerBuilder, ToolResult};
use kelson_types::{
    BooleanSchema, CallToolResult, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitRequestFormParams, ElicitResult, ErrorObject, GetPromptResult, InputRequest, JsonObject,
    ListRootsResult, Prompt, PromptMessage, RequestedSchema, SamplingMessage,
    SamplingMessageContentBlock, StringSchema, Tool,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::no_arguments;

pub(super) fn register(builder: ServerBuilder) -> ServerBuilder {
    let tool = |name: &str, description: &str| {
        Tool::new(name, no_arguments()).with_description(description)
    };
    builder
        .tool(
            tool(
                "test_input_required_result_elicitation",
                "MRTR: asks for the user's name through elicitation (key user_name), then greets them",
            ),
            elicitation,
        )
        .tool(
            tool(
                "test_input_required_result_sampling",
                "MRTR: asks the client's model a question through sampling, then reports the answer",
            ),
            sampling,
        )
        .tool(
            tool(
                "test_input_required_result_list_roots",
                "MRTR: asks for the client's roots, then counts them",
            ),
            list_roots,
        )
        .tool(
            tool(
                "test_input_required_result_request_state",
                "MRTR: asks for a confirmation (key confirm) and completes only with the requestState it issued",
            ),
            request_state,
        )
        .tool(
            tool(
                "test_input_required_result_multiple_inputs",
                "MRTR: asks for an elicitation, a sampling and the roots in one round",
            ),
            multiple_inputs,
        )
        .tool(
            tool(
                "test_input_required_result_multi_round",
                "MRTR: asks in two rounds (step1, then step2), carrying the first answer in requestState",
            ),
            multi_round,
        )
        .tool(
            tool(
                "test_input_required_result_tampered_state",
                "MRTR: asks for a confirmation and refuses a requestState that was altered",
            ),
            tampered_state,
        )
        .tool(
            tool(
                "test_input_required_result_capabilities",
                "MRTR: asks only for the kinds of input the request's client capabilities declare",
            ),
            capabilities,
        )
        .tool(
            tool(
                "test_streaming_elicitation",
                "Reports progress, then asks for a confirmation through elicitation (never a server-to-client request)",
            ),
            streaming_elicitation,
        )
        .prompt(
            Prompt::new("test_input_required_result_prompt")
                .with_description("MRTR: prompt that requires elicitation input (key user_context)"),
            input_required_prompt,
        )
}

/// A form asking for one required string field.
fn ask_string(message: &str, field: &str) -> ElicitRequestFormParams {
    ElicitRequestFormParams::new(
        message,
        RequestedSchema::new().required_property(field, StringSchema::new()),
    )
}

/// A form asking for one required boolean.
fn ask_bool(message: &str, field: &str) -> ElicitRequestFormParams {
    ElicitRequestFormParams::new(
        message,
        RequestedSchema::new().required_property(field, BooleanSchema::new()),
    )
}

/// A one-question sampling request.
fn ask_model(question: &str, max_tokens: u64) -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text(question)], max_tokens)
}

/// The string the user entered in `field`, if the form was accepted with one.
fn field<'a>(answer: &'a ElicitResult, field: &str) -> Option<&'a str> {
    if answer.action != ElicitAction::Accept {
        return None;
    }
    answer.content.as_ref()?.get(field)?.as_str()
}

/// How the user ended an elicitation, for texts.
fn action(answer: &ElicitResult) -> &'static str {
    match answer.action {
        ElicitAction::Accept => "accepted",
        ElicitAction::Decline => "declined",
        ElicitAction::Cancel => "cancelled",
    }
}

/// The text of a sampling answer.
fn sampled_text(answer: &CreateMessageResult) -> String {
    answer
        .content
        .blocks()
        .iter()
        .filter_map(|b| match b {
            SamplingMessageContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Decodes an answer gathered with `request_input`; a malformed one is -32602 (spec 2026-07-28
/// MRTR: a malformed inputResponses is a JSON-RPC error).
fn decode<T: DeserializeOwned>(key: &str, value: Value) -> Result<T, HandlerError> {
    serde_json::from_value(value).map_err(|e| {
        HandlerError::invalid_params(format_args!("inputResponses[{key:?}] is malformed: {e}"))
    })
}

async fn elicitation(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    // Answers are taken with or without a requestState: the suite answers before being asked
    // (ignore-extra-params), and a name is nothing the server must have solicited.
    let answer = ctx.elicit("user_name", ask_string("What is your name?", "name"))?;
    Ok(CallToolResult::text(match field(&answer, "name") {
        Some(name) => format!("Hello, {name}!"),
        None => format!("No name given: the user {}", action(&answer)),
    }))
}

async fn sampling(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let answer = ctx.create_message(
        "capital_question",
        ask_model("What is the capital of France?", 100),
    )?;
    Ok(CallToolResult::text(format!(
        "Sampling result: {}",
        sampled_text(&answer)
    )))
}

async fn list_roots(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let answer = ctx.list_roots("client_roots")?;
    Ok(CallToolResult::text(format!(
        "Found {} root(s)",
        answer.roots.len()
    )))
}

/// Asks for a confirmation that must come back with the state the server issued: an answer sent
/// without a verified requestState was never asked for, so it is set aside and the question asked.
fn confirmed(ctx: &mut RequestContext) -> Result<ElicitResult, HandlerError> {
    if ctx.state_nonce().is_none() {
        ctx.forget_input("confirm");
    }
    ctx.elicit("confirm", ask_bool("Please confirm", "ok"))
}

async fn request_state(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let answer = confirmed(&mut ctx)?;
    Ok(CallToolResult::text(format!(
        "state-ok: requestState validated (the user {})",
        action(&answer)
    )))
}

async fn tampered_state(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    let answer = confirmed(&mut ctx)?;
    Ok(CallToolResult::text(format!(
        "integrity-ok: state verified (the user {})",
        action(&answer)
    )))
}

async fn multiple_inputs(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    // Queue all three, then stop once with every unanswered one.
    let name = ctx
        .request_input(
            "user_name",
            InputRequest::elicit(ask_string("What is your name?", "name")),
        )?
        .cloned();
    let greeting = ctx
        .request_input(
            "greeting",
            InputRequest::create_message(ask_model("Generate a greeting", 50)),
        )?
        .cloned();
    let roots = ctx
        .request_input("client_roots", InputRequest::list_roots())?
        .cloned();
    ctx.require_inputs()?;
    let (Some(name), Some(greeting), Some(roots)) = (name, greeting, roots) else {
        unreachable!("require_inputs stops until every input is answered")
    };
    let name: ElicitResult = decode("user_name", name)?;
    let greeting: CreateMessageResult = decode("greeting", greeting)?;
    let roots: ListRootsResult = decode("client_roots", roots)?;
    Ok(CallToolResult::text(format!(
        "Name: {}; Greeting: {}; Roots: {}",
        field(&name, "name").unwrap_or("(none)"),
        sampled_text(&greeting),
        roots.roots.len()
    )))
}

async fn multi_round(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    // The first answer travels to the third round inside the sealed requestState of the second.
    let step1 = ctx.elicit("step1", ask_string("Step 1: What is your name?", "name"))?;
    let step2 = ctx.elicit(
        "step2",
        ask_string("Step 2: What is your favorite color?", "color"),
    )?;
    Ok(CallToolResult::text(format!(
        "Multi-round complete for {} who likes {}",
        field(&step1, "name").unwrap_or("someone"),
        field(&step2, "color").unwrap_or("nothing in particular"),
    )))
}

async fn capabilities(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    // spec 2026-07-28 MRTR: never send an input request whose capability the client did not declare
    // on this request; ask for what it can answer.
    let caps = ctx.client_capabilities().clone();
    let mut asked = Vec::new();
    if caps.supports_elicitation_form() {
        ctx.request_input(
            "elicit_input",
            InputRequest::elicit(ask_string("Elicitation request", "response")),
        )?;
        asked.push("elicit_input");
    }
    if caps.supports_sampling() {
        ctx.request_input(
            "sample_input",
            InputRequest::create_message(ask_model("Sample request", 50)),
        )?;
        asked.push("sample_input");
    }
    if caps.supports_roots() {
        ctx.request_input("roots_input", InputRequest::list_roots())?;
        asked.push("roots_input");
    }
    if asked.is_empty() {
        return Err(ErrorObject::missing_client_capability(
            json!({"elicitation": {}}),
            "test_input_required_result_capabilities needs elicitation, sampling or roots",
        )
        .into());
    }
    ctx.require_inputs()?;
    Ok(CallToolResult::text(format!(
        "capabilities-ok: received {}",
        asked.join(", ")
    )))
}

async fn streaming_elicitation(mut ctx: RequestContext, _args: JsonObject) -> ToolResult {
    // In 2026-07-28 a server never sends a request on the response stream: the question is an
    // input request of an input_required result, after any progress notification.
    ctx.progress(0.0, Some(1.0), Some("Streaming started"));
    let answer = ctx.elicit(
        "confirmation",
        ask_bool("Continue the streaming operation?", "continue"),
    )?;
    ctx.progress(1.0, Some(1.0), Some("Streaming finished"));
    Ok(CallToolResult::text(format!(
        "Streaming complete (the user {})",
        action(&answer)
    )))
}

async fn input_required_prompt(
    mut ctx: RequestContext,
    _args: std::collections::BTreeMap<String, String>,
) -> Result<GetPromptResult, HandlerError> {
    let answer = ctx.elicit(
        "user_context",
        ask_string("What context should the prompt use?", "context"),
    )?;
    let context = match field(&answer, "context") {
        Some(context) => context.to_owned(),
        None => format!("none (the user {})", action(&answer)),
    };
    Ok(GetPromptResult::new(vec![PromptMessage::user_text(
        format!("Prompt with context: {context}"),
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_and_sampling_shapes_match_the_suite() {
        let form = serde_json::to_value(ask_string("What is your name?", "name")).unwrap();
        assert_eq!(form["message"], "What is your name?");
        assert_eq!(
            form["requestedSchema"],
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
        );
        let sample = serde_json::to_value(ask_model("Q?", 100)).unwrap();
        assert_eq!(
            sample,
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Q?"}}], "maxTokens": 100})
        );
    }
}
