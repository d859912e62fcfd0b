//! `McpService` is a `tower::Service` that axum mounts like any other.

use std::sync::Arc;

use axum::routing::get;
use http::{Method, StatusCode};
use kelson_http::server::McpService;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::fixture::{Probes, full_server};
use super::harness::{Client, Post, SseStream, test_config, tool_text, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_mounts_in_axum() {
    let service = McpService::new(full_server(Arc::new(Probes::default())), test_config());
    let app = axum::Router::new()
        .route_service("/mcp", service)
        .route("/health", get(|| async { "ok" }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });

    let mut client = Client::h1(addr).await;
    let discover = client
        .send(&Post::call(1, "server/discover", json!({})))
        .await
        .result(json!(1));
    assert_eq!(discover["supportedVersions"], json!(["2026-07-28"]));
    assert!(discover["capabilities"]["tools"].is_object(), "{discover}");

    // Streams pass through axum unbuffered, one event at a time.
    let post = Post::tool_with_meta(
        2,
        "slow",
        json!({"tag": "axum", "steps": 2, "stepMs": 1}),
        json!({"progressToken": "axum"}),
    );
    let mut stream = SseStream::new(client.open(&post).await);
    assert_eq!(
        stream.next().await.unwrap()["method"],
        "notifications/progress"
    );
    assert_eq!(
        stream.next().await.unwrap()["method"],
        "notifications/progress"
    );
    let last = stream.next().await.unwrap();
    assert_eq!(tool_text(&last["result"]), "slow axum done");
    stream.expect_end().await;

    // The service's own rules still apply, and the rest of the router still works.
    let reply = client
        .send(
            &Post::bare("")
                .method(Method::GET)
                .header("MCP-Protocol-Version", "2026-07-28"),
        )
        .await;
    reply.refused(StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(reply.headers["allow"], "POST");
    let reply = client
        .send(&Post::bare("").method(Method::GET).path("/health"))
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body, "ok");

    let _ = stop.send(());
    within("axum shutting down", task)
        .await
        .unwrap()
        .expect("axum serves cleanly");
}
