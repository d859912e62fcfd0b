//! Argument completion: `completion/complete`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::common::ResultType;
use crate::meta::{RequestMeta, ResultMeta};

/// The most values one completion may carry (spec 2026-07-28 server/utilities/completion).
pub const MAX_COMPLETION_VALUES: usize = 100;

/// The parameters of `completion/complete` (`CompleteRequestParams`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// The request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The prompt or resource template whose argument is being completed.
    #[serde(rename = "ref")]
    pub r#ref: CompletionReference,
    /// The argument being completed and what the user typed so far.
    pub argument: CompleteArgument,
    /// Values of other arguments already filled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
}

impl CompleteRequestParams {
    /// A completion request without context.
    pub fn new(meta: RequestMeta, r#ref: CompletionReference, argument: CompleteArgument) -> Self {
        CompleteRequestParams {
            meta,
            r#ref,
            argument,
            context: None,
        }
    }
}

/// What is being completed, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompletionReference {
    /// `"ref/prompt"`: an argument of a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt(PromptReference),
    /// `"ref/resource"`: a variable of a resource template.
    #[serde(rename = "ref/resource")]
    Resource(ResourceTemplateReference),
}

impl CompletionReference {
    /// A reference to a prompt by name.
    pub fn prompt(name: impl Into<String>) -> Self {
        CompletionReference::Prompt(PromptReference {
            name: name.into(),
            title: None,
        })
    }

    /// A reference to a resource template by its URI template.
    pub fn resource(uri: impl Into<String>) -> Self {
        CompletionReference::Resource(ResourceTemplateReference { uri: uri.into() })
    }
}

/// A reference to a prompt (`PromptReference`, `type: "ref/prompt"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptReference {
    /// The prompt's name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// A reference to a resource template (`ResourceTemplateReference`, `type: "ref/resource"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// The URI template.
    pub uri: String,
}

/// The argument being completed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompleteArgument {
    /// The argument's name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
}

impl CompleteArgument {
    /// An argument name and partial value.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        CompleteArgument {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// Context for a completion.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompleteContext {
    /// Arguments already resolved, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// The result of `completion/complete` (`CompleteResult`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The result kind.
    #[serde(default)]
    pub result_type: ResultType,
    /// The suggestions.
    pub completion: Completion,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

impl CompleteResult {
    /// A result with these values, truncated to [`MAX_COMPLETION_VALUES`]; when values are dropped,
    /// `total` and `hasMore` say so.
    pub fn new(values: Vec<String>) -> Self {
        CompleteResult {
            completion: Completion::new(values),
            ..Self::default()
        }
    }
}

/// Completion suggestions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// At most 100 suggested values.
    pub values: Vec<String>,
    /// The number of suggestions available in all, which may exceed `values.len()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// More suggestions exist beyond `values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl Completion {
    /// Suggestions truncated to [`MAX_COMPLETION_VALUES`]; `total` and `hasMore` are set only when
    /// values were dropped.
    pub fn new(mut values: Vec<String>) -> Self {
        let total = values.len();
        if total > MAX_COMPLETION_VALUES {
            values.truncate(MAX_COMPLETION_VALUES);
            Completion {
                values,
                total: Some(total as u64),
                has_more: Some(true),
            }
        } else {
            Completion {
                values,
                total: None,
                has_more: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_are_tagged() {
        let r: CompletionReference =
            serde_json::from_value(json!({"type": "ref/resource", "uri": "file:///{path}"}))
                .unwrap();
        assert_eq!(r, CompletionReference::resource("file:///{path}"));
        assert_eq!(
            serde_json::to_value(CompletionReference::prompt("p")).unwrap(),
            json!({"type": "ref/prompt", "name": "p"})
        );
        assert!(
            serde_json::from_value::<CompletionReference>(json!({"type": "ref/tool", "name": "x"}))
                .is_err()
        );
    }

    #[test]
    fn values_are_capped() {
        let c = Completion::new((0..150).map(|i| i.to_string()).collect());
        assert_eq!(c.values.len(), MAX_COMPLETION_VALUES);
        assert_eq!((c.total, c.has_more), (Some(150), Some(true)));
        let c = Completion::new(vec!["a".into()]);
        assert_eq!((c.total, c.has_more), (None, None));
    }
}
