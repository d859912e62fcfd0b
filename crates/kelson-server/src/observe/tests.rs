//! The hook end to end over the stdio transport and `Server::handle`, with an observer that writes
//! down everything it is told.

use std::sync::{Arc, Mutex};

use kelson_types::{
    CallToolResult, GetPromptResult, JsonObject, Prompt, PromptMessage, Resource, ResourceContents,
    TextResourceContents, Tool,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::Notify;

use super::*;
use crate::stdio::{StdioConfig, serve_stream};
use crate::transport::RequestIo;
use crate::{HandlerError, RequestContext, Server};

#[test]
fn outcome_classes_are_distinct() {
    let outcomes = [
        RequestOutcome::Success,
        RequestOutcome::ToolError,
        RequestOutcome::InputRequired,
        RequestOutcome::Error { code: -32602 },
        RequestOutcome::Rejected { status: 406 },
        RequestOutcome::Cancelled,
    ];
    for o in outcomes {
        assert_eq!(RequestOutcome::CLASSES[o.index()], o.class());
    }
    assert_eq!(
        RequestOutcome::from(Outcome::Error {
            code: -32601,
            rejected: true
        }),
        RequestOutcome::Error { code: -32601 }
    );
}

/// Writes down every call as one line.
#[derive(Clone, Default)]
struct Recorder {
    lines: Arc<Mutex<Vec<String>>>,
    wants: Wants,
}

impl Recorder {
    fn push(&self, line: String) {
        self.lines.lock().unwrap().push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    fn count(&self, prefix: &str) -> usize {
        self.lines()
            .iter()
            .filter(|l| l.starts_with(prefix))
            .count()
    }
}

impl RequestObserver for Recorder {
    fn wants(&self) -> Wants {
        self.wants
    }

    fn request_started(&self, transport: Transport) {
        self.push(format!("started {}", transport.as_str()));
    }

    fn request_finished(&self, r: &RequestRecord<'_>) {
        // Modern requests, most of them here, say nothing of their era.
        let era = match r.era {
            RequestEra::Modern => String::new(),
            legacy => format!(
                " era={}/{}",
                legacy.as_str(),
                legacy.legacy_version().unwrap_or("none")
            ),
        };
        self.push(format!(
            "finished {} id={} method={} target={:?} outcome={:?} args={}{era}",
            r.transport.as_str(),
            r.id.map_or("-".to_owned(), ToString::to_string),
            r.method_name().unwrap_or("-"),
            r.target,
            r.outcome,
            r.arguments.map_or("-", RawValue::get),
        ));
    }

    fn notification(&self, r: &NotificationRecord<'_>) {
        self.push(format!(
            "notification {} {:?} {}",
            r.transport.as_str(),
            r.method,
            r.method
        ));
    }

    fn listen_opened(&self, transport: Transport, id: &Id) {
        self.push(format!("listen-opened {} id={id}", transport.as_str()));
    }

    fn listen_closed(&self, r: &ListenRecord<'_>) {
        self.push(format!(
            "listen-closed {} id={} graceful={}",
            r.transport.as_str(),
            r.id,
            r.graceful
        ));
    }
}

/// `wait` tells `started` when it runs, then waits for its cancellation.
fn server(observer: Recorder, started: Arc<Notify>) -> Server {
    Server::builder("observed", "0.0.1")
        .tool_handler(
            Tool::new(
                "echo",
                json!({"type": "object"}).as_object().unwrap().clone(),
            ),
            |_ctx: RequestContext, args: JsonObject| async move {
                Ok(CallToolResult::text(
                    args.get("text").and_then(Value::as_str).unwrap_or_default(),
                ))
            },
        )
        .tool_handler(
            Tool::without_arguments("fail"),
            |_ctx: RequestContext, _args: JsonObject| async move {
                Ok(CallToolResult::error("it failed, as tools do"))
            },
        )
        .tool_handler(
            Tool::without_arguments("wait"),
            move |ctx: RequestContext, _args: JsonObject| {
                let started = started.clone();
                async move {
                    started.notify_one();
                    ctx.cancelled().await;
                    Ok(CallToolResult::text("too late"))
                }
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
        .prompt_handler(
            Prompt::new("greet"),
            |_ctx: RequestContext, _args| async move {
                Ok::<_, HandlerError>(GetPromptResult::new(vec![PromptMessage::user_text("hi")]))
            },
        )
        .observer(observer)
        .build()
        .expect("the server builds")
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn request(id: impl Into<Value>, method: &str, mut params: Value) -> String {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}).to_string()
}

#[tokio::test]
async fn stdio_reports_every_ending() {
    let recorder = Recorder {
        wants: Wants {
            names: true,
            arguments: true,
        },
        ..Recorder::default()
    };
    let started = Arc::new(Notify::new());
    let server = server(recorder.clone(), started.clone());
    let (client, server_side) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving = tokio::spawn(serve_stream(
        server,
        server_read,
        server_write,
        StdioConfig::default(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut replies = BufReader::new(client_read).lines();

    let lines = [
        request(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        ),
        request(2, "tools/call", json!({"name": "fail"})),
        request(3, "tools/call", json!({"name": "nope", "arguments": {}})),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}).to_string(),
        "this is not json".to_owned(),
        request("five", "ping", json!({})),
        request(8, "resources/read", json!({"uri": "test://a"})),
        request(9, "prompts/get", json!({"name": "greet"})),
        request(10, "prompts/get", json!({"name": "nobody"})),
    ];
    for line in &lines {
        client_write.write_all(line.as_bytes()).await.unwrap();
        client_write.write_all(b"\n").await.unwrap();
    }
    for _ in &lines {
        replies.next_line().await.unwrap().expect("a reply");
    }

    // A request cancelled by the client, and a listen stream left open until end of input.
    let slow = request(6, "tools/call", json!({"name": "wait"}));
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 6}});
    let listen = request(
        7,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    client_write.write_all(slow.as_bytes()).await.unwrap();
    client_write.write_all(b"\n").await.unwrap();
    started.notified().await;
    for line in [cancel.to_string(), listen] {
        client_write.write_all(line.as_bytes()).await.unwrap();
        client_write.write_all(b"\n").await.unwrap();
    }
    let ack = replies
        .next_line()
        .await
        .unwrap()
        .expect("the listen acknowledgement");
    assert!(
        ack.contains("notifications/subscriptions/acknowledged"),
        "{ack}"
    );
    client_write.shutdown().await.unwrap();
    // The final result of the listen stream, then the end.
    while replies.next_line().await.unwrap().is_some() {}
    serving.await.unwrap().unwrap();

    let lines = recorder.lines();
    let has = |want: &str| {
        assert!(
            lines.iter().any(|l| l == want),
            "missing {want:?} in\n{}",
            lines.join("\n")
        );
    };
    has(
        r#"finished stdio id=1 method=tools/call target=Tool { name: "echo", registered: true } outcome=Success args={"text":"hi"}"#,
    );
    has(
        r#"finished stdio id=2 method=tools/call target=Tool { name: "fail", registered: true } outcome=ToolError args=-"#,
    );
    has(
        r#"finished stdio id=3 method=tools/call target=Tool { name: "nope", registered: false } outcome=Error { code: -32602 } args={}"#,
    );
    // Refused before dispatch, still with its id and method; without the modern envelope, it is
    // a handshake-era request, with no session to serve it.
    has(
        "finished stdio id=4 method=tools/list target=None outcome=Error { code: -32602 } args=- era=legacy/none",
    );
    has("finished stdio id=- method=- target=None outcome=Error { code: -32700 } args=-");
    has(
        r#"finished stdio id="five" method=ping target=None outcome=Error { code: -32601 } args=-"#,
    );
    has(
        r#"finished stdio id=8 method=resources/read target=Resource { uri: "test://a" } outcome=Success args=-"#,
    );
    has(
        r#"finished stdio id=9 method=prompts/get target=Prompt { name: "greet", registered: true } outcome=Success args=-"#,
    );
    has(
        r#"finished stdio id=10 method=prompts/get target=Prompt { name: "nobody", registered: false } outcome=Error { code: -32602 } args=-"#,
    );
    has(
        r#"finished stdio id=6 method=tools/call target=Tool { name: "wait", registered: true } outcome=Cancelled args=-"#,
    );
    has("notification stdio Cancelled notifications/cancelled");
    has("listen-opened stdio id=7");
    has("listen-closed stdio id=7 graceful=true");
    // Every request that started ended once: as a finished request or as an opened stream.
    assert_eq!(recorder.count("started"), 11, "{lines:#?}");
    assert_eq!(recorder.count("finished"), 10, "{lines:#?}");
    assert_eq!(recorder.count("listen-opened"), 1);
    assert_eq!(recorder.count("notification"), 1);
}

/// One line to the server, and its reply.
async fn exchange(
    write: &mut (impl tokio::io::AsyncWrite + Unpin),
    replies: &mut tokio::io::Lines<impl tokio::io::AsyncBufRead + Unpin>,
    line: &str,
) -> Value {
    write.write_all(line.as_bytes()).await.unwrap();
    write.write_all(b"\n").await.unwrap();
    let reply = replies.next_line().await.unwrap().expect("a reply");
    serde_json::from_str(&reply).unwrap()
}

#[tokio::test]
async fn legacy_requests_are_reported_with_their_era_and_version() {
    let recorder = Recorder::default();
    let server = server(recorder.clone(), Arc::default());
    let (client, server_side) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving = tokio::spawn(serve_stream(
        server,
        server_read,
        server_write,
        StdioConfig::default(),
    ));
    let (client_read, mut write) = tokio::io::split(client);
    let mut replies = BufReader::new(client_read).lines();
    let legacy = |id: u64, method: &str, params: Value| -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    };

    // A probe, a request before any session, the handshake, then both eras on one process.
    let probe = exchange(
        &mut write,
        &mut replies,
        &request(1, "server/discover", json!({})),
    )
    .await;
    assert!(probe.get("result").is_some(), "{probe}");
    let early = exchange(
        &mut write,
        &mut replies,
        &legacy(2, "tools/list", json!({})),
    )
    .await;
    assert_eq!(early["error"]["code"], -32602, "{early}");
    let init = exchange(
        &mut write,
        &mut replies,
        &legacy(
            3,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "old", "version": "1"}}),
        ),
    )
    .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    write
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    let call = exchange(
        &mut write,
        &mut replies,
        &legacy(
            4,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        ),
    )
    .await;
    assert_eq!(call["result"]["content"][0]["text"], "hi", "{call}");
    let ping = exchange(&mut write, &mut replies, &legacy(5, "ping", json!({}))).await;
    assert_eq!(ping["result"], json!({}), "{ping}");
    let modern = exchange(
        &mut write,
        &mut replies,
        &request(
            6,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "now"}}),
        ),
    )
    .await;
    assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
    write.shutdown().await.unwrap();
    while replies.next_line().await.unwrap().is_some() {}
    serving.await.unwrap().unwrap();

    let lines = recorder.lines();
    let finished: Vec<&str> = lines
        .iter()
        .filter(|l| l.starts_with("finished"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        finished,
        [
            "finished stdio id=1 method=server/discover target=None outcome=Success args=-",
            "finished stdio id=2 method=tools/list target=None outcome=Error { code: -32602 } args=- era=legacy/none",
            "finished stdio id=3 method=- target=None outcome=Success args=- era=legacy/2025-06-18",
            r#"finished stdio id=4 method=tools/call target=Tool { name: "echo", registered: true } outcome=Success args=- era=legacy/2025-06-18"#,
            "finished stdio id=5 method=- target=None outcome=Success args=- era=legacy/2025-06-18",
            r#"finished stdio id=6 method=tools/call target=Tool { name: "echo", registered: true } outcome=Success args=-"#,
        ]
    );
}

#[tokio::test]
async fn names_and_arguments_are_kept_only_when_wanted() {
    let recorder = Recorder::default();
    let server = server(recorder.clone(), Arc::default());
    for (id, method, params) in [
        (
            1,
            "tools/call",
            json!({"name": "fail", "arguments": {"secret": "s3cr3t"}}),
        ),
        (2, "tools/call", json!({"name": "nope"})),
        (3, "resources/read", json!({"uri": "test://a"})),
        (4, "x/custom", json!({})),
    ] {
        let reply = server
            .handle(
                request(id, method, params).as_bytes(),
                RequestIo::plain(&server),
            )
            .await;
        assert!(reply.is_some());
    }
    let lines = recorder.lines();
    // A registered tool is always named (it costs no copy); the rest only when asked for.
    assert!(lines.contains(&r#"finished in_process id=1 method=tools/call target=Tool { name: "fail", registered: true } outcome=ToolError args=-"#.to_owned()), "{lines:#?}");
    assert!(lines.contains(&"finished in_process id=2 method=tools/call target=None outcome=Error { code: -32602 } args=-".to_owned()), "{lines:#?}");
    assert!(
        lines.contains(
            &"finished in_process id=3 method=resources/read target=None outcome=Success args=-"
                .to_owned()
        ),
        "{lines:#?}"
    );
    assert!(
        lines.contains(
            &"finished in_process id=4 method=- target=None outcome=Error { code: -32601 } args=-"
                .to_owned()
        ),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.contains("s3cr3t")));
}

#[tokio::test]
async fn a_server_without_observers_hands_out_disabled_probes() {
    let server = Server::builder("plain", "0.0.1")
        .enable_tools()
        .build()
        .unwrap();
    let probe = server.probe(Transport::Http);
    assert!(!probe.is_enabled());
    assert!(server.metrics().is_none());
}
