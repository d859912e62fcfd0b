//! Every typed call, over both transports, and pagination that follows every cursor.

use std::collections::BTreeMap;
use std::sync::Arc;

use kelson_client::{Client, Era, Error, ErrorKind};
use kelson_types::{CompleteArgument, CompletionReference, ResourceContents};
use serde_json::json;

use crate::both;
use crate::fixture::{Probes, TOOLS, server};
use crate::harness::{Kind, connect, serve_plain, text, within};

async fn every_typed_call(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let served = connect(kind, server(probes.clone()), Client::builder()).await;
    let client = &served.client;
    assert_eq!(
        client.era(),
        Era::Modern {
            version: "2026-07-28"
        }
    );

    // The era probe's answer, kept without another request.
    let seen = client.discovered().expect("the probe's discover result");
    assert_eq!(seen.supported_versions, ["2026-07-28"]);
    assert!(seen.capabilities.tools.is_some());

    let discover = within(client.discover()).await.unwrap();
    assert_eq!(discover.supported_versions, ["2026-07-28"]);
    assert!(discover.capabilities.tools.is_some());
    let info = discover.meta.unwrap().server_info.unwrap();
    assert_eq!(info.name, "client-it");

    // Pagination: page size 2, six tools, every cursor followed.
    let first = within(client.list_tools(None)).await.unwrap();
    assert_eq!(first.tools.len(), 2);
    assert!(first.next_cursor.is_some());
    let tools = within(client.list_all_tools()).await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, TOOLS);

    let result = within(client.call_tool("echo", json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "hi");
    assert!(!result.is_error());

    let resources = within(client.list_all_resources()).await.unwrap();
    let mut uris: Vec<_> = resources.iter().map(|r| r.uri.as_str()).collect();
    uris.sort_unstable();
    assert_eq!(uris, ["mem://a", "mem://secret"]);
    let templates = within(client.list_all_resource_templates()).await.unwrap();
    assert_eq!(templates[0].uri_template, "mem://t/{id}");

    let read = within(client.read_resource("mem://a")).await.unwrap();
    match &read.contents[0] {
        ResourceContents::Text(t) => assert_eq!(t.text, "alpha"),
        other => panic!("unexpected contents {other:?}"),
    }
    let read = within(client.read_resource("mem://t/42")).await.unwrap();
    match &read.contents[0] {
        ResourceContents::Text(t) => assert_eq!(t.text, "item 42"),
        other => panic!("unexpected contents {other:?}"),
    }
    let missing = within(client.read_resource("mem://nope"))
        .await
        .unwrap_err();
    assert!(missing.is_resource_not_found(), "{missing}");
    assert_eq!(missing.kind(), ErrorKind::Protocol);

    let prompts = within(client.list_all_prompts()).await.unwrap();
    assert_eq!(prompts[0].name, "greet");
    let prompt = within(client.get_prompt(
        "greet",
        BTreeMap::from([("name".to_owned(), "Ada".to_owned())]),
    ))
    .await
    .unwrap();
    assert_eq!(
        prompt.messages[0].content.as_text(),
        Some("Say hello to Ada")
    );

    let completion = within(client.complete(
        CompletionReference::prompt("greet"),
        CompleteArgument::new("name", "al"),
        None,
    ))
    .await
    .unwrap();
    assert_eq!(completion.completion.values, ["alice", "albert"]);

    // A protocol error names its method and keeps the server's code.
    let err = within(client.call_tool("no_such_tool", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::Protocol { method, .. } if method == "tools/call"));
    assert_eq!(err.code(), Some(-32602));

    // Every request carried the full envelope.
    for received in served.wire.received() {
        if received.body.get("id").is_none() {
            continue;
        }
        let meta = &received.body["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "kelson-client"
        );
    }
}
both!(typed_calls, every_typed_call);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_requests_carry_the_standard_headers() {
    let probes = Arc::new(Probes::default());
    let served = connect(Kind::Http, server(probes), Client::builder()).await;
    within(served.client.call_tool("echo", json!({"text": "héllo"})))
        .await
        .unwrap();
    let call = served.wire.requests("tools/call").pop().unwrap();
    let headers = call.headers.unwrap();
    assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
    assert_eq!(headers["mcp-method"], "tools/call");
    assert_eq!(headers["mcp-name"], "echo");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["accept"], "application/json, text/event-stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crate_accept_loop_serves_the_client() {
    let (url, _stop) = serve_plain(
        server(Arc::new(Probes::default())),
        kelson_http::server::HttpConfig::default(),
    )
    .await;
    let client = within(Client::builder().connect_http(&url)).await.unwrap();
    let result = within(client.call_tool("echo", json!({"text": "plain"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "plain");
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), TOOLS.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_cursor_is_followed() {
    // A scripted server: page one ends with the cursor "", page two has no cursor.
    let (url, _stop) = crate::http_only::scripted(|body| {
        if body["method"] != "tools/list" {
            return None;
        }
        let cursor = body["params"].get("cursor").cloned();
        let result = match cursor {
            None => json!({"resultType": "complete", "tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "", "ttlMs": 0, "cacheScope": "public"}),
            Some(c) if c == "" => json!({"resultType": "complete", "tools": [{"name": "b", "inputSchema": {"type": "object"}}], "ttlMs": 0, "cacheScope": "public"}),
            Some(other) => panic!("unexpected cursor {other}"),
        };
        crate::http_only::Scripted::result(result)
    })
    .await;
    let client = within(Client::builder().connect_http(&url)).await.unwrap();
    let tools = within(client.list_all_tools()).await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
}
