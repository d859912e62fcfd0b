//! A small stdio test client: starts the real `conformance-server --stdio`, writes lines, reads and
//! records every message it sends back, and checks the invariants every message must keep.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// How long any single wait may take before the test fails: generous, because waits end as soon
/// as the awaited message arrives.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// The protocol revision every request names unless a test says otherwise.
pub const VERSION: &str = "2026-07-28";

/// The name the fixture reports in `serverInfo`.
pub const SERVER_NAME: &str = "kelson-conformance-server";

/// The `_meta` key of the server's identity on results.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The `_meta` key of a listen stream's id on its notifications.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The capabilities the conformance suite declares by default.
pub fn default_caps() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
}

/// A complete request `_meta` with the given client capabilities.
pub fn meta_with_caps(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "kelson-it", "version": "1.0.0"},
    })
}

/// The default `_meta` plus `extra` keys (a `progressToken`, a `logLevel`).
pub fn meta_plus(extra: Value) -> Value {
    let mut meta = meta_with_caps(default_caps());
    let (Value::Object(meta_map), Value::Object(extra)) = (&mut meta, extra) else {
        panic!("meta_plus takes an object");
    };
    meta_map.extend(extra);
    meta
}

/// A running fixture server and everything it has written so far.
pub struct Fixture {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::UnboundedReceiver<Value>,
    /// Every message the server wrote, in order.
    pub log: Vec<Value>,
    eof: bool,
    next_id: i64,
    /// Set once the test has sent `initialize`: the process then speaks the handshake era, whose
    /// results carry no `resultType` and whose server sends requests of its own.
    legacy: bool,
}

/// What a fixture left behind once its input was closed and it exited.
pub struct Finished {
    /// Every message the server wrote, in order.
    pub log: Vec<Value>,
    /// How the process exited.
    pub status: ExitStatus,
}

impl Fixture {
    /// Starts `conformance-server --stdio`.
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// Starts `conformance-server --stdio` with extra arguments.
    pub async fn start_with(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_conformance-server"))
            .arg("--stdio")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Logs are for people reading a failed test; the test runner captures them.
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("conformance-server starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                // A line that is not JSON is recorded as a string, which the invariants refuse.
                let value = serde_json::from_str(&line).unwrap_or(Value::String(line));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Fixture {
            child,
            stdin,
            rx,
            log: Vec::new(),
            eof: false,
            next_id: 0,
            legacy: false,
        }
    }

    /// A fresh integer request id.
    pub fn id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Writes `bytes` and a newline.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).await.expect("write to the server");
        stdin.write_all(b"\n").await.expect("write to the server");
        stdin.flush().await.expect("flush to the server");
    }

    /// Writes one message as a compact line.
    pub async fn send(&mut self, message: &Value) {
        let line = serde_json::to_vec(message).expect("message serializes");
        self.send_raw(&line).await;
    }

    /// Sends a request with id `id`; `params` get the default `_meta` unless they carry one.
    pub async fn send_request(&mut self, id: impl Into<Value>, method: &str, params: Value) {
        let mut params = match params {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => panic!("params must be an object, not {other}"),
        };
        params
            .entry("_meta")
            .or_insert_with(|| meta_with_caps(default_caps()));
        let request =
            json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params});
        self.send(&request).await;
    }

    /// Sends a request under a fresh id and returns the id.
    pub async fn request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.id();
        self.send_request(id, method, params).await;
        id
    }

    /// Sends a request under a fresh id and waits for its response.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        self.response(id).await
    }

    /// Sends a request under a fresh id and returns its response with the notifications that arrived
    /// between the request and the response.
    pub async fn call_collect(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let mark = self.log.len();
        let id = self.request(method, params).await;
        let (at, response) = self
            .wait_for(&format!("response {id}"), is_response(id))
            .await;
        let notes = self.log[mark..at]
            .iter()
            .filter(|m| m.get("method").is_some())
            .cloned()
            .collect();
        (notes, response)
    }

    /// `tools/call` of `name` with `arguments`, waiting for the response.
    pub async fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        self.call("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// The response to request `id`, waiting for it if needed.
    pub async fn response(&mut self, id: impl Into<Value>) -> Value {
        let id = id.into();
        self.wait_for(&format!("response {id}"), is_response(id))
            .await
            .1
    }

    /// The first message, received so far or later, that satisfies `pred`, with its index in the log.
    pub async fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> (usize, Value) {
        self.wait_until(what, |log| {
            log.iter().position(&pred).map(|at| (at, log[at].clone()))
        })
        .await
    }

    /// Waits until at least `n` messages satisfy `pred`.
    pub async fn wait_count(&mut self, what: &str, n: usize, pred: impl Fn(&Value) -> bool) {
        self.wait_until(what, |log| {
            (log.iter().filter(|m| pred(m)).count() >= n).then_some(())
        })
        .await;
    }

    /// Reads messages until `check` finds what it looks for in the log.
    pub async fn wait_until<T>(&mut self, what: &str, check: impl Fn(&[Value]) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            if let Some(found) = check(&self.log) {
                return found;
            }
            assert!(
                !self.eof,
                "the server closed stdout while waiting for {what}"
            );
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(message)) => self.record(message),
                Ok(None) => self.eof = true,
                Err(_) => panic!(
                    "timed out after {TIMEOUT:?} waiting for {what}; received: {:#?}",
                    self.log
                ),
            }
        }
    }

    fn record(&mut self, message: Value) {
        if self.legacy {
            check_legacy_invariants(&message);
        } else {
            check_invariants(&message);
        }
        self.log.push(message);
    }

    /// From now on, messages are checked against the handshake era's rules.
    pub fn speak_legacy(&mut self) {
        self.legacy = true;
    }

    /// Closes the server's stdin, reads everything up to end of output, and waits for it to exit.
    pub async fn close(mut self) -> Finished {
        drop(self.stdin.take());
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        while !self.eof {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(message)) => self.record(message),
                Ok(None) => self.eof = true,
                Err(_) => panic!("the server did not close stdout after its stdin was closed"),
            }
        }
        let status = tokio::time::timeout_at(deadline, self.child.wait())
            .await
            .expect("the server exits once its input is closed")
            .expect("wait for the server");
        Finished {
            log: self.log,
            status,
        }
    }

    /// Closes the server and checks that it exited with status 0.
    pub async fn finish(self) -> Vec<Value> {
        let finished = self.close().await;
        assert!(
            finished.status.success(),
            "conformance-server exited with {}",
            finished.status
        );
        finished.log
    }
}

/// Matches the response (result or error) to request `id`, with the id's JSON type.
pub fn is_response(id: impl Into<Value>) -> impl Fn(&Value) -> bool {
    let id = id.into();
    move |m| m.get("method").is_none() && m.get("id") == Some(&id)
}

/// Matches a notification of `method` on the listen stream `id`.
pub fn on_stream(method: &'static str, id: impl Into<Value>) -> impl Fn(&Value) -> bool {
    let id = id.into();
    move |m| m["method"] == method && m["params"]["_meta"][SUBSCRIPTION_ID] == id
}

/// The result of a response, failing the test with the response if it is an error.
#[track_caller]
pub fn result(response: &Value) -> &Value {
    assert!(
        response.get("result").is_some(),
        "expected a result, got {response}"
    );
    &response["result"]
}

/// The error of a response with `code`, failing the test otherwise.
#[track_caller]
pub fn error(response: &Value, code: i64) -> &Value {
    assert_eq!(
        response["error"]["code"], code,
        "expected error {code}, got {response}"
    );
    &response["error"]
}

/// The texts of a `CallToolResult`'s text blocks.
#[track_caller]
pub fn texts(response: &Value) -> Vec<String> {
    result(response)["content"]
        .as_array()
        .expect("content is an array")
        .iter()
        .filter(|b| b["type"] == "text")
        .map(|b| b["text"].as_str().expect("text").to_owned())
        .collect()
}

/// The one text block of a successful `CallToolResult`.
#[track_caller]
pub fn text(response: &Value) -> String {
    let r = result(response);
    assert_eq!(r["resultType"], "complete", "{response}");
    assert_ne!(r["isError"], true, "unexpected tool error: {response}");
    let texts = texts(response);
    assert_eq!(texts.len(), 1, "{response}");
    texts.into_iter().next().expect("one text")
}

/// What every message from a 2026-07-28 server must look like, whatever the test.
#[track_caller]
/// The handshake era: JSON-RPC 2.0, and results without the 2026-07-28 `resultType`.
fn check_legacy_invariants(m: &Value) {
    assert_eq!(m["jsonrpc"], "2.0", "{m}");
    if let Some(result) = m.get("result")
        && m.get("method").is_none()
    {
        let modern = result.get("resultType").is_some();
        let discover = result.get("supportedVersions").is_some();
        // Only answers to requests with the modern envelope carry it.
        assert!(
            !modern || discover || result["_meta"][SERVER_INFO].is_object(),
            "{m}"
        );
    }
}

fn check_invariants(m: &Value) {
    let Some(obj) = m.as_object() else {
        panic!("the server wrote something that is not a JSON object: {m}");
    };
    assert_eq!(obj.get("jsonrpc"), Some(&json!("2.0")), "{m}");
    // spec 2026-07-28 basic: servers never send JSON-RPC requests.
    assert!(
        !(obj.contains_key("method") && obj.contains_key("id")),
        "the server sent a request: {m}"
    );
    if let Some(method) = obj.get("method") {
        let method = method.as_str().expect("method is a string");
        assert!(
            method.starts_with("notifications/"),
            "unexpected server message {m}"
        );
        assert!(obj.get("params").is_some_and(Value::is_object), "{m}");
        return;
    }
    if let Some(id) = obj.get("id") {
        assert!(id.is_string() || id.is_i64(), "bad id in {m}");
    }
    match (obj.get("result"), obj.get("error")) {
        (Some(result), None) => {
            // spec 2026-07-28 basic: every result carries resultType; serverInfo is on every result.
            let kind = result["resultType"].as_str();
            assert!(
                matches!(kind, Some("complete" | "input_required")),
                "bad resultType in {m}"
            );
            let info = &result["_meta"][SERVER_INFO];
            assert_eq!(info["name"], SERVER_NAME, "no serverInfo in {m}");
            assert!(info["version"].is_string(), "no serverInfo version in {m}");
            assert!(obj.contains_key("id"), "a result without an id: {m}");
        }
        (None, Some(error)) => {
            assert!(error["code"].is_i64(), "{m}");
            assert!(error["message"].is_string(), "{m}");
        }
        _ => panic!("neither a result nor an error, nor a notification: {m}"),
    }
}
