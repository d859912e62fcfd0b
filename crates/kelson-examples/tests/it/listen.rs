//! `subscriptions/listen` on stdio: the acknowledgement, subscription ids, filters, list changes
//! from run-time registry changes, cancellation, and the graceful close at end of input.

use serde_json::{Value, json};

use crate::client::{
    Fixture, SERVER_INFO, SERVER_NAME, SUBSCRIPTION_ID, error, is_response, on_stream, text,
};

const ACK: &str = "notifications/subscriptions/acknowledged";
const TOOLS_CHANGED: &str = "notifications/tools/list_changed";
const PROMPTS_CHANGED: &str = "notifications/prompts/list_changed";

/// Opens a listen stream under `id` and returns its acknowledgement.
async fn listen(server: &mut Fixture, id: Value, filter: Value) -> Value {
    server
        .send_request(
            id.clone(),
            "subscriptions/listen",
            json!({"notifications": filter}),
        )
        .await;
    let (_, ack) = server
        .wait_for(&format!("the acknowledgement of {id}"), on_stream(ACK, id))
        .await;
    ack
}

/// Messages in `log` that belong to listen stream `id`: its notifications and its final result.
fn stream(log: &[Value], id: &Value) -> Vec<Value> {
    log.iter()
        .filter(|m| m["params"]["_meta"][SUBSCRIPTION_ID] == *id || is_response(id.clone())(m))
        .cloned()
        .collect()
}

/// Checks that a stream ended with the graceful result and returns the methods before it.
#[track_caller]
fn ended_gracefully(log: &[Value], id: &Value) -> Vec<String> {
    let messages = stream(log, id);
    let (last, notes) = messages.split_last().expect("the stream has messages");
    assert_eq!(
        last["id"], *id,
        "the stream must end with its result: {messages:#?}"
    );
    let result = &last["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["_meta"][SUBSCRIPTION_ID], *id);
    assert_eq!(result["_meta"][SERVER_INFO]["name"], SERVER_NAME);
    let mut keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["_meta", "resultType"], "{result}");
    assert_eq!(
        notes[0]["method"], ACK,
        "the acknowledgement comes first: {messages:#?}"
    );
    notes
        .iter()
        .map(|n| n["method"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_ack_comes_first_with_the_honoured_filter_and_the_id_verbatim() {
    let mut server = Fixture::start().await;
    // Integer ids as large as Date.now(), and string ids, come back with their type.
    let int_id = json!(1_767_225_600_123_i64);
    let str_id = json!("listen-A");
    let asked = json!({
        "toolsListChanged": true,
        "promptsListChanged": false,
        "resourcesListChanged": true,
        "resourceSubscriptions": ["test://watched-resource"],
        "somethingElseChanged": true
    });
    for id in [&int_id, &str_id] {
        let ack = listen(&mut server, id.clone(), asked.clone()).await;
        assert_eq!(
            ack["params"],
            json!({
                "_meta": {SUBSCRIPTION_ID: id},
                "notifications": {
                    "toolsListChanged": true,
                    "resourcesListChanged": true,
                    "resourceSubscriptions": ["test://watched-resource"]
                }
            })
        );
        assert!(ack.get("id").is_none());
    }
    // Nothing asked: an empty acknowledgement.
    let ack = listen(&mut server, json!(7), json!({})).await;
    assert_eq!(ack["params"]["notifications"], json!({}));

    let log = server.finish().await;
    for id in [&int_id, &str_id, &json!(7)] {
        assert_eq!(ended_gracefully(&log, id), [ACK]);
    }
    // The string id "7" is not the integer 7.
    assert!(stream(&log, &json!("7")).is_empty());
}

#[tokio::test]
async fn a_listen_without_a_filter_is_invalid_params() {
    let mut server = Fixture::start().await;
    let response = server.call("subscriptions/listen", json!({})).await;
    error(&response, -32602);
    let response = server
        .call(
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": "yes"}}),
        )
        .await;
    error(&response, -32602);
    server.finish().await;
}

#[tokio::test]
async fn list_changes_reach_only_the_streams_that_asked() {
    let mut server = Fixture::start().await;
    let tools = json!("tools-stream");
    let prompts = json!(2002);
    listen(
        &mut server,
        tools.clone(),
        json!({"toolsListChanged": true}),
    )
    .await;
    listen(
        &mut server,
        prompts.clone(),
        json!({"promptsListChanged": true}),
    )
    .await;
    let before = server.call("tools/list", json!({})).await;

    let response = server
        .call_tool("test_trigger_tool_change", json!({}))
        .await;
    assert_eq!(text(&response), "Mutation triggered");
    server
        .wait_for(
            "tools/list_changed",
            on_stream(TOOLS_CHANGED, tools.clone()),
        )
        .await;
    // The transient tool is gone again: the list is what it was.
    let after = server.call("tools/list", json!({})).await;
    assert_eq!(after["result"]["tools"], before["result"]["tools"]);

    // Each stream sees events in order, so once the prompts stream has delivered the prompt change
    // it has also passed over the tool change, and once the tools stream delivers a second tool
    // change it has passed over the prompt change.
    let response = server
        .call_tool("test_trigger_prompt_change", json!({}))
        .await;
    assert_eq!(text(&response), "Mutation triggered");
    server
        .wait_for(
            "prompts/list_changed",
            on_stream(PROMPTS_CHANGED, prompts.clone()),
        )
        .await;
    let seen = server
        .log
        .iter()
        .filter(|m| on_stream(TOOLS_CHANGED, tools.clone())(m))
        .count();
    server
        .call_tool("test_trigger_tool_change", json!({}))
        .await;
    server
        .wait_count(
            "another tools/list_changed",
            seen + 1,
            on_stream(TOOLS_CHANGED, tools.clone()),
        )
        .await;

    let log = server.finish().await;
    let tool_methods = ended_gracefully(&log, &tools);
    assert!(
        tool_methods[1..].iter().all(|m| m == TOOLS_CHANGED),
        "{tool_methods:?}"
    );
    let prompt_methods = ended_gracefully(&log, &prompts);
    assert!(
        prompt_methods[1..].iter().all(|m| m == PROMPTS_CHANGED),
        "{prompt_methods:?}"
    );
    assert!(prompt_methods.len() >= 2);
    // List changes carry nothing but the subscription id.
    for m in stream(&log, &tools).iter().chain(&stream(&log, &prompts)) {
        if m["method"] == TOOLS_CHANGED || m["method"] == PROMPTS_CHANGED {
            assert_eq!(m["params"].as_object().unwrap().len(), 1, "{m}");
        }
    }
}

#[tokio::test]
async fn a_cancelled_listen_stops_and_sends_nothing_more() {
    let mut server = Fixture::start().await;
    let cancelled = json!(31);
    let kept = json!("kept");
    listen(
        &mut server,
        cancelled.clone(),
        json!({"toolsListChanged": true}),
    )
    .await;
    listen(&mut server, kept.clone(), json!({"toolsListChanged": true})).await;
    server
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": cancelled, "reason": "done listening"}}),
        )
        .await;
    // The cancellation is read before the trigger, so the cancelled stream never sees the change.
    server
        .call_tool("test_trigger_tool_change", json!({}))
        .await;
    server
        .wait_for(
            "the kept stream's change",
            on_stream(TOOLS_CHANGED, kept.clone()),
        )
        .await;

    let log = server.finish().await;
    // The acknowledgement and nothing else: no change, and no final result at the close either.
    let cancelled_stream = stream(&log, &cancelled);
    let methods: Vec<&Value> = cancelled_stream.iter().map(|m| &m["method"]).collect();
    assert_eq!(methods, [&json!(ACK)], "{cancelled_stream:#?}");
    assert!(ended_gracefully(&log, &kept).contains(&TOOLS_CHANGED.to_owned()));
}

#[tokio::test]
async fn closing_stdin_ends_every_listen_gracefully_and_exits_zero() {
    let mut server = Fixture::start().await;
    let ids = [json!(1), json!("two"), json!(-3)];
    for id in &ids {
        listen(
            &mut server,
            id.clone(),
            json!({"toolsListChanged": true, "promptsListChanged": true}),
        )
        .await;
    }
    let finished = server.close().await;
    assert!(finished.status.success(), "exit status {}", finished.status);
    for id in &ids {
        assert_eq!(ended_gracefully(&finished.log, id), [ACK]);
    }
    assert_eq!(finished.log.len(), 2 * ids.len(), "{:#?}", finished.log);
}
