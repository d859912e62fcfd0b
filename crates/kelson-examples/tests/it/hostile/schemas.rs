//! Tools registered with hostile schemas.

use super::*;

// ---- Registration ----

/// Registers one tool with `input` as its input schema (and `output` as its output schema)
/// and returns the builder's verdict.
fn register_tool(input: Value, output: Option<Value>) -> Result<Server, BuildError> {
    let mut tool = Tool::new("t", object(input));
    tool.output_schema = output.map(object);
    Server::builder("hostile-schemas", "1.0.0")
        .tool(tool, accept_all)
        .build()
}

fn register(schema: Value) -> Result<Server, BuildError> {
    register_tool(schema, None)
}

/// Which schema was refused and why, failing the test if the tool was not refused for a schema.
#[track_caller]
fn refused_schema(what: &str, result: Result<Server, BuildError>) -> (&'static str, SchemaError) {
    match result {
        Err(BuildError::Schema {
            tool,
            which,
            source,
        }) => {
            assert_eq!(tool, "t", "{what}");
            (which, source)
        }
        Err(other) => panic!("{what}: refused for another reason: {other}"),
        Ok(_) => panic!("{what}: registered"),
    }
}

/// `levels` objects nested in `properties`, built without recursion.
fn nested(levels: usize) -> Value {
    let mut deep = json!({"type": "string"});
    for _ in 0..levels {
        let mut properties = serde_json::Map::new();
        properties.insert("x".to_owned(), deep);
        let mut schema = serde_json::Map::new();
        schema.insert("type".to_owned(), json!("object"));
        schema.insert("properties".to_owned(), Value::Object(properties));
        deep = Value::Object(schema);
    }
    deep
}

#[test]
fn hostile_schemas_are_refused_at_registration() {
    // spec 2026-07-28 basic/index (JSON Schema usage): never dereference a network `$ref`,
    // reject a schema with an unresolved external one, and bound what a schema may cost.
    let targets = [
        "http://169.254.169.254/latest/meta-data",
        "https://example.com/s.json",
        "file:///etc/passwd",
        "other.json#/x",
    ];
    for target in targets {
        let schema = json!({"type": "object", "properties": {"a": {"$ref": target}}});
        let (which, e) = refused_schema(target, register(schema));
        assert_eq!(which, "inputSchema");
        let at = "/properties/a";
        assert!(
            matches!(&e, SchemaError::ExternalRef(t, p) if t == target && p == at),
            "{e:?}"
        );
        // The message names the reference, for the tool's author.
        assert!(e.to_string().contains(target), "{e}");
    }
    let dynamic =
        json!({"type": "object", "$defs": {"x": {"$dynamicRef": "https://example.com/d"}}});
    let (_, e) = refused_schema("$dynamicRef", register(dynamic));
    assert!(matches!(e, SchemaError::ExternalRef(..)), "{e:?}");

    // A 1 MiB enum is over the size bound (256 KiB).
    let values: Vec<Value> = (0..1024).map(|i| json!(format!("{i:0>1024}"))).collect();
    let big = json!({"type": "object", "properties": {"e": {"enum": values}}});
    let (_, e) = refused_schema("1 MiB enum", register(big));
    assert!(
        matches!(e, SchemaError::TooLarge(n) if n > 1 << 20),
        "{e:?}"
    );

    // 10,000 levels are over the depth bound (48), as input or output schema. Finding that out
    // must not recurse through the whole value: registration needs no more stack than dropping
    // the value does (about 3.5 MiB in a debug build), so it runs here on a thread with the
    // 8 MiB a main thread has, which serializing or copying the schema before the depth check
    // overflowed.
    let deep = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(|| {
            let input = refused_schema("10,000 levels", register(nested(10_000)));
            let output = register_tool(json!({"type": "object"}), Some(nested(10_000)));
            (input, refused_schema("10,000 levels out", output))
        })
        .unwrap()
        .join()
        .expect("registration does not overflow the stack");
    assert_eq!(deep.0, ("inputSchema", SchemaError::TooDeep));
    assert_eq!(deep.1, ("outputSchema", SchemaError::TooDeep));
}

#[tokio::test]
async fn a_ref_cycle_registers_and_validates_without_looping() {
    // JSON Schema 2020-12 leaves a schema that refers to itself without ever constraining
    // anything undefined. The validator compiles such a cycle and treats it as constraining
    // nothing: validation ends at once, with no loop and no stack overflow. (Refusing it at
    // registration would take a cycle check of our own.)
    let cycles = [
        json!({"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}),
        json!({"a": {"$ref": "#/$defs/a"}}),
        json!({"a": {"allOf": [{"$ref": "#/$defs/a"}]}}),
    ];
    let deep = (0..100).fold(json!(1), |inner, _| json!({"a": inner}));
    for defs in cycles {
        let schema =
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": defs});
        let server = register(schema.clone()).expect("a local cycle registers");
        let mut pipe = Pipe::serve(&server, Principal::anonymous());
        for (n, arguments) in [json!({}), json!({"a": 1}), deep.clone()]
            .into_iter()
            .enumerate()
        {
            let answer = pipe
                .call(&call(n, "t", json!({"arguments": arguments})))
                .await;
            assert_eq!(text(&answer), "ok", "{schema}");
        }
    }
    // A recursive schema that does constrain (a tree) works as written.
    let tree = json!({"type": "object", "properties": {"a": {"$ref": "#"}}});
    let server = register(tree).expect("a recursive schema registers");
    let mut pipe = Pipe::serve(&server, Principal::anonymous());
    let leaf = pipe
        .call(&call(1, "t", json!({"arguments": {"a": {"a": 1}}})))
        .await;
    assert_eq!(leaf["result"]["isError"], true, "{leaf}");
    assert!(leaf.to_string().contains("/a/a"), "{leaf}");
}

#[tokio::test]
async fn a_catastrophic_pattern_registers_and_validates_in_linear_time() {
    // Tool schemas are compiled with the `regex` crate's engine (kelson-server/src/schema.rs),
    // which has no backtracking: `^(a+)+$` is an ordinary pattern there, and a string built to
    // make a backtracking engine take 2^50000 steps is rejected at once.
    let schema =
        json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}});
    let server = register(schema).expect("the pattern is accepted");
    let mut pipe = Pipe::serve(&server, Principal::anonymous());
    let hostile = format!("{}!", "a".repeat(50_000));
    let started = Instant::now();
    let answer = pipe
        .call(&call(1, "t", json!({"arguments": {"s": hostile}})))
        .await;
    let took = started.elapsed();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(took < Duration::from_secs(5), "validation took {took:?}");
    let fine = pipe
        .call(&call(2, "t", json!({"arguments": {"s": "aaaa"}})))
        .await;
    assert_eq!(text(&fine), "ok");

    // What that engine cannot do in linear time (backreferences, lookaround) is refused.
    for pattern in [r"^(a)\1$", "^(?=a)a$", "(?<!b)a"] {
        let schema =
            json!({"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}});
        let (_, e) = refused_schema(pattern, register(schema));
        assert!(matches!(e, SchemaError::Invalid(_)), "{pattern}: {e:?}");
    }
}
