//! `kelson serve --otlp-endpoint`: a span per request that continues the client's W3C trace context
//! (from `_meta` or from the HTTP headers), with the SQL statement as a child span, posted as
//! OTLP/JSON to a collector (here one the test runs, which records what it is sent).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{Serve, TempDir, http, meta, rpc_headers, rpc_message};

/// Accepts OTLP/HTTP posts and keeps every span it is sent.
struct Collector {
    url: String,
    spans: Arc<Mutex<Vec<Value>>>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let spans = Arc::new(Mutex::new(Vec::new()));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (kept, seen) = (spans.clone(), paths.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let mut reader = BufReader::new(stream);
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    continue;
                }
                seen.lock().unwrap().push(request_line.trim().to_owned());
                if let Ok(export) = serde_json::from_slice::<Value>(&body) {
                    for rs in export["resourceSpans"].as_array().into_iter().flatten() {
                        for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                            for span in ss["spans"].as_array().into_iter().flatten() {
                                let mut span = span.clone();
                                span["resource"] = rs["resource"].clone();
                                kept.lock().unwrap().push(span);
                            }
                        }
                    }
                }
                let mut stream = reader.into_inner();
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                );
            }
        });
        Collector { url, spans, paths }
    }

    /// The spans of `trace`, once there are at least `n` (waiting up to 10 s).
    fn trace(&self, trace: &str, n: usize) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let spans: Vec<Value> = self
                .spans
                .lock()
                .unwrap()
                .iter()
                .filter(|s| s["traceId"] == trace)
                .cloned()
                .collect();
            if spans.len() >= n {
                return spans;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "expected {n} spans of trace {trace}, got {spans:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn attribute(span: &Value, key: &str) -> Option<Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| a["value"].clone())
}

fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no span {name} in {spans:?}"))
}

fn call(url: &str, sql: &str, traceparent_in_meta: Option<&str>, header: Option<&str>) -> Value {
    let mut params = json!({"name": "query", "arguments": {"sql": sql}, "_meta": meta(false)});
    if let Some(parent) = traceparent_in_meta {
        params["_meta"]["traceparent"] = parent.into();
        params["_meta"]["tracestate"] = "vendor=1".into();
    }
    let body = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": params});
    let mut headers = rpc_headers("tools/call", Some("query"));
    if let Some(parent) = header {
        headers.push(("traceparent", parent));
    }
    rpc_message(&http(url, "POST", &headers, &body.to_string()))
}

#[test]
fn requests_and_statements_become_spans_of_the_callers_trace() {
    let collector = Collector::start();
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &["--otlp-endpoint", &collector.url]);
    assert!(serve.log().contains("sending traces to"), "{}", serve.log());

    // The context in `_meta`.
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let answer = call(
        &serve.url,
        "SELECT count(*) FROM products",
        Some(&format!("00-{trace}-{parent}-01")),
        None,
    );
    assert!(
        answer["result"]["structuredContent"].is_object(),
        "{answer}"
    );
    let spans = collector.trace(trace, 2);
    let request = named(&spans, "tools/call query");
    assert_eq!(request["kind"], 2);
    assert_eq!(request["parentSpanId"], parent);
    assert_eq!(request["traceState"], "vendor=1");
    assert_eq!(request["status"]["code"], 0);
    assert_eq!(
        attribute(request, "jsonrpc.request.id"),
        Some(json!({"stringValue": "41"}))
    );
    assert_eq!(
        attribute(request, "mcp.method.name"),
        Some(json!({"stringValue": "tools/call"}))
    );
    assert_eq!(
        attribute(request, "gen_ai.tool.name"),
        Some(json!({"stringValue": "query"}))
    );
    assert_eq!(
        attribute(request, "mcp.protocol.version"),
        Some(json!({"stringValue": "2026-07-28"}))
    );
    let statement = named(&spans, "sql.statement");
    assert_eq!(statement["kind"], 3);
    assert_eq!(statement["parentSpanId"], request["spanId"]);
    assert_eq!(
        attribute(statement, "db.system.name"),
        Some(json!({"stringValue": "sqlite"}))
    );
    assert_eq!(
        attribute(statement, "db.namespace"),
        Some(json!({"stringValue": "sample"}))
    );
    // No SQL text without --log-arguments.
    assert_eq!(attribute(statement, "db.query.text"), None);
    let resource = &request["resource"]["attributes"];
    assert!(
        resource
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["key"] == "service.name"),
        "{resource}"
    );
    assert!(
        collector.paths.lock().unwrap()[0].starts_with("POST /v1/traces "),
        "{:?}",
        collector.paths.lock().unwrap()
    );

    // The context in the HTTP headers; a failing statement.
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let parent = "b7ad6b7169203331";
    let answer = call(
        &serve.url,
        "SELECT * FROM no_such_table",
        None,
        Some(&format!("00-{trace}-{parent}-01")),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let spans = collector.trace(trace, 2);
    let request = named(&spans, "tools/call query");
    assert_eq!(request["parentSpanId"], parent);
    assert_eq!(request["status"]["code"], 2);
    assert_eq!(
        attribute(request, "error.type"),
        Some(json!({"stringValue": "tool_error"}))
    );
    let statement = named(&spans, "sql.statement");
    assert_eq!(statement["parentSpanId"], request["spanId"]);
    assert_eq!(
        attribute(statement, "error.type"),
        Some(json!({"stringValue": "sql_error"}))
    );

    // Without a context, a request starts a trace of its own.
    let before = collector.spans.lock().unwrap().len();
    call(&serve.url, "SELECT 1", None, None);
    let start = Instant::now();
    let fresh = loop {
        let spans = collector.spans.lock().unwrap().clone();
        if let Some(span) = spans[before..]
            .iter()
            .find(|s| s["name"] == "tools/call query")
        {
            break span.clone();
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{spans:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(fresh.get("parentSpanId").is_none(), "{fresh}");
    assert_eq!(fresh["traceId"].as_str().unwrap().len(), 32);
}

#[test]
fn statement_text_is_in_the_span_only_with_log_arguments() {
    let collector = Collector::start();
    let scratch = TempDir::new();
    let serve = Serve::start(
        &scratch.join("data"),
        &["--otlp-endpoint", &collector.url, "--log-arguments"],
    );
    let trace = "11111111111111111111111111111111";
    call(
        &serve.url,
        "SELECT 42 AS answer",
        Some(&format!("00-{trace}-2222222222222222-01")),
        None,
    );
    let spans = collector.trace(trace, 2);
    assert_eq!(
        attribute(named(&spans, "sql.statement"), "db.query.text"),
        Some(json!({"stringValue": "SELECT 42 AS answer"}))
    );
}

#[test]
fn a_bad_endpoint_is_refused_and_a_missing_collector_costs_no_request() {
    let scratch = TempDir::new();
    let refused =
        super::support::serve_refused(&scratch.join("data"), &["--otlp-endpoint", "4318"]);
    assert!(
        refused
            .stderr
            .contains("--otlp-endpoint: expected the collector's OTLP/HTTP base URL"),
        "{}",
        refused.stderr
    );
    // Nothing listens there: requests are answered all the same, and the failure is logged.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let serve = Serve::start(
        &scratch.join("data2"),
        &["--otlp-endpoint", &format!("http://127.0.0.1:{port}")],
    );
    for _ in 0..3 {
        let answer = call(&serve.url, "SELECT 1", None, None);
        assert!(
            answer["result"]["structuredContent"].is_object(),
            "{answer}"
        );
    }
    let start = Instant::now();
    while !serve.log().contains("could not export traces") {
        assert!(start.elapsed() < Duration::from_secs(10), "{}", serve.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}
