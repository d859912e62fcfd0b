//! Multi round-trip requests: handlers answer, the original params go back with the answers and the
//! echoed state under a new id, and the number of rounds is bounded.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kelson_client::{Client, Error, Violation};
use kelson_types::{ElicitRequestFormParams, ElicitResult, ElicitValue};
use serde_json::{Value, json};

use crate::both;
use crate::fixture::{Probes, server};
use crate::harness::{Kind, connect, text, within};
use crate::http_only::{Scripted, scripted_logged};

fn answering(name: &'static str, seen: Arc<Mutex<Vec<String>>>) -> kelson_client::ClientBuilder {
    Client::builder().on_elicit_form(move |form: ElicitRequestFormParams| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(form.message);
            Ok(ElicitResult::accept(BTreeMap::from([(
                "name".to_owned(),
                ElicitValue::from(name),
            )])))
        }
    })
}

async fn elicitation_round_trip(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let served = connect(kind, server(probes.clone()), answering("Ada", seen.clone())).await;
    let result = within(served.client.call_tool("ask_name", json!({"x": 1})))
        .await
        .unwrap();
    assert_eq!(text(&result), "hello Ada");
    assert_eq!(*seen.lock().unwrap(), ["What is your name?"]);
    assert_eq!(probes.count("ask_name:round"), 2);

    let calls = served.wire.requests("tools/call");
    assert_eq!(calls.len(), 2);
    let (first, retry) = (&calls[0].body, &calls[1].body);
    assert_ne!(first["id"], retry["id"], "the retry has a new id");
    assert!(first["params"].get("inputResponses").is_none());
    assert!(first["params"].get("requestState").is_none());
    assert_eq!(retry["params"]["name"], first["params"]["name"]);
    assert_eq!(retry["params"]["arguments"], first["params"]["arguments"]);
    assert_eq!(
        retry["params"]["inputResponses"],
        json!({"name": {"action": "accept", "content": {"name": "Ada"}}})
    );
    // The server seals its state with an HMAC: the call completing proves the echo was exact.
    assert!(
        retry["params"]["requestState"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
}
both!(elicitation, elicitation_round_trip);

async fn the_rounds_are_bounded(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let builder = answering("x", Arc::default()).max_input_rounds(3);
    let served = connect(kind, server(probes), builder).await;
    let err = within(served.client.call_tool("ask_forever", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidServerBehaviour(Violation::TooManyRounds { rounds: 3, .. })
        ),
        "{err:?}"
    );
    assert_eq!(
        served.wire.count("tools/call"),
        4,
        "the first call and three retries"
    );
}
both!(round_bound, the_rounds_are_bounded);

async fn a_read_can_ask_too(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let served = connect(kind, server(probes), answering("1234", Arc::default())).await;
    let read = within(served.client.read_resource("mem://secret"))
        .await
        .unwrap();
    assert_eq!(read.contents[0].uri(), "mem://secret");
    assert_eq!(served.wire.count("resources/read"), 2);
}
both!(read_input, a_read_can_ask_too);

async fn without_a_handler_the_server_refuses(kind: Kind) {
    // No elicitation handler, so no elicitation capability: the server answers -32021.
    let served = connect(kind, server(Arc::new(Probes::default())), Client::builder()).await;
    let err = within(served.client.call_tool("ask_name", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32021), "{err:?}");
    let call = &served.wire.requests("tools/call")[0].body;
    // Only the tasks extension, which the client declares by default.
    assert_eq!(
        call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
}
both!(no_handler, without_a_handler_the_server_refuses);

/// A state with escapes, non-ASCII and JSON-looking text, which must come back unchanged.
const STATE: &str = "s\u{e9}t/+=\"q\"\\n {\"k\":1} \u{1F600}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_is_echoed_byte_for_byte_and_only_on_the_retry() {
    let (url, _stop, log) = scripted_logged(|body| {
        let params = &body["params"];
        match (body["method"].as_str(), params["name"].as_str()) {
            (Some("tools/call"), Some("ask")) if params.get("requestState").is_none() => {
                Scripted::result(json!({
                    "resultType": "input_required",
                    "requestState": STATE,
                    "inputRequests": {
                        "who": {"method": "elicitation/create", "params": {
                            "message": "who?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}},
                        "unsupported": {"method": "elicitation/create", "params": {
                            "mode": "url", "message": "open", "url": "https://example.com/x"}}
                    }
                }))
            }
            (Some("tools/call"), Some("ask")) => {
                Scripted::result(json!({"resultType": "complete", "content": [{"type": "text", "text": "done"}]}))
            }
            (Some("tools/call"), Some("sample")) => Scripted::result(json!({
                "resultType": "input_required",
                "inputRequests": {"s": {"method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}}}
            })),
            _ => None,
        }
    })
    .await;
    let client = within(answering("Grace", Arc::default()).connect_http(&url))
        .await
        .unwrap();
    let result = within(client.call_tool("ask", json!({"keep": [1, "two"]})))
        .await
        .unwrap();
    assert_eq!(text(&result), "done");
    let sampled = within(client.call_tool("sample", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            sampled,
            Error::MissingHandler {
                method: "sampling/createMessage"
            }
        ),
        "{sampled:?}"
    );

    let log = log.lock().unwrap().clone();
    let calls: Vec<&Value> = log
        .iter()
        .map(|(_, b)| b)
        .filter(|b| b["method"] == "tools/call" && b["params"]["name"] == "ask")
        .collect();
    assert_eq!(calls.len(), 2);
    let retry = &calls[1]["params"];
    assert_eq!(retry["requestState"].as_str(), Some(STATE));
    assert_eq!(retry["arguments"], json!({"keep": [1, "two"]}));
    assert_eq!(retry["inputResponses"]["who"]["action"], "accept");
    // A URL elicitation with no URL handler is declined, per the spec.
    assert_eq!(
        retry["inputResponses"]["unsupported"],
        json!({"action": "decline"})
    );
    // The answers went on the retry only: the sampling call never carried them.
    for (_, body) in &log {
        if body["params"]["name"] == "sample" {
            assert!(body["params"].get("inputResponses").is_none());
            assert!(body["params"].get("requestState").is_none());
        }
    }
}
