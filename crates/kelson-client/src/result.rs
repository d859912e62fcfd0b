//! Reading a result: whether it is final (`resultType`), and decoding it as its method's type.

use kelson_jsonrpc::RawValue;
use serde_json::Value;

use crate::{Error, Violation};

/// Whether a result is final, asks for input, or is a task handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Complete,
    InputRequired,
    /// `resultType: "task"` (the tasks extension): the result comes later, through `tasks/get`.
    Task,
}

/// Reads `resultType`: absent means complete; `input_required` only where the method allows it;
/// `task` only on a request that declared the tasks extension (`task`); any other value is
/// invalid (spec 2026-07-28 basic/index: never a guess).
pub(crate) fn result_kind(
    method: &str,
    raw: &RawValue,
    mrtr: bool,
    task: bool,
) -> Result<Kind, Error> {
    #[derive(serde::Deserialize)]
    struct Peek {
        #[serde(rename = "resultType")]
        result_type: Option<Value>,
    }
    let peek: Peek = serde_json::from_str(raw.get()).map_err(|e| Error::malformed(method, e))?;
    match peek.result_type {
        None => Ok(Kind::Complete),
        Some(Value::String(s)) if s == "complete" => Ok(Kind::Complete),
        Some(Value::String(s)) if s == "input_required" => {
            if mrtr {
                Ok(Kind::InputRequired)
            } else {
                Err(Violation::UnexpectedInputRequired {
                    method: method.to_owned(),
                }
                .into())
            }
        }
        Some(Value::String(s)) if s == "task" && task => Ok(Kind::Task),
        Some(other) => Err(Violation::UnknownResultType {
            method: method.to_owned(),
            value: other.to_string(),
        }
        .into()),
    }
}

/// Decodes a complete result as its method's type.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    method: &str,
    raw: &RawValue,
) -> Result<T, Error> {
    serde_json::from_str(raw.get()).map_err(|e| Error::malformed(method, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn result_types_are_never_guessed() {
        assert_eq!(
            result_kind("tools/list", &raw(r#"{"tools":[]}"#), false, false).unwrap(),
            Kind::Complete
        );
        assert_eq!(
            result_kind(
                "tools/call",
                &raw(r#"{"resultType":"input_required"}"#),
                true,
                false
            )
            .unwrap(),
            Kind::InputRequired
        );
        let e = result_kind(
            "tools/list",
            &raw(r#"{"resultType":"input_required"}"#),
            false,
            false,
        )
        .unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidServerBehaviour(Violation::UnexpectedInputRequired { .. })
        ));
        // A task only where the request declared the extension.
        let e =
            result_kind("tools/call", &raw(r#"{"resultType":"task"}"#), true, false).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidServerBehaviour(Violation::UnknownResultType { .. })
        ));
        assert_eq!(
            result_kind("tools/call", &raw(r#"{"resultType":"task"}"#), true, true).unwrap(),
            Kind::Task
        );
        let e = result_kind("tools/call", &raw(r#"{"resultType":7}"#), true, true).unwrap_err();
        assert!(e.to_string().contains("unknown resultType 7"));
    }
}
