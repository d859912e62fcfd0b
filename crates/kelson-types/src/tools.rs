//! Tools: definitions, `tools/list` and `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::{Icon, JsonObject, ResultType};
use crate::content::ContentBlock;
use crate::meta::{RequestMeta, ResultMeta};
use crate::mrtr::InputResponses;

/// A tool the server offers (`Tool`).
///
/// spec 2026-07-28 server/tools: names SHOULD be 1 to 128 characters of `A-Z a-z 0-9 _ - .`, unique
/// per server. The display name is `title`, then `annotations.title`, then `name`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The programmatic name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON Schema object for the arguments; its `type` MUST be `"object"`.
    pub input_schema: JsonObject,
    /// A JSON Schema for `structuredContent`, when the tool returns structured results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl Tool {
    /// A tool with a name and an input schema.
    pub fn new(name: impl Into<String>, input_schema: JsonObject) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }

    /// A tool that takes no arguments: its input schema is `{"type": "object"}`.
    pub fn without_arguments(name: impl Into<String>) -> Self {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), Value::from("object"));
        Self::new(name, schema)
    }

    /// Sets the display title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the output schema.
    #[must_use]
    pub fn with_output_schema(mut self, output_schema: JsonObject) -> Self {
        self.output_schema = Some(output_schema);
        self
    }

    /// Sets the behaviour hints.
    #[must_use]
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets the icons.
    #[must_use]
    pub fn with_icons(mut self, icons: Vec<Icon>) -> Self {
        self.icons = Some(icons);
        self
    }

    /// Sets the metadata.
    #[must_use]
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The name to show a person: `title`, then `annotations.title`, then `name`.
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref()?.title.as_deref())
            .unwrap_or(&self.name)
    }
}

/// Hints about a tool's behaviour (`ToolAnnotations`).
///
/// spec 2026-07-28 server/tools: hints are untrusted unless the server is trusted. Absent hints take
/// the defaults documented on each accessor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates (meaningful only when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no additional effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// Annotations with no hints set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `readOnlyHint`.
    #[must_use]
    pub fn with_read_only(mut self, value: bool) -> Self {
        self.read_only_hint = Some(value);
        self
    }

    /// Sets `destructiveHint`.
    #[must_use]
    pub fn with_destructive(mut self, value: bool) -> Self {
        self.destructive_hint = Some(value);
        self
    }

    /// Sets `idempotentHint`.
    #[must_use]
    pub fn with_idempotent(mut self, value: bool) -> Self {
        self.idempotent_hint = Some(value);
        self
    }

    /// Sets `openWorldHint`.
    #[must_use]
    pub fn with_open_world(mut self, value: bool) -> Self {
        self.open_world_hint = Some(value);
        self
    }

    /// `readOnlyHint`, defaulting to false.
    pub fn is_read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }

    /// `destructiveHint`, defaulting to true.
    pub fn is_destructive(&self) -> bool {
        self.destructive_hint.unwrap_or(true)
    }

    /// `idempotentHint`, defaulting to false.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent_hint.unwrap_or(false)
    }

    /// `openWorldHint`, defaulting to true.
    pub fn is_open_world(&self) -> bool {
        self.open_world_hint.unwrap_or(true)
    }
}

/// The parameters of `tools/call` (`CallToolRequestParams`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The tool to call.
    pub name: String,
    /// The arguments, checked against the tool's input schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<JsonObject>,
    /// Answers to the input requests of a previous `InputRequiredResult` (multi round-trip retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The opaque state of a previous `InputRequiredResult`, echoed byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl CallToolRequestParams {
    /// A call with an envelope, a tool name and no arguments.
    pub fn new(meta: RequestMeta, name: impl Into<String>) -> Self {
        CallToolRequestParams {
            meta,
            name: name.into(),
            arguments: None,
            input_responses: None,
            request_state: None,
        }
    }

    /// Sets the arguments.
    #[must_use]
    pub fn with_arguments(mut self, arguments: JsonObject) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

/// The result of `tools/call` (`CallToolResult`).
///
/// spec 2026-07-28 server/tools: a failure of the tool itself (bad input it can explain, an upstream
/// error) is a result with `isError: true` that the model can read; protocol failures are JSON-RPC
/// errors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Always `complete` for this type; see `ResultOrInputRequired` for the interim kind.
    #[serde(default)]
    pub result_type: ResultType,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result, which conforms to the tool's output schema when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool failed; absent means false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

impl CallToolResult {
    /// A successful result with the given content.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            ..Self::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A tool error the model can read: one text block and `isError: true`.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            is_error: Some(true),
            ..Self::text(text)
        }
    }

    /// A structured result, with the same JSON also given as a text block.
    ///
    /// spec 2026-07-28 server/tools (structured content): a tool that returns structured content
    /// SHOULD also return the serialized JSON in a text block, for clients that do not read it.
    pub fn structured(value: Value) -> Self {
        // serde_json::to_string writes into one buffer sized up front, where the Display of a
        // Value grows its String piece by piece; a Value always serializes.
        let text = serde_json::to_string(&value).unwrap_or_default();
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            structured_content: Some(value),
            ..Self::default()
        }
    }

    /// True when `isError` is present and true.
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }

    /// Sets the result metadata.
    #[must_use]
    pub fn with_meta(mut self, meta: ResultMeta) -> Self {
        self.meta = Some(meta);
        self
    }
}

list_result! {
    /// The result of `tools/list` (`ListToolsResult`), cacheable and paginated.
    ListToolsResult {
        /// The tools on this page; spec 2026-07-28 server/tools: SHOULD be in a deterministic order.
        tools: Tool
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn explicit_is_error_false_survives() {
        let wire = json!({"resultType": "complete", "content": [], "isError": false});
        let result: CallToolResult = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(result.is_error, Some(false));
        assert_eq!(serde_json::to_value(&result).unwrap(), wire);
    }

    #[test]
    fn constructors() {
        assert_eq!(
            serde_json::to_value(CallToolResult::error("boom")).unwrap(),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "boom"}], "isError": true})
        );
        let s = CallToolResult::structured(json!({"a": 1}));
        assert_eq!(s.content[0].as_text(), Some(r#"{"a":1}"#));
        assert_eq!(s.structured_content, Some(json!({"a": 1})));
        assert!(!s.is_error());

        let tool = Tool::without_arguments("now")
            .with_title("Clock")
            .with_annotations(ToolAnnotations::new().with_read_only(true));
        assert_eq!(tool.display_name(), "Clock");
        assert!(tool.annotations.as_ref().unwrap().is_read_only());
        assert!(tool.annotations.as_ref().unwrap().is_destructive());
        assert_eq!(
            serde_json::to_value(&tool).unwrap(),
            json!({"name": "now", "title": "Clock", "inputSchema": {"type": "object"},
                   "annotations": {"readOnlyHint": true}})
        );
    }

    #[test]
    fn legacy_results_without_result_type_are_complete() {
        let result: ListToolsResult = serde_json::from_value(json!({"tools": []})).unwrap();
        assert_eq!(result.result_type, ResultType::Complete);
        assert_eq!(result.ttl_ms, None);
        let result: ListToolsResult =
            serde_json::from_value(json!({"tools": [], "ttlMs": -5, "cacheScope": "private"}))
                .unwrap();
        assert_eq!(result.ttl_ms, Some(-5));
    }
}
