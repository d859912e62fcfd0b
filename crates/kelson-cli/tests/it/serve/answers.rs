//! A handshake-era approval is answered only by the caller it was sent to.
//!
//! `execute` asks the person before a write: over the handshake era the server sends the
//! caller an `elicitation/create` request on the call's SSE stream, and the client POSTs its answer
//! back. An adversarial review found that with `--legacy-http stateless` any caller could answer
//! another's request (ids were a per-process prefix and a counter, and the answer was bound to
//! nothing): a second user approved the first one's UPDATE. Here each mode is tried with two
//! callers: the other caller's answer is refused as an answer to an unknown id is (400), changes
//! nothing, and the asked caller's own answer still counts. The OAuth variants, with two
//! principals from a real authorization server, are in `hosts/answers.rs`.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use super::support::{Serve, TempDir, http, sqlite_scalar};

const VERSION: &str = "2025-11-25";

/// A handshake-era `tools/call` whose answer is still coming: its SSE stream, read event by event.
pub(crate) struct Pending {
    reader: BufReader<TcpStream>,
}

impl Pending {
    /// POSTs `body` to `url` with `headers` (besides the JSON-RPC ones) and reads the response
    /// head, which must open an SSE stream.
    pub(crate) fn start(url: &str, headers: &[(&str, &str)], body: &str) -> Pending {
        let rest = url.strip_prefix("http://").expect("an http URL");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: {VERSION}\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        let mut stream = TcpStream::connect(authority).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            assert!(reader.read_line(&mut line).unwrap() > 0, "head: {head}");
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: text/event-stream"),
            "the call needs input, so its answer is a stream: {head}"
        );
        Pending { reader }
    }

    /// The next JSON-RPC message on the stream (chunked transfer framing skipped).
    pub(crate) fn next(&mut self) -> Value {
        loop {
            let mut line = String::new();
            assert!(
                self.reader.read_line(&mut line).unwrap() > 0,
                "the stream ended"
            );
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                return serde_json::from_str(data.trim()).unwrap_or_else(|e| panic!("{e}: {data}"));
            }
        }
    }

    /// The next server-to-client request on the stream (notifications skipped).
    pub(crate) fn next_request(&mut self) -> Value {
        loop {
            let message = self.next();
            if message.get("method").is_some() && message.get("id").is_some() {
                return message;
            }
        }
    }

    /// The call's JSON-RPC response: the stream's last message.
    pub(crate) fn response(mut self) -> Value {
        loop {
            let message = self.next();
            if message.get("method").is_none() {
                let mut rest = Vec::new();
                let _ = self.reader.read_to_end(&mut rest);
                return message;
            }
        }
    }
}

/// The JSON-RPC headers of a handshake-era POST, with `extra`.
pub(crate) fn legacy_headers<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", VERSION),
    ];
    headers.extend_from_slice(extra);
    headers
}

/// The body of a handshake-era `execute` of `sql`.
pub(crate) fn execute(sql: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"name": "execute", "arguments": {"sql": sql}}})
    .to_string()
}

/// The body of an answer to the server's request `id`: an accepted approval or a decline.
pub(crate) fn answer(id: &Value, approve: bool) -> String {
    let result = if approve {
        json!({"action": "accept", "content": {"approve": true}})
    } else {
        json!({"action": "decline"})
    };
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// `initialize` for a session; returns its id.
pub(crate) fn initialize(url: &str, extra: &[(&str, &str)]) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "answers-test", "version": "1"}
    }})
    .to_string();
    let reply = http(url, "POST", &legacy_headers(extra), &body);
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned()
}

fn stock(data: &std::path::Path) -> i64 {
    sqlite_scalar(
        &data.join("sample.db"),
        "select stock from products where id = 1",
    )
    .parse()
    .unwrap()
}

/// Ids that the review could derive from one another: the same prefix and a counter.
fn assert_unrelated(a: &str, b: &str) {
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    assert!(
        common <= 6,
        "two server request ids share a {common}-character prefix: {a} {b}"
    );
}

/// The id a counter would have given the request before `id`: its trailing number less one, or
/// its last digit changed.
fn guess_previous(id: &str) -> String {
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, tail) = id.split_at(id.len() - digits);
    match tail.parse::<u64>() {
        Ok(n) if n > 0 && !head.ends_with(|c: char| c.is_ascii_hexdigit()) => {
            format!("{head}{}", n - 1)
        }
        _ => {
            let last = id.chars().last().unwrap();
            let other = if last == '0' { '1' } else { '0' };
            format!("{}{other}", &id[..id.len() - 1])
        }
    }
}

#[test]
fn stateless_answers_are_bound_to_their_request_and_ids_cannot_be_guessed() {
    let scratch = TempDir::new();
    let data = scratch.join("data");
    let serve = Serve::start(&data, &["--allow-write", "--legacy-http", "stateless"]);
    let before = stock(&data);

    let mut alice = Pending::start(
        &serve.url,
        &[],
        &execute("UPDATE products SET stock = 4242 WHERE id = 1"),
    );
    let asked = alice.next_request();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let mut bob = Pending::start(
        &serve.url,
        &[],
        &execute("UPDATE products SET stock = 1 WHERE id = 2"),
    );
    let bobs = bob.next_request();
    let (a, b) = (asked["id"].as_str().unwrap(), bobs["id"].as_str().unwrap());
    assert_unrelated(a, b);

    // Bob answers the id that a counter would have given the request before his own (Alice's,
    // when ids were a prefix and a counter): nothing is waiting for it now.
    let guessed = guess_previous(b);
    let reply = http(
        &serve.url,
        "POST",
        &legacy_headers(&[]),
        &answer(&json!(guessed), true),
    );
    assert_eq!(reply.status, 400, "{}", reply.body);

    // Bob declines his own; Alice declines hers: both calls end declined and nothing was written.
    for (id, pending) in [(bobs["id"].clone(), bob), (asked["id"].clone(), alice)] {
        let reply = http(
            &serve.url,
            "POST",
            &legacy_headers(&[]),
            &answer(&id, false),
        );
        assert_eq!(reply.status, 202, "{}", reply.body);
        let done = pending.response();
        assert_eq!(done["result"]["isError"], json!(true), "{done}");
    }
    assert_eq!(stock(&data), before);
}

#[test]
fn a_session_answers_only_its_own_requests() {
    let scratch = TempDir::new();
    let data = scratch.join("data");
    let serve = Serve::start(&data, &["--allow-write"]);
    let before = stock(&data);
    let alice = initialize(&serve.url, &[]);
    let bob = initialize(&serve.url, &[]);

    let mut call = Pending::start(
        &serve.url,
        &[("Mcp-Session-Id", &alice)],
        &execute("UPDATE products SET stock = 4242 WHERE id = 1"),
    );
    let asked = call.next_request();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");

    // Bob's session, and no session at all, cannot answer it.
    for extra in [vec![("Mcp-Session-Id", bob.as_str())], vec![]] {
        let reply = http(
            &serve.url,
            "POST",
            &legacy_headers(&extra),
            &answer(&asked["id"], true),
        );
        assert_eq!(reply.status, 400, "{extra:?}: {}", reply.body);
    }
    assert_eq!(stock(&data), before, "a refused answer ran nothing");

    // Alice's own approval still counts: her call was left waiting, not ended.
    let reply = http(
        &serve.url,
        "POST",
        &legacy_headers(&[("Mcp-Session-Id", &alice)]),
        &answer(&asked["id"], true),
    );
    assert_eq!(reply.status, 202, "{}", reply.body);
    let done = call.response();
    assert_ne!(done["result"]["isError"], json!(true), "{done}");
    assert_eq!(stock(&data), 4242);
}
