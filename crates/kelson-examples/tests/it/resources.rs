//! `resources/list`, `resources/templates/list` and `resources/read`.

use serde_json::{Value, json};

use crate::client::{Fixture, error, result};

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[track_caller]
fn assert_cache_hints(r: &Value) {
    assert!(r["ttlMs"].as_u64().is_some(), "ttlMs: {r}");
    assert!(
        matches!(r["cacheScope"].as_str(), Some("public" | "private")),
        "cacheScope: {r}"
    );
}

#[tokio::test]
async fn resources_are_listed_in_uri_order_with_names_and_cache_hints() {
    let mut server = Fixture::start().await;
    let response = server.call("resources/list", json!({})).await;
    let r = result(&response);
    assert_cache_hints(r);
    assert_eq!(
        r["resources"],
        json!([
            {"uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource",
             "description": "A static binary resource (image) for testing", "mimeType": "image/png"},
            {"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource",
             "description": "A static text resource for testing", "mimeType": "text/plain"},
            {"uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource",
             "description": "A resource listeners may subscribe to", "mimeType": "text/plain"}
        ])
    );
    assert!(r.get("nextCursor").is_none());
    error(
        &server
            .call("resources/list", json!({"cursor": "junk"}))
            .await,
        -32602,
    );
    server.finish().await;
}

#[tokio::test]
async fn the_template_is_listed() {
    let mut server = Fixture::start().await;
    let response = server.call("resources/templates/list", json!({})).await;
    let r = result(&response);
    assert_cache_hints(r);
    assert_eq!(
        r["resourceTemplates"],
        json!([{"uriTemplate": "test://template/{id}/data", "name": "template",
            "title": "Resource Template", "description": "A resource template with parameter substitution",
            "mimeType": "application/json"}])
    );
    let empty = server
        .call("resources/templates/list", json!({"cursor": ""}))
        .await;
    assert_eq!(result(&empty)["resourceTemplates"], r["resourceTemplates"]);
    error(
        &server
            .call("resources/templates/list", json!({"cursor": "junk"}))
            .await,
        -32602,
    );
    server.finish().await;
}

#[tokio::test]
async fn every_resource_reads_with_cache_hints() {
    let mut server = Fixture::start().await;
    let cases = [
        (
            "test://static-text",
            json!([{"uri": "test://static-text", "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}]),
        ),
        (
            "test://static-binary",
            json!([{"uri": "test://static-binary", "mimeType": "image/png", "blob": PNG}]),
        ),
        (
            "test://watched-resource",
            json!([{"uri": "test://watched-resource", "mimeType": "text/plain",
                "text": "Watched resource content"}]),
        ),
    ];
    for (uri, contents) in cases {
        let response = server.call("resources/read", json!({"uri": uri})).await;
        let r = result(&response);
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["contents"], contents, "{uri}");
        assert_cache_hints(r);
    }
    server.finish().await;
}

#[tokio::test]
async fn the_template_matches_and_substitutes() {
    let mut server = Fixture::start().await;
    for id in ["123", "abc-9"] {
        let uri = format!("test://template/{id}/data");
        let response = server.call("resources/read", json!({"uri": uri})).await;
        let r = result(&response);
        assert_cache_hints(r);
        let contents = r["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 1);
        assert_eq!(contents[0]["uri"], uri);
        assert_eq!(contents[0]["mimeType"], "application/json");
        let body: Value = serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
        );
    }
    server.finish().await;
}

#[tokio::test]
async fn a_missing_resource_is_invalid_params_with_its_uri() {
    let mut server = Fixture::start().await;
    // SEP-2164: never an empty contents, never -32002.
    for uri in [
        "test://nonexistent-resource-for-conformance-testing",
        "test://template/123/other",
        "test://template//data/extra",
    ] {
        let response = server.call("resources/read", json!({"uri": uri})).await;
        let e = error(&response, -32602);
        assert_eq!(e["message"], "Resource not found");
        assert_eq!(e["data"], json!({"uri": uri}));
    }
    // No uri at all is a broken request, not a missing resource.
    error(&server.call("resources/read", json!({})).await, -32602);
    server.finish().await;
}
