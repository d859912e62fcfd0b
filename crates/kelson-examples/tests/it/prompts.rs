//! `prompts/list`, `prompts/get` and `completion/complete`.

use serde_json::json;

use crate::client::{Fixture, error, result};

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[tokio::test]
async fn prompts_are_listed_with_descriptions_and_arguments() {
    let mut server = Fixture::start().await;
    let response = server.call("prompts/list", json!({})).await;
    let r = result(&response);
    assert!(r["ttlMs"].as_u64().is_some(), "{r}");
    assert!(matches!(
        r["cacheScope"].as_str(),
        Some("public" | "private")
    ));
    assert_eq!(
        r["prompts"],
        json!([
            {"name": "test_input_required_result_prompt",
             "description": "MRTR: prompt that requires elicitation input (key user_context)"},
            {"name": "test_prompt_with_arguments", "title": "Prompt With Arguments",
             "description": "A prompt with required arguments",
             "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true}
             ]},
            {"name": "test_prompt_with_embedded_resource", "title": "Prompt With Embedded Resource",
             "description": "A prompt that includes an embedded resource",
             "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]},
            {"name": "test_prompt_with_image", "title": "Prompt With Image",
             "description": "A prompt that includes image content"},
            {"name": "test_simple_prompt", "title": "Simple Test Prompt",
             "description": "A simple prompt without arguments"}
        ])
    );
    error(
        &server.call("prompts/list", json!({"cursor": "junk"})).await,
        -32602,
    );
    server.finish().await;
}

#[tokio::test]
async fn every_prompt_renders() {
    let mut server = Fixture::start().await;
    let cases = [
        (
            json!({"name": "test_simple_prompt"}),
            json!([{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}]),
        ),
        (
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "testValue1", "arg2": "testValue2"}}),
            json!([{"role": "user", "content": {"type": "text",
                "text": "Prompt with arguments: arg1='testValue1', arg2='testValue2'"}}]),
        ),
        (
            json!({"name": "test_prompt_with_embedded_resource", "arguments": {"resourceUri": "test://example-resource"}}),
            json!([
                {"role": "user", "content": {"type": "resource", "resource": {
                    "uri": "test://example-resource", "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."}}},
                {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}}
            ]),
        ),
        (
            json!({"name": "test_prompt_with_image", "arguments": {}}),
            json!([
                {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
                {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}
            ]),
        ),
    ];
    for (params, messages) in cases {
        let response = server.call("prompts/get", params.clone()).await;
        let r = result(&response);
        assert_eq!(r["resultType"], "complete", "{params}");
        assert_eq!(r["messages"], messages, "{params}");
    }
    server.finish().await;
}

#[tokio::test]
async fn prompt_errors_are_invalid_params() {
    let mut server = Fixture::start().await;
    let response = server
        .call(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "only one"}}),
        )
        .await;
    let e = error(&response, -32602);
    assert!(e["message"].as_str().unwrap().contains("arg2"), "{e}");
    let response = server
        .call("prompts/get", json!({"name": "test_prompt_with_arguments"}))
        .await;
    error(&response, -32602);
    let response = server
        .call("prompts/get", json!({"name": "no_such_prompt"}))
        .await;
    let e = error(&response, -32602);
    assert!(
        e["message"].as_str().unwrap().contains("no_such_prompt"),
        "{e}"
    );
    // Prompt arguments are strings.
    let response = server
        .call(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": 1, "arg2": "b"}}),
        )
        .await;
    error(&response, -32602);
    server.finish().await;
}

#[tokio::test]
async fn completion_suggests_by_prefix() {
    let mut server = Fixture::start().await;
    let cases = [
        (
            json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"}),
            json!({"name": "arg1", "value": "test"}),
            json!(["testValue1", "testValue2"]),
        ),
        (
            json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"}),
            json!({"name": "arg2", "value": "zzz"}),
            json!([]),
        ),
        (
            json!({"type": "ref/prompt", "name": "test_prompt_with_embedded_resource"}),
            json!({"name": "resourceUri", "value": "test://static-"}),
            json!(["test://static-text", "test://static-binary"]),
        ),
        (
            json!({"type": "ref/resource", "uri": "test://template/{id}/data"}),
            json!({"name": "id", "value": "4"}),
            json!(["456"]),
        ),
    ];
    for (reference, argument, values) in cases {
        let response = server
            .call(
                "completion/complete",
                json!({"ref": reference, "argument": argument, "context": {"arguments": {}}}),
            )
            .await;
        let completion = &result(&response)["completion"];
        assert_eq!(completion["values"], values, "{argument}");
        assert_eq!(completion["total"], values.as_array().unwrap().len());
        assert_eq!(completion["hasMore"], false);
    }
    // A reference to nothing this server has, and a malformed one.
    let response = server
        .call(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}}),
        )
        .await;
    error(&response, -32602);
    let response = server
        .call(
            "completion/complete",
            json!({"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}}),
        )
        .await;
    error(&response, -32602);
    server.finish().await;
}
