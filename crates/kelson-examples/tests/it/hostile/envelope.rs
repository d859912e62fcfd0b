//! The cases sent over both transports, and the one for stdio alone.

use super::*;

// ---- Both transports ----

#[tokio::test]
async fn text_that_is_not_json_is_a_parse_error() {
    // spec 2026-07-28 basic/index: JSON-RPC 2.0 over UTF-8; what cannot be read is -32700 and
    // its id cannot be known.
    let meta = serde_json::to_string(&meta_with_caps(default_caps())).unwrap();
    let lone_surrogate = format!(
        r#"{{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{{"_meta":{meta},"name":"test_simple_text","arguments":{{"x":"\ud800"}}}}}}"#
    );
    // In a member nobody reads, which a JSON parser skips without looking at its bytes.
    let note = call("u", "test_simple_text", json!({"note": "NOTE"})).to_string();
    let (before, after) = note.split_once("NOTE").unwrap();
    let bad_utf8 = [before.as_bytes(), b"\xff\xfe", after.as_bytes()].concat();
    both(vec![
        Case::new(
            "truncated JSON",
            &b"{\"jsonrpc\": \"2.0\", \"id\": 1,"[..],
            -32700,
            None,
        ),
        Case::new("a bare word", &b"tools/call"[..], -32700, None),
        Case::new("invalid UTF-8 alone", &b"\xc3\x28"[..], -32700, None).says("UTF-8"),
        Case::new("invalid UTF-8 in a request", bad_utf8, -32700, None).says("UTF-8"),
        // Valid UTF-8, but an escape that names half a UTF-16 pair: the arguments cannot be
        // read, the id can, so it is invalid params answered in band (200 on HTTP).
        Case::new(
            "a lone surrogate escape",
            lone_surrogate,
            -32602,
            Some(json!("s")),
        )
        .status(200),
    ])
    .await;
}

#[tokio::test]
async fn nesting_a_hundred_thousand_levels_deep_is_refused_without_harm() {
    const DEPTH: usize = 100_000;
    let deep = format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH));
    let deep_object = format!("{}1{}", "{\"a\":".repeat(DEPTH), "}".repeat(DEPTH));
    let meta = serde_json::to_string(&meta_with_caps(default_caps())).unwrap();
    let in_arguments = format!(
        r#"{{"jsonrpc":"2.0","id":"deep-args","method":"tools/call","params":{{"_meta":{meta},"name":"test_simple_text","arguments":{{"x":{deep}}}}}}}"#
    );
    let in_meta = format!(
        r#"{{"jsonrpc":"2.0","id":"deep-meta","method":"tools/call","params":{{"_meta":{},"name":"test_simple_text"}}}}"#,
        meta.replacen('{', &format!("{{\"com.example/deep\":{deep},"), 1)
    );
    both(vec![
        // A top-level array is a batch whatever it holds.
        Case::new("a deep array", deep, -32600, None).says("batch"),
        // A deep value under an unknown member is skipped, without recursion, and the message
        // lacks what a request needs.
        Case::new("a deep object", deep_object, -32600, None).says("jsonrpc"),
        // Values that are decoded stop at serde_json's depth limit (128): the id is known.
        Case::new(
            "deep arguments",
            in_arguments,
            -32602,
            Some(json!("deep-args")),
        )
        .says("recursion limit")
        .status(200),
        Case::new(
            "a deep _meta value",
            in_meta,
            -32602,
            Some(json!("deep-meta")),
        )
        .says("recursion limit"),
    ])
    .await;
}

#[tokio::test]
async fn a_ten_mebibyte_string_is_refused_by_the_size_limit() {
    let huge = "x".repeat(10 * 1024 * 1024);
    let message = call(
        "huge",
        "test_simple_text",
        json!({"arguments": {"pad": huge}}),
    );
    // stdio: the line is answered as soon as it passes the limit and skipped unbuffered
    // (framing.rs shows the limit is configurable); HTTP: 413, the body left unread, so the
    // connection cannot be trusted to be in step and is closed (kelson-http/src/server/h1).
    let case = Case::json("10 MiB", &message, -32600, None).says("4194304");
    assert!(case.bytes.len() > 2 * LIMIT);
    both(vec![case.status(413).closes()]).await;
}

#[tokio::test]
async fn duplicate_keys_are_refused_wherever_the_server_reads_them() {
    let meta = serde_json::to_string(&meta_with_caps(default_caps())).unwrap();
    let m = |text: &str| text.replace("META", &meta).into_bytes();
    let dup_meta_key = meta.replacen(
        "\"io.modelcontextprotocol/protocolVersion\"",
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/protocolVersion\"",
        1,
    );
    let cases = vec![
        // Which id would be answered? Neither: the envelope is refused whole.
        Case::new(
            "a duplicate id",
            m(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list","params":{"_meta":META}}"#),
            -32600,
            None,
        )
        .says("duplicate field `id`"),
        Case::new(
            "a duplicate method",
            m(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","method":"tools/call","params":{"_meta":META}}"#),
            -32600,
            None,
        )
        .says("duplicate field `method`"),
        // In params: a name the HTTP headers are compared with could otherwise be read two ways.
        Case::new(
            "a duplicate tool name",
            m(r#"{"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"_meta":META,"name":"test_simple_text","name":"test_error_handling"}}"#),
            -32602,
            Some(json!("n")),
        )
        .says("duplicate field `name`"),
        Case::new(
            "a duplicate _meta",
            m(r#"{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"_meta":META,"_meta":META,"name":"test_simple_text"}}"#),
            -32602,
            Some(json!("m")),
        )
        .says("duplicate field `_meta`"),
        Case::new(
            "a duplicate protocol version",
            m(&format!(
                r#"{{"jsonrpc":"2.0","id":"v","method":"tools/call","params":{{"_meta":{dup_meta_key},"name":"test_simple_text"}}}}"#
            )),
            -32602,
            Some(json!("v")),
        )
        .says("duplicate field"),
    ];
    both(cases).await;
}

#[tokio::test]
async fn duplicate_argument_keys_keep_the_last_and_the_header_is_checked_against_it() {
    // Arguments are the tool's JSON object, read as serde_json reads objects: the last of two
    // equal keys wins. What matters is that the `Mcp-Param-*` check and the handler read the same
    // value, so that a header cannot vouch for one value while the handler gets another.
    let body = |id: &str| {
        let meta = serde_json::to_string(&meta_with_caps(default_caps())).unwrap();
        format!(
            r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/call","params":{{"_meta":{meta},"name":"test_custom_header","arguments":{{"region":"eu","region":"us"}}}}}}"#
        )
    };
    let mut stdio = Fixture::start().await;
    stdio.send_raw(body("dup").as_bytes()).await;
    assert_eq!(text(&stdio.response("dup").await), "Region: us");
    stdio.finish().await;

    let server = HttpFixture::start().await;
    let mut conn = server.connect().await;
    let post = |id: &str, header: &[u8]| {
        Post::mcp("tools/call", Some("test_custom_header"), body(id))
            .header("Mcp-Param-Region", header)
            .bytes(&server.authority())
    };
    let served = conn.exchange(&post("us", b"us")).await;
    assert_eq!(text(&served.json()), "Region: us");
    // spec 2026-07-28 basic/transports/streamable-http: a header that differs from the body
    // value is 400 with -32020.
    let refused = conn.exchange(&post("eu", b"eu")).await;
    assert_eq!(refused.status, 400, "{refused:?}");
    check_error(
        "a header naming the first",
        &refused.json(),
        &Expect {
            code: -32020,
            id: Some(json!("eu")),
            says: "",
        },
    );
    let follow = conn.exchange(&server.simple_call(0)).await;
    assert_eq!(text(&follow.json()), SIMPLE);
}

#[tokio::test]
async fn ids_that_are_not_a_string_or_a_64_bit_integer_are_invalid_requests() {
    // spec 2026-07-28 basic/index: an id is a string or an integer, never null. An integer
    // beyond 64 bits is refused too, as one we could not echo exactly.
    let meta = serde_json::to_string(&meta_with_caps(default_caps())).unwrap();
    let with_id = |id: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"_meta":{meta}}}}}"#
        )
        .into_bytes()
    };
    let list = |what, id: &str, says| {
        Case::new(what, with_id(id), -32600, None)
            .header("Mcp-Method", "tools/list")
            .without("Mcp-Name")
            .says(says)
    };
    let not_an_id = "\"id\" must be";
    let too_big = "\"id\" is an integer beyond the 64-bit range";
    both(vec![
        list("a null id", "null", not_an_id),
        list("a float id", "1.5", not_an_id),
        list("an integral float id", "1.0", not_an_id),
        list("an exponent id", "1e3", not_an_id),
        list("an object id", r#"{"a":1}"#, not_an_id),
        list("an array id", "[1]", not_an_id),
        list("a boolean id", "true", not_an_id),
        list("an id beyond i64", "9223372036854775808", too_big),
        list("an id beyond u64", "18446744073709551616", too_big),
        list("a huge id", &"9".repeat(400), too_big),
    ])
    .await;

    // The extremes of 64 bits are ids like any other, echoed exactly.
    let mut server = Fixture::start().await;
    for id in [
        json!(i64::MAX),
        json!(i64::MIN),
        json!(""),
        json!("é\u{0}\n"),
    ] {
        let mut request = raw(id.clone(), "tools/list", json!({}));
        request["params"]["_meta"] = meta_with_caps(default_caps());
        server.send(&request).await;
        assert!(
            server.response(id.clone()).await.get("result").is_some(),
            "{id}"
        );
    }
    server.finish().await;
}

#[tokio::test]
async fn batches_and_arrays_are_invalid_requests_whose_contents_are_never_served() {
    // spec 2026-07-28 basic/index: there are no batches; every message is one JSON object.
    let request = call("inner", "test_simple_text", json!({}));
    let params = request["params"].clone();
    let batch = |what, message: Value| Case::json(what, &message, -32600, None).says("batch");
    both(vec![
        batch("a batch of one", json!([request])),
        batch("a batch of two", json!([request, request])),
        batch("an empty batch", json!([])),
        // An array whose members sit where the envelope's fields would, in their order: serde's
        // derived decoding of a struct takes that as the struct (it once served this request).
        batch(
            "a positional array",
            json!(["2.0", "positional", "tools/call", params]),
        ),
        Case::json("a number", &json!(42), -32600, None).says("JSON object"),
        Case::json("a string", &json!("tools/call"), -32600, None),
        Case::json("null", &Value::Null, -32600, None),
    ])
    .await;
}

#[tokio::test]
async fn responses_sent_to_the_server_are_not_requests() {
    // spec 2026-07-28 basic/index: clients never send JSON-RPC responses (no server request
    // exists to answer). stdio ignores them; HTTP refuses them (a legacy session's answers
    // aside, which legacy.rs covers).
    let message = |m: Value| {
        Case::json("a response", &m, -32600, None)
            .unanswered_on_stdio()
            .says("accepted only as the answer")
    };
    both(vec![
        message(json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
        message(json!({"jsonrpc": "2.0", "id": "x", "result": {"resultType": "complete"}})),
        message(json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "no"}})),
        message(json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "no id"}})),
    ])
    .await;
}

#[tokio::test]
async fn a_notification_with_an_id_is_a_request_and_cancels_nothing() {
    // A message with an id is a request, whatever its method says: `notifications/cancelled`
    // sent as a request is an unknown method (404 on HTTP) and does not cancel the request it
    // names.
    let mut server = Fixture::start().await;
    let slow = server
        .request(
            "tools/call",
            json!({"name": "test_slow", "arguments": {"ms": 300}}),
        )
        .await;
    let note = raw(
        json!("as-request"),
        "notifications/cancelled",
        json!({"_meta": meta_with_caps(default_caps()), "requestId": slow}),
    );
    server.send(&note).await;
    let e = server.response("as-request").await;
    check_error(
        "cancel as a request",
        &e,
        &Expect {
            code: -32601,
            id: Some(json!("as-request")),
            says: "notifications/cancelled",
        },
    );
    assert_eq!(text(&server.response(slow).await), "Waited 300 ms");
    server.finish().await;

    let id = Some(json!("n"));
    let without_meta = raw(json!("n"), "notifications/initialized", json!({}));
    both(vec![
        Case::json(
            "cancel as a request",
            &note,
            -32601,
            Some(json!("as-request")),
        )
        .header("Mcp-Method", "notifications/cancelled")
        .without("Mcp-Name")
        .status(404),
        Case::json("initialized as a request", &without_meta, -32602, id)
            .header("Mcp-Method", "notifications/initialized")
            .without("Mcp-Name")
            .says("_meta"),
    ])
    .await;
}

#[tokio::test]
async fn params_that_are_not_an_object_are_invalid_requests_with_the_id_echoed() {
    let with = |what, params: Value| {
        let message = raw(json!(what), "tools/call", params);
        Case::json(what, &message, -32600, Some(json!(what))).says("\"params\" must be an object")
    };
    both(vec![
        with(
            "an array",
            json!([meta_with_caps(default_caps()), "test_simple_text"]),
        ),
        with("a string", json!("test_simple_text")),
        with("null", Value::Null),
        with("a number", json!(7)),
    ])
    .await;
}

#[tokio::test]
async fn arrays_in_place_of_nested_objects_are_invalid_params() {
    // serde reads a struct from an array by position; params are objects at every depth.
    let listen = |what: &'static str, notifications: Value| {
        let params =
            json!({"_meta": meta_with_caps(default_caps()), "notifications": notifications});
        Case::json(
            what,
            &raw(json!(what), "subscriptions/listen", params),
            -32602,
            Some(json!(what)),
        )
        .says("invalid type: sequence")
        .header("mcp-method", "subscriptions/listen")
        .without("mcp-name")
        // Read by the method, after the request was accepted: the error is the response.
        .status(200)
    };
    let complete = |what: &'static str, reference: Value| {
        let params = json!({
            "_meta": meta_with_caps(default_caps()),
            "ref": reference,
            "argument": {"name": "a", "value": "b"},
        });
        Case::json(
            what,
            &raw(json!(what), "completion/complete", params),
            -32602,
            Some(json!(what)),
        )
        .says("invalid type: sequence")
        .header("mcp-method", "completion/complete")
        .without("mcp-name")
        // Read by the method, after the request was accepted: the error is the response.
        .status(200)
    };
    both(vec![
        listen("a listen filter as an array", json!([true])),
        listen("an empty listen filter array", json!([])),
        complete(
            "a completion reference as an array",
            json!(["ref/prompt", "test_simple_prompt"]),
        ),
    ])
    .await;
}

#[tokio::test]
async fn a_malformed_meta_or_protocol_version_is_refused() {
    const PV: &str = "io.modelcontextprotocol/protocolVersion";
    const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
    let with_meta = |what: &'static str, meta: Value| {
        let message = call(what, "test_simple_text", json!({"_meta": meta}));
        Case::json(what, &message, -32602, Some(json!(what))).says("_meta")
    };
    let unknown = call(
        "unknown",
        "test_simple_text",
        json!({"_meta": {PV: "2099-01-01", CAPS: {}}}),
    );
    both(vec![
        // spec 2026-07-28 basic/index: a request whose `_meta` lacks a required key, or cannot be
        // read, is -32602 and 400.
        with_meta("an array _meta", json!([VERSION, {}])),
        with_meta("a string _meta", json!(VERSION)),
        with_meta("a number _meta", json!(20260728)),
        with_meta("a null _meta", Value::Null),
        with_meta("an integer version", json!({PV: 20260728, CAPS: {}})),
        with_meta("an object version", json!({PV: {"v": VERSION}, CAPS: {}})),
        with_meta("a null version", json!({PV: null, CAPS: {}})),
        with_meta(
            "array capabilities",
            json!({PV: VERSION, CAPS: ["elicitation"]}),
        ),
        // spec 2026-07-28 basic/versioning: a version the server does not implement is -32022
        // naming what it supports (the HTTP header names it too, or -32020 would come first).
        Case::json(
            "an unknown version",
            &unknown,
            -32022,
            Some(json!("unknown")),
        )
        .header("MCP-Protocol-Version", "2099-01-01")
        .says("2099-01-01"),
    ])
    .await;
}

// ---- stdio only ----

#[tokio::test]
async fn ten_thousand_requests_in_flight_on_one_pipe_are_each_answered_once() {
    const N: usize = 10_000;
    let mut server = Fixture::start().await;
    // Every request waits long enough that thousands are in flight together; the ids alternate
    // between integers and strings, which must come back with their JSON type.
    let id = |n: usize| {
        if n.is_multiple_of(2) {
            json!(n)
        } else {
            json!(format!("r{n}"))
        }
    };
    let mut lines = Vec::with_capacity(N * 200);
    for n in 0..N {
        let request = call(
            id(n),
            "test_slow",
            json!({"arguments": {"ms": 200 + n % 100}}),
        );
        serde_json::to_writer(&mut lines, &request).unwrap();
        lines.push(b'\n');
    }
    lines.pop();
    server.send_raw(&lines).await;
    let log_len = server
        .wait_until("10,000 answers", |log| {
            (log.len() >= N).then_some(log.len())
        })
        .await;
    assert_eq!(log_len, N);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for m in &server.log {
        *seen.entry(m["id"].to_string()).or_default() += 1;
        let n: usize = match &m["id"] {
            Value::String(s) => s.trim_start_matches('r').parse().unwrap(),
            other => usize::try_from(other.as_u64().unwrap()).unwrap(),
        };
        assert_eq!(m["id"], id(n), "the id keeps its JSON type");
        assert_eq!(text(m), format!("Waited {} ms", 200 + n % 100));
    }
    assert_eq!(seen.len(), N, "every id answered");
    assert!(seen.values().all(|&c| c == 1), "no id answered twice");
    assert_eq!(
        text(&server.call_tool("test_simple_text", json!({})).await),
        SIMPLE
    );
    let log = server.finish().await;
    assert_eq!(log.len(), N + 1);
}
