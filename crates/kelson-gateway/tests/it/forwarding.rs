//! Calls through the gateway: aggregation under prefixes, both eras on both sides, progress,
//! cancellation, time limits, and what never goes upstream.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kelson_client::{Client, EraChoice};
use kelson_gateway::GatewayConfig;
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn two_upstreams_of_either_era_serve_callers_of_either_era_under_their_prefixes() {
    let a = upstream("a").await;
    let b = upstream("b").await;
    let dir = scratch("eras");
    let config = GatewayConfig::new(
        vec![
            // `a` is spoken to in the handshake era, `b` in 2026-07-28: the gateway bridges both.
            upstream_config(json!({"name": "a", "url": a.url, "era": "legacy"})),
            upstream_config(json!({"name": "b", "url": b.url, "era": "modern"})),
        ],
        dir.clone(),
    );
    let gw = gateway(config).await;
    let states = gw.gateway.upstreams();
    assert!(
        matches!(&states[0].1, kelson_gateway::State::Ready { version } if version != "2026-07-28"),
        "{states:?}"
    );
    assert!(
        matches!(&states[1].1, kelson_gateway::State::Ready { version } if version == "2026-07-28"),
        "{states:?}"
    );
    for era in [EraChoice::Modern, EraChoice::Legacy] {
        let client = client(&gw.server, era, Client::builder()).await;
        assert_eq!(
            names(&client).await,
            [
                "a_count", "a_delete", "a_echo", "a_wait", "b_count", "b_delete", "b_echo",
                "b_wait"
            ],
            "{era:?}"
        );
        let r = client
            .call_tool("a_echo", json!({"text": "hi"}))
            .await
            .unwrap();
        assert_eq!(text(&r), "a: hi");
        let r = client
            .call_tool("b_echo", json!({"text": "ho"}))
            .await
            .unwrap();
        assert_eq!(text(&r), "b: ho");
        // The gateway checks arguments against the schema it serves before anything goes
        // upstream.
        let before = a.calls.load(Ordering::SeqCst);
        let r = client
            .call_tool("a_echo", json!({"text": 5}))
            .await
            .unwrap();
        assert!(r.is_error() && text(&r).contains("not of type"), "{r:?}");
        assert_eq!(a.calls.load(Ordering::SeqCst), before);
    }
    // The audit log has a line per call, with the arguments' size and digest and no arguments.
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{audit}");
    assert_eq!(lines[0]["tool"], "a_echo");
    assert_eq!(lines[0]["upstream"], "a");
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[0]["decision"], "allowed");
    assert_eq!(lines[0]["argument_sha256"].as_str().unwrap().len(), 64);
    assert!(lines[0].get("arguments").is_none());
}

#[tokio::test]
async fn the_callers_headers_stay_at_the_gateway_and_the_configured_ones_go_upstream() {
    let a = upstream("a").await;
    let dir = scratch("headers");
    std::fs::write(dir.join("api-key"), "from-a-file\n").unwrap();
    let mut config = GatewayConfig::new(
        vec![upstream_config(json!({
            "name": "a", "url": a.url,
            "headers": {"Authorization": "Bearer upstream-credential", "X-Api-Key": {"file": "api-key"}}
        }))],
        dir.clone(),
    );
    config.base = dir;
    let gw = gateway(config).await;
    let client = client(
        &gw.server,
        EraChoice::Modern,
        Client::builder().header(
            "authorization".parse().unwrap(),
            "Bearer the-callers-token".parse().unwrap(),
        ),
    )
    .await;
    client
        .call_tool("a_echo", json!({"text": "x"}))
        .await
        .unwrap();
    let seen = a.headers.lock().unwrap().clone();
    assert!(!seen.is_empty());
    for headers in &seen {
        assert_eq!(headers["authorization"], "Bearer upstream-credential");
        assert_eq!(headers["x-api-key"], "from-a-file");
        assert!(
            !format!("{headers:?}").contains("the-callers-token"),
            "{headers:?}"
        );
    }
}

#[tokio::test]
async fn progress_and_cancellation_cross_the_gateway() {
    let a = upstream("a").await;
    let gw = gateway(GatewayConfig::new(
        vec![upstream_config(
            json!({"name": "a", "url": a.url, "era": "legacy"}),
        )],
        scratch("progress"),
    ))
    .await;
    let client = Arc::new(client(&gw.server, EraChoice::Modern, Client::builder()).await);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let r = client
        .call_tool("a_count", json!({}))
        .on_progress(move |p| sink.lock().unwrap().push(p.progress))
        .await
        .unwrap();
    assert_eq!(text(&r), "counted");
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0]);

    // A call the caller cancels is cancelled upstream too.
    let token = kelson_client::CancellationToken::new();
    let caller = client.clone();
    let cancel = token.clone();
    let waiting = tokio::spawn(async move {
        caller
            .call_tool("a_wait", json!({}))
            .cancel_token(cancel)
            .await
            .map(|_| ())
    });
    eventually("the upstream runs the call", || {
        a.calls.load(Ordering::SeqCst) >= 2
    })
    .await;
    token.cancel();
    let _ = waiting.await;
    eventually("the upstream saw the cancellation", || {
        a.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
}

#[tokio::test]
async fn a_hung_upstream_times_out_alone_while_the_other_answers() {
    let a = upstream("a").await;
    let b = upstream("b").await;
    let gw = gateway(GatewayConfig::new(
        vec![
            upstream_config(json!({"name": "a", "url": a.url, "timeout": "1s"})),
            upstream_config(json!({"name": "b", "url": b.url})),
        ],
        scratch("hung"),
    ))
    .await;
    let client = client(&gw.server, EraChoice::Modern, Client::builder()).await;
    let (hung, other) = tokio::join!(client.call_tool("a_wait", json!({})), async {
        client
            .call_tool("b_echo", json!({"text": "still here"}))
            .await
    });
    let hung = hung.unwrap();
    assert!(hung.is_error(), "{hung:?}");
    assert!(
        text(&hung).contains("did not answer within 1 s"),
        "{}",
        text(&hung)
    );
    assert_eq!(text(&other.unwrap()), "b: still here");
    // The abandoned call was cancelled upstream, not left running.
    eventually("the upstream saw the cancellation", || {
        a.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
}

#[tokio::test]
async fn an_unreachable_upstream_gives_a_clear_error_and_the_rest_serve() {
    let b = upstream("b").await;
    // Nothing listens on this port: bound, then closed.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let gw = gateway(GatewayConfig::new(
        vec![
            upstream_config(json!({"name": "gone", "url": format!("http://127.0.0.1:{port}/mcp")})),
            upstream_config(json!({"name": "b", "url": b.url})),
        ],
        scratch("unreachable"),
    ))
    .await;
    let states = gw.gateway.upstreams();
    assert!(
        matches!(states[0].1, kelson_gateway::State::Down { .. }),
        "{states:?}"
    );
    let client = client(&gw.server, EraChoice::Modern, Client::builder()).await;
    assert_eq!(
        names(&client).await,
        ["b_count", "b_delete", "b_echo", "b_wait"]
    );
    let r = client
        .call_tool("b_echo", json!({"text": "ok"}))
        .await
        .unwrap();
    assert_eq!(text(&r), "b: ok");
    tokio::time::sleep(Duration::from_millis(10)).await;
}
