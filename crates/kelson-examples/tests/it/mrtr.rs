//! Multi round-trip requests (SEP-2322): every MRTR fixture, answered round by round with a new id
//! each time and the `requestState` echoed byte for byte, and every way a retry can go wrong.

use serde_json::{Map, Value, json};

use crate::client::{Fixture, error, meta_with_caps, result, text};

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text},
        "model": "test-model", "stopReason": "endTurn"})
}

fn roots() -> Value {
    json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]})
}

/// Params of a `tools/call` retry: the same name and arguments, plus answers and the state.
fn retry(name: &str, responses: Option<Value>, state: Option<&str>) -> Value {
    let mut params = Map::new();
    params.insert("name".into(), json!(name));
    params.insert("arguments".into(), json!({}));
    if let Some(responses) = responses {
        params.insert("inputResponses".into(), responses);
    }
    if let Some(state) = state {
        params.insert("requestState".into(), json!(state));
    }
    Value::Object(params)
}

/// The `input_required` result of a response, checked for shape: no cache hints, and a state.
#[track_caller]
fn input_required(response: &Value) -> &Value {
    let r = result(response);
    assert_eq!(r["resultType"], "input_required", "{response}");
    assert!(
        r.get("ttlMs").is_none() && r.get("cacheScope").is_none(),
        "{r}"
    );
    assert!(r.get("content").is_none(), "{r}");
    r
}

/// The `requestState` of an `input_required` result.
#[track_caller]
fn state(response: &Value) -> String {
    input_required(response)["requestState"]
        .as_str()
        .expect("a requestState string")
        .to_owned()
}

/// The keys of the input requests of an `input_required` result, sorted.
#[track_caller]
fn keys(response: &Value) -> Vec<String> {
    input_required(response)["inputRequests"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn elicitation_round_trip() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_elicitation";
    let first_id = server.request("tools/call", retry(TOOL, None, None)).await;
    let first = server.response(first_id).await;
    let r = input_required(&first);
    assert_eq!(
        r["inputRequests"],
        json!({"user_name": {"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "What is your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        }}})
    );
    let s = state(&first);

    let second_id = server
        .request(
            "tools/call",
            retry(
                TOOL,
                Some(json!({"user_name": accept(json!({"name": "Alice"}))})),
                Some(&s),
            ),
        )
        .await;
    assert_ne!(first_id, second_id);
    assert_eq!(text(&server.response(second_id).await), "Hello, Alice!");

    // A declined form completes too, without a name.
    let declined = server
        .call(
            "tools/call",
            retry(
                TOOL,
                Some(json!({"user_name": {"action": "decline"}})),
                Some(&s),
            ),
        )
        .await;
    assert_eq!(text(&declined), "No name given: the user declined");
    server.finish().await;
}

#[tokio::test]
async fn a_missing_answer_is_asked_for_again() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_elicitation";
    // An answer under the wrong key, without a state.
    let wrong = json!({"wrong_key": accept(json!({"data": "wrong"}))});
    let response = server
        .call("tools/call", retry(TOOL, Some(wrong.clone()), None))
        .await;
    assert_eq!(keys(&response), ["user_name"]);
    // The same with the state the server issued, and with no answers at all.
    let s = state(&response);
    let response = server
        .call("tools/call", retry(TOOL, Some(wrong), Some(&s)))
        .await;
    assert_eq!(keys(&response), ["user_name"]);
    let response = server.call("tools/call", retry(TOOL, None, Some(&s))).await;
    assert_eq!(keys(&response), ["user_name"]);
    let response = server
        .call("tools/call", retry(TOOL, Some(json!({})), Some(&s)))
        .await;
    assert_eq!(keys(&response), ["user_name"]);
    server.finish().await;
}

#[tokio::test]
async fn unexpected_answers_are_ignored() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_elicitation";
    let answers = json!({
        "user_name": accept(json!({"name": "Alice"})),
        "unknown_extra_key": accept(json!({"foo": "bar"})),
        "another_unexpected": accept(json!({"baz": 123}))
    });
    // Without a state (the conformance suite answers before it is asked) ...
    let response = server
        .call("tools/call", retry(TOOL, Some(answers.clone()), None))
        .await;
    assert_eq!(text(&response), "Hello, Alice!");
    // ... and with one.
    let first = server.call("tools/call", retry(TOOL, None, None)).await;
    let s = state(&first);
    let response = server
        .call("tools/call", retry(TOOL, Some(answers), Some(&s)))
        .await;
    assert_eq!(text(&response), "Hello, Alice!");
    server.finish().await;
}

#[tokio::test]
async fn malformed_input_responses_are_invalid_params() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_elicitation";
    let first = server.call("tools/call", retry(TOOL, None, None)).await;
    let s = state(&first);
    let malformed = [
        json!({"user_name": 12345}),
        json!({"user_name": "Alice"}),
        json!({"user_name": {}}),
        json!({"user_name": {"action": "maybe"}}),
        json!("not an object"),
        json!([accept(json!({"name": "Alice"}))]),
        // `null` is not "absent": the retry is malformed, and the server must not ask again.
        Value::Null,
    ];
    for responses in malformed {
        for state in [None, Some(s.as_str())] {
            let id = server
                .request("tools/call", retry(TOOL, Some(responses.clone()), state))
                .await;
            let response = server.response(id).await;
            error(&response, -32602);
            assert_eq!(response["id"], id, "the id is echoed");
        }
    }
    // A null requestState is malformed too, with or without answers.
    for responses in [
        None,
        Some(json!({"user_name": accept(json!({"name": "Alice"}))})),
    ] {
        let mut params = retry(TOOL, responses, None);
        params["requestState"] = Value::Null;
        error(&server.call("tools/call", params).await, -32602);
    }
    // A well-formed answer of the wrong kind for the key.
    let response = server
        .call(
            "tools/call",
            retry(TOOL, Some(json!({"user_name": roots()})), Some(&s)),
        )
        .await;
    error(&response, -32602);
    server.finish().await;
}

#[tokio::test]
async fn sampling_round_trip() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_sampling";
    let first = server.call("tools/call", retry(TOOL, None, None)).await;
    let requests = input_required(&first)["inputRequests"]
        .as_object()
        .unwrap()
        .clone();
    assert_eq!(requests.len(), 1);
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "sampling/createMessage");
    assert_eq!(
        request["params"],
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
            "maxTokens": 100})
    );
    let s = state(&first);
    let answers = json!({key: sampled("The capital of France is Paris.")});
    let response = server
        .call("tools/call", retry(TOOL, Some(answers), Some(&s)))
        .await;
    assert_eq!(
        text(&response),
        "Sampling result: The capital of France is Paris."
    );
    server.finish().await;
}

#[tokio::test]
async fn list_roots_round_trip() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_list_roots";
    let first = server.call("tools/call", retry(TOOL, None, None)).await;
    let requests = input_required(&first)["inputRequests"]
        .as_object()
        .unwrap()
        .clone();
    assert_eq!(requests.len(), 1);
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "roots/list");
    let s = state(&first);
    let response = server
        .call(
            "tools/call",
            retry(TOOL, Some(json!({key: roots()})), Some(&s)),
        )
        .await;
    assert_eq!(text(&response), "Found 1 root(s)");
    server.finish().await;
}

#[tokio::test]
async fn request_state_round_trip_needs_the_issued_state() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_request_state";
    let first = server.call("tools/call", retry(TOOL, None, None)).await;
    assert_eq!(
        input_required(&first)["inputRequests"]["confirm"],
        json!({"method": "elicitation/create", "params": {"mode": "form", "message": "Please confirm",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}})
    );
    let s = state(&first);
    let answer = json!({"confirm": accept(json!({"ok": true}))});

    // An answer without the state was never asked for: the question is asked again.
    let unsolicited = server
        .call("tools/call", retry(TOOL, Some(answer.clone()), None))
        .await;
    assert_eq!(keys(&unsolicited), ["confirm"]);

    let response = server
        .call("tools/call", retry(TOOL, Some(answer.clone()), Some(&s)))
        .await;
    let said = text(&response);
    assert!(said.starts_with("state-ok"), "{said}");

    // The state is not bound to one use by the runtime: the same retry completes again.
    let response = server
        .call("tools/call", retry(TOOL, Some(answer), Some(&s)))
        .await;
    assert!(text(&response).starts_with("state-ok"));
    server.finish().await;
}

#[tokio::test]
async fn multiple_inputs_in_one_round() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_multiple_inputs";
    let first = server.call("tools/call", retry(TOOL, None, None)).await;
    let r = input_required(&first);
    assert_eq!(keys(&first), ["client_roots", "greeting", "user_name"]);
    assert_eq!(
        r["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        r["inputRequests"]["greeting"]["method"],
        "sampling/createMessage"
    );
    assert_eq!(r["inputRequests"]["greeting"]["params"]["maxTokens"], 50);
    assert_eq!(
        r["inputRequests"]["client_roots"],
        json!({"method": "roots/list"})
    );
    let s1 = state(&first);

    // A partial answer: only what is still missing is asked for.
    let partial = json!({"user_name": accept(json!({"name": "Alice"}))});
    let second = server
        .call("tools/call", retry(TOOL, Some(partial), Some(&s1)))
        .await;
    assert_eq!(keys(&second), ["client_roots", "greeting"]);
    let s2 = state(&second);
    assert_ne!(s1, s2);
    let rest = json!({"greeting": sampled("Hello there!"), "client_roots": roots()});
    let third = server
        .call("tools/call", retry(TOOL, Some(rest), Some(&s2)))
        .await;
    assert_eq!(
        text(&third),
        "Name: Alice; Greeting: Hello there!; Roots: 1"
    );

    // All three at once.
    let all = json!({
        "user_name": accept(json!({"name": "Bob"})),
        "greeting": sampled("Hi!"),
        "client_roots": {"roots": []}
    });
    let response = server
        .call("tools/call", retry(TOOL, Some(all), Some(&s1)))
        .await;
    assert_eq!(text(&response), "Name: Bob; Greeting: Hi!; Roots: 0");
    server.finish().await;
}

#[tokio::test]
async fn multi_round_carries_the_first_answer_in_the_state() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_multi_round";
    let r1 = server.call("tools/call", retry(TOOL, None, None)).await;
    assert_eq!(keys(&r1), ["step1"]);
    assert_eq!(
        input_required(&r1)["inputRequests"]["step1"]["params"]["message"],
        "Step 1: What is your name?"
    );
    let s1 = state(&r1);

    let r2 = server
        .call(
            "tools/call",
            retry(
                TOOL,
                Some(json!({"step1": accept(json!({"name": "Alice"}))})),
                Some(&s1),
            ),
        )
        .await;
    assert_eq!(keys(&r2), ["step2"]);
    assert_eq!(
        input_required(&r2)["inputRequests"]["step2"]["params"]["requestedSchema"],
        json!({"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]})
    );
    let s2 = state(&r2);
    assert_ne!(s1, s2);

    // Only step2 is answered in round 3: step1 comes from the state.
    let r3 = server
        .call(
            "tools/call",
            retry(
                TOOL,
                Some(json!({"step2": accept(json!({"color": "blue"}))})),
                Some(&s2),
            ),
        )
        .await;
    assert_eq!(text(&r3), "Multi-round complete for Alice who likes blue");

    // An answer to step1 slipped into round 3 does not override the sealed one.
    let r3 = server
        .call(
            "tools/call",
            retry(
                TOOL,
                Some(json!({"step1": accept(json!({"name": "Mallory"})), "step2": accept(json!({"color": "red"}))})),
                Some(&s2),
            ),
        )
        .await;
    assert_eq!(text(&r3), "Multi-round complete for Alice who likes red");
    server.finish().await;
}

#[tokio::test]
async fn a_tampered_or_foreign_state_is_refused() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_tampered_state";
    let first = server.call("tools/call", retry(TOOL, None, None)).await;
    assert_eq!(keys(&first), ["confirm"]);
    let s = state(&first);
    let answer = json!({"confirm": accept(json!({"ok": true}))});

    let tampered = format!("{s}-TAMPERED");
    let mut flipped = s.clone().into_bytes();
    flipped[4] = if flipped[4] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    for bad in [tampered.as_str(), flipped.as_str(), "", "garbage", "a.b"] {
        let id = server
            .request("tools/call", retry(TOOL, Some(answer.clone()), Some(bad)))
            .await;
        let response = server.response(id).await;
        let e = error(&response, -32602);
        assert!(
            e["message"].as_str().unwrap().contains("requestState"),
            "{e}"
        );
    }

    // A genuine state issued for another tool, or for other arguments, or for another method.
    let other = server
        .call(
            "tools/call",
            retry("test_input_required_result_request_state", None, None),
        )
        .await;
    let foreign = state(&other);
    let response = server
        .call(
            "tools/call",
            retry(TOOL, Some(answer.clone()), Some(&foreign)),
        )
        .await;
    error(&response, -32602);
    let mut other_args = retry(TOOL, Some(answer.clone()), Some(&s));
    other_args["arguments"] = json!({"extra": 1});
    let response = server.call("tools/call", other_args).await;
    // The arguments fail the schema (no parameters), or the state check: an error either way,
    // never a completion.
    assert!(
        response.get("error").is_some() || response["result"]["isError"] == true,
        "{response}"
    );
    let prompt_state = server
        .call(
            "prompts/get",
            json!({"name": "test_input_required_result_prompt"}),
        )
        .await;
    let response = server
        .call(
            "tools/call",
            retry(TOOL, Some(answer.clone()), Some(&state(&prompt_state))),
        )
        .await;
    error(&response, -32602);

    // The genuine state still works.
    let response = server
        .call("tools/call", retry(TOOL, Some(answer), Some(&s)))
        .await;
    assert!(text(&response).starts_with("integrity-ok"));
    server.finish().await;
}

#[tokio::test]
async fn the_capability_check_asks_only_for_what_was_declared() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_input_required_result_capabilities";
    let call = |caps: Value, responses: Option<Value>, state: Option<String>| {
        let mut params = retry(TOOL, responses, state.as_deref());
        params["_meta"] = meta_with_caps(caps);
        params
    };

    let first = server
        .call("tools/call", call(json!({"sampling": {}}), None, None))
        .await;
    assert_eq!(keys(&first), ["sample_input"]);
    let r = input_required(&first);
    assert_eq!(
        r["inputRequests"]["sample_input"]["method"],
        "sampling/createMessage"
    );
    let s = state(&first);
    let response = server
        .call(
            "tools/call",
            call(
                json!({"sampling": {}}),
                Some(json!({"sample_input": sampled("ok")})),
                Some(s),
            ),
        )
        .await;
    assert_eq!(text(&response), "capabilities-ok: received sample_input");

    let all = server
        .call(
            "tools/call",
            call(
                json!({"sampling": {}, "elicitation": {}, "roots": {}}),
                None,
                None,
            ),
        )
        .await;
    assert_eq!(keys(&all), ["elicit_input", "roots_input", "sample_input"]);
    let url_only = server
        .call(
            "tools/call",
            call(json!({"elicitation": {"url": {}}}), None, None),
        )
        .await;
    error(&url_only, -32021);

    for caps in [json!({}), json!({"experimental": {"x": {}}})] {
        let response = server.call("tools/call", call(caps, None, None)).await;
        let e = error(&response, -32021);
        assert!(e["data"]["requiredCapabilities"].is_object(), "{e}");
    }
    server.finish().await;
}

#[tokio::test]
async fn the_prompt_asks_for_input_too() {
    let mut server = Fixture::start().await;
    const PROMPT: &str = "test_input_required_result_prompt";
    let first = server.call("prompts/get", json!({"name": PROMPT})).await;
    assert_eq!(
        input_required(&first)["inputRequests"],
        json!({"user_context": {"method": "elicitation/create", "params": {"mode": "form",
            "message": "What context should the prompt use?",
            "requestedSchema": {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}}}})
    );
    let s = state(&first);
    let response = server
        .call(
            "prompts/get",
            json!({"name": PROMPT, "requestState": s,
                "inputResponses": {"user_context": accept(json!({"context": "test context"}))}}),
        )
        .await;
    let r = result(&response);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(
        r["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Prompt with context: test context"}}])
    );

    // Without elicitation the prompt cannot ask: -32021 naming it.
    let mut params = json!({"name": PROMPT});
    params["_meta"] = meta_with_caps(json!({"sampling": {}}));
    let response = server.call("prompts/get", params).await;
    let e = error(&response, -32021);
    assert!(
        e["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{e}"
    );
    server.finish().await;
}

#[tokio::test]
async fn other_methods_never_answer_input_required() {
    let mut server = Fixture::start().await;
    let noise = json!({"inputResponses": {"user_name": accept(json!({"name": "Alice"}))}, "requestState": "x"});
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "server/discover",
    ] {
        let response = server.call(method, noise.clone()).await;
        assert_eq!(result(&response)["resultType"], "complete", "{method}");
    }
    server.finish().await;
}

#[tokio::test]
async fn streaming_elicitation_asks_through_an_interim_result() {
    let mut server = Fixture::start().await;
    const TOOL: &str = "test_streaming_elicitation";
    let mut params = retry(TOOL, None, None);
    params["_meta"] = meta_with_caps(json!({"elicitation": {}}));
    let first = server.call("tools/call", params.clone()).await;
    assert_eq!(keys(&first), ["confirmation"]);
    assert_eq!(
        input_required(&first)["inputRequests"]["confirmation"]["method"],
        "elicitation/create"
    );
    params["requestState"] = json!(state(&first));
    params["inputResponses"] = json!({"confirmation": accept(json!({"continue": true}))});
    let response = server.call("tools/call", params).await;
    assert_eq!(text(&response), "Streaming complete (the user accepted)");

    let mut params = retry(TOOL, None, None);
    params["_meta"] = meta_with_caps(json!({}));
    error(&server.call("tools/call", params).await, -32021);
    server.finish().await;
}
