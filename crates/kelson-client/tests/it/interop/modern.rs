//! Our client against the interop profile written with the official TypeScript SDK v2 and Python
//! SDK 2.x, in the 2026-07-28 stateless mode: every step of the profile through the public API,
//! one started peer per test.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt as _;
use kelson_client::{Client, Era, ListenEvent};
use kelson_types::{
    ElicitRequestFormParams, ElicitResult, ElicitValue, ResourceContents, SubscriptionFilter,
};
use serde_json::json;

use super::{HttpPeer, Peers, http_peer};
use crate::harness::{Kind, text, within};

#[derive(Clone, Copy, Debug)]
enum Sdk {
    TypeScript,
    Python,
}

impl Sdk {
    fn server(self, peers: &Peers, mode: &str) -> tokio::process::Command {
        let mut command = match self {
            Sdk::TypeScript => peers.node("interop/ts-server.mjs"),
            Sdk::Python => peers.python("interop/py_server.py"),
        };
        command.arg(mode);
        command
    }

    fn server_name(self) -> &'static str {
        match self {
            Sdk::TypeScript => "interop-ts-server",
            Sdk::Python => "interop-py-server",
        }
    }
}

/// Starts the peer and connects to it; the elicitation messages the handler saw go to `asked`.
async fn connect(
    sdk: Sdk,
    kind: Kind,
    asked: Arc<Mutex<Vec<String>>>,
) -> (Client, Option<HttpPeer>) {
    let peers = Peers::installed();
    let builder = Client::builder().on_elicit_form(move |params: ElicitRequestFormParams| {
        asked.lock().unwrap().push(params.message);
        async {
            let content =
                BTreeMap::from([("name".to_owned(), ElicitValue::String("interop".into()))]);
            Ok(ElicitResult::accept(content))
        }
    });
    match kind {
        Kind::Stdio => {
            let client = within(builder.connect_stdio(sdk.server(&peers, "stdio")))
                .await
                .unwrap_or_else(|e| panic!("connecting to the {sdk:?} server over stdio: {e}"));
            (client, None)
        }
        Kind::Http => {
            let peer = http_peer(sdk.server(&peers, "http"), false, |line| {
                line.strip_prefix("listening on ").map(str::to_owned)
            })
            .await;
            let client = within(builder.connect_http(&peer.url))
                .await
                .unwrap_or_else(|e| {
                    panic!("connecting to the {sdk:?} server at {}: {e}", peer.url)
                });
            (client, Some(peer))
        }
    }
}

async fn profile(sdk: Sdk, kind: Kind) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (client, _peer) = connect(sdk, kind, asked.clone()).await;

    // The era, and the revision every request names.
    assert_eq!(
        client.era(),
        Era::Modern {
            version: "2026-07-28"
        }
    );
    assert_eq!(
        client.session_id(),
        None,
        "no legacy session on a modern server"
    );

    let discover = within(client.discover()).await.unwrap();
    assert!(
        discover
            .supported_versions
            .iter()
            .any(|v| v == "2026-07-28"),
        "{discover:?}"
    );
    let name = discover
        .meta
        .as_ref()
        .and_then(|m| m.server_info.as_ref())
        .map(|i| i.name.as_str());
    assert_eq!(name, Some(sdk.server_name()));
    assert_eq!(
        discover
            .capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed),
        Some(true)
    );

    let mut tools: Vec<String> = within(client.list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        ["add", "ask_name", "change_tools", "count_with_progress"]
    );

    let sum = within(client.call_tool("add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(text(&sum), "5");
    assert_ne!(sum.is_error, Some(true));

    let seen = Arc::new(Mutex::new(Vec::new()));
    let progress = seen.clone();
    let counted = within(
        client
            .call_tool("count_with_progress", json!({"steps": 3}))
            .on_progress(move |p| progress.lock().unwrap().push((p.progress, p.total))),
    )
    .await
    .unwrap();
    assert_eq!(text(&counted), "counted to 3");
    assert_eq!(
        *seen.lock().unwrap(),
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );

    let resources: Vec<String> = within(client.list_all_resources())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .collect();
    assert_eq!(resources, ["interop://greeting"]);
    let read = within(client.read_resource("interop://greeting"))
        .await
        .unwrap();
    match read.contents.as_slice() {
        [ResourceContents::Text(t)] => assert_eq!(t.text, "Hello from the interop fixture"),
        other => panic!("unexpected contents {other:?}"),
    }

    let prompts: Vec<String> = within(client.list_all_prompts())
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(prompts, ["greet"]);
    let args = BTreeMap::from([("name".to_owned(), "interop".to_owned())]);
    let prompt = within(client.get_prompt("greet", args)).await.unwrap();
    assert_eq!(
        prompt.messages[0].content.as_text(),
        Some("Please greet interop.")
    );

    // MRTR: the server answers input_required, our handler answers, the call is retried.
    let greeted = within(client.call_tool("ask_name", json!({})))
        .await
        .unwrap();
    assert_eq!(text(&greeted), "Hello, interop!");
    assert_eq!(*asked.lock().unwrap(), ["What is your name?"]);

    // listen: acknowledged, then the change the server announces.
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        ..SubscriptionFilter::default()
    };
    let mut subscription = within(client.listen(filter)).await.unwrap();
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    let changed = within(client.call_tool("change_tools", json!({})))
        .await
        .unwrap();
    assert_eq!(text(&changed), "tools changed");
    let event = within(subscription.next()).await;
    assert!(
        matches!(event, Some(Ok(ListenEvent::ToolsListChanged))),
        "{event:?}"
    );
    drop(subscription);

    // Still the modern revision after all of it.
    assert_eq!(
        client.era(),
        Era::Modern {
            version: "2026-07-28"
        }
    );
    within(client.close()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_server_over_stdio() {
    if Peers::get().is_none() {
        return;
    }
    profile(Sdk::TypeScript, Kind::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_server_over_http() {
    if Peers::get().is_none() {
        return;
    }
    profile(Sdk::TypeScript, Kind::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_server_over_stdio() {
    if Peers::get().is_none() {
        return;
    }
    profile(Sdk::Python, Kind::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_server_over_http() {
    if Peers::get().is_none() {
        return;
    }
    profile(Sdk::Python, Kind::Http).await;
}
