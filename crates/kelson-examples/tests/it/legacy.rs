//! The handshake era over stdio, through the real `conformance-server --stdio`: a host that
//! probes with `server/discover` and then sends `initialize` on the same process, negotiation, a
//! session's requests, and an elicitation the server asks for with a request of its own.

use serde_json::{Value, json};

use crate::client::{Fixture, SERVER_NAME, VERSION, meta_with_caps};

fn initialize(version: &str, capabilities: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": {"name": "legacy-host", "version": "1.0.0"}
        }
    })
}

#[tokio::test]
async fn a_discover_probe_then_initialize_is_served_as_legacy_from_then_on() {
    let mut server = Fixture::start().await;
    // A request without the modern envelope before initialize: an error, and the server reads on.
    server
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
        .await;
    assert_eq!(server.response(1).await["error"]["code"], -32602);
    // The probe of a dual-era host: a modern answer.
    server
        .send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover",
                       "params": {"_meta": meta_with_caps(json!({}))}}),
        )
        .await;
    let discover = server.response(2).await;
    assert_eq!(discover["result"]["supportedVersions"], json!([VERSION]));

    // Then initialize, offering the modern revision: the handshake era at its newest revision.
    server.speak_legacy();
    server.send(&initialize(VERSION, json!({}))).await;
    let init = server.response("init").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], SERVER_NAME);
    assert!(init["result"].get("resultType").is_none());
    server
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    server
        .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"name": "test_simple_text", "arguments": {}}}))
        .await;
    let call = server.response(3).await;
    assert!(call["result"].get("resultType").is_none(), "{call}");
    assert!(call["result"]["content"][0]["text"].is_string(), "{call}");
    server
        .send(&json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}))
        .await;
    assert_eq!(server.response(4).await["result"], json!({}));
    let finished = server.close().await;
    assert!(finished.status.success());
}

#[tokio::test]
async fn an_elicitation_is_a_request_of_the_server_answered_by_the_client() {
    let mut server = Fixture::start().await;
    server.speak_legacy();
    server
        .send(&initialize("2025-06-18", json!({"elicitation": {}})))
        .await;
    assert_eq!(
        server.response("init").await["result"]["protocolVersion"],
        "2025-06-18"
    );
    server
        .send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                       "params": {"name": "test_elicitation", "arguments": {"message": "Who?"}}}))
        .await;
    let asked = server
        .wait_until("the server's elicitation request", |log| {
            log.iter()
                .find(|m| m["method"] == "elicitation/create")
                .cloned()
        })
        .await;
    assert_eq!(asked["params"]["message"], "Who?");
    assert_eq!(
        asked["params"]["requestedSchema"]["required"],
        json!(["username", "email"])
    );
    server
        .send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
            "action": "accept", "content": {"username": "ada", "email": "ada@example.com"}
        }}))
        .await;
    let done = server.response(5).await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("User response: action=accept"), "{text}");
    assert!(text.contains("ada@example.com"), "{text}");
    server.close().await;
}
