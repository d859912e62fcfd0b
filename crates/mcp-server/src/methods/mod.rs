//! One module per group of methods.

mod complete;
mod listen;
mod lists;
mod prompts;
mod resources;
mod tools;

use mcp_jsonrpc::{ErrorObject, RawValue};

use crate::router::Prepared;

/// Decodes a method's params, or explains what is wrong with them (-32602).
pub(crate) fn params<'a, T: serde::Deserialize<'a>>(
    req: &'a Prepared<'_>,
) -> Result<T, ErrorObject> {
    decode(req.params.as_deref())
}

/// Decodes raw params, possibly borrowing from them, or explains what is wrong (-32602).
pub(crate) fn decode<'a, T: serde::Deserialize<'a>>(
    raw: Option<&'a RawValue>,
) -> Result<T, ErrorObject> {
    serde_json::from_str(raw.map_or("{}", RawValue::get)).map_err(ErrorObject::invalid_params)
}

/// spec 2026-07-28 (DIGEST §9): `inputResponses` is an object and `requestState` a string when
/// present; `null` for either is a malformed retry (-32602), not "absent" (serde's `Option` would
/// take it for absent, and the server would silently ask again). Checked only when the params
/// contain `null` at all, so ordinary requests pay one substring search.
pub(crate) fn mrtr_fields_not_null(raw: Option<&RawValue>) -> Result<(), ErrorObject> {
    let Some(raw) = raw else { return Ok(()) };
    if !raw.get().contains("null") {
        return Ok(());
    }
    // A map of raw values: an `Option` field would read `null` as absent.
    let fields: std::collections::HashMap<String, &RawValue> = decode(Some(raw))?;
    for name in ["inputResponses", "requestState"] {
        if fields.get(name).is_some_and(|v| v.get().trim() == "null") {
            return Err(ErrorObject::invalid_params(format_args!(
                "{name} must not be null: leave it out when there is nothing to send"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).expect("valid JSON")
    }

    #[test]
    fn null_mrtr_fields_are_invalid_params() {
        for body in [
            r#"{"name":"t","inputResponses":null}"#,
            r#"{"name":"t","requestState": null }"#,
        ] {
            let e = mrtr_fields_not_null(Some(&raw(body))).expect_err(body);
            assert_eq!(e.code, -32602, "{body}");
            assert!(e.message.contains("must not be null"), "{}", e.message);
        }
    }

    #[test]
    fn absent_fields_and_nulls_elsewhere_pass() {
        for body in [
            r#"{"name":"t"}"#,
            r#"{"name":"t","arguments":{"x":null}}"#,
            r#"{"name":"t","inputResponses":{"k":{"action":"decline"}},"requestState":"s"}"#,
        ] {
            mrtr_fields_not_null(Some(&raw(body))).expect(body);
        }
        mrtr_fields_not_null(None).expect("no params");
    }
}
