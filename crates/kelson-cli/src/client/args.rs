//! Tool arguments: `--arg key=value` pairs typed by the tool's `inputSchema`, checked against it
//! before anything is sent, and summarised for `kelson tools`.

use kelson_types::JsonObject;
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

/// Whether `text` reads as `key=value` rather than JSON: an `=` after a plain key.
fn looks_like_pair(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_err()
        && text.split_once('=').is_some_and(|(key, _)| {
            !key.is_empty()
                && key
                    .chars()
                    .all(|c| !c.is_whitespace() && !matches!(c, '{' | '[' | '"' | '\'' | ':'))
        })
}

/// Merges `ARGS_JSON` (one object, when given) and the `--arg` pairs (which win) into the
/// arguments of a call. Positionals written as `key=value` get the `--arg` form suggested.
pub(crate) fn tool_arguments(
    positional: &[String],
    pairs: &[String],
    schema: Option<&JsonObject>,
) -> Result<JsonObject, CliError> {
    if positional.iter().any(|p| looks_like_pair(p)) {
        let suggestion: Vec<String> = positional
            .iter()
            .map(|p| format!("--arg {}", quoted(p)))
            .collect();
        return Err(CliError::usage(format!(
            "arguments go in --arg KEY=VALUE (or one JSON object): try {}",
            suggestion.join(" ")
        )));
    }
    let json = match positional {
        [] => None,
        [one] => Some(one.as_str()),
        [_, extra, ..] => {
            return Err(CliError::usage(format!(
                "unexpected {extra:?}: ARGS_JSON is one JSON object; more arguments go in --arg \
                 KEY=VALUE"
            )));
        }
    };
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

/// `text` as a shell word: bare when it is plain, else in single quotes.
fn quoted(text: &str) -> String {
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "=-_.,/:@+%".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The type of a property for a person: `type` (several joined with `|`), else the alternatives
/// of `anyOf`/`oneOf`, the name a local `$ref` points to, `enum`, `const`, or `any`.
fn type_label(property: &Value) -> String {
    let alternatives = property
        .get("anyOf")
        .or_else(|| property.get("oneOf"))
        .and_then(Value::as_array);
    match property.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ if alternatives.is_some() => alternatives
            .into_iter()
            .flatten()
            .map(type_label)
            .collect::<Vec<_>>()
            .join("|"),
        _ => match property.get("$ref").and_then(Value::as_str) {
            Some(target) => target.rsplit('/').next().unwrap_or(target).to_owned(),
            None if property.get("enum").is_some() => "enum".to_owned(),
            None if property.get("const").is_some() => "const".to_owned(),
            None => "any".to_owned(),
        },
    }
}

/// A tool's arguments for the `kelson tools` table: `name*: type` (`*` required), the required ones
/// first in the order `required` gives, then the others in the schema's order (the server's:
/// serde_json keeps the order of object members).
pub(crate) fn summary(schema: &JsonObject) -> String {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let any = Value::Object(JsonObject::new());
    let property = |name: &str| properties.and_then(|p| p.get(name)).unwrap_or(&any);
    let mut parts: Vec<String> = required
        .iter()
        .map(|name| format!("{name}*: {}", type_label(property(name))))
        .collect();
    for (name, value) in properties.into_iter().flatten() {
        if !required.contains(&name.as_str()) {
            parts.push(format!("{name}: {}", type_label(value)));
        }
    }
    parts.join(", ")
}

/// Checks `arguments` against the tool's `inputSchema` before the call is sent, listing every
/// problem (missing required arguments, wrong types, unknown names where the schema forbids them).
///
/// The server validates too; this saves a round trip and says what is wrong in the terms of the
/// command line. A schema this client cannot use (over our bounds, an external `$ref`, not
/// compiling) is left to the server. Formats are not asserted: in 2020-12 they are annotations, and
/// a server decides whether it checks them.
pub(crate) fn check(schema: &JsonObject, arguments: &JsonObject) -> Result<(), CliError> {
    let schema = Value::Object(schema.clone());
    if kelson_server::schema::check(&schema).is_err() {
        return Ok(());
    }
    let Ok(validator) = jsonschema::options()
        .offline()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .should_validate_formats(false)
        .build(&schema)
    else {
        return Ok(());
    };
    let instance = Value::Object(arguments.clone());
    let problems: Vec<String> = validator
        .iter_errors(&instance)
        .map(|error| {
            let path = error.instance_path().to_string();
            let name = path.trim_start_matches('/');
            match error.kind() {
                jsonschema::error::ValidationErrorKind::Required { property }
                    if name.is_empty() =>
                {
                    format!("missing required argument {property}")
                }
                _ if name.is_empty() => error.to_string(),
                _ => format!("argument {name}: {error}"),
            }
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    let mut message =
        "the arguments do not match the tool's inputSchema (nothing was sent):".to_owned();
    for problem in &problems {
        message.push_str("\n  - ");
        message.push_str(problem);
    }
    let expected = summary(schema.as_object().expect("an object"));
    if !expected.is_empty() {
        let legend = if expected.contains('*') {
            " (* required)"
        } else {
            ""
        };
        message.push_str(&format!("\n  the tool takes: {expected}{legend}"));
    }
    Err(CliError::usage(message))
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

    fn usage(e: CliError) -> String {
        match e {
            CliError::Usage(message) => message,
            other => panic!("not a usage error: {other}"),
        }
    }

    #[test]
    fn pairs_given_as_positionals_get_the_arg_form_suggested() {
        let e = tool_arguments(&["message=hi".into()], &[], None).unwrap_err();
        assert_eq!(
            usage(e),
            "arguments go in --arg KEY=VALUE (or one JSON object): try --arg message=hi"
        );
        let e = tool_arguments(&["a=1".into(), "note=two words".into()], &[], None).unwrap_err();
        assert!(
            usage(e).ends_with("try --arg a=1 --arg 'note=two words'"),
            "quoted for the shell"
        );
        let e = tool_arguments(&["{}".into(), "{}".into()], &[], None).unwrap_err();
        assert!(usage(e).contains("ARGS_JSON is one JSON object"));
        // JSON that happens to hold an `=` is still JSON.
        let args = tool_arguments(&[r#"{"q": "a=b"}"#.into()], &[], None).unwrap();
        assert_eq!(args["q"], "a=b");
    }

    #[test]
    fn summaries_name_types_and_required_arguments() {
        let mut s = schema();
        s.insert("required".into(), json!(["zip", "count"]));
        assert_eq!(
            summary(&s),
            "zip*: string, count*: integer, ratio: number, flag: boolean, filter: object, \
             maybe: integer|null, label: string|null, free: any"
        );
        // Not sorted: a schema read from the server's text keeps its order.
        let text =
            r#"{"type":"object","properties":{"zeta":{},"alpha":{},"mid":{}},"required":["mid"]}"#;
        let read: JsonObject = serde_json::from_str(text).unwrap();
        assert_eq!(summary(&read), "mid*: any, zeta: any, alpha: any");
        assert_eq!(summary(&JsonObject::new()), "");
        let refs = json!({"type": "object", "properties": {
            "home": {"$ref": "#/$defs/address"},
            "id": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "mode": {"enum": ["a", "b"]}
        }});
        assert_eq!(
            summary(refs.as_object().unwrap()),
            "home: address, id: integer|string, mode: enum"
        );
    }

    #[test]
    fn arguments_are_checked_before_sending() {
        let mut s = schema();
        s.insert("required".into(), json!(["zip", "flag"]));
        s.insert("additionalProperties".into(), json!(false));
        let args = |v: Value| v.as_object().unwrap().clone();
        assert!(check(&s, &args(json!({"zip": "1", "flag": true}))).is_ok());
        let message = usage(
            check(
                &s,
                &args(json!({"count": "many", "flag": true, "colour": 1})),
            )
            .unwrap_err(),
        );
        assert!(message.contains("nothing was sent"), "{message}");
        assert!(
            message.contains("missing required argument \"zip\""),
            "{message}"
        );
        assert!(
            message.contains(r#"argument count: "many" is not of type "integer""#),
            "{message}"
        );
        assert!(message.contains("colour"), "{message}");
        assert!(
            message.contains("the tool takes: zip*: string, flag*: boolean"),
            "{message}"
        );
        // Formats are left to the server; a schema we cannot compile too.
        let email = args(
            json!({"type": "object", "properties": {"e": {"type": "string", "format": "email"}}}),
        );
        assert!(check(&email, &args(json!({"e": "not an email"}))).is_ok());
        let external =
            args(json!({"type": "object", "properties": {"e": {"$ref": "https://x/s.json"}}}));
        assert!(check(&external, &args(json!({"e": 1}))).is_ok());
    }

    #[test]
    fn json_and_pairs_merge() {
        let s = schema();
        let args = tool_arguments(
            &[r#"{"count": 1, "zip": "x"}"#.into()],
            &["count=2".into(), "note=a=b".into()],
            Some(&s),
        )
        .unwrap();
        assert_eq!(
            Value::Object(args),
            json!({"count": 2, "zip": "x", "note": "a=b"})
        );
        assert!(tool_arguments(&["[1]".into()], &[], None).is_err());
        assert!(tool_arguments(&["{".into()], &[], None).is_err());
        assert!(tool_arguments(&[], &["=x".into()], None).is_err());
        assert!(tool_arguments(&[], &["novalue".into()], None).is_err());
    }
}
