//! `server/discover` and the per-request envelope: `_meta`, versions, removed and unknown methods.

use serde_json::{Value, json};

use crate::client::{
    Fixture, SERVER_INFO, SERVER_NAME, VERSION, error, meta_plus, meta_with_caps, result,
};

const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

#[tokio::test]
async fn discover_reports_versions_capabilities_cache_hints_and_identity() {
    let mut server = Fixture::start().await;
    let response = server.call("server/discover", json!({})).await;
    let r = result(&response);
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["supportedVersions"], json!([VERSION]));
    let caps = &r["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true, "{caps}");
    assert_eq!(caps["prompts"]["listChanged"], true, "{caps}");
    assert!(caps["resources"].is_object(), "{caps}");
    assert_eq!(caps["completions"], json!({}), "{caps}");
    assert_eq!(caps["logging"], json!({}), "{caps}");
    assert!(r["ttlMs"].as_u64().is_some(), "ttlMs: {}", r["ttlMs"]);
    assert!(
        matches!(r["cacheScope"].as_str(), Some("public" | "private")),
        "{r}"
    );
    assert!(r["instructions"].as_str().is_some_and(|s| !s.is_empty()));
    // spec 2026-07-28 (PR #3002): the identity is in _meta, and there is no top-level serverInfo.
    assert!(r.get("serverInfo").is_none(), "{r}");
    assert_eq!(r["_meta"][SERVER_INFO]["name"], SERVER_NAME);
    assert_eq!(
        r["_meta"][SERVER_INFO]["version"],
        env!("CARGO_PKG_VERSION")
    );
    server.finish().await;
}

#[tokio::test]
async fn client_info_is_optional() {
    let mut server = Fixture::start().await;
    let meta = json!({PROTOCOL_VERSION: VERSION, CLIENT_CAPABILITIES: {}});
    let response = server.call("server/discover", json!({"_meta": meta})).await;
    assert_eq!(result(&response)["supportedVersions"], json!([VERSION]));
    server.finish().await;
}

#[tokio::test]
async fn a_missing_meta_key_is_invalid_params_naming_it_with_the_id_echoed() {
    let mut server = Fixture::start().await;

    // No params at all, and params without _meta.
    server
        .send(&json!({"jsonrpc": "2.0", "id": 101, "method": "server/discover"}))
        .await;
    let e = error(&server.response(101).await, -32602).clone();
    assert!(e["message"].as_str().unwrap().contains("_meta"), "{e}");
    server
        .send(&json!({"jsonrpc": "2.0", "id": "no-meta", "method": "tools/list", "params": {}}))
        .await;
    let e = error(&server.response("no-meta").await, -32602).clone();
    assert!(e["message"].as_str().unwrap().contains("_meta"), "{e}");

    // Each required key on its own.
    let cases = [
        (
            102,
            json!({CLIENT_CAPABILITIES: {}, "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}}),
            PROTOCOL_VERSION,
        ),
        (104, json!({PROTOCOL_VERSION: VERSION}), CLIENT_CAPABILITIES),
    ];
    for (id, meta, key) in cases {
        server
            .send_request(id, "server/discover", json!({"_meta": meta}))
            .await;
        let response = server.response(id).await;
        let e = error(&response, -32602);
        assert!(
            e["message"].as_str().unwrap().contains(key),
            "the error should name {key}: {e}"
        );
        assert_eq!(response["id"], id);
    }

    // The same holds for every method, before the method is even looked at.
    server
        .send_request(
            105,
            "tools/call",
            json!({"_meta": {PROTOCOL_VERSION: VERSION}, "name": "test_simple_text"}),
        )
        .await;
    error(&server.response(105).await, -32602);
    server.finish().await;
}

#[tokio::test]
async fn an_unsupported_version_is_refused_with_the_supported_list() {
    let mut server = Fixture::start().await;
    let meta = json!({PROTOCOL_VERSION: "v999.0.0", CLIENT_CAPABILITIES: {}});
    for method in ["server/discover", "tools/list", "tools/call"] {
        let response = server
            .call(method, json!({"_meta": meta, "name": "test_simple_text"}))
            .await;
        let e = error(&response, -32022);
        assert_eq!(
            e["data"],
            json!({"supported": [VERSION], "requested": "v999.0.0"}),
            "{method}"
        );
    }
    // An older revision is just as unsupported on a modern-only server.
    let meta = json!({PROTOCOL_VERSION: "2025-11-25", CLIENT_CAPABILITIES: {}});
    let response = server.call("tools/list", json!({"_meta": meta})).await;
    assert_eq!(error(&response, -32022)["data"]["requested"], "2025-11-25");
    server.finish().await;
}

#[tokio::test]
async fn removed_and_unknown_methods_are_not_found() {
    let mut server = Fixture::start().await;
    // spec 2026-07-28 changelog: with a valid modern _meta, the handshake-era methods are gone, and
    // the official conformance scenario `server-stateless` expects -32601 for each.
    let methods = [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "unknown/method",
        "tasks/list",
    ];
    for method in methods {
        let params = json!({
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
            "level": "debug",
            "uri": "test://static-text",
        });
        let response = server.call(method, params).await;
        let e = error(&response, -32601);
        assert!(e["message"].as_str().unwrap().contains(method), "{e}");
    }
    // tasks/get left the core protocol for the tasks extension, which this server offers: a
    // request that does not declare it is told which capability it lacks.
    let response = server.call("tasks/get", json!({"taskId": "t"})).await;
    let e = error(&response, -32021);
    assert_eq!(
        e["data"]["requiredCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        "{e}"
    );
    server.finish().await;
}

#[tokio::test]
async fn an_invalid_log_level_is_invalid_params() {
    let mut server = Fixture::start().await;
    let meta = meta_plus(json!({"io.modelcontextprotocol/logLevel": "verbose"}));
    let response = server
        .call(
            "tools/call",
            json!({"_meta": meta, "name": "test_logging_tool"}),
        )
        .await;
    error(&response, -32602);
    // A log level of the wrong type, too.
    let meta = meta_plus(json!({"io.modelcontextprotocol/logLevel": 3}));
    let response = server.call("tools/list", json!({"_meta": meta})).await;
    error(&response, -32602);
    server.finish().await;
}

#[tokio::test]
async fn malformed_client_capabilities_are_invalid_params() {
    let mut server = Fixture::start().await;
    let meta = json!({PROTOCOL_VERSION: VERSION, CLIENT_CAPABILITIES: []});
    let response = server.call("server/discover", json!({"_meta": meta})).await;
    error(&response, -32602);
    // The message names `_meta` and gives one position, not two.
    let message = response["error"]["message"].as_str().expect("a message");
    assert!(message.contains(": _meta: "), "{message}");
    assert_eq!(message.matches(" at line ").count(), 1, "{message}");
    // A null `_meta` is a missing one.
    let response = server.call("server/discover", json!({"_meta": null})).await;
    error(&response, -32602);
    let message = response["error"]["message"].as_str().expect("a message");
    assert!(message.contains("missing params._meta"), "{message}");
    let meta: Value = meta_with_caps(json!({}));
    let response = server.call("server/discover", json!({"_meta": meta})).await;
    result(&response);
    server.finish().await;
}
