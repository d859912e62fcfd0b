//! The handshake era over a stdio pipe: negotiation, the era's own methods, results without
//! `resultType`, notifications, input requests bridged to server-to-client requests, and modern
//! requests served beside a session.

use std::time::Duration;

use kelson_types::{
    CallToolResult, ElicitAction, ElicitRequestFormParams, JsonObject, RequestedSchema, Resource,
    ResourceContents, StringSchema, TextResourceContents, Tool,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};

use super::*;
use crate::stdio::{StdioConfig, serve_stream};
use crate::{HandlerError, RequestContext};

fn server(eras: Eras) -> Server {
    Server::builder("dual", "1.0.0")
        .config(crate::ServerConfig {
            eras,
            ..Default::default()
        })
        .instructions("be kind")
        .tool_handler(
            Tool::new(
                "echo",
                json!({"type": "object"}).as_object().unwrap().clone(),
            ),
            |ctx: RequestContext, args: JsonObject| async move {
                ctx.progress(0.5, Some(1.0), Some("half"));
                ctx.log(kelson_types::LoggingLevel::Info, None, "echoing");
                Ok(CallToolResult::text(
                    args.get("text").and_then(Value::as_str).unwrap_or_default(),
                ))
            },
        )
        .tool_handler(
            Tool::without_arguments("version"),
            |ctx: RequestContext, _args: JsonObject| async move {
                Ok(CallToolResult::text(ctx.protocol_version()))
            },
        )
        .tool(
            Tool::without_arguments("ask"),
            |mut ctx: RequestContext, _args: JsonObject| async move {
                let schema = RequestedSchema::new().required_property("name", StringSchema::new());
                let answer =
                    ctx.elicit("who", ElicitRequestFormParams::new("Who are you?", schema))?;
                // A second round, to show the answers of the first are kept.
                let again = ctx.elicit(
                    "sure",
                    ElicitRequestFormParams::new(
                        "Sure?",
                        RequestedSchema::new().property("ok", kelson_types::BooleanSchema::new()),
                    ),
                )?;
                Ok::<_, HandlerError>(CallToolResult::text(match (answer.action, again.action) {
                    (ElicitAction::Accept, ElicitAction::Accept) => format!(
                        "hello {}",
                        serde_json::to_string(&answer.content.and_then(|c| c.get("name").cloned()))
                            .unwrap_or_default()
                    ),
                    _ => "no answer".to_owned(),
                }))
            },
        )
        .tool_handler(
            Tool::without_arguments("wait"),
            |ctx: RequestContext, _args: JsonObject| async move {
                ctx.cancelled().await;
                Ok(CallToolResult::text("cancelled"))
            },
        )
        .resource_handler(
            Resource::new("test://a", "a"),
            |_ctx: RequestContext, uri: String, _vars| async move {
                Ok::<_, HandlerError>(vec![ResourceContents::from(TextResourceContents::new(
                    uri, "A",
                ))])
            },
        )
        .build()
        .expect("the server builds")
}

/// A client on the other end of a stdio pipe.
struct Pipe {
    write: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
}

impl Pipe {
    fn start(server: Server) -> Pipe {
        let (client, server_side) = tokio::io::duplex(256 * 1024);
        let (read, write) = tokio::io::split(server_side);
        tokio::spawn(serve_stream(server, read, write, StdioConfig::default()));
        let (read, write) = tokio::io::split(client);
        Pipe {
            write,
            lines: BufReader::new(read).lines(),
        }
    }

    async fn send(&mut self, message: Value) {
        self.write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a message in time")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request and returns its response, skipping notifications.
    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.next().await;
            if message["id"] == id {
                return message;
            }
        }
    }

    async fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        let reply = self
            .call(
                0,
                "initialize",
                json!({
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "old-host", "version": "1"}
                }),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        reply
    }
}

fn modern(params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    params
}

#[tokio::test]
async fn initialize_negotiates_down_to_a_legacy_version() {
    for (asked, settled) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        // Offering the modern revision inside `initialize` still starts the handshake era.
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let mut pipe = Pipe::start(server(Eras::Both));
        let reply = pipe.initialize(asked, json!({})).await;
        let result = &reply["result"];
        assert_eq!(result["protocolVersion"], settled, "{reply}");
        assert_eq!(result["serverInfo"]["name"], "dual");
        assert_eq!(result["instructions"], "be kind");
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
        assert!(result.get("resultType").is_none(), "{reply}");
        // Handlers see the negotiated version.
        let version = pipe.call(1, "tools/call", json!({"name": "version"})).await;
        assert_eq!(version["result"]["content"][0]["text"], settled);
    }
}

#[tokio::test]
async fn a_session_serves_the_registry_without_result_types() {
    let mut pipe = Pipe::start(server(Eras::Both));
    pipe.initialize("2025-11-25", json!({})).await;
    let list = pipe.call(1, "tools/list", json!({})).await;
    assert!(
        list["result"]["tools"].as_array().unwrap().len() >= 3,
        "{list}"
    );
    let echo = pipe
        .call(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .await;
    assert_eq!(echo["result"]["content"][0]["text"], "hi");
    let read = pipe
        .call(3, "resources/read", json!({"uri": "test://a"}))
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], "A");
    for reply in [&list, &echo, &read] {
        assert!(reply["result"].get("resultType").is_none(), "{reply}");
        assert!(!reply.to_string().contains("resultType"), "{reply}");
    }
    assert_eq!(pipe.call(4, "ping", json!({})).await["result"], json!({}));
    // Methods the era does not have.
    for (id, method) in [(5, "server/discover"), (6, "subscriptions/listen")] {
        let reply = pipe.call(id, method, json!({})).await;
        assert_eq!(reply["error"]["code"], -32601, "{reply}");
    }
    // A second initialize on a live session is refused... on HTTP; on stdio it starts a new one.
    let again = pipe.initialize("2025-06-18", json!({})).await;
    assert_eq!(again["result"]["protocolVersion"], "2025-06-18");
}

#[tokio::test]
async fn progress_and_logs_follow_the_session_settings() {
    let mut pipe = Pipe::start(server(Eras::Both));
    pipe.initialize("2025-11-25", json!({})).await;
    // No log level set, no progress token: only the response.
    pipe.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "a"}}}))
        .await;
    let first = pipe.next().await;
    assert_eq!(first["id"], 1, "{first}");

    let set = pipe
        .call(2, "logging/setLevel", json!({"level": "info"}))
        .await;
    assert_eq!(set["result"], json!({}));
    let bad = pipe
        .call(3, "logging/setLevel", json!({"level": "loud"}))
        .await;
    assert_eq!(bad["error"]["code"], -32602);
    pipe.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "b"}, "_meta": {"progressToken": "p1"}}}))
        .await;
    let mut seen = Vec::new();
    loop {
        let message = pipe.next().await;
        if message["id"] == 4 {
            break;
        }
        seen.push(message);
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0]["method"], "notifications/progress");
    assert_eq!(seen[0]["params"]["progressToken"], "p1");
    assert_eq!(seen[1]["method"], "notifications/message");
    assert_eq!(seen[1]["params"]["level"], "info");
}

#[tokio::test]
async fn subscriptions_and_list_changes_arrive_on_the_session() {
    let server = server(Eras::Both);
    let mut pipe = Pipe::start(server.clone());
    pipe.initialize("2025-11-25", json!({})).await;
    let sub = pipe
        .call(1, "resources/subscribe", json!({"uri": "test://a"}))
        .await;
    assert_eq!(sub["result"], json!({}));
    server.notify_resource_updated("test://other");
    server.notify_resource_updated("test://a");
    let update = pipe.next().await;
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    assert_eq!(update["params"]["uri"], "test://a");
    assert!(
        update["params"].get("_meta").is_none(),
        "no subscriptionId: {update}"
    );

    server.remove_tool("echo");
    let changed = pipe.next().await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");

    let unsub = pipe
        .call(2, "resources/unsubscribe", json!({"uri": "test://a"}))
        .await;
    assert_eq!(unsub["result"], json!({}));
    server.notify_resource_updated("test://a");
    let ping = pipe.call(3, "ping", json!({})).await;
    assert_eq!(ping["id"], 3, "no update after unsubscribing: {ping}");
}

#[tokio::test]
async fn input_requests_become_server_requests_and_the_answers_resume_the_handler() {
    let server = server(Eras::Both);
    let mut pipe = Pipe::start(server.clone());
    pipe.initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "ask"}}),
    )
    .await;
    // Two rounds: each a real elicitation/create request, answered by the client.
    for answer in [
        json!({"action": "accept", "content": {"name": "Ada"}}),
        json!({"action": "accept", "content": {"ok": true}}),
    ] {
        let asked = pipe.next().await;
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        let id = asked["id"].clone();
        assert!(id.is_string(), "{asked}");
        pipe.send(json!({"jsonrpc": "2.0", "id": id, "result": answer}))
            .await;
    }
    let done = pipe.next().await;
    assert_eq!(done["id"], 7, "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "hello \"Ada\"",
        "{done}"
    );
    assert!(done["result"].get("resultType").is_none());
    assert_eq!(server.outbound_waiting(), 0);
}

#[tokio::test]
async fn input_the_client_cannot_give_is_the_modern_error() {
    let mut pipe = Pipe::start(server(Eras::Both));
    // No elicitation capability declared at initialize.
    pipe.initialize("2025-11-25", json!({})).await;
    let reply = pipe.call(1, "tools/call", json!({"name": "ask"})).await;
    assert_eq!(reply["error"]["code"], -32021, "{reply}");
}

#[tokio::test]
async fn a_client_error_or_a_cancel_ends_the_bridged_request() {
    let server = server(Eras::Both);
    let mut pipe = Pipe::start(server.clone());
    pipe.initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}}),
    )
    .await;
    let asked = pipe.next().await;
    pipe.send(json!({"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -32601, "message": "no forms here"}}))
        .await;
    let failed = pipe.next().await;
    assert_eq!(failed["id"], 1);
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no forms here"),
        "{failed}"
    );

    // Cancelled while the server waits for the answer: the server cancels its own request.
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask"}}),
    )
    .await;
    let asked = pipe.next().await;
    assert_eq!(asked["method"], "elicitation/create");
    pipe.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}),
    )
    .await;
    let cancelled = pipe.next().await;
    assert_eq!(
        cancelled["method"], "notifications/cancelled",
        "{cancelled}"
    );
    assert_eq!(cancelled["params"]["requestId"], asked["id"]);
    let ping = pipe.call(3, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "request 2 got no answer: {ping}");
    // An answer that comes after all is dropped.
    pipe.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}))
        .await;
    assert_eq!(server.outbound_waiting(), 0);
}

#[tokio::test]
async fn discover_then_initialize_on_one_process() {
    let mut pipe = Pipe::start(server(Eras::Both));
    // A legacy-looking request before initialize is an error, and the server keeps reading.
    let early = pipe.call(1, "tools/list", json!({})).await;
    assert_eq!(early["error"]["code"], -32602, "{early}");
    let ping = pipe.call(2, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}));
    let discover = pipe.call(3, "server/discover", modern(json!({}))).await;
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    let init = pipe.initialize("2025-11-25", json!({})).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let list = pipe.call(4, "tools/list", json!({})).await;
    assert!(list["result"].get("resultType").is_none(), "{list}");
    // Modern requests beside the session are still served statelessly, with resultType.
    let modern_list = pipe.call(5, "tools/list", modern(json!({}))).await;
    assert_eq!(modern_list["result"]["resultType"], "complete");
}

#[tokio::test]
async fn a_modern_only_server_refuses_initialize_with_its_versions() {
    let mut pipe = Pipe::start(server(Eras::ModernOnly));
    let reply = pipe
        .call(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32022, "{reply}");
    assert_eq!(reply["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(reply["error"]["data"]["requested"], "2025-11-25");
}

#[test]
fn result_types_are_cut_out_in_place_or_by_decoding() {
    let fast =
        br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[]}}"#.to_vec();
    assert_eq!(
        without_result_type(fast),
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#
    );
    let alone = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#.to_vec();
    assert_eq!(
        without_result_type(alone),
        br#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    let late = br#"{"jsonrpc":"2.0","id":1,"result":{"a":"\"result\":{\"resultType\":\"complete\"","resultType":"complete"}}"#.to_vec();
    let out: Value = serde_json::from_slice(&without_result_type(late)).unwrap();
    assert_eq!(
        out["result"],
        json!({"a": "\"result\":{\"resultType\":\"complete\""})
    );
    let none = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec();
    assert_eq!(without_result_type(none.clone()), none);
}

/// A server whose sessions keep little: two subscriptions of at most 64 bytes of URIs, URIs of
/// at most 40 bytes, 300 bytes of declarations, and `budget` bytes across sessions.
fn small_server(budget: usize) -> Server {
    let sessions = SessionLimits {
        capabilities: 200,
        client_info: 100,
        subscriptions: 2,
        uri: 40,
        subscription_bytes: 64,
        memory: budget,
    };
    Server::builder("small", "1.0.0")
        .config(crate::ServerConfig {
            sessions,
            ..Default::default()
        })
        .template_handler(
            kelson_types::ResourceTemplate::new("test://t/{x}", "t"),
            |_ctx: RequestContext, uri: String, _vars| async move {
                Ok::<_, HandlerError>(vec![ResourceContents::from(TextResourceContents::new(
                    uri, "T",
                ))])
            },
        )
        .build()
        .expect("the server builds")
}

#[tokio::test]
async fn initialize_refuses_declarations_beyond_the_session_limits() {
    let server = small_server(1 << 20);
    let mut pipe = Pipe::start(server.clone());
    let big = json!({"experimental": {"x": "y".repeat(300)}});
    let reply = pipe
        .call(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": big,
                   "clientInfo": {"name": "h", "version": "1"}}),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("params.capabilities") && message.contains("at most 200"),
        "{message}"
    );
    let reply = pipe
        .call(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "h".repeat(200), "version": "1"}}),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("without its icons"),
        "{reply}"
    );
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("params.clientInfo"),
        "{reply}"
    );
    // A malformed declaration is still named by its path.
    let reply = pipe
        .call(
            2,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": 5}}),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("params.capabilities"),
        "{reply}"
    );
    // Nothing refused was kept; a session within the limits is.
    assert_eq!(server.inner.kept.get(), 0);
    let ok = pipe.initialize("2025-11-25", json!({"roots": {}})).await;
    assert_eq!(ok["result"]["protocolVersion"], "2025-11-25", "{ok}");
    assert!(server.inner.kept.get() > 0);
}

#[tokio::test]
async fn a_large_client_identity_is_kept_without_its_icons() {
    let server = small_server(1 << 20);
    let mut pipe = Pipe::start(server.clone());
    let icon = format!("data:image/png;base64,{}", "A".repeat(400));
    let reply = pipe
        .call(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "host", "version": "2", "icons": [{"src": icon}]}}),
        )
        .await;
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25", "{reply}");
    // Kept: the identity without the icon.
    assert_eq!(
        server.inner.kept.get(),
        limits::declaration_charge(r#"{}"#.len() + r#"{"name":"host","version":"2"}"#.len())
    );
}

#[tokio::test]
async fn subscriptions_are_bounded_and_must_name_a_resource() {
    let server = small_server(1 << 20);
    let mut pipe = Pipe::start(server.clone());
    pipe.initialize("2025-11-25", json!({})).await;
    let declared = server.inner.kept.get();
    let subscribe = |uri: String| json!({"uri": uri});

    let unknown = pipe
        .call(1, "resources/subscribe", subscribe("other://x".into()))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(unknown["error"]["data"]["uri"], "other://x", "{unknown}");

    // A collection above what is served may be subscribed to: its members' updates are heard.
    let collection = pipe
        .call(11, "resources/subscribe", subscribe("test://t".into()))
        .await;
    assert_eq!(collection["result"], json!({}), "{collection}");
    pipe.call(12, "resources/unsubscribe", subscribe("test://t".into()))
        .await;

    let long = pipe
        .call(
            2,
            "resources/subscribe",
            subscribe(format!("test://t/{}", "a".repeat(40))),
        )
        .await;
    assert_eq!(long["error"]["code"], -32602, "{long}");
    assert!(
        long["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 40")
    );

    for (id, uri) in [
        (3, "test://t/one"),
        (4, "test://t/two"),
        (5, "test://t/two"),
    ] {
        let ok = pipe
            .call(id, "resources/subscribe", subscribe(uri.into()))
            .await;
        assert_eq!(ok["result"], json!({}), "{ok}");
    }
    assert_eq!(
        server.inner.kept.get(),
        declared + limits::uri_charge("test://t/one") + limits::uri_charge("test://t/two"),
        "a repeated subscription is kept once"
    );
    let third = pipe
        .call(6, "resources/subscribe", subscribe("test://t/three".into()))
        .await;
    assert_eq!(third["error"]["code"], -32602, "{third}");
    assert!(
        third["error"]["message"]
            .as_str()
            .unwrap()
            .contains("subscribed to 2"),
        "{third}"
    );

    // Unsubscribing gives the room and the bytes back.
    let off = pipe
        .call(7, "resources/unsubscribe", subscribe("test://t/one".into()))
        .await;
    assert_eq!(off["result"], json!({}), "{off}");
    assert_eq!(
        server.inner.kept.get(),
        declared + limits::uri_charge("test://t/two")
    );
    // 12 + 38 bytes of URIs are within 64; one more would not be.
    let fits = pipe
        .call(
            8,
            "resources/subscribe",
            subscribe(format!("test://t/{}", "b".repeat(29))),
        )
        .await;
    assert_eq!(fits["result"], json!({}), "{fits}");
    pipe.call(9, "resources/unsubscribe", subscribe("test://t/two".into()))
        .await;
    let over = pipe
        .call(
            10,
            "resources/subscribe",
            subscribe(format!("test://t/{}", "c".repeat(30))),
        )
        .await;
    assert_eq!(over["error"]["code"], -32602, "{over}");
    assert!(
        over["error"]["message"]
            .as_str()
            .unwrap()
            .contains("bytes of URIs"),
        "{over}"
    );
}

#[tokio::test]
async fn sessions_give_back_what_they_kept_and_the_budget_holds_across_them() {
    // What one session of `Pipe::initialize` is charged for what it declares.
    let declared = limits::declaration_charge(
        r#"{"roots":{}}"#.len() + r#"{"name":"old-host","version":"1"}"#.len(),
    );
    let uri = "test://t/one";
    // Room for two sessions and one subscription, not for a second subscription.
    let budget = 2 * declared + limits::uri_charge(uri) + 5;
    let server = small_server(budget);
    {
        let mut alice = Pipe::start(server.clone());
        alice.initialize("2025-11-25", json!({"roots": {}})).await;
        assert_eq!(server.inner.kept.get(), declared);
        let ok = alice
            .call(1, "resources/subscribe", json!({"uri": uri}))
            .await;
        assert_eq!(ok["result"], json!({}), "{ok}");
        let mut bob = Pipe::start(server.clone());
        bob.initialize("2025-11-25", json!({"roots": {}})).await;
        assert_eq!(
            server.inner.kept.get(),
            2 * declared + limits::uri_charge(uri)
        );
        assert!(!server.legacy_sessions_full());
        let refused = bob
            .call(2, "resources/subscribe", json!({"uri": "test://t/two"}))
            .await;
        assert_eq!(refused["error"]["code"], -32603, "{refused}");
        assert_eq!(
            server.inner.kept.get(),
            2 * declared + limits::uri_charge(uri)
        );
        // A third session is over the budget: a transport that keeps sessions refuses it.
        let mut carol = Pipe::start(server.clone());
        carol.initialize("2025-11-25", json!({"roots": {}})).await;
        assert!(server.legacy_sessions_full());
    }
    // The pipes are closed: their sessions end and give everything back.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while server.inner.kept.get() != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "kept {}",
            server.inner.kept.get()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!server.legacy_sessions_full());
}
