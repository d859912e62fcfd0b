//! The operator's view through the binary: `GET /metrics` on the MCP listener or on an address of
//! its own (over HTTP and beside stdio), one log line per request on stderr in text and JSON, and
//! no secret in them.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{
    HttpReply, PATIENCE, Serve, TempDir, http, meta, rpc_headers, rpc_message, url_after,
    wait_until,
};
use crate::harness::command;

/// Sent as `Authorization`; must never reach the log.
const TOKEN_SECRET: &str = "tok-3f9a61c2-never-logged";
/// Sent as an `Mcp-Param-*` value; must never reach the log.
const PARAM_SECRET: &str = "param-8d0e4b7a-never-logged";
/// In a tool's arguments; logged only with --log-arguments.
const ARGUMENT_MARK: &str = "no_such_table_7c1d";

/// POSTs a `tools/call` of `tool` with `arguments` and request id `id`, with `extra` headers.
fn call_tool(
    url: &str,
    id: u64,
    tool: &str,
    arguments: Value,
    extra: &[(&str, &str)],
) -> HttpReply {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta(false)},
    })
    .to_string();
    let mut headers = rpc_headers("tools/call", Some(tool));
    // An extra header replaces a standard one of the same name.
    headers.retain(|(name, _)| !extra.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)));
    headers.extend_from_slice(extra);
    http(url, "POST", &headers, &body)
}

/// A tool call that must come back with a JSON-RPC message (status 200); the message.
#[track_caller]
fn message(reply: &HttpReply) -> Value {
    assert_eq!(reply.status, 200, "{}\n{}", reply.head, reply.body);
    rpc_message(reply)
}

/// The value of one series in a Prometheus text exposition; 0 when it is absent.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().expect("a number"))
        .unwrap_or(0.0)
}

fn requests(text: &str, method: &str, outcome: &str) -> f64 {
    sample(
        text,
        &format!(r#"mcp_requests_total{{method="{method}",outcome="{outcome}",era="modern"}}"#),
    )
}

/// `GET url`, which must answer metrics in the Prometheus text format.
#[track_caller]
fn scrape(url: &str) -> String {
    let reply = http(url, "GET", &[], "");
    assert_eq!(reply.status, 200, "{}\n{}", reply.head, reply.body);
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8"),
        "{}",
        reply.head
    );
    assert!(
        reply.body.contains("# TYPE mcp_requests_total counter"),
        "{}",
        reply.body
    );
    reply.body
}

/// `http://HOST:PORT/metrics` on the listener of an MCP endpoint URL.
fn on_listener(mcp_url: &str, path: &str) -> String {
    let rest = mcp_url.strip_prefix("http://").unwrap();
    format!("http://{}{path}", &rest[..rest.find('/').unwrap()])
}

/// A tool error (`isError`), a JSON-RPC error and an HTTP refusal, the first two with the
/// same method, land in different series; the scrape sits behind the Host/Origin policy. Tool
/// arguments are not logged by default.
#[test]
fn metrics_count_a_tool_error_apart_from_a_protocol_error_and_an_http_refusal() {
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &["--metrics"]);
    let metrics_url = on_listener(&serve.url, "/metrics");
    assert_eq!(serve.metrics_url().as_deref(), Some(metrics_url.as_str()));
    assert_eq!(
        requests(&scrape(&metrics_url), "tools/call", "success"),
        0.0
    );

    let ok = message(&call_tool(&serve.url, 1, "list_tables", json!({}), &[]));
    assert!(ok["result"]["isError"] != json!(true), "{ok}");
    // The tool ran and reported a failure: a result with isError.
    let failed = message(&call_tool(
        &serve.url,
        2,
        "query",
        json!({"sql": format!("select * from {ARGUMENT_MARK}")}),
        &[],
    ));
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    // An unknown tool is a JSON-RPC error (-32602), not a tool error.
    let unknown = message(&call_tool(&serve.url, 3, "no_such_tool", json!({}), &[]));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // Refused at the HTTP level, before the body is read: 406.
    let refused = call_tool(
        &serve.url,
        4,
        "list_tables",
        json!({}),
        &[("Accept", "text/plain")],
    );
    assert_eq!(refused.status, 406, "{}", refused.head);

    let text = scrape(&metrics_url);
    assert_eq!(requests(&text, "tools/call", "success"), 1.0, "{text}");
    assert_eq!(requests(&text, "tools/call", "tool_error"), 1.0, "{text}");
    assert_eq!(requests(&text, "tools/call", "error"), 1.0, "{text}");
    assert_eq!(requests(&text, "tools/call", "rejected"), 1.0, "{text}");
    assert_eq!(
        sample(&text, r#"mcp_tool_errors_total{tool="query"}"#),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"mcp_jsonrpc_errors_total{code="-32602"}"#),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"mcp_http_rejections_total{status="406"}"#),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"mcp_request_duration_seconds_count{method="tools/call",era="modern"}"#
        ),
        4.0,
        "{text}"
    );
    // An unknown tool's name never becomes a label.
    assert!(!text.contains("no_such_tool"), "{text}");

    // The same Host/Origin policy as the MCP endpoint; GET only.
    let rebinding = http(&metrics_url, "GET", &[("Host", "evil.example")], "");
    assert_eq!(rebinding.status, 403, "{}", rebinding.head);
    let foreign = http(
        &metrics_url,
        "GET",
        &[("Origin", "http://evil.example")],
        "",
    );
    assert_eq!(foreign.status, 403, "{}", foreign.head);
    assert_eq!(http(&metrics_url, "POST", &[], "").status, 405);

    // Without --log-arguments, no argument reaches the log.
    wait_until("the log has the failed call", || {
        serve.log().contains(r#"outcome="tool_error""#)
    });
    assert!(!serve.log().contains(ARGUMENT_MARK), "{}", serve.log());
}

/// `--metrics-addr`: the metrics on a listener of their own (at `--metrics-path`), none on the
/// MCP listener; both listeners stop on SIGTERM.
#[test]
fn metrics_on_an_address_of_their_own_stop_with_the_server() {
    let scratch = TempDir::new();
    let mut serve = Serve::start(
        &scratch.join("data"),
        &["--metrics-addr", "127.0.0.1:0", "--metrics-path", "/stats"],
    );
    let metrics_url = serve.metrics_url().expect("the metrics address is logged");
    assert!(metrics_url.ends_with("/stats"), "{metrics_url}");
    assert_ne!(on_listener(&metrics_url, ""), on_listener(&serve.url, ""));

    let failed = message(&call_tool(
        &serve.url,
        1,
        "query",
        json!({"sql": "select * from nowhere"}),
        &[],
    ));
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let text = scrape(&metrics_url);
    assert_eq!(requests(&text, "tools/call", "tool_error"), 1.0, "{text}");

    // The MCP listener serves no metrics, the metrics listener nothing else.
    for path in ["/metrics", "/stats"] {
        let reply = http(&on_listener(&serve.url, path), "GET", &[], "");
        assert_eq!(reply.status, 404, "{path}: {}", reply.head);
    }
    assert_eq!(
        http(&on_listener(&metrics_url, "/mcp"), "GET", &[], "").status,
        404
    );
    assert_eq!(
        http(&metrics_url, "GET", &[("Host", "evil.example")], "").status,
        403
    );

    let status = serve.stop().expect("the server stops on SIGTERM");
    assert!(status.success(), "{status:?}\n{}", serve.log());
    let authority = metrics_url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .unwrap();
    assert!(
        std::net::TcpStream::connect(authority).is_err(),
        "the metrics listener is closed"
    );
}

/// A child process killed when dropped, so a failed assertion does not leave it running.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn line_reader(read: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(read).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// `--stdio --metrics-addr`: requests on stdin are counted and scraped over HTTP, and the metrics
/// listener stops when the input ends.
#[test]
fn metrics_beside_stdio_stop_at_the_end_of_input() {
    let scratch = TempDir::new();
    let mut child = command(&["serve", "--stdio", "--metrics-addr", "127.0.0.1:0"])
        .env("KELSON_DATA_DIR", scratch.join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kelson serve starts");
    let stdout = line_reader(child.stdout.take().unwrap());
    let stderr = line_reader(child.stderr.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let mut child = Killed(child);

    let mut log = Vec::new();
    let metrics_url = loop {
        let line = stderr
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|e| panic!("no metrics address logged ({e}): {log:#?}"));
        if let Some(url) = url_after(&line, "serving metrics on ") {
            break url;
        }
        log.push(line);
    };

    for (id, sql) in [(1, "select 1"), (2, "select * from nowhere")] {
        let request = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "query", "arguments": {"sql": sql}, "_meta": meta(false)},
        });
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        let line = stdout.recv_timeout(PATIENCE).expect("a response on stdout");
        let response: Value = serde_json::from_str(&line).expect("a JSON-RPC response");
        assert_eq!(response["id"], id, "{response}");
    }
    let text = scrape(&metrics_url);
    assert_eq!(requests(&text, "tools/call", "success"), 1.0, "{text}");
    assert_eq!(requests(&text, "tools/call", "tool_error"), 1.0, "{text}");

    // The end of input stops the server, and the metrics listener with it.
    drop(stdin);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "kelson serve --stdio did not exit at the end of its input"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let authority = metrics_url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .unwrap();
    assert!(std::net::TcpStream::connect(authority).is_err());
}

/// The request lines of a text log: `kelson::request` events with the message `request`.
fn request_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("kelson::request: request "))
        .collect()
}

#[track_caller]
fn line_for<'a>(lines: &[&'a str], id: &str) -> &'a str {
    let needle = format!(" id={id} ");
    let found: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.contains(&needle))
        .collect();
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

/// One line per request with its id, method, tool or URI, outcome and duration, at the most
/// verbose log level, with arguments asked for: the `Authorization` and `Mcp-Param-*` values
/// sent never appear, the arguments do.
#[test]
fn one_log_line_per_request_and_no_header_value_in_it() {
    let scratch = TempDir::new();
    let serve = Serve::start_with_env(
        &scratch.join("data"),
        &["--http", "127.0.0.1:0", "--log-arguments"],
        &[("KELSON_LOG", "debug")],
    );
    let bearer = format!("Bearer {TOKEN_SECRET}");
    let secrets = [
        ("Authorization", bearer.as_str()),
        ("Mcp-Param-Tenant", PARAM_SECRET),
        ("Mcp-Param-Sql", PARAM_SECRET),
    ];

    message(&call_tool(
        &serve.url,
        11,
        "list_tables",
        json!({}),
        &secrets,
    ));
    message(&call_tool(
        &serve.url,
        12,
        "query",
        json!({"sql": format!("select * from {ARGUMENT_MARK}")}),
        &secrets,
    ));
    message(&call_tool(
        &serve.url,
        13,
        "no_such_tool",
        json!({}),
        &secrets,
    ));
    let read = json!({
        "jsonrpc": "2.0", "id": 14, "method": "resources/read",
        "params": {"uri": "sql://sample/main/orders", "_meta": meta(false)},
    })
    .to_string();
    let mut headers = rpc_headers("resources/read", Some("sql://sample/main/orders"));
    headers.extend_from_slice(&secrets);
    let reply = message(&http(&serve.url, "POST", &headers, &read));
    assert!(reply.get("result").is_some(), "{reply}");
    let refused = call_tool(
        &serve.url,
        15,
        "list_tables",
        json!({}),
        &[("Accept", "text/plain"), secrets[0], secrets[1]],
    );
    assert_eq!(refused.status, 406);

    wait_until("five request lines are logged", || {
        request_lines(&serve.log()).len() >= 5
    });
    let log = serve.log();
    let lines = request_lines(&log);
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert_fields(
        line_for(&lines, "11"),
        &[
            r#"method="tools/call""#,
            r#"tool="list_tables""#,
            r#"outcome="success""#,
        ],
    );
    let failed = line_for(&lines, "12");
    assert_fields(failed, &[r#"tool="query""#, r#"outcome="tool_error""#]);
    // Asked for, at DEBUG: the arguments.
    assert!(
        failed.contains("arguments=") && failed.contains(ARGUMENT_MARK),
        "{failed}"
    );
    assert_fields(
        line_for(&lines, "13"),
        &[
            r#"tool="no_such_tool""#,
            r#"outcome="error""#,
            "code=-32602",
        ],
    );
    assert_fields(
        line_for(&lines, "14"),
        &[
            r#"method="resources/read""#,
            r#"uri="sql://sample/main/orders""#,
            r#"outcome="success""#,
        ],
    );
    // Refused before the body was read: no id, the method from its header, the status.
    let rejected: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains(r#"outcome="rejected""#))
        .collect();
    assert_eq!(rejected.len(), 1, "{lines:#?}");
    assert_fields(rejected[0], &["status=406", r#"method="tools/call""#]);

    // Nowhere in the whole log, at DEBUG from every crate, is a header value.
    for secret in [TOKEN_SECRET, PARAM_SECRET] {
        assert!(!log.contains(secret), "{secret} logged:\n{log}");
    }
}

/// `--log-format json`: every line on stderr is a JSON object; a request's has its fields at the
/// top level.
#[test]
fn json_log_lines_parse() {
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &["--log-format", "json"]);
    message(&call_tool(&serve.url, 21, "list_tables", json!({}), &[]));
    message(&call_tool(&serve.url, 22, "no_such_tool", json!({}), &[]));
    wait_until("two request lines are logged", || {
        serve.log().matches(r#""message":"request""#).count() >= 2
    });
    let log = serve.log();
    let objects: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert!(objects.iter().all(Value::is_object), "{log}");
    let request = |id: &str| {
        let found: Vec<&Value> = objects
            .iter()
            .filter(|o| o["message"] == "request" && o["id"] == id)
            .collect();
        assert_eq!(found.len(), 1, "one line for id {id}:\n{log}");
        found[0].clone()
    };
    let ok = request("21");
    assert_eq!(ok["level"], "INFO");
    assert_eq!(ok["target"], "kelson::request");
    assert_eq!(ok["transport"], "http");
    assert_eq!(ok["method"], "tools/call");
    assert_eq!(ok["tool"], "list_tables");
    assert_eq!(ok["outcome"], "success");
    assert_eq!(ok["era"], "modern");
    assert!(ok.get("legacy_version").is_none(), "{ok}");
    assert!(ok["duration_us"].is_u64(), "{ok}");
    assert!(ok["timestamp"].is_string(), "{ok}");
    let error = request("22");
    assert_eq!(error["outcome"], "error");
    assert_eq!(error["code"], -32602);
}

/// A legacy session's requests (the `kelson` client forced to the handshake era) are logged and
/// counted with their era and revision, apart from the modern ones; a request without the modern
/// envelope and without a session counts as legacy with no revision.
#[test]
fn a_legacy_sessions_requests_show_their_era_in_the_log_and_the_metrics() {
    let scratch = TempDir::new();
    let serve = Serve::start(&scratch.join("data"), &["--metrics"]);
    let metrics_url = on_listener(&serve.url, "/metrics");
    serve
        .run(&["call", "list_tables", "--era", "legacy"], "")
        .expect_code(0);
    serve.run(&["call", "list_tables"], "").expect_code(0);
    let orphan = json!({"jsonrpc": "2.0", "id": 31, "method": "tools/list", "params": {}});
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let reply = http(&serve.url, "POST", &headers, &orphan.to_string());
    assert_eq!(reply.status, 400, "{}\n{}", reply.head, reply.body);
    // The same without `_meta` but naming the modern revision in its header: a modern client's
    // malformed request.
    let malformed = json!({"jsonrpc": "2.0", "id": 32, "method": "tools/list", "params": {}});
    let mut modern_headers = headers.to_vec();
    modern_headers.push(("MCP-Protocol-Version", "2026-07-28"));
    let reply = http(&serve.url, "POST", &modern_headers, &malformed.to_string());
    assert_eq!(reply.status, 400, "{}\n{}", reply.head, reply.body);

    let text = scrape(&metrics_url);
    let series = |method: &str, era: &str| {
        sample(
            &text,
            &format!(r#"mcp_requests_total{{method="{method}",outcome="success",era="{era}"}}"#),
        )
    };
    assert_eq!(series("tools/call", "legacy"), 1.0, "{text}");
    assert_eq!(series("tools/call", "modern"), 1.0, "{text}");
    // initialize is a method of the handshake era only.
    assert_eq!(series("other", "legacy"), 1.0, "{text}");
    assert_eq!(series("other", "modern"), 0.0, "{text}");
    let list_errors = |era: &str| {
        sample(
            &text,
            &format!(r#"mcp_requests_total{{method="tools/list",outcome="error",era="{era}"}}"#),
        )
    };
    assert_eq!(list_errors("legacy"), 1.0, "{text}");
    assert_eq!(list_errors("modern"), 1.0, "{text}");
    assert_eq!(
        sample(
            &text,
            r#"mcp_request_duration_seconds_count{method="tools/call",era="legacy"}"#
        ),
        1.0,
        "{text}"
    );
    // Every legacy request of the session is counted under its revision.
    let legacy: f64 = text
        .lines()
        .filter(|l| l.starts_with("mcp_requests_total{") && l.contains(r#"era="legacy""#))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum();
    let session = sample(&text, r#"mcp_legacy_requests_total{version="2025-11-25"}"#);
    let none = sample(&text, r#"mcp_legacy_requests_total{version="none"}"#);
    assert!(session >= 3.0, "initialize, tools/list, tools/call: {text}");
    assert_eq!(none, 1.0, "{text}");
    assert_eq!(legacy, session + none, "{text}");
    assert_eq!(
        sample(&text, r#"mcp_legacy_requests_total{version="2025-06-18"}"#),
        0.0
    );

    wait_until("the log has both calls and the orphan", || {
        let log = serve.log();
        request_lines(&log)
            .iter()
            .filter(|l| l.contains(r#"method="tools/call""#))
            .count()
            >= 2
            && log.contains(" id=31 ")
    });
    let log = serve.log();
    let lines = request_lines(&log);
    let calls: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains(r#"method="tools/call""#))
        .collect();
    assert_eq!(calls.len(), 2, "{lines:#?}");
    let (legacy_calls, modern_calls): (Vec<&&&str>, Vec<&&&str>) =
        calls.iter().partition(|l| l.contains(r#"era="legacy""#));
    assert_eq!(legacy_calls.len(), 1, "{lines:#?}");
    assert!(
        legacy_calls[0].contains(r#"legacy_version="2025-11-25""#)
            && legacy_calls[0].contains(r#"tool="list_tables""#),
        "{}",
        legacy_calls[0]
    );
    assert!(
        modern_calls[0].contains(r#"era="modern""#) && !modern_calls[0].contains("legacy_version"),
        "{}",
        modern_calls[0]
    );
    let orphan = line_for(&lines, "31");
    assert!(
        orphan.contains(r#"era="legacy""#) && !orphan.contains("legacy_version"),
        "{orphan}"
    );
}
