//! The client half of header mirroring: body values into `Mcp-Name` and `Mcp-Param-*` headers.
//!
//! spec 2026-07-28 basic/transports/streamable-http (Client Behavior): read each annotated argument at its
//! exact property path, omit the header when the value is absent or null, stringify it, and encode it.

use std::borrow::Cow;

use http::{HeaderName, HeaderValue};
use serde_json::{Map, Number, Value};

use crate::codec::encode_header_value;
use crate::headers::name_source;
use kelson_types::ParamHeader;

/// The `Mcp-Param-*` headers a `tools/call` with these `arguments` must carry.
///
/// A declared argument that is absent or `null` yields no header. A string is sent as is, an integer
/// in decimal and a boolean as `true` or `false`, then encoded with [`encode_value`](crate::encode_value).
///
/// A value whose JSON type differs from the declared one is still mirrored by its own type (a number
/// that is not an integer in its shortest decimal form), so the header always shows what the body
/// carries; the server's schema validation reports the type error. Arrays and objects have no header
/// form and are skipped.
pub fn param_header_values(
    decls: &[ParamHeader],
    arguments: &Map<String, Value>,
) -> Vec<(HeaderName, HeaderValue)> {
    decls
        .iter()
        .filter_map(|decl| {
            let text = stringify(decl.lookup(arguments)?)?;
            Some((
                HeaderName::from_bytes(decl.header_name().as_bytes())
                    .expect("declarations hold valid header names"),
                encode_header_value(&text),
            ))
        })
        .collect()
}

/// The `Mcp-Name` header for a request, or `None` when `method` carries none or `params` lacks the
/// string it mirrors (`params.name` for `tools/call` and `prompts/get`, `params.uri` for
/// `resources/read`).
pub fn name_header_value(method: &str, params: &Value) -> Option<HeaderValue> {
    let name = params.get(name_source(method)?)?.as_str()?;
    Some(encode_header_value(name))
}

/// The header text of one argument, before encoding.
fn stringify(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Bool(true) => Some(Cow::Borrowed("true")),
        Value::Bool(false) => Some(Cow::Borrowed("false")),
        Value::Number(n) => Some(Cow::Owned(number_text(n))),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// An integer in plain decimal, whichever way the body spelt it; any other number as JSON writes it.
///
/// JSON Schema counts `42.0` as an integer, so it is sent as `42`.
pub(crate) fn number_text(n: &Number) -> String {
    match n.as_f64() {
        Some(f)
            if n.as_i64().is_none()
                && n.as_u64().is_none()
                && f.is_finite()
                && f.fract() == 0.0 =>
        {
            // `{:.0}` writes every digit of an integral f64, never an exponent.
            format!("{f:.0}")
        }
        _ => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use kelson_types::param_headers;

    fn decls() -> Vec<ParamHeader> {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "limit": {"type": "integer", "x-mcp-header": "Limit"},
                "dry": {"type": "boolean", "x-mcp-header": "Dry"},
                "opts": {"properties": {"tag": {"type": "string", "x-mcp-header": "Tag"}}}
            }
        });
        param_headers(schema.as_object().unwrap()).unwrap()
    }

    fn headers(arguments: Value) -> Vec<(String, String)> {
        param_header_values(&decls(), arguments.as_object().unwrap())
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    fn pair(name: &str, value: &str) -> (String, String) {
        (name.to_owned(), value.to_owned())
    }

    #[test]
    fn every_kind_is_stringified() {
        let got = headers(json!({
            "region": "Hello, 世界",
            "limit": -7,
            "dry": false,
            "opts": {"tag": "v1"}
        }));
        let mut want = vec![
            pair("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            pair("mcp-param-limit", "-7"),
            pair("mcp-param-dry", "false"),
            pair("mcp-param-tag", "v1"),
        ];
        let mut got = got;
        got.sort();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn absent_and_null_values_send_nothing() {
        assert_eq!(headers(json!({})), []);
        assert_eq!(headers(json!({"region": null, "opts": {"tag": null}})), []);
        assert_eq!(headers(json!({"opts": "flat"})), []);
        assert_eq!(headers(json!({"tag": "not at the path"})), []);
    }

    #[test]
    fn integers_are_sent_in_plain_decimal() {
        assert_eq!(
            headers(json!({"limit": 42.0})),
            [pair("mcp-param-limit", "42")]
        );
        assert_eq!(
            headers(json!({"limit": 1e21})),
            [pair("mcp-param-limit", "1000000000000000000000")]
        );
        assert_eq!(
            headers(json!({"limit": u64::MAX})),
            [pair("mcp-param-limit", "18446744073709551615")]
        );
        // A mistyped value is mirrored by its own type; schema validation reports it.
        assert_eq!(
            headers(json!({"limit": 4.5})),
            [pair("mcp-param-limit", "4.5")]
        );
        assert_eq!(
            headers(json!({"region": true})),
            [pair("mcp-param-region", "true")]
        );
        assert_eq!(headers(json!({"region": [1]})), []);
    }

    #[test]
    fn mcp_name_mirrors_name_or_uri() {
        let call = json!({"name": "get_weather", "arguments": {}});
        assert_eq!(
            name_header_value("tools/call", &call).unwrap(),
            "get_weather"
        );
        assert_eq!(
            name_header_value("prompts/get", &json!({"name": "p"})).unwrap(),
            "p"
        );
        let read = json!({"uri": "file:///tmp/ä.txt"});
        assert_eq!(
            name_header_value("resources/read", &read).unwrap(),
            "=?base64?ZmlsZTovLy90bXAvw6QudHh0?="
        );
        assert_eq!(name_header_value("tools/list", &call), None);
        assert_eq!(name_header_value("tools/call", &json!({})), None);
    }
}
