//! Forcing an era with `ClientBuilder::era`, against our dual-era server (over loopback HTTP and
//! the stdio framing), a modern-only one, and scripted legacy and silent stdio servers: legacy
//! sends `initialize` at once and gets a legacy session; modern never sends `initialize`, and a
//! server that answers the probe as a handshake-era one fails the connection clearly.

use std::sync::Arc;
use std::time::Duration;

use kelson_client::{Client, EraChoice, Error, ErrorKind};
use kelson_server::Eras;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, duplex};

use crate::both;
use crate::fixture::{self, Probes};
use crate::harness::{self, Kind, text, within};

fn methods(wire: &harness::Wire) -> Vec<String> {
    wire.received()
        .iter()
        .filter_map(|r| r.body["method"].as_str().map(str::to_owned))
        .collect()
}

async fn forced_legacy(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let builder = Client::builder().era(EraChoice::Legacy);
    let served = harness::connect(kind, fixture::server(probes), builder).await;
    let client = &served.client;
    assert_eq!(client.era().version(), "2025-11-25");
    assert!(client.era().is_legacy());
    // No probe: the handshake is the first thing on the wire (the notification that ends it may
    // still be on its way through the stdio tap).
    served
        .wire
        .wait_for(|r| r.body["method"] == "notifications/initialized")
        .await;
    let sent = methods(&served.wire);
    assert_eq!(
        sent[..2],
        ["initialize", "notifications/initialized"],
        "{sent:?}"
    );
    assert!(!sent.iter().any(|m| m == "server/discover"), "{sent:?}");
    assert_eq!(client.session_id().is_some(), kind == Kind::Http);
    // Discover is built from the initialize result; calls are served on the session.
    let discover = within(client.discover()).await.unwrap();
    assert_eq!(discover.supported_versions, ["2025-11-25"]);
    let result = within(client.call_tool("echo", json!({"text": "old"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "old");
    let call = served.wire.requests("tools/call").remove(0);
    assert!(
        call.body["params"].get("_meta").is_none(),
        "{:?}",
        call.body
    );
    if let Some(headers) = &call.headers {
        assert_eq!(headers["mcp-protocol-version"], "2025-11-25");
        assert!(headers.contains_key("mcp-session-id"));
    }
    within(client.close()).await.unwrap();
}

both!(legacy_is_forced_on_a_dual_era_server, forced_legacy);

async fn forced_modern(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let builder = Client::builder().era(EraChoice::Modern);
    let served = harness::connect(kind, fixture::server(probes), builder).await;
    assert_eq!(served.client.era().version(), "2026-07-28");
    assert!(!served.client.era().is_legacy());
    let result = within(served.client.call_tool("echo", json!({"text": "new"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "new");
    assert_eq!(served.wire.count("initialize"), 0);
    assert_eq!(served.wire.count("server/discover"), 1);
}

both!(modern_is_forced_on_a_dual_era_server, forced_modern);

#[tokio::test]
async fn forcing_legacy_on_a_modern_only_server_is_its_refusal() {
    let config = {
        let mut edited = fixture::config();
        edited.eras = Eras::ModernOnly;
        edited
    };
    for kind in [Kind::Http, Kind::Stdio] {
        let server = fixture::builder(Arc::default(), config.clone())
            .build()
            .unwrap();
        let builder = Client::builder().era(EraChoice::Legacy);
        let connecting = async {
            match kind {
                Kind::Http => {
                    let (url, _stop) =
                        harness::serve_plain(server, kelson_http::server::HttpConfig::default())
                            .await;
                    builder.connect_http(&url).await
                }
                Kind::Stdio => {
                    let (client_end, server_end) = duplex(1 << 16);
                    let (server_r, server_w) = tokio::io::split(server_end);
                    tokio::spawn(kelson_server::stdio::serve_stream(
                        server,
                        server_r,
                        server_w,
                        Default::default(),
                    ));
                    let (r, w) = tokio::io::split(client_end);
                    builder.connect_stream(r, w).await
                }
            }
        };
        let e = within(connecting).await.unwrap_err();
        assert_eq!(e.code(), Some(-32022), "{kind:?}: {e}");
        assert!(e.to_string().starts_with("initialize:"), "{e}");
    }
}

/// A handshake-era stdio server on an in-memory pipe: `server/discover` is an unknown method to
/// it, `initialize` works. It records the methods it receives.
fn legacy_stdio() -> (
    tokio::io::ReadHalf<tokio::io::DuplexStream>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let (client_end, server_end) = duplex(1 << 16);
    let (seen_tx, seen) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let (read, mut write) = tokio::io::split(server_end);
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let message: Value = serde_json::from_str(&line).unwrap();
            let method = message["method"].as_str().unwrap_or_default().to_owned();
            let _ = seen_tx.send(method.clone());
            let Some(id) = message.get("id") else {
                continue;
            };
            let answer = match method.as_str() {
                "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "serverInfo": {"name": "old", "version": "1"}}}),
                _ => json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32601, "message": "Method not found"}}),
            };
            let mut text = answer.to_string();
            text.push('\n');
            if write.write_all(text.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let (r, w) = tokio::io::split(client_end);
    (r, w, seen)
}

#[tokio::test]
async fn forcing_modern_on_a_legacy_server_fails_without_initialize() {
    let (r, w, mut seen) = legacy_stdio();
    let e = within(
        Client::builder()
            .era(EraChoice::Modern)
            .connect_stream(r, w),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, Error::NotModern { .. }), "{e:?}");
    assert_eq!(e.kind(), ErrorKind::Protocol);
    assert_eq!(
        e.to_string(),
        "the server does not speak the modern protocol (2026-07-28): it answered \
         server/discover with JSON-RPC error -32601 (Method not found)"
    );
    seen.close();
    let mut methods = Vec::new();
    while let Some(m) = seen.recv().await {
        methods.push(m);
    }
    assert_eq!(methods, ["server/discover"]);

    // The same server, detected: the handshake, after the probe.
    let (r, w, _seen) = legacy_stdio();
    let client = within(Client::builder().connect_stream(r, w))
        .await
        .unwrap();
    assert_eq!(client.era().version(), "2025-06-18");
    // And forced to legacy: no probe at all.
    let (r, w, mut seen) = legacy_stdio();
    let client = within(
        Client::builder()
            .era(EraChoice::Legacy)
            .connect_stream(r, w),
    )
    .await
    .unwrap();
    assert_eq!(client.era().version(), "2025-06-18");
    assert_eq!(
        within(seen.recv()).await.as_deref(),
        Some("initialize"),
        "the first message"
    );
}

#[tokio::test]
async fn a_silent_server_forced_to_modern_is_not_taken_for_a_legacy_one() {
    let (client_end, _server_end) = duplex(1 << 16);
    let (r, w) = tokio::io::split(client_end);
    let e = within(
        Client::builder()
            .era(EraChoice::Modern)
            .probe_timeout(Duration::from_millis(200))
            .connect_stream(r, w),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&e, Error::NotModern { answer } if answer.contains("did not answer server/discover")),
        "{e:?}"
    );
}

#[test]
fn era_choices_parse() {
    for choice in [EraChoice::Auto, EraChoice::Modern, EraChoice::Legacy] {
        assert_eq!(choice.as_str().parse::<EraChoice>(), Ok(choice));
    }
    assert_eq!(EraChoice::default(), EraChoice::Auto);
    assert!("2025".parse::<EraChoice>().is_err());
}
