use serde_json::json;

use super::*;
use crate::elicitation::{ElicitRequestURLParams, ElicitValue};
use crate::sampling::SamplingContent;

type CallResult = ResultOrInputRequired<CallToolResult>;

#[test]
fn absent_result_type_is_complete() {
    let r: CallResult = serde_json::from_value(json!({"content": []})).unwrap();
    let result = r.complete().unwrap();
    assert_eq!(result.result_type, ResultType::Complete);
}

#[test]
fn explicit_result_types_pick_the_variant() {
    let r: CallResult =
        serde_json::from_value(json!({"resultType": "complete", "content": [], "isError": false}))
            .unwrap();
    assert!(r.is_complete());
    let r: CallResult =
        serde_json::from_value(json!({"resultType": "input_required", "requestState": "s"}))
            .unwrap();
    assert_eq!(
        r.as_input_required().unwrap().request_state.as_deref(),
        Some("s")
    );
}

#[test]
fn unknown_or_mistyped_result_types_are_invalid() {
    for value in [
        json!({"resultType": "task", "content": []}),
        json!({"resultType": 1, "content": []}),
        json!({"resultType": null, "content": []}),
    ] {
        assert!(
            serde_json::from_value::<CallResult>(value.clone()).is_err(),
            "{value}"
        );
    }
}

#[test]
fn serialization_delegates() {
    let r: CallResult = CallToolResult::text("ok").into();
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]})
    );
    let r: CallResult = InputRequiredResult::new().with_request_state("s").into();
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"resultType": "input_required", "requestState": "s"})
    );
}

#[test]
fn input_responses_are_told_apart_by_keys() {
    let wire = json!({
        "a": {"action": "accept", "content": {"name": "octocat"}},
        "b": {"roots": [{"uri": "file:///x"}]},
        "c": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"},
        "d": {"action": "decline"},
    });
    let responses: InputResponses = serde_json::from_value(wire.clone()).unwrap();
    let elicit = responses["a"].as_elicit().unwrap();
    assert_eq!(
        elicit.content.as_ref().unwrap()["name"],
        ElicitValue::from("octocat")
    );
    assert_eq!(
        responses["b"].as_list_roots().unwrap().roots[0].uri,
        "file:///x"
    );
    let sampled = responses["c"].as_create_message().unwrap();
    assert!(matches!(sampled.content, SamplingContent::Single(_)));
    assert!(responses["d"].as_elicit().is_some());
    assert_eq!(serde_json::to_value(&responses).unwrap(), wire);
}

#[test]
fn input_responses_never_emit_result_type() {
    let responses: InputResponses = [
        ("a".to_owned(), InputResponse::from(ElicitResult::cancel())),
        ("b".to_owned(), ListRootsResult::default().into()),
    ]
    .into_iter()
    .collect();
    let text = serde_json::to_string(&responses).unwrap();
    assert!(!text.contains("resultType"), "{text}");
}

#[test]
fn malformed_input_responses_are_errors() {
    assert!(serde_json::from_value::<InputResponse>(json!({"action": "maybe"})).is_err());
    assert!(serde_json::from_value::<InputResponse>(json!({"role": "assistant"})).is_err());
    assert!(serde_json::from_value::<InputResponse>(json!([])).is_err());
}

#[test]
fn input_requests_decode_in_either_member_order() {
    let method_first = json!({"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x"}});
    let params_first = r#"{"params": {"mode": "url", "message": "m", "url": "https://x"}, "method": "elicitation/create"}"#;
    let a: InputRequest = serde_json::from_value(method_first.clone()).unwrap();
    let b: InputRequest = serde_json::from_str(params_first).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        a,
        InputRequest::elicit(ElicitRequestURLParams::new("m", "https://x"))
    );
    assert_eq!(serde_json::to_value(&a).unwrap(), method_first);

    // Buffered params keep a form's field order.
    let params_first = r#"{"params": {"message": "m", "requestedSchema": {"type": "object",
        "properties": {"zip": {"type": "string"}, "age": {"type": "integer"}}}},
        "method": "elicitation/create"}"#;
    let InputRequest::Elicit(ElicitRequestParams::Form(form)) =
        serde_json::from_str(params_first).unwrap()
    else {
        panic!("a form");
    };
    let names: Vec<&str> = form
        .requested_schema
        .properties
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names, ["zip", "age"]);
}

#[test]
fn roots_params_are_optional_but_others_are_not() {
    let r: InputRequest = serde_json::from_value(json!({"method": "roots/list"})).unwrap();
    assert_eq!(r, InputRequest::list_roots());
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"method": "roots/list"})
    );
    let r: InputRequest =
        serde_json::from_value(json!({"method": "roots/list", "params": {"_meta": {"k": 1}}}))
            .unwrap();
    assert!(matches!(r, InputRequest::ListRoots(Some(_))));
    assert!(
        serde_json::from_value::<InputRequest>(json!({"method": "sampling/createMessage"}))
            .is_err()
    );
    assert!(
        serde_json::from_value::<InputRequest>(json!({"method": "ping", "params": {}})).is_err()
    );
    assert!(serde_json::from_value::<InputRequest>(json!({"params": {}})).is_err());
}

#[test]
fn schema_named_embedded_requests() {
    let wire = json!({"id": "list-roots-example", "method": "roots/list"});
    let r: ListRootsRequest = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(r.id, Some(Id::from("list-roots-example")));
    assert_eq!(serde_json::to_value(&r).unwrap(), wire);
    // The id is dropped where this revision has no place for it.
    let r: InputRequest = serde_json::from_value(wire).unwrap();
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"method": "roots/list"})
    );

    let elicit = json!({"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}});
    let e: ElicitRequest = serde_json::from_value(elicit.clone()).unwrap();
    assert_eq!(serde_json::to_value(&e).unwrap(), elicit);
    assert!(serde_json::from_value::<CreateMessageRequest>(elicit).is_err());
}

#[test]
fn capability_checks_follow_the_request_kind() {
    let caps: ClientCapabilities =
        serde_json::from_value(json!({"elicitation": {}, "sampling": {}})).unwrap();
    let url = InputRequest::elicit(ElicitRequestURLParams::new("m", "https://x"));
    assert!(!url.is_supported_by(&caps));
    assert_eq!(
        serde_json::to_value(url.required_capabilities()).unwrap(),
        json!({"elicitation": {"url": {}}})
    );
    let mut sampling = CreateMessageRequestParams::new(vec![], 10);
    assert!(InputRequest::create_message(sampling.clone()).is_supported_by(&caps));
    sampling.tools = Some(vec![]);
    let with_tools = InputRequest::create_message(sampling);
    assert!(!with_tools.is_supported_by(&caps));
    assert_eq!(
        serde_json::to_value(with_tools.required_capabilities()).unwrap(),
        json!({"sampling": {"tools": {}}})
    );
    assert!(!InputRequest::list_roots().is_supported_by(&caps));
}

#[test]
fn input_required_builder() {
    let r = InputRequiredResult::new()
        .with_input_request("roots", InputRequest::list_roots())
        .with_request_state("opaque");
    assert!(r.is_well_formed());
    assert!(!InputRequiredResult::new().is_well_formed());
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"resultType": "input_required", "inputRequests": {"roots": {"method": "roots/list"}}, "requestState": "opaque"})
    );
}
