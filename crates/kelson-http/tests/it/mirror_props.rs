//! What the client mirrors, the server accepts; what differs from the body, the server refuses.

use http::HeaderMap;
use kelson_http::{
    ParamKind, check_param_headers, check_standard_headers, name_header_value, param_header_values,
    param_headers,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const MAX_SAFE: i64 = 9_007_199_254_740_991;

/// A value of the declared kind, or null, or nothing at all.
fn argument(kind: ParamKind) -> BoxedStrategy<Option<Value>> {
    let value = match kind {
        ParamKind::String => any::<String>().prop_map(Value::from).boxed(),
        ParamKind::Integer => prop_oneof![
            (-MAX_SAFE..=MAX_SAFE).prop_map(Value::from),
            (-1_000_000_i64..1_000_000).prop_map(|i| json!(i as f64)),
        ]
        .boxed(),
        ParamKind::Boolean => any::<bool>().prop_map(Value::from).boxed(),
    };
    prop_oneof![
        4 => value.prop_map(Some),
        1 => Just(Some(Value::Null)),
        1 => Just(None),
    ]
    .boxed()
}

fn kind() -> impl Strategy<Value = ParamKind> {
    prop_oneof![
        Just(ParamKind::String),
        Just(ParamKind::Integer),
        Just(ParamKind::Boolean)
    ]
}

/// A tool with up to four annotated properties, some nested, and arguments for them.
fn tool() -> impl Strategy<Value = (Map<String, Value>, Map<String, Value>)> {
    prop::collection::vec((kind(), any::<bool>()), 1..5)
        .prop_flat_map(|props| {
            let args: Vec<_> = props.iter().map(|(k, _)| argument(*k)).collect();
            (Just(props), args)
        })
        .prop_map(|(props, values)| {
            let mut properties = Map::new();
            let mut arguments = Map::new();
            for (i, ((kind, nested), value)) in props.into_iter().zip(values).enumerate() {
                let ty = match kind {
                    ParamKind::String => "string",
                    ParamKind::Integer => "integer",
                    ParamKind::Boolean => "boolean",
                };
                let leaf = json!({"type": ty, "x-mcp-header": format!("P{i}")});
                let name = format!("p{i}");
                if nested {
                    properties.insert(
                        name.clone(),
                        json!({"type": "object", "properties": {"v": leaf}}),
                    );
                    if let Some(value) = value {
                        arguments.insert(name, json!({"v": value}));
                    }
                } else {
                    properties.insert(name.clone(), leaf);
                    if let Some(value) = value {
                        arguments.insert(name, value);
                    }
                }
            }
            let schema = json!({"type": "object", "properties": properties});
            (schema.as_object().unwrap().clone(), arguments)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn mirrored_headers_pass_the_server_check((schema, arguments) in tool()) {
        let decls = param_headers(&schema).unwrap();
        let mut headers = HeaderMap::new();
        headers.extend(param_header_values(&decls, &arguments));
        prop_assert_eq!(check_param_headers(&decls, Some(&arguments), &headers), Ok(()));
    }

    #[test]
    fn a_changed_body_value_is_caught((schema, arguments) in tool(), pick in any::<prop::sample::Index>()) {
        let decls = param_headers(&schema).unwrap();
        let mut headers = HeaderMap::new();
        headers.extend(param_header_values(&decls, &arguments));
        // Alter one argument that has a value, keeping its JSON type.
        let present: Vec<_> = arguments.iter().filter(|(_, v)| !v.is_null()).map(|(k, _)| k.clone()).collect();
        prop_assume!(!present.is_empty());
        let key = &present[pick.index(present.len())];
        let mut altered = arguments.clone();
        let slot = altered.get_mut(key).unwrap();
        let slot = if let Some(inner) = slot.get_mut("v") { inner } else { slot };
        prop_assume!(!slot.is_null());
        *slot = match slot.take() {
            Value::String(s) => Value::from(format!("{s}x")),
            Value::Bool(b) => Value::from(!b),
            Value::Number(n) => Value::from(n.as_f64().unwrap() as i64 + 1),
            other => other,
        };
        let err = check_param_headers(&decls, Some(&altered), &headers).unwrap_err();
        prop_assert_eq!(err.code, -32020);
    }

    #[test]
    fn mirrored_names_pass_the_standard_check(name in any::<String>(), method in prop::sample::select(vec!["tools/call", "prompts/get", "resources/read"])) {
        let key = if method == "resources/read" { "uri" } else { "name" };
        let params = json!({ key: name.clone() });
        let mut headers = HeaderMap::new();
        headers.insert(kelson_http::headers::MCP_PROTOCOL_VERSION, "2026-07-28".parse().unwrap());
        headers.insert(kelson_http::headers::MCP_METHOD, method.parse().unwrap());
        headers.insert(kelson_http::headers::MCP_NAME, name_header_value(method, &params).unwrap());
        prop_assert_eq!(check_standard_headers(method, "2026-07-28", Some(&name), &headers), Ok(()));
    }
}
