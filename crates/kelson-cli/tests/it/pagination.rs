//! A server whose lists never end: every page full (a thousand items) and a new `nextCursor` each
//! time. `kelson tools`, `kelson resources` and `kelson call` (which lists the tools first) stop at the
//! client's bound with an error that says what the server did, and exit 2, instead of following
//! it until memory runs out.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::harness::mcp;

/// Items a page.
const PER_PAGE: usize = 1_000;

/// A hand-written Streamable HTTP server (modern, JSON answers, keep-alive) on a loopback port,
/// with endless tools and resources, counting the requests of each method.
pub struct Endless {
    pub url: String,
    counts: Arc<Mutex<HashMap<String, usize>>>,
}

impl Endless {
    pub fn start() -> Endless {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}/mcp", listener.local_addr().expect("the address"));
        let counts: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let counted = counts.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let counts = counted.clone();
                std::thread::spawn(move || serve(stream, &counts));
            }
        });
        Endless { url, counts }
    }

    /// How many requests of `method` came so far.
    pub fn count(&self, method: &str) -> usize {
        self.counts
            .lock()
            .unwrap()
            .get(method)
            .copied()
            .unwrap_or(0)
    }
}

/// Serves one connection until the client closes it.
fn serve(mut stream: TcpStream, counts: &Mutex<HashMap<String, usize>>) {
    let mut buffer = Vec::new();
    loop {
        let Some((head, body)) = read_request(&mut stream, &mut buffer) else {
            return;
        };
        let response = if head.starts_with("POST ") {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let method = request["method"].as_str().unwrap_or_default().to_owned();
            *counts.lock().unwrap().entry(method.clone()).or_default() += 1;
            match request.get("id") {
                None => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned(),
                Some(id) => {
                    let answer = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},{}}}"#,
                        answer_to(&method, &request["params"])
                    );
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                         Content-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    )
                }
            }
        } else {
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n".to_owned()
        };
        if stream.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// `"result": ...` or `"error": ...` for a request of `method`.
fn answer_to(method: &str, params: &Value) -> String {
    let page: usize = params["cursor"]
        .as_str()
        .and_then(|c| c.strip_prefix("page-"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let list = |member: &str, item: &dyn Fn(usize) -> String| {
        let items: Vec<String> = (0..PER_PAGE).map(item).collect();
        format!(
            r#""result":{{"resultType":"complete","{member}":[{}],"nextCursor":"page-{}","ttlMs":0,"cacheScope":"public"}}"#,
            items.join(","),
            page + 1
        )
    };
    match method {
        "server/discover" => format!(
            r#""result":{}"#,
            json!({
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "resources": {}},
                "serverInfo": {"name": "endless", "version": "1"},
                "ttlMs": 0, "cacheScope": "public"
            })
        ),
        "tools/list" => list("tools", &|i| {
            format!(r#"{{"name":"tool-{page}-{i}","inputSchema":{{"type":"object"}}}}"#)
        }),
        "resources/list" => list("resources", &|i| {
            format!(r#"{{"uri":"file:///{page}/{i}","name":"r-{page}-{i}"}}"#)
        }),
        "tools/call" => {
            r#""result":{"resultType":"complete","content":[{"type":"text","text":"called"}]}"#
                .to_owned()
        }
        _ => r#""error":{"code":-32601,"message":"Method not found"}"#.to_owned(),
    }
}

/// Reads one request (head and the body its Content-Length announces) from `stream`, keeping
/// what follows in `buffer`; `None` once the client closed the connection.
fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
            let length = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if buffer.len() >= end + 4 + length {
                let body = buffer[end + 4..end + 4 + length].to_vec();
                buffer.drain(..end + 4 + length);
                return Some((head, body));
            }
        }
        let n = stream.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buffer.extend_from_slice(&chunk[..n]);
    }
}

/// The message of the bound the default settings reach first with a thousand items a page.
const STOPPED: &str = "did not end within the bound of 100000 items: it sent 101 pages";

#[test]
fn lists_that_never_end_are_stopped_at_the_bound_with_exit_2() {
    let server = Endless::start();
    for (verb, method) in [("tools", "tools/list"), ("resources", "resources/list")] {
        let run = mcp(&[verb, "--url", &server.url], "");
        run.expect_code(2);
        assert!(
            run.stderr
                .contains(&format!("{method}: the server's list {STOPPED}"))
                && run.stderr.contains("new nextCursor")
                && run.stderr.contains("its pagination does not end"),
            "{}",
            run.stderr
        );
        assert_eq!(run.stdout, "", "nothing of the list is printed");
        assert_eq!(server.count(method), 101, "no page beyond the bound");
    }

    // `kelson call` lists the tools first: it stops there, and calls nothing.
    let run = mcp(&["call", "tool-0-0", "--url", &server.url], "");
    run.expect_code(2);
    assert!(run.stderr.contains(STOPPED), "{}", run.stderr);
    assert_eq!(server.count("tools/list"), 202);
    assert_eq!(server.count("tools/call"), 0);

    // --json: the error on stdout too, without a code, which only the server's errors have.
    let run = mcp(&["tools", "--json", "--url", &server.url], "");
    run.expect_code(2);
    let error = &run.json()["error"];
    assert_eq!(error["kind"], "protocol", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains(STOPPED),
        "{error}"
    );
    assert!(
        error["hint"]
            .as_str()
            .unwrap()
            .contains("pagination does not end"),
        "{error}"
    );
    assert!(error.get("code").is_none(), "{error}");
}
