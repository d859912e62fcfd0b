//! `Request::on_result`: complete results as the server sent them, members this crate does not
//! know included, next to the typed value.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kelson_client::Client;
use kelson_types::{CacheScope, ElicitRequestFormParams, ElicitResult, ElicitValue};
use serde_json::{Value, json};

use crate::both;
use crate::fixture::{Probes, caching_server, server};
use crate::harness::{Kind, connect, text, within};
use crate::http_only::{Scripted, scripted};

type Seen = Arc<Mutex<Vec<String>>>;

fn collector() -> (
    Seen,
    impl Fn(&serde_json::value::RawValue) + Send + Sync + 'static,
) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    (seen, move |raw| {
        sink.lock().unwrap().push(raw.get().to_owned())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_members_reach_the_callback_and_nothing_is_added() {
    let first_page = json!({
        "tools": [{"name": "a", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}],
        "nextCursor": "2"
    });
    let second_page =
        json!({"tools": [{"name": "b", "inputSchema": {"type": "object"}, "x-vendor": 7}]});
    // A legacy-shaped result: no resultType, and a member of a later revision.
    let called = json!({"content": [{"type": "text", "text": "hi"}], "future": {"kept": true}});
    let (pages, called_text) = ([first_page.clone(), second_page.clone()], called.clone());
    let (url, _stop) = scripted(move |body| match body["method"].as_str() {
        Some("tools/list") => match body["params"]["cursor"].as_str() {
            Some("2") => Scripted::result(pages[1].clone()),
            _ => Scripted::result(pages[0].clone()),
        },
        Some("tools/call") => Scripted::result(called_text.clone()),
        _ => None,
    })
    .await;
    let client = within(Client::builder().connect_http(&url)).await.unwrap();

    let (seen, callback) = collector();
    let tools = within(client.list_all_tools().on_result(callback))
        .await
        .unwrap();
    assert_eq!(tools.len(), 2, "the typed value is still returned");
    let seen = seen.lock().unwrap().clone();
    let parsed: Vec<Value> = seen
        .iter()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    assert_eq!(parsed, [first_page, second_page], "each page, whole");

    let (seen, callback) = collector();
    let result = within(client.call_tool("a", json!({})).on_result(callback))
        .await
        .unwrap();
    assert_eq!(text(&result), "hi");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    // Byte for byte what the server wrote: no resultType added, the unknown member kept.
    assert_eq!(seen[0], called.to_string());
}

async fn only_the_final_round_is_delivered(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let builder = Client::builder().on_elicit_form(|_form: ElicitRequestFormParams| async {
        Ok(ElicitResult::accept(BTreeMap::from([(
            "name".to_owned(),
            ElicitValue::from("Ada"),
        )])))
    });
    let served = connect(kind, server(probes.clone()), builder).await;
    let (seen, callback) = collector();
    let result = within(
        served
            .client
            .call_tool("ask_name", json!({}))
            .on_result(callback),
    )
    .await
    .unwrap();
    assert_eq!(text(&result), "hello Ada");
    assert_eq!(probes.count("ask_name:round"), 2);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let value: Value = serde_json::from_str(&seen[0]).unwrap();
    assert_eq!(value["content"][0]["text"], "hello Ada");
    assert_ne!(value["resultType"], "input_required");
}
both!(final_round, only_the_final_round_is_delivered);

async fn a_callback_skips_the_cache(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let server = caching_server(probes, CacheScope::Public, Duration::from_secs(3600));
    let served = connect(kind, server, Client::builder().cache(true)).await;
    let client = &served.client;
    within(client.list_tools(None)).await.unwrap();
    within(client.list_tools(None)).await.unwrap();
    assert_eq!(served.wire.count("tools/list"), 1, "cached");
    let (seen, callback) = collector();
    within(client.list_tools(None).on_result(callback))
        .await
        .unwrap();
    assert_eq!(
        served.wire.count("tools/list"),
        2,
        "fetched for the callback"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}
both!(skips_cache, a_callback_skips_the_cache);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_discover_delivers_the_initialize_result() {
    let initialized = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                             "serverInfo": {"name": "legacy", "version": "0.9"}, "x-extra": 1});
    let answer = initialized.clone();
    let (url, _stop) = scripted(move |body| match body["method"].as_str() {
        Some("server/discover") => Some(Scripted::Error(400, -32000, "Bad Request: no session")),
        Some("initialize") => Some(Scripted::ResultWith(
            answer.clone(),
            vec![("mcp-session-id", "s")],
        )),
        _ => None,
    })
    .await;
    let client = within(Client::builder().connect_http(&url)).await.unwrap();
    let (seen, callback) = collector();
    let discover = within(client.discover().on_result(callback)).await.unwrap();
    assert_eq!(discover.supported_versions, ["2025-11-25"]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, [initialized.to_string()]);
}
