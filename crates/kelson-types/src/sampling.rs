//! Sampling (deprecated in 2026-07-28): a server asks the client's model for a completion, as an input
//! request of a multi round-trip request (`sampling/createMessage`).

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::common::{JsonObject, Role};
use crate::content::{AudioContent, ContentBlock, ImageContent, TextContent};
use crate::tools::Tool;
use crate::wire::{open_string_enum, serialize_opt_number};

/// The parameters of `sampling/createMessage` (`CreateMessageRequestParams`).
///
/// spec 2026-07-28 client/sampling: the client MUST respect `maxTokens`; `tools` and `toolChoice` need
/// the client's `sampling.tools` capability. These parameters carry no `_meta` member in the schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// The server's preferences for model selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the client may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which MCP context to include; values other than `none` are deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// The sampling temperature.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_number"
    )]
    pub temperature: Option<f64>,
    /// The most tokens to sample.
    pub max_tokens: u64,
    /// Sequences that stop sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata passed through to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonObject>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use the tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

impl CreateMessageRequestParams {
    /// A request with the given messages and token limit.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u64) -> Self {
        CreateMessageRequestParams {
            messages,
            model_preferences: None,
            system_prompt: None,
            include_context: None,
            temperature: None,
            max_tokens,
            stop_sequences: None,
            metadata: None,
            tools: None,
            tool_choice: None,
        }
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, system_prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(system_prompt.into());
        self
    }

    /// True when the request needs the client's `sampling.tools` capability.
    pub fn uses_tools(&self) -> bool {
        self.tools.is_some() || self.tool_choice.is_some()
    }
}

/// Which MCP context the client should add to the prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// `"none"`.
    None,
    /// `"thisServer"` (deprecated).
    ThisServer,
    /// `"allServers"` (deprecated).
    AllServers,
}

/// How the model may use the offered tools (`ToolChoice`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// The mode; absent means `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
}

/// The tool-use mode of a sampling request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model MUST use at least one tool.
    Required,
    /// The model MUST NOT use tools.
    None,
}

/// The server's preferences for model selection (`ModelPreferences`); every priority is 0 to 1.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model name hints, in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_number"
    )]
    pub cost_priority: Option<f64>,
    /// How much speed matters.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_number"
    )]
    pub speed_priority: Option<f64>,
    /// How much capability matters.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_number"
    )]
    pub intelligence_priority: Option<f64>,
}

/// A model name hint (`ModelHint`), matched as a substring of model names.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelHint {
    /// A full or partial model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One message of a sampling conversation (`SamplingMessage`).
///
/// spec 2026-07-28 client/sampling: a user message that carries a tool result carries only tool
/// results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// One block or several.
    pub content: SamplingContent,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl SamplingMessage {
    /// A text message from the user.
    pub fn user_text(text: impl Into<String>) -> Self {
        SamplingMessage {
            role: Role::User,
            content: SamplingContent::Single(SamplingMessageContentBlock::Text(TextContent::new(
                text,
            ))),
            meta: None,
        }
    }
}

/// The content of a sampling message or result: one block or an array of blocks. Which one the sender
/// used is kept, so a message re-serializes as it came.
#[derive(Clone, Debug, PartialEq)]
pub enum SamplingContent {
    /// A single block, not wrapped in an array.
    Single(SamplingMessageContentBlock),
    /// An array of blocks.
    Multiple(Vec<SamplingMessageContentBlock>),
}

impl SamplingContent {
    /// The blocks, whichever form they came in.
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            SamplingContent::Single(block) => std::slice::from_ref(block),
            SamplingContent::Multiple(blocks) => blocks,
        }
    }
}

impl Serialize for SamplingContent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SamplingContent::Single(block) => block.serialize(serializer),
            SamplingContent::Multiple(blocks) => blocks.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;

        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = SamplingContent;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block or an array of content blocks")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SamplingContent, A::Error> {
                SamplingMessageContentBlock::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(SamplingContent::Single)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<SamplingContent, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(SamplingContent::Multiple)
            }
        }

        deserializer.deserialize_any(ContentVisitor)
    }
}

/// One block of sampling content (`SamplingMessageContentBlock`), tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum SamplingMessageContentBlock {
    /// `"text"`.
    #[serde(rename = "text")]
    Text(TextContent),
    /// `"image"`.
    #[serde(rename = "image")]
    Image(ImageContent),
    /// `"audio"`.
    #[serde(rename = "audio")]
    Audio(AudioContent),
    /// `"tool_use"`: the model calls a tool.
    #[serde(rename = "tool_use")]
    ToolUse(ToolUseContent),
    /// `"tool_result"`: the result of a tool call, sent back to the model.
    #[serde(rename = "tool_result")]
    ToolResult(ToolResultContent),
}

/// A tool call made by the model (`ToolUseContent`, `type: "tool_use"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// The call's id, echoed by the matching tool result.
    pub id: String,
    /// The tool to call.
    pub name: String,
    /// The arguments.
    pub input: JsonObject,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// The result of a tool call, for the model (`ToolResultContent`, `type: "tool_result"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The id of the tool use this answers.
    pub tool_use_id: String,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

open_string_enum! {
    /// Why sampling stopped. Clients may report values of their own, kept in `Other`.
    pub enum StopReason {
        /// `"endTurn"`: the model finished its turn.
        EndTurn = "endTurn",
        /// `"stopSequence"`: a stop sequence was produced.
        StopSequence = "stopSequence",
        /// `"maxTokens"`: the token limit was reached.
        MaxTokens = "maxTokens",
        /// `"toolUse"`: the model wants to call tools.
        ToolUse = "toolUse",
    }
}

/// The client's answer to a sampling request (`CreateMessageResult`), sent in `inputResponses`.
///
/// Unlike a JSON-RPC result, it carries no `resultType` (spec 2026-07-28 basic/patterns/mrtr).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who produced the message, normally the assistant.
    pub role: Role,
    /// The sampled content.
    pub content: SamplingContent,
    /// The model that produced it.
    pub model: String,
    /// Why sampling stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl CreateMessageResult {
    /// An assistant text answer.
    pub fn assistant_text(model: impl Into<String>, text: impl Into<String>) -> Self {
        CreateMessageResult {
            role: Role::Assistant,
            content: SamplingContent::Single(SamplingMessageContentBlock::Text(TextContent::new(
                text,
            ))),
            model: model.into(),
            stop_reason: Some(StopReason::EndTurn),
            meta: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_keeps_single_or_array_form() {
        let single = json!({"role": "user", "content": {"type": "text", "text": "hi"}});
        let msg: SamplingMessage = serde_json::from_value(single.clone()).unwrap();
        assert!(matches!(msg.content, SamplingContent::Single(_)));
        assert_eq!(serde_json::to_value(&msg).unwrap(), single);

        let array = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
        let msg: SamplingMessage = serde_json::from_value(array.clone()).unwrap();
        assert!(matches!(msg.content, SamplingContent::Multiple(_)));
        assert_eq!(msg.content.blocks().len(), 1);
        assert_eq!(serde_json::to_value(&msg).unwrap(), array);
        assert!(serde_json::from_value::<SamplingContent>(json!("text")).is_err());
    }

    #[test]
    fn tool_blocks_are_tagged() {
        let use_ = json!({"type": "tool_use", "id": "c1", "name": "w", "input": {"city": "Paris"}});
        let block: SamplingMessageContentBlock = serde_json::from_value(use_.clone()).unwrap();
        assert!(matches!(block, SamplingMessageContentBlock::ToolUse(_)));
        assert_eq!(serde_json::to_value(&block).unwrap(), use_);
        let result = json!({"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "18C"}], "isError": false});
        let block: SamplingMessageContentBlock = serde_json::from_value(result.clone()).unwrap();
        assert!(matches!(block, SamplingMessageContentBlock::ToolResult(_)));
        assert_eq!(serde_json::to_value(&block).unwrap(), result);
    }

    #[test]
    fn stop_reason_is_open() {
        let r: CreateMessageResult = serde_json::from_value(json!({
            "role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m", "stopReason": "refusal"
        }))
        .unwrap();
        assert_eq!(r.stop_reason, Some(StopReason::Other("refusal".into())));
        assert_eq!(
            serde_json::to_value(CreateMessageResult::assistant_text("m", "x")).unwrap()["stopReason"],
            json!("endTurn")
        );
    }
}
