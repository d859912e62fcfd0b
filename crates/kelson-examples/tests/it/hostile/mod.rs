//! Hostile input, in one place (issue 15): every case is sent to the conformance fixture over
//! stdio and over Streamable HTTP, its exact answer is asserted (JSON-RPC code, whether the `id` is
//! echoed, HTTP status, whether the connection survives), and then an ordinary `tools/call` must
//! still be served on the same pipe, or on the same HTTP connection unless the server said it
//! closes it. HTTP-only cases (header bytes, sizes, Host/Origin, a trickled body, legacy session
//! ids), tool registration with hostile schemas, and hostile `requestState` follow.
//!
//! Where the spec leaves the answer open, the test pins our documented choice: an error for a
//! message whose id cannot be read has no `id` member at all (spec 2026-07-28 basic/index lets it
//! be omitted), and -32700/-32600 are 400 on HTTP (the SDKs' convention; see
//! `kelson-http/src/server/mod.rs`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use kelson_server::schema::SchemaError;
use kelson_server::stdio::{StdioConfig, serve_stream};
use kelson_server::{BuildError, Principal, RequestContext, Server, ServerConfig, ToolResult};
use kelson_types::{
    BooleanSchema, CallToolResult, ElicitRequestFormParams, JsonObject, RequestedSchema, Tool,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::client::{Fixture, TIMEOUT, VERSION, default_caps, is_response, meta_with_caps, text};

/// What `test_simple_text` answers: the follow-up call after every case.
const SIMPLE: &str = "This is a simple text response for testing.";
/// The fixture's default limit on a stdio line and on an HTTP body (`--max-message`).
const LIMIT: usize = 4 * 1024 * 1024;

// ---- The cases sent over both transports ----

/// The error a hostile message must get: its code, the id it echoes (`None`: no `id` member at
/// all, not even `null`), and words its message must contain.
#[derive(Clone)]
struct Expect {
    code: i64,
    id: Option<Value>,
    says: &'static str,
}

/// One hostile message, as one stdio line or one HTTP body, and its answers on each transport.
struct Case {
    what: &'static str,
    bytes: Vec<u8>,
    /// The MCP headers an HTTP client sends with it, when not those of `test_simple_text`
    /// (`None`: without that header).
    headers: Vec<(&'static str, Option<String>)>,
    /// `None`: stdio gives no answer at all (the message is not a request).
    stdio: Option<Expect>,
    http_status: u16,
    http: Expect,
    /// Whether the HTTP server closes the connection after answering.
    http_closes: bool,
}

impl Case {
    /// The same error on both transports, with 400 on HTTP and the connection kept.
    fn new(what: &'static str, bytes: impl Into<Vec<u8>>, code: i64, id: Option<Value>) -> Self {
        let expect = Expect { code, id, says: "" };
        Case {
            what,
            bytes: bytes.into(),
            headers: Vec::new(),
            stdio: Some(expect.clone()),
            http_status: 400,
            http: expect,
            http_closes: false,
        }
    }

    fn json(what: &'static str, message: &Value, code: i64, id: Option<Value>) -> Self {
        Self::new(what, serde_json::to_vec(message).unwrap(), code, id)
    }

    fn status(mut self, status: u16) -> Self {
        self.http_status = status;
        self
    }

    fn says(mut self, words: &'static str) -> Self {
        self.http.says = words;
        if let Some(e) = &mut self.stdio {
            e.says = words;
        }
        self
    }

    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, Some(value.to_owned())));
        self
    }

    fn without(mut self, name: &'static str) -> Self {
        self.headers.push((name, None));
        self
    }

    /// The message is not a request: stdio does not answer it, HTTP refuses it with `code`.
    fn unanswered_on_stdio(mut self) -> Self {
        self.stdio = None;
        self
    }

    fn closes(mut self) -> Self {
        self.http_closes = true;
        self
    }
}

#[track_caller]
fn check_error(what: &str, m: &Value, e: &Expect) {
    assert_eq!(m["error"]["code"], e.code, "{what}: {m}");
    match &e.id {
        None => assert!(m.get("id").is_none(), "{what}: no id member expected: {m}"),
        Some(id) => assert_eq!(m.get("id"), Some(id), "{what}: the id is echoed: {m}"),
    }
    let message = m["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(e.says),
        "{what}: {message:?} lacks {:?}",
        e.says
    );
}

/// A well-formed `tools/call` request (the default envelope) with `params` added.
fn call(id: impl Into<Value>, name: &str, extra: Value) -> Value {
    let mut params = json!({"_meta": meta_with_caps(default_caps()), "name": name});
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({"jsonrpc": "2.0", "id": id.into(), "method": "tools/call", "params": params})
}

/// A request of `method` with `params` as given (no envelope added).
fn raw(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Sends every case on one stdio pipe, each followed by an ordinary call on the same pipe.
async fn run_stdio(cases: &[Case]) {
    let mut server = Fixture::start().await;
    run_stdio_on(&mut server, cases).await;
    let log = server.finish().await;
    // Nothing hostile slipped through as a request of its own: every result is a follow-up's.
    let results = log.iter().filter(|m| m.get("result").is_some()).count();
    assert_eq!(results, cases.len(), "{log:#?}");
}

async fn run_stdio_on(server: &mut Fixture, cases: &[Case]) {
    for case in cases {
        let mark = server.log.len();
        server.send_raw(&case.bytes).await;
        let follow = server
            .request("tools/call", json!({"name": "test_simple_text"}))
            .await;
        let answered = usize::from(case.stdio.is_some());
        let found = server
            .wait_until(case.what, |log| {
                let others: Vec<Value> = log[mark..]
                    .iter()
                    .filter(|m| !is_response(follow)(m))
                    .cloned()
                    .collect();
                (log[mark..].iter().any(is_response(follow)) && others.len() >= answered)
                    .then_some(others)
            })
            .await;
        match &case.stdio {
            None => assert!(found.is_empty(), "{}: answered {found:?}", case.what),
            Some(expect) => {
                assert_eq!(found.len(), 1, "{}: {found:?}", case.what);
                check_error(case.what, &found[0], expect);
            }
        }
        assert_eq!(
            text(&server.response(follow).await),
            SIMPLE,
            "{}",
            case.what
        );
    }
}

/// Sends every case over HTTP/1.1 on one kept-alive connection (a new one after the server
/// closes it), each followed by an ordinary call.
async fn run_http(cases: &[Case]) {
    let server = HttpFixture::start().await;
    let mut conn = server.connect().await;
    for (n, case) in cases.iter().enumerate() {
        let mut post = Post::mcp("tools/call", Some("test_simple_text"), case.bytes.clone());
        for (name, value) in &case.headers {
            post = match value {
                Some(value) => post.header(name, value.as_bytes()),
                None => post.without(name),
            };
        }
        let reply = conn.exchange(&post.bytes(&server.authority())).await;
        assert_eq!(reply.status, case.http_status, "{}: {reply:?}", case.what);
        check_error(case.what, &reply.json(), &case.http);
        assert_eq!(reply.closes(), case.http_closes, "{}: {reply:?}", case.what);
        if reply.closes() {
            conn.expect_closed().await;
            conn = server.connect().await;
        }
        let follow = conn.exchange(&server.simple_call(n)).await;
        assert_eq!(
            follow.status, 200,
            "{}: the next call: {follow:?}",
            case.what
        );
        assert_eq!(text(&follow.json()), SIMPLE, "{}", case.what);
    }
}

async fn both(cases: Vec<Case>) {
    tokio::join!(run_stdio(&cases), run_http(&cases));
}

// ---- HTTP: the fixture binary, and a raw HTTP/1.1 client ----

/// `conformance-server --http 127.0.0.1:PORT`, killed when dropped.
struct HttpFixture {
    addr: SocketAddr,
    _child: Child,
}

impl HttpFixture {
    async fn start() -> Self {
        // The binary takes an address, not a listener: pick a free port, and try another if
        // someone else takes it first.
        for _ in 0..5 {
            let addr = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port");
            let mut child = Command::new(env!("CARGO_BIN_EXE_conformance-server"))
                .args(["--http", &addr.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .expect("conformance-server starts");
            let deadline = Instant::now() + TIMEOUT;
            while Instant::now() < deadline {
                if TcpStream::connect(addr).await.is_ok() {
                    return HttpFixture {
                        addr,
                        _child: child,
                    };
                }
                if child.try_wait().expect("the child's status").is_some() {
                    break; // It could not bind: try another port.
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        panic!("conformance-server --http did not start");
    }

    fn authority(&self) -> String {
        self.addr.to_string()
    }

    async fn connect(&self) -> Conn {
        Conn::open(self.addr).await
    }

    /// An ordinary `tools/call` of `test_simple_text`.
    fn simple_call(&self, n: usize) -> Vec<u8> {
        let body = call(format!("follow-{n}"), "test_simple_text", json!({}));
        Post::mcp("tools/call", Some("test_simple_text"), body.to_string()).bytes(&self.authority())
    }
}

/// A POST to `/mcp`: its header lines (beyond Host and Content-Length) and body.
struct Post {
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl Post {
    /// With the headers a 2026-07-28 client sends for `method` (and `name`).
    fn mcp(method: &str, name: Option<&str>, body: impl Into<Vec<u8>>) -> Self {
        let mut post = Post {
            headers: Vec::new(),
            body: body.into(),
        };
        post = post
            .header("Accept", b"application/json, text/event-stream")
            .header("Content-Type", b"application/json")
            .header("MCP-Protocol-Version", VERSION.as_bytes())
            .header("Mcp-Method", method.as_bytes());
        if let Some(name) = name {
            post = post.header("Mcp-Name", name.as_bytes());
        }
        post
    }

    /// Sets a header, replacing one of the same name; a raw line when `name` is empty.
    fn header(mut self, name: &str, value: &[u8]) -> Self {
        if !name.is_empty() {
            self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        }
        self.headers.push((name.to_owned(), value.to_vec()));
        self
    }

    fn without(mut self, name: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    fn head(&self, authority: &str, length: usize) -> Vec<u8> {
        let mut out = format!("POST /mcp HTTP/1.1\r\nHost: {authority}\r\n").into_bytes();
        for (name, value) in &self.headers {
            if !name.is_empty() {
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b": ");
            }
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("Content-Length: {length}\r\n\r\n").as_bytes());
        out
    }

    fn bytes(&self, authority: &str) -> Vec<u8> {
        let mut out = self.head(authority, self.body.len());
        out.extend_from_slice(&self.body);
        out
    }
}

/// An HTTP/1.1 response.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        let found = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name));
        found.map(|(_, v)| v.as_str())
    }

    fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }

    #[track_caller]
    fn json(&self) -> Value {
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{self:?}"
        );
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// One client connection, written and read byte for byte.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    async fn open(addr: SocketAddr) -> Self {
        let stream = tokio::time::timeout(TIMEOUT, TcpStream::connect(addr))
            .await
            .expect("connecting in time")
            .expect("connect");
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    /// Writes `request` while reading the response, which may come before the whole request is
    /// written (a refusal of what was sent so far); the rest is then not written.
    async fn exchange(&mut self, request: &[u8]) -> Reply {
        let (mut r, mut w) = self.stream.split();
        let buf = &mut self.buf;
        let read = read_response(&mut r, buf);
        let write = w.write_all(request);
        tokio::pin!(read, write);
        let mut written = false;
        let exchange = async {
            loop {
                tokio::select! {
                    reply = &mut read => return reply,
                    // A server that answered and closed may refuse the rest: that is its right.
                    _ = &mut write, if !written => written = true,
                }
            }
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .expect("a response in time")
    }

    /// Asserts that the server closes the connection (no further byte arrives).
    async fn expect_closed(&mut self) {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(TIMEOUT, self.stream.read_to_end(&mut rest)).await;
        let read = read.expect("the server closes the connection");
        // A reset after the server shut its side is a close too.
        assert!(
            read.is_err() || rest.is_empty(),
            "bytes after the response: {rest:?}"
        );
    }
}

async fn read_response(r: &mut (impl AsyncReadExt + Unpin), buf: &mut Vec<u8>) -> Reply {
    async fn more(r: &mut (impl AsyncReadExt + Unpin), buf: &mut Vec<u8>) {
        let mut chunk = [0u8; 64 * 1024];
        let n = r.read(&mut chunk).await.expect("read the response");
        assert!(
            n > 0,
            "the connection closed mid-response: {:?}",
            String::from_utf8_lossy(buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    }
    let end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        more(r, buf).await;
    };
    let head = String::from_utf8(buf[..end].to_vec()).expect("an ASCII head");
    buf.drain(..end + 4);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| l.split_once(':').expect("a header line"))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.parse::<usize>().unwrap());
    // Refusals and JSON answers carry a length; nothing here asks for a stream.
    let length = length.expect("a Content-Length");
    while buf.len() < length {
        more(r, buf).await;
    }
    let body = buf.drain(..length).collect();
    Reply {
        status,
        headers,
        body,
    }
}

// ---- In process: a server on stdio framing over in-memory pipes ----

/// One stdio-framed connection to a server in this process, running as `principal`.
struct Pipe {
    to: DuplexStream,
    from: Lines<BufReader<DuplexStream>>,
}

impl Pipe {
    fn serve(server: &Server, principal: Principal) -> Self {
        let (to, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, from) = tokio::io::duplex(1 << 16);
        let mut config = StdioConfig::default();
        config.principal = principal;
        tokio::spawn(serve_stream(server.clone(), server_in, server_out, config));
        Pipe {
            to,
            from: BufReader::new(from).lines(),
        }
    }

    /// Sends `message` and returns the response to its id.
    async fn call(&mut self, message: &Value) -> Value {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.to.write_all(&line).await.expect("write to the server");
        loop {
            let next = tokio::time::timeout(TIMEOUT, self.from.next_line()).await;
            let line = next
                .expect("a response in time")
                .expect("read")
                .expect("a line");
            let m: Value = serde_json::from_str(&line).expect("JSON");
            if m.get("id") == message.get("id") && m.get("method").is_none() {
                return m;
            }
        }
    }
}

/// The object a `json!` literal is.
fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("an object, not {other}"),
    }
}

/// A tool that accepts anything.
async fn accept_all(_ctx: RequestContext, _args: JsonObject) -> ToolResult {
    Ok(CallToolResult::text("ok"))
}

mod envelope;
mod http;
mod schemas;
mod state;
