//! Progress and log callbacks, listen streams, cancellation by drop, and timeouts.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use kelson_client::{Client, Error, ErrorKind, ListenEvent};
use kelson_server::RequestContext;
use kelson_types::{CallToolResult, JsonObject, LoggingLevel, SubscriptionFilter, Tool};
use serde_json::json;

use crate::both;
use crate::fixture::{Probes, server};
use crate::harness::{Kind, connect, text, within};

async fn progress_reaches_the_callback(kind: Kind) {
    let served = connect(kind, server(Arc::new(Probes::default())), Client::builder()).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let result = within(
        served
            .client
            .call_tool("progress", json!({"steps": 3}))
            .on_progress(move |p| {
                sink.lock()
                    .unwrap()
                    .push((p.progress, p.total, p.message.clone()));
            }),
    )
    .await
    .unwrap();
    assert_eq!(text(&result), "done");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (1.0, Some(3.0), Some("step 1".to_owned())),
            (2.0, Some(3.0), Some("step 2".to_owned())),
            (3.0, Some(3.0), Some("step 3".to_owned())),
        ]
    );
    let call = &served.wire.requests("tools/call")[0].body;
    assert_eq!(call["params"]["_meta"]["progressToken"], call["id"]);
}
both!(progress, progress_reaches_the_callback);

async fn logs_reach_the_callback(kind: Kind) {
    let served = connect(kind, server(Arc::new(Probes::default())), Client::builder()).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    within(
        served
            .client
            .call_tool("log", json!({}))
            .on_log(LoggingLevel::Warning, move |m| {
                sink.lock().unwrap().push((m.level, m.data.clone()));
            }),
    )
    .await
    .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [(LoggingLevel::Warning, json!("warning line"))]
    );
    // Without a callback no level is asked for, and nothing is delivered.
    within(served.client.call_tool("log", json!({})))
        .await
        .unwrap();
    let plain = served.wire.requests("tools/call").pop().unwrap().body;
    assert!(
        plain["params"]["_meta"]
            .get("io.modelcontextprotocol/logLevel")
            .is_none()
    );
}
both!(log, logs_reach_the_callback);

async fn listen_receives_changes_and_drop_unsubscribes(kind: Kind) {
    let server = server(Arc::new(Probes::default()));
    let served = connect(kind, server.clone(), Client::builder()).await;
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        resource_subscriptions: Some(vec!["mem://a".into()]),
        ..SubscriptionFilter::default()
    };
    let mut sub = within(served.client.listen(filter.clone())).await.unwrap();
    assert_eq!(sub.acknowledged(), &filter);
    let listen_id = sub.id().cloned().unwrap();

    server
        .add_tool_handler(
            Tool::without_arguments("late"),
            |_ctx: RequestContext, _args: JsonObject| async { Ok(CallToolResult::text("late")) },
        )
        .unwrap();
    assert_eq!(
        within(sub.next()).await.unwrap().unwrap(),
        ListenEvent::ToolsListChanged
    );
    server.notify_resource_updated("mem://a");
    assert_eq!(
        within(sub.next()).await.unwrap().unwrap(),
        ListenEvent::ResourceUpdated {
            uri: "mem://a".into()
        }
    );
    // Other calls go on while the stream is open.
    within(served.client.call_tool("echo", json!({"text": "x"})))
        .await
        .unwrap();

    match kind {
        Kind::Http => {
            // Every response body but the listen stream's is closed; dropping the subscription
            // closes that one too.
            let all = served.wire.received().len();
            served.wire.wait_closed_bodies(all - 1).await;
            assert_eq!(served.wire.closed_bodies(), all - 1);
            drop(sub);
            served.wire.wait_closed_bodies(all).await;
        }
        Kind::Stdio => {
            drop(sub);
            let cancel = served
                .wire
                .wait_for(|r| r.body["method"] == "notifications/cancelled")
                .await;
            assert_eq!(cancel.body["params"]["requestId"], listen_id.to_value());
        }
    }
}
both!(listen, listen_receives_changes_and_drop_unsubscribes);

async fn dropping_a_call_cancels_it(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let served = connect(kind, server(probes.clone()), Client::builder()).await;
    let client = served.client.clone();
    let call = tokio::spawn(async move { client.call_tool("wait", json!({"tag": "drop"})).await });
    probes.wait_for("started:drop").await;
    call.abort();
    probes.wait_for("cancelled:drop").await;
    if kind == Kind::Stdio {
        let id = served.wire.requests("tools/call")[0].body["id"].clone();
        let cancel = served
            .wire
            .wait_for(|r| r.body["method"] == "notifications/cancelled")
            .await;
        assert_eq!(cancel.body["params"]["requestId"], id);
    }
    // The connection is still good.
    let result = within(served.client.call_tool("echo", json!({"text": "after"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "after");
}
both!(cancel_by_drop, dropping_a_call_cancels_it);

async fn a_timeout_is_local_and_cancels(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let served = connect(kind, server(probes.clone()), Client::builder()).await;
    let err = within(
        served
            .client
            .call_tool("wait", json!({"tag": "timeout"}))
            .timeout(Duration::from_millis(300)),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::Timeout { hard: false, .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(err.code(), None, "nothing is attributed to the server");
    probes.wait_for("cancelled:timeout").await;
}
both!(timeout, a_timeout_is_local_and_cancels);

async fn progress_resets_the_timeout_under_a_hard_maximum(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let served = connect(kind, server(probes.clone()), Client::builder()).await;
    // Eight steps of 150 ms take 1.2 s, longer than the 600 ms idle timeout: progress keeps it alive.
    let result = within(
        served
            .client
            .call_tool("progress", json!({"steps": 8, "stepMs": 150}))
            .on_progress(|_| {})
            .timeout(Duration::from_millis(600)),
    )
    .await
    .unwrap();
    assert_eq!(text(&result), "done");
    // The hard maximum fires whatever progress says.
    let err = within(
        served
            .client
            .call_tool("progress", json!({"steps": 40, "stepMs": 150}))
            .on_progress(|_| {})
            .timeout(Duration::from_secs(10))
            .max_time(Duration::from_millis(500)),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::Timeout { hard: true, .. }), "{err:?}");
}
both!(
    progress_timeout,
    progress_resets_the_timeout_under_a_hard_maximum
);
