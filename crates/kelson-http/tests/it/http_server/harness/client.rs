//! Requests under the test's control, HTTP/1.1 and h2c connections, and whole responses.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kelson_http::headers::name_source;
use kelson_http::sse::SseParser;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::{ReqBody, meta, meta_with, within};

/// Which `Host` header a request carries.
#[derive(Clone, Debug)]
enum HostHeader {
    /// The server's own `127.0.0.1:PORT`.
    Server,
    Custom(String),
    Absent,
}

/// One POST (or another method) to the endpoint, every header under the test's control.
#[derive(Clone, Debug)]
pub struct Post {
    method: Method,
    path: String,
    host: HostHeader,
    headers: HeaderMap,
    body: Body,
}

#[derive(Clone, Debug)]
enum Body {
    Full(Bytes),
    /// Sent with `Transfer-Encoding: chunked`, no `Content-Length`.
    Chunked(Vec<Bytes>),
}

impl Post {
    /// `body` with only `Accept` (both types) and `Content-Type: application/json`.
    pub fn bare(body: impl Into<Bytes>) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Post {
            method: Method::POST,
            path: "/mcp".to_owned(),
            host: HostHeader::Server,
            headers,
            body: Body::Full(body.into()),
        }
    }

    /// `message` as is, with the standard headers a correct client derives from it:
    /// `MCP-Protocol-Version` from `_meta`, `Mcp-Method`, and `Mcp-Name` (sentinel-encoded where
    /// needed) for the methods that carry it.
    pub fn rpc(message: Value) -> Self {
        let mut post = Post::bare(serde_json::to_vec(&message).unwrap());
        let params = &message["params"];
        if let Some(version) = params["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str() {
            post = post.header("MCP-Protocol-Version", version);
        }
        if let Some(method) = message["method"].as_str() {
            post = post.header("Mcp-Method", method);
            if let Some(source) = name_source(method)
                && let Some(name) = params[source].as_str()
            {
                post = post.header("Mcp-Name", &kelson_http::encode_value(name));
            }
        }
        post
    }

    /// A request with id `id`; `params` gets the default [`meta`] unless it has a `_meta`.
    pub fn call(id: impl Into<Value>, method: &str, mut params: Value) -> Self {
        let map = params.as_object_mut().expect("params are an object");
        map.entry("_meta").or_insert_with(meta);
        Post::rpc(json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}))
    }

    /// A `tools/call` of `name` with `arguments`.
    pub fn tool(id: impl Into<Value>, name: &str, arguments: Value) -> Self {
        Post::call(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
    }

    /// A `tools/call` with `_meta` = [`meta_with`]`(extra_meta)`.
    pub fn tool_with_meta(
        id: impl Into<Value>,
        name: &str,
        arguments: Value,
        extra_meta: Value,
    ) -> Self {
        Post::call(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments, "_meta": meta_with(extra_meta)}),
        )
    }

    /// Sets a header, replacing any earlier value.
    pub fn header(self, name: &str, value: &str) -> Self {
        self.header_bytes(name, value.as_bytes())
    }

    /// Sets a header to raw bytes (obs-text included), replacing any earlier value.
    pub fn header_bytes(mut self, name: &str, value: &[u8]) -> Self {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("header name");
        if name == HOST {
            self.host = HostHeader::Custom(String::from_utf8(value.to_vec()).unwrap());
            return self;
        }
        self.headers
            .insert(name, HeaderValue::from_bytes(value).expect("header value"));
        self
    }

    /// Removes a header.
    pub fn without(mut self, name: &str) -> Self {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("header name");
        if name == HOST {
            self.host = HostHeader::Absent;
        }
        self.headers.remove(name);
        self
    }

    /// Uses another HTTP method.
    pub fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// Uses another path.
    pub fn path(mut self, path: &str) -> Self {
        self.path = path.to_owned();
        self
    }

    /// Sends the body in `chunks` with chunked transfer encoding, without `Content-Length`.
    pub fn chunked(mut self, chunk: usize) -> Self {
        let Body::Full(all) = &self.body else {
            return self;
        };
        let chunks = all
            .chunks(chunk.max(1))
            .map(Bytes::copy_from_slice)
            .collect();
        self.body = Body::Chunked(chunks);
        self
    }

    fn build(&self, authority: &str, h2: bool) -> Request<ReqBody> {
        // HTTP/2 carries the authority in the request target; HTTP/1.1 in `Host`.
        let uri = if h2 {
            format!("http://{authority}{}", self.path)
        } else {
            self.path.clone()
        };
        let body: ReqBody = match &self.body {
            Body::Full(bytes) => Full::new(bytes.clone()).boxed(),
            Body::Chunked(chunks) => {
                let frames = chunks
                    .iter()
                    .cloned()
                    .map(|c| Ok::<_, Infallible>(hyper::body::Frame::data(c)))
                    .collect::<Vec<_>>();
                http_body_util::StreamBody::new(futures_util::stream::iter(frames)).boxed()
            }
        };
        let mut request = Request::builder()
            .method(self.method.clone())
            .uri(uri)
            .body(body)
            .expect("request");
        *request.headers_mut() = self.headers.clone();
        let host = match &self.host {
            HostHeader::Server if !h2 => Some(authority.to_owned()),
            HostHeader::Server | HostHeader::Absent => None,
            HostHeader::Custom(h) => Some(h.clone()),
        };
        if let Some(host) = host {
            request
                .headers_mut()
                .insert(HOST, HeaderValue::from_str(&host).expect("host"));
        }
        request
    }
}

enum Sender {
    H1(http1::SendRequest<ReqBody>),
    H2(http2::SendRequest<ReqBody>),
}

/// One client connection to the server.
pub struct Client {
    authority: String,
    sender: Sender,
    /// Turns `true` when the connection task ends.
    closed: watch::Receiver<bool>,
}

/// Drives a client connection, and reports when it ends.
fn drive(conn: impl std::future::Future + Send + 'static) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        let _ = conn.await;
        let _ = tx.send(true);
    });
    rx
}

impl Client {
    /// An HTTP/1.1 connection with keep-alive.
    pub async fn h1(addr: SocketAddr) -> Self {
        let stream = within("connecting", TcpStream::connect(addr))
            .await
            .expect("connect");
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .expect("HTTP/1.1 handshake");
        Client {
            authority: addr.to_string(),
            sender: Sender::H1(sender),
            closed: drive(conn),
        }
    }

    /// An HTTP/1.1 connection from the local address `from` (another loopback address, to be
    /// another client as far as the server can tell).
    pub async fn h1_from(addr: SocketAddr, from: std::net::IpAddr) -> Self {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind(SocketAddr::new(from, 0))
            .expect("bind the local address");
        let stream = within("connecting", socket.connect(addr))
            .await
            .expect("connect");
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .expect("HTTP/1.1 handshake");
        Client {
            authority: addr.to_string(),
            sender: Sender::H1(sender),
            closed: drive(conn),
        }
    }

    /// An HTTP/2 connection over cleartext with prior knowledge (h2c).
    pub async fn h2(addr: SocketAddr) -> Self {
        let stream = within("connecting", TcpStream::connect(addr))
            .await
            .expect("connect");
        let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("HTTP/2 handshake");
        Client {
            authority: addr.to_string(),
            sender: Sender::H2(sender),
            closed: drive(conn),
        }
    }

    /// Another handle on the same HTTP/2 connection, for concurrent streams.
    pub fn stream_handle(&self) -> Client {
        let Sender::H2(sender) = &self.sender else {
            panic!("only HTTP/2 multiplexes");
        };
        Client {
            authority: self.authority.clone(),
            sender: Sender::H2(sender.clone()),
            closed: self.closed.clone(),
        }
    }

    /// Sends `post` and returns once the response head arrives.
    pub async fn open(&mut self, post: &Post) -> Response<Incoming> {
        let response = self.open_any(post).await;
        // spec 2026-07-28 streamable-http: a modern server never mints or echoes a session id.
        assert!(
            !response.headers().contains_key("mcp-session-id"),
            "a response carries Mcp-Session-Id: {:?}",
            response.headers()
        );
        response
    }

    /// [`open`](Self::open) for handshake-era requests, whose answers may carry a session id.
    pub async fn open_any(&mut self, post: &Post) -> Response<Incoming> {
        match &mut self.sender {
            Sender::H1(s) => {
                within("the connection ready", s.ready())
                    .await
                    .expect("connection ready");
                within(
                    "the response head",
                    s.send_request(post.build(&self.authority, false)),
                )
                .await
            }
            Sender::H2(s) => {
                within("the connection ready", s.ready())
                    .await
                    .expect("connection ready");
                within(
                    "the response head",
                    s.send_request(post.build(&self.authority, true)),
                )
                .await
            }
        }
        .expect("the server answers")
    }

    /// [`send`](Self::send) for handshake-era requests.
    pub async fn send_any(&mut self, post: &Post) -> Reply {
        let response = self.open_any(post).await;
        Reply::read(response).await
    }

    /// Sends `post` and reads the whole response.
    pub async fn send(&mut self, post: &Post) -> Reply {
        let response = self.open(post).await;
        Reply::read(response).await
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Waits for the connection to end, failing the test after [`PATIENCE`].
    pub async fn wait_closed(&mut self) {
        within("the connection closing", self.closed.wait_for(|c| *c))
            .await
            .expect("the connection task reports");
    }
}

/// A complete response.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    /// Reads the rest of `response`.
    pub async fn read(response: Response<Incoming>) -> Self {
        let (parts, body) = response.into_parts();
        let body = within("the response body", body.collect())
            .await
            .expect("the body arrives whole")
            .to_bytes();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    /// The `Content-Type`, or `""`.
    pub fn content_type(&self) -> &str {
        self.headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The body as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "the body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Asserts a JSON-RPC error response: the HTTP status, `application/json`, the code, and the
    /// id (`None`: the body has no `id` member at all). Returns the error object.
    #[track_caller]
    pub fn error(&self, status: StatusCode, code: i64, id: Option<Value>) -> Value {
        let body = self.json();
        assert_eq!(self.status, status, "status of {body}");
        assert_eq!(
            self.content_type(),
            "application/json",
            "content type of {body}"
        );
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert!(
            body.get("result").is_none(),
            "an error has no result: {body}"
        );
        let error = &body["error"];
        assert_eq!(error["code"], code, "error code in {body}");
        assert!(error["message"].is_string(), "error message in {body}");
        match id {
            Some(id) => assert_eq!(body.get("id"), Some(&id), "the id is echoed: {body}"),
            None => assert!(body.get("id").is_none(), "no id (not even null): {body}"),
        }
        error.clone()
    }

    /// Asserts a 200 `application/json` result for request `id`; returns the result.
    #[track_caller]
    pub fn result(&self, id: Value) -> Value {
        let body = self.json();
        assert_eq!(self.status, StatusCode::OK, "{body}");
        assert_eq!(self.content_type(), "application/json", "{body}");
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert_eq!(body["id"], id, "{body}");
        assert!(body.get("error").is_none(), "unexpected error: {body}");
        let result = body["result"].clone();
        assert!(result["resultType"].is_string(), "resultType: {body}");
        result
    }

    /// Asserts a successful tool result for `id`; returns its first text block.
    #[track_caller]
    pub fn tool_text(&self, id: Value) -> String {
        tool_text(&self.result(id))
    }

    /// The messages of an SSE body read whole.
    #[track_caller]
    pub fn events(&self) -> Vec<Value> {
        assert_eq!(self.content_type(), "text/event-stream");
        let mut parser = SseParser::new();
        parser.feed(&self.body).expect("events stay small");
        std::iter::from_fn(|| parser.next_event())
            .map(|e| serde_json::from_str(&e.data).expect("each event is one JSON message"))
            .collect()
    }

    /// Asserts an HTTP-level refusal: `status`, `application/json`, -32600 without an id.
    #[track_caller]
    pub fn refused(&self, status: StatusCode) {
        self.error(status, -32600, None);
    }
}

/// The first text block of a successful `CallToolResult`.
#[track_caller]
pub fn tool_text(result: &Value) -> String {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_ne!(result["isError"], true, "the tool failed: {result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result}"))
        .to_owned()
}
