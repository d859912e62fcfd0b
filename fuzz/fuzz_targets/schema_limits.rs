//! Schema registration limits (kelson-server `schema.rs`, `compile_input`, the check every tool's
//! `inputSchema` passes at registration) on arbitrary JSON, and validation with what compiled.
//!
//! Input: a JSON document, used as an `inputSchema`; an instance to validate is derived from it.
//!
//! Properties:
//! - never a panic, and bounded time (libFuzzer's timeout) for compiling and for validating;
//! - a schema that compiles is within the limits, by an independent count: an object with
//!   `"type": "object"` at its root, at most `MAX_SCHEMA_BYTES` of compact JSON, `MAX_SCHEMA_DEPTH`
//!   levels and `MAX_SCHEMA_NODES` nodes, and no `$ref`, `$dynamicRef` or `$recursiveRef` that
//!   points outside the document (anything but `#...`);
//! - a schema with such an external reference anywhere is refused.

#![no_main]

use libfuzzer_sys::fuzz_target;
use kelson_server::schema::{MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, compile_input};
use serde_json::{Value, json};

/// (deepest nesting, node count, whether an external reference appears).
fn measure(value: &Value, depth: usize, acc: &mut (usize, usize, bool)) {
    acc.0 = acc.0.max(depth);
    acc.1 += 1;
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if matches!(key.as_str(), "$ref" | "$dynamicRef" | "$recursiveRef")
                    && child.as_str().is_some_and(|t| !t.starts_with('#'))
                {
                    acc.2 = true;
                }
                measure(child, depth + 1, acc);
            }
        }
        Value::Array(items) => {
            for child in items {
                measure(child, depth + 1, acc);
            }
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Value::Object(map) = &schema else {
        return;
    };
    let mut acc = (0, 0, false);
    measure(&schema, 0, &mut acc);
    let (depth, nodes, external) = acc;

    let compiled = compile_input(map);
    let Ok(compiled) = compiled else {
        return;
    };
    assert_eq!(
        map.get("type"),
        Some(&json!("object")),
        "a root that is not an object schema"
    );
    assert!(!external, "an external reference compiled: {schema}");
    assert!(depth <= MAX_SCHEMA_DEPTH, "{depth} levels compiled");
    assert!(nodes <= MAX_SCHEMA_NODES, "{nodes} nodes compiled");
    assert!(serde_json::to_vec(&schema).unwrap().len() <= MAX_SCHEMA_BYTES);

    // Validation with what compiled: the schema as its own instance, an empty object, and the
    // values it names (a hostile schema must not stall or crash the calls it guards).
    let _ = compiled.validate(&schema);
    let _ = compiled.validate(&json!({}));
    for value in map.values() {
        let _ = compiled.validate(&json!({"x": value, "y": [value, value]}));
    }
});
