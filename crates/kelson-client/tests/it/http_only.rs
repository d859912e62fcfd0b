//! HTTP-only behaviour: `x-mcp-header` bookkeeping and the -32020 retry, status mapping, and a
//! scripted legacy server.

use std::convert::Infallible;
use std::io::Write;
use std::sync::{Arc, Mutex};

use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kelson_client::{Client, Era, Error, ErrorKind, HttpError, Violation};
use kelson_http::server::HttpConfig;
use kelson_server::RequestContext;
use kelson_types::{CallToolResult, JsonObject, SubscriptionFilter, Tool};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::fixture::{Probes, server};
use crate::harness::{http, text, within};

/// A scripted answer.
pub enum Scripted {
    Result(Value),
    Error(u16, i64, &'static str),
    Status(u16),
    /// A result with extra response headers.
    ResultWith(Value, Vec<(&'static str, &'static str)>),
}

impl Scripted {
    pub fn result(value: Value) -> Option<Self> {
        Some(Scripted::Result(value))
    }
}

type Script = dyn Fn(&Value) -> Option<Scripted> + Send + Sync;

/// Everything a scripted server received: (headers, body).
pub type Log = Arc<Mutex<Vec<(http::HeaderMap, Value)>>>;

/// A hand-written server: `script` answers each POST; `None` falls back to a modern discover
/// result, 202 for notifications, and 404/-32601 for anything else.
pub async fn scripted(
    script: impl Fn(&Value) -> Option<Scripted> + Send + Sync + 'static,
) -> (String, oneshot::Sender<()>) {
    let (url, stop, _) = scripted_logged(script).await;
    (url, stop)
}

pub async fn scripted_logged(
    script: impl Fn(&Value) -> Option<Scripted> + Send + Sync + 'static,
) -> (String, oneshot::Sender<()>, Log) {
    let script: Arc<Script> = Arc::new(script);
    let log: Log = Arc::default();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, mut stopped) = oneshot::channel::<()>();
    let server_log = log.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                _ = &mut stopped => return,
                accepted = listener.accept() => accepted.unwrap(),
            };
            let script = script.clone();
            let log = server_log.clone();
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                        let script = script.clone();
                        let log = log.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let bytes = body.collect().await.unwrap().to_bytes();
                            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                            log.lock()
                                .unwrap()
                                .push((parts.headers.clone(), body.clone()));
                            let answer = if parts.method == http::Method::POST {
                                script(&body).unwrap_or_else(|| default_answer(&body))
                            } else {
                                Scripted::Status(405)
                            };
                            Ok::<_, Infallible>(respond(&body, answer))
                        }
                    });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (format!("http://{addr}/mcp"), stop, log)
}

fn default_answer(body: &Value) -> Scripted {
    match body["method"].as_str() {
        Some("server/discover") => Scripted::Result(json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public"
        })),
        _ if body.get("id").is_none() => Scripted::Status(202),
        _ => Scripted::Error(404, -32601, "Method not found"),
    }
}

pub fn respond(request: &Value, answer: Scripted) -> Response<Full<bytes::Bytes>> {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let (status, body, headers) = match answer {
        Scripted::Result(result) => (
            200,
            Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            vec![],
        ),
        Scripted::ResultWith(result, headers) => (
            200,
            Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            headers,
        ),
        Scripted::Error(status, code, message) => (
            status,
            Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})),
            vec![],
        ),
        Scripted::Status(status) => (status, None, vec![]),
    };
    let mut builder = Response::builder().status(status);
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    match body {
        Some(body) => builder
            .header("content-type", "application/json")
            .body(Full::new(body.to_string().into()))
            .unwrap(),
        None => builder.body(Full::new(bytes::Bytes::new())).unwrap(),
    }
}

fn tool_with(schema: Value) -> Tool {
    Tool::new("region_tool", schema.as_object().cloned().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_mismatch_refetches_the_tools_and_retries() {
    let probes = Arc::new(Probes::default());
    let server = server(probes);
    server
        .add_tool_handler(
            tool_with(json!({"type": "object", "properties": {"region": {"type": "string"}}})),
            |_ctx: RequestContext, _args: JsonObject| async { Ok(CallToolResult::text("v1")) },
        )
        .unwrap();
    let served = http(server.clone(), HttpConfig::default(), Client::builder()).await;
    let client = &served.client;
    within(client.list_all_tools()).await.unwrap();

    // The tool changes under the client: its schema now mirrors `region` into a header.
    server.remove_tool("region_tool");
    server
        .add_tool_handler(
            tool_with(json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}})),
            |_ctx: RequestContext, args: JsonObject| async move {
                Ok(CallToolResult::text(format!("v2 {}", args["region"])))
            },
        )
        .unwrap();
    let lists_before = served.wire.count("tools/list");
    let result = within(client.call_tool("region_tool", json!({"region": "eu-west"})))
        .await
        .unwrap();
    assert_eq!(text(&result), r#"v2 "eu-west""#);

    let calls = served.wire.requests("tools/call");
    assert_eq!(calls.len(), 2, "one refused call, one retry");
    assert!(
        calls[0]
            .headers
            .as_ref()
            .unwrap()
            .get("mcp-param-region")
            .is_none()
    );
    assert_eq!(
        calls[1].headers.as_ref().unwrap()["mcp-param-region"],
        "eu-west"
    );
    assert_ne!(
        calls[0].body["id"], calls[1].body["id"],
        "the retry is a new request"
    );
    assert!(
        served.wire.count("tools/list") > lists_before,
        "tools/list was re-fetched"
    );

    // Later calls send the header from the start.
    within(client.call_tool("region_tool", json!({"region": "ap"})))
        .await
        .unwrap();
    assert_eq!(served.wire.count("tools/call"), 3);
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn tools_with_invalid_header_declarations_are_dropped_with_a_warning() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let (url, _stop) = scripted(|body| match body["method"].as_str() {
        Some("tools/list") => Scripted::result(json!({
            "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
            "tools": [
                {"name": "good", "inputSchema": {"type": "object", "properties": {
                    "r": {"type": "string", "x-mcp-header": "Region"}}}},
                {"name": "bad_type", "inputSchema": {"type": "object", "properties": {
                    "n": {"type": "number", "x-mcp-header": "N"}}}},
                {"name": "bad_token", "inputSchema": {"type": "object", "properties": {
                    "s": {"type": "string", "x-mcp-header": "has space"}}}}
            ]
        })),
        _ => None,
    })
    .await;
    let client = within(Client::builder().connect_http(&url)).await.unwrap();
    let tools = within(client.list_all_tools()).await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("WARN"), "{logs}");
    assert!(
        logs.contains("bad_type") && logs.contains("bad_token"),
        "{logs}"
    );
    assert!(logs.contains("x-mcp-header"), "{logs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_413_names_the_body_limit() {
    let config = {
        let mut edited = HttpConfig::default();
        edited.max_body = 2048;
        edited
    };
    let served = http(
        server(Arc::new(Probes::default())),
        config,
        Client::builder(),
    )
    .await;
    let big = "x".repeat(8192);
    let err = within(served.client.call_tool("echo", json!({"text": big})))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Http(HttpError::PayloadTooLarge { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("body size limit"), "{err}");
    assert_eq!(err.kind(), ErrorKind::Transport);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_and_bodies_map_to_errors() {
    let (url, _stop) = scripted(|body| {
        let name = body["params"]["name"].as_str().unwrap_or_default();
        match (body["method"].as_str(), name) {
            (Some("tools/call"), "headers") => Some(Scripted::Status(431)),
            (Some("tools/call"), "json_error") => Some(Scripted::Error(500, -32603, "boom")),
            (Some("tools/call"), "bare") => Some(Scripted::Status(502)),
            (Some("tools/call"), "task") => Scripted::result(json!({"resultType": "task"})),
            (Some("tools/call"), "legacy_shape") => {
                Scripted::result(json!({"content": [{"type": "text", "text": "ok"}]}))
            }
            _ => None,
        }
    })
    .await;
    let client = within(Client::builder().connect_http(&url)).await.unwrap();

    let err = within(client.call_tool("headers", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Http(HttpError::HeadersTooLarge { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("header size limit"), "{err}");

    let err = within(client.call_tool("json_error", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32603), "{err:?}");

    let err = within(client.call_tool("bare", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Http(HttpError::Status { status, .. }) if status == StatusCode::BAD_GATEWAY),
        "{err:?}"
    );

    // A task handle without its task: malformed for a client that declared tasks, an unknown
    // resultType for one that did not.
    let err = within(client.call_tool("task", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidServerBehaviour(Violation::Malformed { detail, .. }) if detail.contains("taskId")
        ),
        "{err:?}"
    );
    let plain = within(Client::builder().tasks(false).connect_http(&url))
        .await
        .unwrap();
    let err = within(plain.call_tool("task", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidServerBehaviour(Violation::UnknownResultType { .. })
        ),
        "{err:?}"
    );

    // An absent resultType means complete.
    let ok = within(client.call_tool("legacy_shape", json!({})))
        .await
        .unwrap();
    assert_eq!(text(&ok), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_http_server_is_spoken_to_in_its_revision() {
    let (url, _stop, log) = scripted_logged(|body| match body["method"].as_str() {
        // A legacy server refuses a request without a session with 400 and a non-modern error.
        Some("server/discover") => Some(Scripted::Error(
            400,
            -32000,
            "Bad Request: No valid session ID provided",
        )),
        Some("initialize") => Some(Scripted::ResultWith(
            json!({"protocolVersion": "2025-11-25",
                   "capabilities": {"tools": {"listChanged": true}},
                   "serverInfo": {"name": "legacy", "version": "0.9"}}),
            vec![("mcp-session-id", "session-1")],
        )),
        Some("tools/list") => {
            Scripted::result(json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}))
        }
        Some("tools/call") => {
            Scripted::result(json!({"content": [{"type": "text", "text": "legacy ok"}]}))
        }
        Some("resources/read") => Some(Scripted::Error(200, -32002, "Resource not found")),
        _ => None,
    })
    .await;
    let client = within(Client::builder().connect_http(&url)).await.unwrap();
    assert_eq!(
        client.era(),
        Era::Legacy {
            version: "2025-11-25"
        }
    );
    assert_eq!(client.session_id().as_deref(), Some("session-1"));

    let discover = within(client.discover()).await.unwrap();
    assert_eq!(discover.supported_versions, ["2025-11-25"]);
    assert_eq!(discover.meta.unwrap().server_info.unwrap().name, "legacy");
    let tools = within(client.list_all_tools()).await.unwrap();
    assert_eq!(tools[0].name, "t");
    let result = within(client.call_tool("t", json!({"a": 1})))
        .await
        .unwrap();
    assert_eq!(text(&result), "legacy ok");
    let err = within(client.read_resource("x://gone")).await.unwrap_err();
    assert!(err.is_resource_not_found(), "{err:?}");

    // No GET stream on this server (405): listen is a clear error, and the GET, sent once right
    // after the handshake, is not tried again.
    for _ in 0..2 {
        let err = within(client.listen(SubscriptionFilter {
            tools_list_changed: Some(true),
            ..Default::default()
        }))
        .await
        .unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{err:?}");
    }

    let log = log.lock().unwrap().clone();
    let methods: Vec<_> = log
        .iter()
        .map(|(_, b)| b["method"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        &methods[..4],
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "" // the GET
        ]
    );
    let gets = log.iter().filter(|(_, b)| b.is_null()).count();
    assert_eq!(gets, 1, "{methods:?}");
    assert_eq!(log[3].0["mcp-session-id"], "session-1");
    let (init_headers, init) = &log[1];
    assert!(init_headers.get("mcp-protocol-version").is_none());
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["params"]["clientInfo"]["name"], "kelson-client");
    for (headers, body) in &log[2..] {
        if body.is_null() {
            continue; // the GET
        }
        assert_eq!(headers["mcp-session-id"], "session-1", "{body}");
        assert_eq!(headers["mcp-protocol-version"], "2025-11-25");
        assert!(headers.get("mcp-method").is_none());
        assert!(
            body["params"].get("_meta").is_none(),
            "no modern envelope: {body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_error_on_the_probe_never_falls_back() {
    let (url, _stop) = scripted(|body| match body["method"].as_str() {
        Some("server/discover") => Some(Scripted::Error(400, -32020, "Header mismatch")),
        _ => None,
    })
    .await;
    let err = within(Client::builder().connect_http(&url))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(-32020), "{err:?}");
}
