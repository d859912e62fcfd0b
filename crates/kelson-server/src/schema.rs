//! Tool schemas: checked and compiled once, at registration.
//!
//! spec 2026-07-28 server/tools and SEP-2106: schemas are JSON Schema 2020-12 unless `$schema` names
//! another dialect; a network `$ref` is never dereferenced and a schema with an unresolved external
//! `$ref` is rejected; implementations bound the resources a schema may use. `jsonschema` has no size
//! or depth limits of its own, so [`check`] enforces ours before it compiles anything.

use serde_json::{Map, Value};

/// The largest schema accepted, in bytes of compact JSON.
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;
/// The deepest nesting of objects and arrays accepted in a schema.
pub const MAX_SCHEMA_DEPTH: usize = 48;
/// The most JSON nodes (objects, arrays and scalars) accepted in a schema.
pub const MAX_SCHEMA_NODES: usize = 20_000;

/// Dialects the validator implements; `$schema` may name any of them, with or without a trailing `#`.
const DIALECTS: &[&str] = &[
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-04/schema",
];

/// Why a schema was refused at registration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema is larger than [`MAX_SCHEMA_BYTES`].
    #[error("the schema is {0} bytes, more than the limit of {MAX_SCHEMA_BYTES}")]
    TooLarge(usize),
    /// The schema nests deeper than [`MAX_SCHEMA_DEPTH`].
    #[error("the schema nests deeper than {MAX_SCHEMA_DEPTH} levels")]
    TooDeep,
    /// The schema has more than [`MAX_SCHEMA_NODES`] nodes.
    #[error("the schema has more than {MAX_SCHEMA_NODES} nodes")]
    TooManyNodes,
    /// A `$ref` points outside the schema document.
    #[error("{0:?} at {1} refers outside the schema; only local references (\"#...\") are allowed")]
    ExternalRef(String, String),
    /// `$schema` names a dialect the validator does not implement.
    #[error(
        "unsupported JSON Schema dialect {0:?}; use https://json-schema.org/draft/2020-12/schema"
    )]
    UnsupportedDialect(String),
    /// An input schema whose root is not `type: "object"`.
    #[error("an inputSchema must have \"type\": \"object\" at its root")]
    NotAnObject,
    /// The validator refused to compile the schema.
    #[error("the schema does not compile: {0}")]
    Invalid(String),
}

/// A compiled schema, ready to validate many instances.
pub struct CompiledSchema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompiledSchema")
    }
}

impl CompiledSchema {
    /// Whether `instance` satisfies the schema.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }

    /// Validates `instance`, describing the first failure as `path: message` with a JSON Pointer path.
    pub fn validate(&self, instance: &Value) -> Result<(), String> {
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        match self.validator.validate(instance) {
            Ok(()) => Ok(()),
            Err(err) => {
                let path = err.instance_path().to_string();
                let path = if path.is_empty() {
                    "/".to_owned()
                } else {
                    path
                };
                Err(format!("{path}: {err}"))
            }
        }
    }
}

/// Checks the bounds, references and dialect of a schema without compiling it.
pub fn check(schema: &Value) -> Result<(), SchemaError> {
    // The walk stops at the depth bound, so it runs first: serde_json writes a value by recursion,
    // and measuring a schema thousands of levels deep that way would overflow the stack.
    let mut nodes = 0usize;
    walk(schema, 0, &mut String::new(), &mut nodes)?;
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |v| v.len());
    if size > MAX_SCHEMA_BYTES {
        return Err(SchemaError::TooLarge(size));
    }
    if let Some(dialect) = schema.get("$schema") {
        let Some(uri) = dialect.as_str() else {
            return Err(SchemaError::UnsupportedDialect(dialect.to_string()));
        };
        if !DIALECTS.contains(&uri.trim_end_matches('#')) {
            return Err(SchemaError::UnsupportedDialect(uri.to_owned()));
        }
    }
    Ok(())
}

fn walk(
    value: &Value,
    depth: usize,
    path: &mut String,
    nodes: &mut usize,
) -> Result<(), SchemaError> {
    *nodes += 1;
    if *nodes > MAX_SCHEMA_NODES {
        return Err(SchemaError::TooManyNodes);
    }
    if depth > MAX_SCHEMA_DEPTH {
        return Err(SchemaError::TooDeep);
    }
    match value {
        Value::Object(map) => walk_members(map, depth, path, nodes)?,
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk(child, depth + 1, path, nodes)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Walks the members of an object that sits at `depth`.
fn walk_members(
    map: &Map<String, Value>,
    depth: usize,
    path: &mut String,
    nodes: &mut usize,
) -> Result<(), SchemaError> {
    for (key, child) in map {
        if matches!(key.as_str(), "$ref" | "$dynamicRef" | "$recursiveRef")
            && let Some(target) = child.as_str()
            && !target.starts_with('#')
        {
            return Err(SchemaError::ExternalRef(target.to_owned(), pointer(path)));
        }
        let len = path.len();
        path.push('/');
        path.push_str(&key.replace('~', "~0").replace('/', "~1"));
        walk(child, depth + 1, path, nodes)?;
        path.truncate(len);
    }
    Ok(())
}

fn pointer(path: &str) -> String {
    if path.is_empty() {
        "/".to_owned()
    } else {
        path.to_owned()
    }
}

/// Checks and compiles any schema (an `outputSchema`, an elicitation schema).
pub fn compile(schema: &Value) -> Result<CompiledSchema, SchemaError> {
    check(schema)?;
    let validator = jsonschema::options()
        .offline()
        // Patterns in a schema come from the tool author, but a linear-time engine keeps a hostile or
        // careless pattern from stalling validation.
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| SchemaError::Invalid(e.to_string()))?;
    Ok(CompiledSchema { validator })
}

/// Checks and compiles a tool's `inputSchema`, which must be an object schema at its root.
pub fn compile_input(schema: &Map<String, Value>) -> Result<CompiledSchema, SchemaError> {
    // spec 2026-07-28 server/tools: inputSchema MUST be a valid JSON Schema object with root
    // `type: "object"`.
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaError::NotAnObject);
    }
    compile_object(schema)
}

/// Checks and compiles a schema held as a JSON object (a tool's `outputSchema`).
pub fn compile_object(schema: &Map<String, Value>) -> Result<CompiledSchema, SchemaError> {
    // The bounds are checked before the schema is copied for the validator: a copy recurses as
    // deep as the schema goes, and one thousands of levels deep would overflow the stack.
    walk_members(schema, 0, &mut String::new(), &mut 1)?;
    compile(&Value::Object(schema.clone()))
}

/// The JSON Schema (2020-12) of a Rust type, as a JSON object.
pub fn schema_object<T: schemars::JsonSchema>() -> Map<String, Value> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    match Value::from(schema) {
        Value::Object(map) => map,
        // `true` / `false` schemas: accept anything / nothing.
        Value::Bool(true) => Map::new(),
        other => {
            let mut map = Map::new();
            map.insert("allOf".to_owned(), Value::Array(vec![other]));
            map
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(v: Value) -> Result<CompiledSchema, SchemaError> {
        compile_input(v.as_object().unwrap())
    }

    #[test]
    fn object_schemas_compile_and_validate_with_paths() {
        let s = input(json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 1}, "inner": {"type": "object", "properties": {"s": {"type": "string"}}}},
            "required": ["n"],
            "additionalProperties": false
        }))
        .unwrap();
        assert!(s.validate(&json!({"n": 2})).is_ok());
        let err = s.validate(&json!({"n": 0})).unwrap_err();
        assert!(err.starts_with("/n: "), "{err}");
        let err = s.validate(&json!({"n": 1, "inner": {"s": 5}})).unwrap_err();
        assert!(err.starts_with("/inner/s: "), "{err}");
        let err = s.validate(&json!({})).unwrap_err();
        assert!(err.starts_with("/: ") && err.contains("\"n\""), "{err}");
    }

    #[test]
    fn the_root_must_be_an_object_schema() {
        assert_eq!(
            input(json!({"type": "string"})).unwrap_err(),
            SchemaError::NotAnObject
        );
        assert_eq!(input(json!({})).unwrap_err(), SchemaError::NotAnObject);
    }

    #[test]
    fn local_refs_work_and_external_refs_are_refused() {
        let s = input(json!({
            "type": "object",
            "$defs": {"pos": {"type": "integer", "minimum": 0}},
            "properties": {"a": {"$ref": "#/$defs/pos"}}
        }))
        .unwrap();
        assert!(!s.is_valid(&json!({"a": -1})));
        for target in [
            "https://example.com/s.json",
            "other.json#/x",
            "file:///etc/passwd",
        ] {
            let err = input(json!({"type": "object", "properties": {"a": {"$ref": target}}}))
                .unwrap_err();
            assert!(
                matches!(err, SchemaError::ExternalRef(ref t, ref p) if t == target && p == "/properties/a"),
                "{err:?}"
            );
        }
    }

    #[test]
    fn dialects_are_checked() {
        assert!(
            input(
                json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"})
            )
            .is_ok()
        );
        assert!(
            input(json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}))
                .is_ok()
        );
        assert!(matches!(
            input(json!({"$schema": "https://example.com/my-dialect", "type": "object"})),
            Err(SchemaError::UnsupportedDialect(_))
        ));
    }

    #[test]
    fn a_schema_ten_thousand_levels_deep_is_refused_without_exhausting_the_stack() {
        // Built and dropped iteratively by serde_json; only our own walk could recurse too deep,
        // and it stops at the depth bound before it copies or serializes anything.
        // Built by moving each level into the next (the `json!` macro would serialize the value
        // it is given, recursively).
        let mut schema = Map::new();
        schema.insert("type".to_owned(), Value::from("string"));
        for _ in 0..10_000 {
            let mut properties = Map::new();
            properties.insert("x".to_owned(), Value::Object(schema));
            schema = Map::new();
            schema.insert("type".to_owned(), Value::from("object"));
            schema.insert("properties".to_owned(), Value::Object(properties));
        }
        assert_eq!(compile_input(&schema).unwrap_err(), SchemaError::TooDeep);
        assert_eq!(compile_object(&schema).unwrap_err(), SchemaError::TooDeep);
        // Dropping (like cloning) a value this deep recurses once per level: leave it to the end
        // of the process rather than spend the test thread's stack on it.
        std::mem::forget(schema);
    }

    #[test]
    fn bounds_are_enforced() {
        let mut deep = json!({"type": "string"});
        for _ in 0..60 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        assert_eq!(input(deep).unwrap_err(), SchemaError::TooDeep);
        let wide: Map<String, Value> = (0..MAX_SCHEMA_NODES)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let err = input(json!({"type": "object", "properties": wide})).unwrap_err();
        assert!(
            matches!(err, SchemaError::TooManyNodes | SchemaError::TooLarge(_)),
            "{err:?}"
        );
    }
}
