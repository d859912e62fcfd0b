//! The operator's view over real loopback HTTP: `GET /metrics` on the MCP listener and on an
//! address of its own, counting an `isError` result, a JSON-RPC error and an HTTP refusal apart;
//! the in-flight and open-listen gauges; the Host/Origin policy in front of the metrics; and the
//! request log, one line per request, that never shows an `Mcp-Param-*` value or a credential.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, StatusCode};
use kelson_http::server::{HttpConfig, MetricsService, OriginPolicy, serve};
use kelson_server::observe::{CONTENT_TYPE, Metrics};
use kelson_server::{RequestContext, RequestLog, Server};
use kelson_types::{CallToolResult, JsonObject, Tool};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tracing_subscriber::util::SubscriberInitExt as _;

use super::fixture::{Probes, UNICODE_PROMPT, UNICODE_URI, full_builder};
use super::harness::{Client, Post, Reply, SseStream, TestServer, test_config, within};

/// A value only ever sent in an `Mcp-Param-Region` header (and the argument it mirrors).
const PARAM_SECRET: &str = "param-value-7f3a9c";
/// A credential only ever sent in `Authorization`.
const TOKEN_SECRET: &str = "bearer-token-91b2e4";

/// The fixture plus `fail` (a tool that reports `isError`), with metrics and a request log.
fn observed(probes: Arc<Probes>) -> Server {
    with_fail(full_builder(probes))
        .metrics(Metrics::new())
        .observer(RequestLog::new())
        .build()
        .expect("the observed server builds")
}

/// Like [`observed`], with the operator's permission to log tool arguments.
fn observed_with_arguments(probes: Arc<Probes>) -> Server {
    with_fail(full_builder(probes))
        .observer(RequestLog::new().with_arguments(true))
        .build()
        .expect("the observed server builds")
}

fn with_fail(builder: kelson_server::ServerBuilder) -> kelson_server::ServerBuilder {
    builder.tool_handler(
        Tool::without_arguments("fail").with_description("Always reports a tool error"),
        |_ctx: RequestContext, _args: JsonObject| async move {
            Ok(CallToolResult::error("the tool failed"))
        },
    )
}

fn metrics_config() -> HttpConfig {
    {
        let mut edited = test_config();
        edited.metrics_path = Some("/metrics".to_owned());
        edited
    }
}

fn get(path: &str) -> Post {
    Post::bare("").method(Method::GET).path(path)
}

/// Scrapes `/metrics` and checks the response around the text.
async fn scrape(srv: &TestServer) -> String {
    let reply = srv.send(&get("/metrics")).await;
    metrics_text(&reply)
}

#[track_caller]
fn metrics_text(reply: &Reply) -> String {
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.content_type(), CONTENT_TYPE);
    String::from_utf8(reply.body.to_vec()).expect("the text format is UTF-8")
}

/// The value of one series, or 0 when it is not there (labelled series appear on first use).
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

fn requests(text: &str, method: &str, outcome: &str) -> f64 {
    sample(
        text,
        &format!("mcp_requests_total{{method=\"{method}\",outcome=\"{outcome}\",era=\"modern\"}}"),
    )
}

/// Waits until the scraped `series` has `value`: some changes are seen by the server a moment
/// after the client makes them (a closed stream).
async fn until_sample(srv: &TestServer, series: &str, value: f64) {
    within("a metric reaching its value", async {
        loop {
            if sample(&scrape(srv).await, series) == value {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_a_tool_error_apart_from_a_protocol_error_and_an_http_refusal() {
    let srv = TestServer::start_with(observed, metrics_config()).await;

    let ok = srv
        .send(&Post::tool(1, "echo", json!({"text": "hi"})))
        .await;
    assert_eq!(ok.tool_text(json!(1)), "hi");
    // The tool ran and reported a failure: a result with isError.
    let failed = srv.send(&Post::tool(2, "fail", json!({}))).await;
    assert_eq!(failed.result(json!(2))["isError"], true);
    // An unknown tool is a protocol error (-32602, in band), not a tool error.
    srv.send(&Post::tool(3, "no-such-tool", json!({})))
        .await
        .error(StatusCode::OK, -32602, Some(json!(3)));
    // A missing `_meta` is a JSON-RPC error with an HTTP status of its own: still a JSON-RPC error.
    srv.send(&Post::rpc(json!({
        "jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}
    })))
    .await
    .error(StatusCode::BAD_REQUEST, -32602, Some(json!(4)));
    // Refused at the HTTP level: the body is never read.
    srv.send(&Post::tool(5, "echo", json!({"text": "hi"})).header("accept", "application/json"))
        .await
        .refused(StatusCode::NOT_ACCEPTABLE);

    let text = scrape(&srv).await;
    assert_eq!(requests(&text, "tools/call", "success"), 1.0, "{text}");
    assert_eq!(requests(&text, "tools/call", "tool_error"), 1.0, "{text}");
    assert_eq!(requests(&text, "tools/call", "error"), 1.0, "{text}");
    // Without the modern envelope (and without a session), the request is a handshake-era
    // client's as far as the server can tell.
    assert_eq!(
        sample(
            &text,
            r#"mcp_requests_total{method="tools/list",outcome="error",era="legacy"}"#
        ),
        1.0,
        "{text}"
    );
    assert_eq!(requests(&text, "tools/list", "error"), 0.0, "{text}");
    // The refused request's method is the one its `Mcp-Method` header named.
    assert_eq!(requests(&text, "tools/call", "rejected"), 1.0, "{text}");
    assert_eq!(sample(&text, r#"mcp_tool_errors_total{tool="fail"}"#), 1.0);
    assert_eq!(
        sample(&text, r#"mcp_jsonrpc_errors_total{code="-32602"}"#),
        2.0
    );
    assert_eq!(
        sample(&text, r#"mcp_http_rejections_total{status="406"}"#),
        1.0
    );
    assert_eq!(
        sample(&text, r#"mcp_http_rejections_total{status="400"}"#),
        0.0
    );
    // The unknown tool name never became a label; nothing else was an error of any kind.
    assert!(!text.contains("no-such-tool"), "{text}");
    let errors: f64 = text
        .lines()
        .filter(|l| l.starts_with("mcp_jsonrpc_errors_total{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    assert_eq!(errors, 2.0, "{text}");
    assert_eq!(
        sample(
            &text,
            r#"mcp_request_duration_seconds_count{method="tools/call",era="modern"}"#
        ),
        4.0
    );
    assert_eq!(
        sample(
            &text,
            r#"mcp_request_duration_seconds_bucket{method="tools/call",era="modern",le="+Inf"}"#
        ),
        4.0
    );
    // Scrapes are not MCP requests.
    let again = scrape(&srv).await;
    assert_eq!(requests(&again, "tools/call", "success"), 1.0);
    assert_eq!(sample(&again, "mcp_requests_in_flight"), 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_and_open_listen_gauges_move() {
    let config = {
        let mut edited = metrics_config();
        edited.keep_alive = Duration::from_millis(50);
        edited
    };
    let srv = TestServer::start_with(observed, config).await;

    // A call held open by a gate is in flight until the gate opens.
    let addr = srv.addr;
    let call = tokio::spawn(async move {
        Client::h1(addr)
            .await
            .send(&Post::tool(
                1,
                "slow",
                json!({"tag": "held", "steps": 1, "stepMs": 0, "gate": "open"}),
            ))
            .await
    });
    srv.probes.wait_for("started:held").await;
    assert_eq!(sample(&scrape(&srv).await, "mcp_requests_in_flight"), 1.0);
    srv.probes.record("open");
    let reply = within("the held call", call).await.unwrap();
    assert_eq!(reply.tool_text(json!(1)), "slow held done");
    let text = scrape(&srv).await;
    assert_eq!(sample(&text, "mcp_requests_in_flight"), 0.0);
    assert_eq!(requests(&text, "tools/call", "success"), 1.0);

    // A listen stream is an open stream, not a request in flight.
    let mut client = Client::h1(srv.addr).await;
    let listen = Post::call(
        7,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut stream = SseStream::new(client.open(&listen).await);
    stream.next().await.expect("the acknowledgement");
    let text = scrape(&srv).await;
    assert_eq!(sample(&text, "mcp_listen_streams_open"), 1.0, "{text}");
    assert_eq!(sample(&text, "mcp_listen_streams_total"), 1.0);
    assert_eq!(sample(&text, "mcp_requests_in_flight"), 0.0);
    assert_eq!(requests(&text, "subscriptions/listen", "success"), 1.0);

    // The client closes it; the server notices and the gauge comes back down.
    drop(stream);
    drop(client);
    until_sample(&srv, "mcp_listen_streams_open", 0.0).await;
    let text = scrape(&srv).await;
    assert_eq!(sample(&text, "mcp_listen_streams_total"), 1.0);
    assert_eq!(sample(&text, "mcp_requests_in_flight"), 0.0);
}

/// A client that goes away mid-request leaves a cancelled request behind, on the plain JSON path
/// (the connection drops the request future) and on the SSE path (the body is dropped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_counts_as_cancelled() {
    let srv = TestServer::start_with(observed, metrics_config()).await;
    let endless = |tag: &str| json!({"tag": tag, "steps": 1000, "stepMs": 100});

    let mut client = Client::h2(srv.addr).await;
    let post = Post::tool(1, "slow", endless("plain"));
    tokio::select! {
        reply = client.open(&post) => panic!("answered before the client left: {reply:?}"),
        () = srv.probes.wait_for("started:plain") => {}
    }
    srv.probes.wait_for("cancelled:plain").await;

    let mut client = Client::h1(srv.addr).await;
    let streamed = Post::tool_with_meta(2, "slow", endless("sse"), json!({"progressToken": "t"}));
    let mut stream = SseStream::new(client.open(&streamed).await);
    stream.next().await.expect("a progress notification");
    drop(stream);
    srv.probes.wait_for("cancelled:sse").await;

    until_sample(
        &srv,
        r#"mcp_requests_total{method="tools/call",outcome="cancelled",era="modern"}"#,
        2.0,
    )
    .await;
    let text = scrape(&srv).await;
    assert_eq!(sample(&text, "mcp_requests_in_flight"), 0.0, "{text}");
    assert_eq!(requests(&text, "tools/call", "success"), 0.0, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_sit_behind_the_host_and_origin_policy() {
    let srv = TestServer::start_with(observed, metrics_config()).await;
    // A DNS-rebinding page reaches the server under its own host name.
    let foreign_host = srv
        .send(&get("/metrics").header("host", "evil.example"))
        .await;
    assert_eq!(foreign_host.status, StatusCode::FORBIDDEN);
    assert!(!String::from_utf8_lossy(&foreign_host.body).contains("mcp_"));
    let foreign_origin = srv
        .send(&get("/metrics").header("origin", "http://evil.example"))
        .await;
    assert_eq!(foreign_origin.status, StatusCode::FORBIDDEN);
    // Loopback names pass, over HTTP/2 too.
    let h1 = srv.send(&get("/metrics").header("host", "localhost")).await;
    metrics_text(&h1);
    let h2 = Client::h2(srv.addr).await.send(&get("/metrics")).await;
    metrics_text(&h2);
    // Read-only.
    let post = srv.send(&Post::bare("{}").path("/metrics")).await;
    assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(post.headers["allow"], "GET, HEAD");
    let head = srv.send(&get("/metrics").method(Method::HEAD)).await;
    assert_eq!(head.status, StatusCode::OK);
    assert!(head.body.is_empty());
    // Refusals on the metrics path are not MCP requests.
    let text = scrape(&srv).await;
    assert_eq!(
        sample(&text, r#"mcp_http_rejections_total{status="403"}"#),
        0.0
    );

    // Without a metrics path, the MCP listener serves no metrics.
    let plain = TestServer::start_with(observed, test_config()).await;
    assert_eq!(
        plain.send(&get("/metrics")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_can_have_an_address_of_their_own() {
    // The MCP listener serves no metrics; a second listener serves nothing else.
    let srv = TestServer::start_with(observed, test_config()).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let maddr = listener.local_addr().unwrap();
    let metrics = srv
        .server
        .metrics()
        .expect("the server has metrics")
        .clone();
    let service = MetricsService::new(metrics, OriginPolicy::for_bind(maddr));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = serve(listener, service).with_graceful_shutdown(async move {
        let _ = stopped.await;
    });
    let task = tokio::spawn(serving.into_future());

    srv.send(&Post::tool(1, "fail", json!({}))).await;
    srv.send(&Post::tool(2, "echo", json!({"text": "x"})).header("content-type", "text/plain"))
        .await
        .refused(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let mut client = Client::h1(maddr).await;
    let text = metrics_text(&client.send(&get("/metrics")).await);
    assert_eq!(sample(&text, r#"mcp_tool_errors_total{tool="fail"}"#), 1.0);
    assert_eq!(
        sample(&text, r#"mcp_http_rejections_total{status="415"}"#),
        1.0
    );
    assert_eq!(
        client
            .send(&get("/metrics").header("host", "evil.example"))
            .await
            .status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        client.send(&get("/mcp")).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        srv.send(&get("/metrics")).await.status,
        StatusCode::NOT_FOUND
    );

    let _ = stop.send(());
    within("serve_metrics returning", task)
        .await
        .unwrap()
        .expect("serve_metrics ends cleanly");
}

/// Log lines written by a `tracing_subscriber::fmt` subscriber, kept for the test to read.
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

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).expect("log output is UTF-8")
    }

    /// The request events, one per line.
    fn requests(&self) -> Vec<String> {
        self.text()
            .lines()
            .filter(|l| l.contains("kelson::request: request "))
            .map(str::to_owned)
            .collect()
    }

    /// Installs a subscriber writing here for this thread. The tests using it run on a
    /// current-thread runtime, so the server, its connections and the clients all log here.
    fn install(&self, level: tracing::Level) -> tracing::subscriber::DefaultGuard {
        let sink = self.clone();
        tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_max_level(level)
            .with_ansi(false)
            .without_time()
            .finish()
            .set_default()
    }
}

/// The one line for request `id` (as logged: `1`, `"a"`); fails unless there is exactly one.
#[track_caller]
fn line_for<'a>(lines: &'a [String], id: &str) -> &'a str {
    let needle = format!(" id={id} ");
    let found: Vec<&String> = lines.iter().filter(|l| l.contains(&needle)).collect();
    assert_eq!(found.len(), 1, "one line for id {id}: {lines:#?}");
    found[0]
}

#[track_caller]
fn assert_fields(line: &str, fields: &[&str]) {
    for field in fields {
        assert!(line.contains(field), "{field} in {line}");
    }
    assert!(line.contains(r#"transport="http""#), "{line}");
    assert!(line.contains(" duration_us="), "{line}");
}

#[tokio::test]
async fn request_logs_have_one_line_per_request_and_no_secrets() {
    let log = Captured::default();
    // Everything, from every crate, at the most verbose level.
    let _guard = log.install(tracing::Level::TRACE);
    let srv = TestServer::start_with(observed, test_config()).await;
    let bearer = format!("Bearer {TOKEN_SECRET}");

    srv.send(&Post::tool(1, "echo", json!({"text": "hi"})).header("authorization", &bearer))
        .await
        .tool_text(json!(1));
    let region = Post::tool(2, "region", json!({"region": PARAM_SECRET}))
        .header("Mcp-Param-Region", PARAM_SECRET)
        .header("authorization", &bearer);
    assert_eq!(
        srv.send(&region).await.tool_text(json!(2)),
        format!("region={PARAM_SECRET} count=none")
    );
    srv.send(&Post::tool(3, "fail", json!({})).header("authorization", &bearer))
        .await
        .result(json!(3));
    srv.send(&Post::tool(4, "no-such-tool", json!({})))
        .await
        .error(StatusCode::OK, -32602, Some(json!(4)));
    // A mismatched header is a -32020 answered before the tool runs; its value is not logged.
    srv.send(
        &Post::tool(5, "region", json!({"region": "eu"}))
            .header("Mcp-Param-Region", PARAM_SECRET)
            .header("authorization", &bearer),
    )
    .await
    .error(StatusCode::BAD_REQUEST, -32020, Some(json!(5)));
    srv.send(&Post::call(
        "p",
        "prompts/get",
        json!({"name": UNICODE_PROMPT}),
    ))
    .await
    .result(json!("p"));
    srv.send(&Post::call(
        7,
        "resources/read",
        json!({"uri": UNICODE_URI}),
    ))
    .await
    .result(json!(7));
    srv.send(
        &Post::tool(8, "echo", json!({"text": "hi"}))
            .header("accept", "text/event-stream")
            .header("authorization", &bearer),
    )
    .await
    .refused(StatusCode::NOT_ACCEPTABLE);
    srv.send(
        &Post::tool(9, "echo", json!({"text": "hi"}))
            .header("origin", "http://evil.example")
            .header("authorization", &bearer),
    )
    .await
    .refused(StatusCode::FORBIDDEN);
    let note = srv
        .send(&Post::rpc(json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1}
        })))
        .await;
    assert_eq!(note.status, StatusCode::ACCEPTED);

    let lines = log.requests();
    // Nine requests, nine lines; the notification has a line of its own.
    assert_eq!(lines.len(), 9, "{lines:#?}");
    for line in &lines {
        assert!(line.contains(" INFO "), "{line}");
    }
    assert_fields(
        line_for(&lines, "1"),
        &[
            r#"method="tools/call""#,
            r#"tool="echo""#,
            r#"outcome="success""#,
        ],
    );
    assert_fields(
        line_for(&lines, "2"),
        &[r#"tool="region""#, r#"outcome="success""#],
    );
    assert_fields(
        line_for(&lines, "3"),
        &[r#"tool="fail""#, r#"outcome="tool_error""#],
    );
    let unknown = line_for(&lines, "4");
    assert_fields(
        unknown,
        &[
            r#"tool="no-such-tool""#,
            r#"outcome="error""#,
            "code=-32602",
        ],
    );
    assert!(!unknown.contains("status="), "{unknown}");
    assert_fields(
        line_for(&lines, "5"),
        &[r#"outcome="error""#, "code=-32020"],
    );
    assert_fields(
        line_for(&lines, r#""p""#),
        &[
            r#"method="prompts/get""#,
            &format!("prompt={UNICODE_PROMPT:?}"),
            r#"outcome="success""#,
        ],
    );
    assert_fields(
        line_for(&lines, "7"),
        &[
            r#"method="resources/read""#,
            &format!("uri={UNICODE_URI:?}"),
        ],
    );
    // HTTP refusals: no id (the body was never read), the method from `Mcp-Method`, a status and
    // no JSON-RPC code.
    let refused: Vec<&String> = lines.iter().filter(|l| !l.contains(" id=")).collect();
    assert_eq!(refused.len(), 2, "{lines:#?}");
    for (line, status) in refused.iter().zip(["status=406", "status=403"]) {
        assert_fields(
            line,
            &[r#"method="tools/call""#, r#"outcome="rejected""#, status],
        );
        assert!(!line.contains("code="), "{line}");
    }
    let text = log.text();
    let notes: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("kelson::request: notification "))
        .collect();
    assert_eq!(notes.len(), 1, "{text}");
    assert!(
        notes[0].contains(r#"method="notifications/cancelled""#),
        "{text}"
    );

    // Never a credential, never a header value, never an argument.
    assert!(!text.contains(TOKEN_SECRET), "{text}");
    assert!(!text.contains(PARAM_SECRET), "{text}");
    assert!(!text.contains("arguments="), "{text}");
    assert!(
        !text.to_ascii_lowercase().contains("authorization"),
        "{text}"
    );
}

#[tokio::test]
async fn arguments_are_logged_only_when_asked_and_at_debug() {
    let bearer = format!("Bearer {TOKEN_SECRET}");
    let call = |id: i64| {
        Post::tool(id, "region", json!({"region": PARAM_SECRET}))
            .header("Mcp-Param-Region", PARAM_SECRET)
            .header("authorization", &bearer)
    };

    // Asked for, but the log is at INFO: no arguments.
    let info = Captured::default();
    {
        let _guard = info.install(tracing::Level::INFO);
        let srv = TestServer::start_with(observed_with_arguments, test_config()).await;
        srv.send(&call(1)).await.tool_text(json!(1));
    }
    let lines = info.requests();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(!info.text().contains(PARAM_SECRET), "{}", info.text());

    // Asked for and at DEBUG: the arguments are there, the credential still is not.
    let debug = Captured::default();
    {
        let _guard = debug.install(tracing::Level::DEBUG);
        let srv = TestServer::start_with(observed_with_arguments, test_config()).await;
        srv.send(&call(2)).await.tool_text(json!(2));
    }
    let lines = debug.requests();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let arguments: Value = json!({"region": PARAM_SECRET});
    assert!(
        lines[0].contains(&format!("arguments={:?}", arguments.to_string())),
        "{lines:#?}"
    );
    assert!(!debug.text().contains(TOKEN_SECRET), "{}", debug.text());
}
