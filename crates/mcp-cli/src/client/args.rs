//! Turning `--arg key=value` pairs into tool arguments, typed by the tool's `inputSchema`.

use mcp_types::JsonObject;
use serde_json::Value;

use super::CliError;

/// Splits `key=value` at the first `=`.
pub(crate) fn key_value(pair: &str) -> Result<(String, String), CliError> {
    match pair.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(CliError::usage(format!(
            "--arg {pair:?}: expected KEY=VALUE"
        ))),
    }
}

/// The JSON types the schema allows for property `key`, if it says (`type` as a string or a list).
fn declared_types(schema: Option<&JsonObject>, key: &str) -> Option<Vec<String>> {
    let property = schema?
        .get("properties")?
        .as_object()?
        .get(key)?
        .as_object()?;
    match property.get("type")? {
        Value::String(t) => Some(vec![t.clone()]),
        Value::Array(list) => Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The value of `--arg key=raw` for a tool with input schema `schema`.
///
/// A property the schema declares as a string keeps the text as it is (`--arg zip=02134` stays
/// `"02134"`). Otherwise the text is taken as JSON when it parses as a value of a type the schema
/// allows (any type when the schema does not say), and as a string when it does not.
pub(crate) fn typed_value(schema: Option<&JsonObject>, key: &str, raw: &str) -> Value {
    let types = declared_types(schema, key);
    let allows = |t: &str| {
        types.as_ref().is_none_or(|types| {
            types
                .iter()
                .any(|d| d == t || (d == "number" && t == "integer"))
        })
    };
    if let Some(types) = &types
        && types.iter().any(|t| t == "string")
        && !(raw == "null" && types.iter().any(|t| t == "null"))
    {
        return Value::String(raw.to_owned());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value) if !value.is_string() && allows(type_of(&value)) => value,
        _ => Value::String(raw.to_owned()),
    }
}

/// Merges `ARGS_JSON` (an object, when given) and the `--arg` pairs (which win) into the arguments
/// of a call.
pub(crate) fn tool_arguments(
    json: Option<&str>,
    pairs: &[String],
    schema: Option<&JsonObject>,
) -> Result<JsonObject, CliError> {
    let mut arguments = match json {
        None => JsonObject::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(CliError::usage(format!(
                    "ARGS_JSON must be a JSON object, not {}",
                    type_of(&other)
                )));
            }
            Err(e) => return Err(CliError::usage(format!("ARGS_JSON is not JSON: {e}"))),
        },
    };
    for pair in pairs {
        let (key, raw) = key_value(pair)?;
        let value = typed_value(schema, &key, &raw);
        arguments.insert(key, value);
    }
    Ok(arguments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> JsonObject {
        json!({
            "type": "object",
            "properties": {
                "zip": {"type": "string"},
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "flag": {"type": "boolean"},
                "filter": {"type": "object"},
                "maybe": {"type": ["integer", "null"]},
                "label": {"type": ["string", "null"]},
                "free": {}
            }
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn values_follow_the_schema() {
        let s = schema();
        let s = Some(&s);
        assert_eq!(typed_value(s, "zip", "02134"), json!("02134"));
        assert_eq!(typed_value(s, "zip", "42"), json!("42"));
        assert_eq!(typed_value(s, "zip", "true"), json!("true"));
        assert_eq!(typed_value(s, "count", "42"), json!(42));
        assert_eq!(typed_value(s, "count", "4.5"), json!("4.5"));
        assert_eq!(typed_value(s, "ratio", "42"), json!(42));
        assert_eq!(typed_value(s, "ratio", "0.5"), json!(0.5));
        assert_eq!(typed_value(s, "flag", "false"), json!(false));
        assert_eq!(typed_value(s, "flag", "nope"), json!("nope"));
        assert_eq!(typed_value(s, "filter", r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(typed_value(s, "maybe", "null"), json!(null));
        assert_eq!(typed_value(s, "label", "null"), json!(null));
        assert_eq!(typed_value(s, "label", "7"), json!("7"));
        // No declared type: JSON when it parses, else text.
        assert_eq!(typed_value(s, "free", "[1,2]"), json!([1, 2]));
        assert_eq!(typed_value(s, "unknown", "7"), json!(7));
        assert_eq!(
            typed_value(s, "unknown", "hello world"),
            json!("hello world")
        );
        assert_eq!(typed_value(None, "x", r#""quoted""#), json!(r#""quoted""#));
    }

    #[test]
    fn json_and_pairs_merge() {
        let s = schema();
        let args = tool_arguments(
            Some(r#"{"count": 1, "zip": "x"}"#),
            &["count=2".into(), "note=a=b".into()],
            Some(&s),
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"count": 2, "zip": "x", "note": "a=b"})
        );
        assert!(tool_arguments(Some("[1]"), &[], None).is_err());
        assert!(tool_arguments(Some("{"), &[], None).is_err());
        assert!(tool_arguments(None, &["=x".into()], None).is_err());
        assert!(tool_arguments(None, &["novalue".into()], None).is_err());
    }
}
