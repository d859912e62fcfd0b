//! Unit tests of `x-mcp-header` declarations.
use serde_json::json;

use super::*;

fn read(schema: Value) -> Result<Vec<ParamHeader>, DeclarationError> {
    param_headers(schema.as_object().expect("an object schema"))
}

fn tool(property: Value) -> Value {
    json!({"type": "object", "properties": {"p": property}})
}

#[test]
fn the_spec_example_declares_one_header() {
    let found = read(json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"}
        },
        "required": ["region", "query"]
    }))
    .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].name(), "Region");
    assert_eq!(found[0].path(), ["region"]);
    assert_eq!(found[0].kind(), ParamKind::String);
    assert_eq!(found[0].header_name(), "mcp-param-region");
}

#[test]
fn nested_properties_chains_are_followed() {
    let found = read(json!({
        "type": "object",
        "properties": {
            "options": {
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "x-mcp-header": "Limit"},
                    "deep": {"properties": {"on": {"type": "boolean", "x-mcp-header": "On"}}}
                }
            },
            "method": {"type": "string", "x-mcp-header": "Method"}
        }
    }))
    .unwrap();
    let summary: Vec<_> = found
        .iter()
        .map(|d| (d.name(), d.path().join("."), d.kind()))
        .collect();
    assert!(summary.contains(&("Limit", "options.limit".into(), ParamKind::Integer)));
    assert!(summary.contains(&("On", "options.deep.on".into(), ParamKind::Boolean)));
    // "Method" is allowed: it yields Mcp-Param-Method, not Mcp-Method.
    assert!(summary.contains(&("Method", "method".into(), ParamKind::String)));
}

#[test]
fn schemas_without_annotations_declare_nothing() {
    assert_eq!(read(json!({"type": "object"})).unwrap(), []);
    // Data that merely contains the key declares nothing.
    let data = tool(json!({
        "type": "object",
        "default": {"x-mcp-header": "A"},
        "enum": [{"x-mcp-header": "B"}],
        "examples": [{"x-mcp-header": "C"}],
        "x-vendor": {"x-mcp-header": "D"}
    }));
    assert_eq!(read(data).unwrap(), []);
    // A property that is named x-mcp-header is not an annotation.
    let named = json!({"type": "object", "properties": {"x-mcp-header": {"type": "string"}}});
    assert_eq!(read(named).unwrap(), []);
}

#[test]
fn annotations_off_the_properties_chain_are_refused() {
    let annotated = json!({"type": "string", "x-mcp-header": "X"});
    let cases = [
        (
            "items",
            json!({"type": "array", "items": annotated}),
            "/properties/p/items",
        ),
        (
            "prefixItems",
            json!({"prefixItems": [true, annotated]}),
            "/properties/p/prefixItems/1",
        ),
        (
            "additionalProperties",
            json!({"additionalProperties": annotated}),
            "/properties/p/additionalProperties",
        ),
        (
            "patternProperties",
            json!({"patternProperties": {"^a": annotated}}),
            "/properties/p/patternProperties/^a",
        ),
        (
            "oneOf",
            json!({"oneOf": [annotated]}),
            "/properties/p/oneOf/0",
        ),
        (
            "anyOf",
            json!({"anyOf": [annotated]}),
            "/properties/p/anyOf/0",
        ),
        (
            "allOf",
            json!({"allOf": [annotated]}),
            "/properties/p/allOf/0",
        ),
        ("not", json!({"not": annotated}), "/properties/p/not"),
        ("if", json!({"if": annotated}), "/properties/p/if"),
        ("then", json!({"then": annotated}), "/properties/p/then"),
        ("else", json!({"else": annotated}), "/properties/p/else"),
        (
            "$defs",
            json!({"$defs": {"a/b": annotated}}),
            "/properties/p/$defs/a~1b",
        ),
        (
            "dependentSchemas",
            json!({"dependentSchemas": {"q": annotated}}),
            "/properties/p/dependentSchemas/q",
        ),
        (
            "contains",
            json!({"contains": annotated}),
            "/properties/p/contains",
        ),
        (
            "unevaluatedProperties",
            json!({"unevaluatedProperties": annotated}),
            "/properties/p/unevaluatedProperties",
        ),
    ];
    for (keyword, property, pointer) in cases {
        assert_eq!(
            read(tool(property)),
            Err(DeclarationError::NotStaticallyReachable {
                pointer: pointer.to_owned(),
                keyword: keyword.to_owned(),
            }),
            "{keyword}"
        );
    }
    // Deeper: properties below a forbidden keyword are still off the chain.
    let deep = json!({"type": "object", "$defs": {"T": {"properties": {"a": annotated}}}});
    let err = read(deep).unwrap_err();
    assert_eq!(
        err.to_string(),
        "x-mcp-header at /$defs/T/properties/a is reached through `$defs`; it must be reachable from the root only through `properties`"
    );
}

#[test]
fn the_root_cannot_be_annotated() {
    let root = json!({"type": "object", "x-mcp-header": "Root"});
    assert_eq!(read(root), Err(DeclarationError::OnRoot));
}

#[test]
fn names_must_be_non_empty_tokens() {
    let p = || "/properties/p".to_owned();
    assert_eq!(
        read(tool(json!({"type": "string", "x-mcp-header": ""}))),
        Err(DeclarationError::Empty { pointer: p() })
    );
    assert_eq!(
        read(tool(json!({"type": "string", "x-mcp-header": 7}))),
        Err(DeclarationError::NotAString { pointer: p() })
    );
    for bad in ["a b", "a:b", "é", "a\r\nb", "a\tb", "(x)", "a/b", "a\"b"] {
        let err = read(tool(json!({"type": "string", "x-mcp-header": bad}))).unwrap_err();
        assert!(
            matches!(err, DeclarationError::NotAToken { .. }),
            "{bad:?}: {err}"
        );
    }
    let odd = read(tool(
        json!({"type": "string", "x-mcp-header": "!#$%&'*+-.^_`|~09Az"}),
    ))
    .unwrap();
    assert_eq!(odd[0].header_name(), "mcp-param-!#$%&'*+-.^_`|~09az");
}

#[test]
fn names_are_unique_ignoring_case() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "object", "properties": {"c": {"type": "string", "x-mcp-header": "REGION"}}}
        }
    });
    assert_eq!(
        read(schema),
        Err(DeclarationError::Duplicate {
            pointer: "/properties/b/properties/c".into(),
            name: "REGION".into(),
            earlier_pointer: "/properties/a".into(),
            earlier: "Region".into(),
        })
    );
}

#[test]
fn only_string_integer_and_boolean_are_allowed() {
    for (ty, found) in [
        (json!("number"), "\"number\""),
        (json!("object"), "\"object\""),
        (json!("array"), "\"array\""),
        (json!("null"), "\"null\""),
        (json!(["string", "null"]), "[\"string\",\"null\"]"),
    ] {
        assert_eq!(
            read(tool(json!({"type": ty, "x-mcp-header": "X"}))),
            Err(DeclarationError::UnsupportedType {
                pointer: "/properties/p".into(),
                found: found.into(),
            })
        );
    }
    let untyped = read(tool(json!({"x-mcp-header": "X"}))).unwrap_err();
    assert_eq!(
        untyped.to_string(),
        "x-mcp-header at /properties/p annotates a property whose `type` is absent; it must be exactly \"string\", \"integer\" or \"boolean\""
    );
    // A $ref is not followed, so the type must be stated beside the annotation.
    let referenced = json!({
        "type": "object",
        "$defs": {"S": {"type": "string"}},
        "properties": {"p": {"$ref": "#/$defs/S", "x-mcp-header": "X"}}
    });
    assert!(matches!(
        read(referenced),
        Err(DeclarationError::UnsupportedType { .. })
    ));
}

#[test]
fn integers_must_stay_in_the_safe_range() {
    let max = 9_007_199_254_740_991_i64;
    let integer = |extra: Value| {
        let mut schema = json!({"type": "integer", "x-mcp-header": "N"});
        schema
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        read(tool(schema))
    };
    for (extra, keyword) in [
        (json!({"const": max + 1}), "const"),
        (json!({"default": -(max + 1)}), "default"),
        (json!({"default": 1e300}), "default"),
        (json!({"enum": [1, u64::MAX]}), "enum"),
        (json!({"minimum": max + 1}), "minimum"),
        (json!({"exclusiveMinimum": max}), "exclusiveMinimum"),
        (json!({"maximum": -(max + 1)}), "maximum"),
        (json!({"exclusiveMaximum": -max}), "exclusiveMaximum"),
    ] {
        assert_eq!(
            integer(extra),
            Err(DeclarationError::UnsafeInteger {
                pointer: "/properties/p".into(),
                keyword,
            })
        );
    }
    for fine in [
        json!({"const": max, "default": -max, "enum": [0, max, -max]}),
        json!({"minimum": -max, "maximum": max}),
        // Wider than the range says no more than an absent bound.
        json!({"minimum": i64::MIN, "maximum": i64::MAX, "format": "int64"}),
        json!({"exclusiveMinimum": max - 1, "exclusiveMaximum": 1e300}),
    ] {
        assert_eq!(integer(fine.clone()).map(|d| d.len()), Ok(1), "{fine}");
    }
    // The range rule is about integers; a string property may have any default.
    let text = read(tool(
        json!({"type": "string", "x-mcp-header": "S", "default": 1e300}),
    ));
    assert!(text.is_ok());
}

#[test]
fn lookup_follows_the_exact_path() {
    let found = read(json!({
        "type": "object",
        "properties": {"a": {"properties": {"b": {"type": "string", "x-mcp-header": "B"}}}}
    }))
    .unwrap();
    let args = json!({"a": {"b": "x"}, "b": "wrong"});
    assert_eq!(
        found[0].lookup(args.as_object().unwrap()),
        Some(&json!("x"))
    );
    let flat = json!({"a": "not an object"});
    assert_eq!(found[0].lookup(flat.as_object().unwrap()), None);
}
