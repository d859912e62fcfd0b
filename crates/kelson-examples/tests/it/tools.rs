//! `tools/list` and `tools/call` of every plain fixture: content, errors, schemas, capabilities,
//! progress and logging.

use serde_json::{Value, json};

use crate::client::{Fixture, error, meta_plus, meta_with_caps, result, text, texts};

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Every tool of the fixture, in `tools/list` order (the registry orders tools by name).
const TOOLS: &[&str] = &[
    "confirm_delete",
    "failing_job",
    "greet",
    "json_schema_2020_12_tool",
    "multi_input",
    "protocol_error_job",
    "slow_compute",
    "test_audio_content",
    "test_custom_header",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_embedded_resource",
    "test_error_handling",
    "test_image_content",
    "test_input_required_result_capabilities",
    "test_input_required_result_elicitation",
    "test_input_required_result_list_roots",
    "test_input_required_result_multi_round",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_request_state",
    "test_input_required_result_sampling",
    "test_input_required_result_tampered_state",
    "test_logging_tool",
    "test_missing_capability",
    "test_multiple_content_types",
    "test_panic",
    "test_sampling",
    "test_simple_text",
    "test_slow",
    "test_streaming_elicitation",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_tool_with_task",
    "test_trigger_prompt_change",
    "test_trigger_tool_change",
];

fn names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .expect("tools is an array")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect()
}

#[tokio::test]
async fn tools_list_is_complete_described_and_deterministic() {
    let mut server = Fixture::start().await;
    let first = server.call("tools/list", json!({})).await;
    let list = result(&first);
    assert_eq!(names(list), TOOLS);
    assert!(list.get("nextCursor").is_none(), "{list}");
    assert!(list["ttlMs"].as_u64().is_some(), "{list}");
    assert!(matches!(
        list["cacheScope"].as_str(),
        Some("public" | "private")
    ));
    for tool in list["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        assert!(
            name.len() <= 128
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)),
            "{name}"
        );
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{name} needs a description"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
    }
    // The same list, in the same order, every time.
    for _ in 0..2 {
        let again = server.call("tools/list", json!({})).await;
        assert_eq!(result(&again)["tools"], list["tools"]);
    }
    server.finish().await;
}

#[tokio::test]
async fn cursors_an_empty_one_is_valid_and_a_bad_one_is_invalid_params() {
    let mut server = Fixture::start().await;
    let plain = server.call("tools/list", json!({})).await;
    let empty = server.call("tools/list", json!({"cursor": ""})).await;
    assert_eq!(result(&empty)["tools"], result(&plain)["tools"]);
    for bad in [json!("not-a-cursor"), json!("bWNwLXJzOnQ6OTk5"), json!(5)] {
        let response = server.call("tools/list", json!({"cursor": bad})).await;
        error(&response, -32602);
    }
    server.finish().await;
}

#[tokio::test]
async fn the_content_fixtures_return_their_exact_content() {
    let mut server = Fixture::start().await;
    let cases = [
        (
            "test_simple_text",
            json!([{"type": "text", "text": "This is a simple text response for testing."}]),
        ),
        (
            "test_image_content",
            json!([{"type": "image", "data": PNG, "mimeType": "image/png"}]),
        ),
        (
            "test_audio_content",
            json!([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]),
        ),
        (
            "test_embedded_resource",
            json!([{"type": "resource", "resource": {
                "uri": "test://embedded-resource", "mimeType": "text/plain",
                "text": "This is an embedded resource content."
            }}]),
        ),
        (
            "test_multiple_content_types",
            json!([
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": {
                    "uri": "test://mixed-content-resource", "mimeType": "application/json",
                    "text": "{\"test\":\"data\",\"value\":123}"
                }}
            ]),
        ),
    ];
    for (name, content) in cases {
        // The suite calls the first tool without an `arguments` member at all.
        let response = server.call("tools/call", json!({"name": name})).await;
        let r = result(&response);
        assert_eq!(r["resultType"], "complete", "{name}");
        assert_eq!(r["content"], content, "{name}");
        assert!(
            r.get("isError").is_none() || r["isError"] == false,
            "{name}"
        );
    }
    server.finish().await;
}

#[tokio::test]
async fn a_tool_error_is_a_result_not_a_protocol_error() {
    let mut server = Fixture::start().await;
    let response = server.call_tool("test_error_handling", json!({})).await;
    let r = result(&response);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["isError"], true);
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": "This tool intentionally returns an error for testing"}])
    );
    server.finish().await;
}

#[tokio::test]
async fn an_unknown_tool_is_invalid_params() {
    let mut server = Fixture::start().await;
    let response = server.call_tool("no_such_tool", json!({})).await;
    let e = error(&response, -32602);
    assert!(
        e["message"].as_str().unwrap().contains("no_such_tool"),
        "{e}"
    );
    // A call without a name is structurally broken.
    let response = server.call("tools/call", json!({"arguments": {}})).await;
    error(&response, -32602);
    // Arguments that are not an object, likewise.
    let response = server
        .call(
            "tools/call",
            json!({"name": "test_simple_text", "arguments": [1]}),
        )
        .await;
    error(&response, -32602);
    server.finish().await;
}

#[tokio::test]
async fn the_json_schema_2020_12_tool_keeps_every_keyword() {
    let mut server = Fixture::start().await;
    let list = server.call("tools/list", json!({})).await;
    let tool = result(&list)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .cloned()
        .expect("the tool is listed");
    let expected = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
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
    });
    assert_eq!(tool["inputSchema"], expected);

    let args = json!({"name": "Ada", "contactMethod": "email", "email": "ada@example.com",
        "address": {"street": "1 Main St", "city": "London"}});
    let response = server
        .call_tool("json_schema_2020_12_tool", args.clone())
        .await;
    let said = text(&response);
    let echoed: Value = serde_json::from_str(
        said.strip_prefix("JSON Schema 2020-12 tool called with: ")
            .expect("the fixed prefix"),
    )
    .unwrap();
    assert_eq!(echoed, args);
    server.finish().await;
}

/// The `isError` text of a call whose arguments fail the tool's input schema.
#[track_caller]
fn schema_failure(response: &Value) -> String {
    let r = result(response);
    assert_eq!(r["resultType"], "complete", "{response}");
    assert_eq!(r["isError"], true, "{response}");
    texts(response).join("\n")
}

#[tokio::test]
async fn arguments_that_fail_the_input_schema_are_a_tool_error_naming_the_path() {
    let mut server = Fixture::start().await;
    // spec 2026-07-28 server/tools (SEP-1303): input validation failures are tool execution errors.
    let cases = [
        (
            "json_schema_2020_12_tool",
            json!({"name": 5, "email": "a@b.c"}),
            "/name",
        ),
        (
            "json_schema_2020_12_tool",
            json!({"email": "a@b.c", "address": {"city": 7}}),
            "/address/city",
        ),
        ("test_custom_header", json!({"region": 42}), "/region"),
        ("test_slow", json!({"ms": -1}), "/ms"),
    ];
    for (name, args, path) in cases {
        let response = server.call_tool(name, args).await;
        let message = schema_failure(&response);
        assert!(
            message.contains(path),
            "{name}: {message:?} should name {path}"
        );
        assert!(message.contains(name), "{message}");
    }
    // Failures at the root: a missing required member, an unexpected one, an unmet conditional.
    for (name, args) in [
        ("test_custom_header", json!({})),
        ("test_simple_text", json!({"unexpected": true})),
        (
            "json_schema_2020_12_tool",
            json!({"contactMethod": "phone", "email": "a@b.c"}),
        ),
    ] {
        let response = server.call_tool(name, args).await;
        schema_failure(&response);
    }
    server.finish().await;
}

#[tokio::test]
async fn the_custom_header_tool_declares_its_header() {
    let mut server = Fixture::start().await;
    let list = server.call("tools/list", json!({})).await;
    let tool = result(&list)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "test_custom_header")
        .cloned()
        .expect("listed");
    let region = &tool["inputSchema"]["properties"]["region"];
    assert_eq!(region["type"], "string");
    assert_eq!(region["x-mcp-header"], "Region");
    let response = server
        .call_tool("test_custom_header", json!({"region": "us-west1"}))
        .await;
    assert_eq!(text(&response), "Region: us-west1");
    server.finish().await;
}

#[tokio::test]
async fn a_missing_client_capability_is_named_as_an_object() {
    let mut server = Fixture::start().await;
    for caps in [json!({}), json!({"elicitation": {}, "roots": {}})] {
        let response = server
            .call(
                "tools/call",
                json!({"_meta": meta_with_caps(caps), "name": "test_missing_capability", "arguments": {}}),
            )
            .await;
        let e = error(&response, -32021);
        assert_eq!(e["data"]["requiredCapabilities"], json!({"sampling": {}}));
    }
    let response = server
        .call(
            "tools/call",
            json!({"_meta": meta_with_caps(json!({"sampling": {}})), "name": "test_missing_capability"}),
        )
        .await;
    assert_eq!(text(&response), "Success");
    server.finish().await;
}

/// The progress notifications among `notes`.
fn progress(notes: &[Value]) -> Vec<&Value> {
    notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect()
}

#[tokio::test]
async fn progress_comes_before_the_result_with_the_token_as_sent() {
    let mut server = Fixture::start().await;
    for token in [json!("progress-test-1"), json!(42)] {
        let (notes, response) = server
            .call_collect(
                "tools/call",
                json!({"_meta": meta_plus(json!({"progressToken": token})), "name": "test_tool_with_progress", "arguments": {}}),
            )
            .await;
        let steps = progress(&notes);
        assert!(steps.len() >= 3, "{notes:#?}");
        let mut last = f64::NEG_INFINITY;
        for step in &steps {
            let params = &step["params"];
            // Same value, same JSON type.
            assert_eq!(params["progressToken"], token, "{step}");
            let value = params["progress"].as_f64().expect("a number");
            assert!(value > last, "progress must increase: {notes:#?}");
            last = value;
            assert_eq!(params["total"], 100.0);
            assert!(params["message"].is_string());
            // Progress never travels with a subscription id.
            assert!(params.get("_meta").is_none(), "{step}");
        }
        let expected = match &token {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        assert_eq!(text(&response), expected);
    }
    // Without a token there is no progress at all.
    let (notes, response) = server
        .call_collect("tools/call", json!({"name": "test_tool_with_progress"}))
        .await;
    assert!(progress(&notes).is_empty(), "{notes:#?}");
    assert_eq!(text(&response), "no progress token");
    server.finish().await;
}

/// The levels of the log notifications among `notes`.
fn log_levels(notes: &[Value]) -> Vec<String> {
    notes
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .map(|n| n["params"]["level"].as_str().expect("a level").to_owned())
        .collect()
}

#[tokio::test]
async fn log_messages_are_sent_only_at_or_above_the_requested_level() {
    let mut server = Fixture::start().await;
    let cases: [(Option<&str>, &[&str]); 5] = [
        (None, &[]),
        (Some("debug"), &["debug", "info", "warning", "error"]),
        (Some("info"), &["info", "warning", "error"]),
        (Some("warning"), &["warning", "error"]),
        (Some("emergency"), &[]),
    ];
    for (level, expected) in cases {
        let meta = match level {
            Some(l) => meta_plus(json!({"io.modelcontextprotocol/logLevel": l})),
            None => meta_plus(json!({})),
        };
        let (notes, response) = server
            .call_collect(
                "tools/call",
                json!({"_meta": meta, "name": "test_logging_tool", "arguments": {}}),
            )
            .await;
        assert_eq!(log_levels(&notes), expected, "logLevel {level:?}");
        assert_eq!(text(&response), "Logging evaluated");
        for note in &notes {
            assert_eq!(note["params"]["logger"], "conformance-test-server");
            assert!(note["params"]["data"].is_object());
        }
    }
    server.finish().await;
}

#[tokio::test]
async fn the_logging_tool_logs_three_steps_when_asked() {
    let mut server = Fixture::start().await;
    let meta = meta_plus(json!({"io.modelcontextprotocol/logLevel": "info"}));
    let (notes, response) = server
        .call_collect(
            "tools/call",
            json!({"_meta": meta, "name": "test_tool_with_logging", "arguments": {}}),
        )
        .await;
    let data: Vec<&Value> = notes.iter().map(|n| &n["params"]["data"]).collect();
    assert_eq!(
        data,
        [
            &json!("Tool execution started"),
            &json!("Tool processing data"),
            &json!("Tool execution completed")
        ]
    );
    assert_eq!(log_levels(&notes), ["info", "info", "info"]);
    assert_eq!(text(&response), "Tool with logging executed successfully");

    // Above the tool's level, or without a level: silence.
    for meta in [
        meta_plus(json!({"io.modelcontextprotocol/logLevel": "error"})),
        meta_plus(json!({})),
    ] {
        let (notes, response) = server
            .call_collect(
                "tools/call",
                json!({"_meta": meta, "name": "test_tool_with_logging"}),
            )
            .await;
        assert!(notes.is_empty(), "{notes:#?}");
        text(&response);
    }
    server.finish().await;
}
