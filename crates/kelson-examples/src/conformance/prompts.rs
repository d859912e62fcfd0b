//! The prompts and the completion handler.

use std::collections::BTreeMap;

use kelson_server::{Completions, HandlerError, RequestContext, ServerBuilder};
use kelson_types::{
    CompleteRequestParams, CompletionReference, ContentBlock, GetPromptResult, Prompt,
    PromptArgument, PromptMessage, Role, TextResourceContents,
};

use super::PNG_1X1;

type Arguments = BTreeMap<String, String>;
type PromptResult = Result<GetPromptResult, HandlerError>;

pub(super) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .prompt(
            Prompt::new("test_simple_prompt")
                .with_title("Simple Test Prompt")
                .with_description("A simple prompt without arguments"),
            simple,
        )
        .prompt(
            Prompt::new("test_prompt_with_arguments")
                .with_title("Prompt With Arguments")
                .with_description("A prompt with required arguments")
                .with_argument(
                    PromptArgument::new("arg1")
                        .with_description("First test argument")
                        .required(),
                )
                .with_argument(
                    PromptArgument::new("arg2")
                        .with_description("Second test argument")
                        .required(),
                ),
            with_arguments,
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource")
                .with_title("Prompt With Embedded Resource")
                .with_description("A prompt that includes an embedded resource")
                .with_argument(
                    PromptArgument::new("resourceUri")
                        .with_description("URI of the resource to embed")
                        .required(),
                ),
            with_embedded_resource,
        )
        .prompt(
            Prompt::new("test_prompt_with_image")
                .with_title("Prompt With Image")
                .with_description("A prompt that includes image content"),
            with_image,
        )
        .completion(complete)
}

async fn simple(_ctx: RequestContext, _args: Arguments) -> PromptResult {
    Ok(GetPromptResult::new(vec![PromptMessage::user_text(
        "This is a simple prompt for testing.",
    )]))
}

async fn with_arguments(_ctx: RequestContext, args: Arguments) -> PromptResult {
    // The runtime has checked that both required arguments are present.
    let arg = |name: &str| args.get(name).map(String::as_str).unwrap_or_default();
    Ok(GetPromptResult::new(vec![PromptMessage::user_text(
        format!(
            "Prompt with arguments: arg1='{}', arg2='{}'",
            arg("arg1"),
            arg("arg2")
        ),
    )]))
}

async fn with_embedded_resource(_ctx: RequestContext, args: Arguments) -> PromptResult {
    let uri = args.get("resourceUri").cloned().unwrap_or_default();
    Ok(GetPromptResult::new(vec![
        PromptMessage::new(
            Role::User,
            ContentBlock::embedded(
                TextResourceContents::new(uri, "Embedded resource content for testing.")
                    .with_mime_type("text/plain"),
            ),
        ),
        PromptMessage::user_text("Please process the embedded resource above."),
    ]))
}

async fn with_image(_ctx: RequestContext, _args: Arguments) -> PromptResult {
    Ok(GetPromptResult::new(vec![
        PromptMessage::new(Role::User, ContentBlock::image(PNG_1X1, "image/png")),
        PromptMessage::user_text("Please analyze the image above."),
    ]))
}

/// Suggests values for the prompt arguments and the template variable, by prefix.
async fn complete(
    _ctx: RequestContext,
    params: CompleteRequestParams,
) -> Result<Completions, HandlerError> {
    let candidates: &[&str] = match (&params.r#ref, params.argument.name.as_str()) {
        (CompletionReference::Prompt(p), "arg1" | "arg2")
            if p.name == "test_prompt_with_arguments" =>
        {
            &["testValue1", "testValue2", "otherValue"]
        }
        (CompletionReference::Prompt(p), "resourceUri")
            if p.name == "test_prompt_with_embedded_resource" =>
        {
            &[
                "test://static-text",
                "test://static-binary",
                "test://watched-resource",
            ]
        }
        (CompletionReference::Resource(_), "id") => &["123", "456", "789"],
        _ => &[],
    };
    let mut completions =
        Completions::filter_prefix(candidates.iter().copied(), &params.argument.value);
    completions.total = Some(completions.values.len() as u64);
    completions.has_more = Some(false);
    Ok(completions)
}
