//! Requests written and responses read byte for byte, for what an HTTP client library would
//! normalise (header name case, whitespace) or never do (closing mid-request).

use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::Reply;
use super::within;

/// A request written byte for byte: `POST /mcp` with `Host`, both `Accept` types, JSON content,
/// `Content-Length`, `Connection: close`, and `extra` header lines exactly as given.
pub fn raw_request(authority: &str, extra: &[&str], body: &str) -> Vec<u8> {
    let mut out = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for line in extra {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

/// Writes `request` on a new connection and reads until the server closes it.
pub async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut stream = within("connecting", TcpStream::connect(addr))
        .await
        .expect("connect");
    stream.write_all(request).await.expect("write the request");
    let mut wire = Vec::new();
    within(
        "the server closing the connection",
        stream.read_to_end(&mut wire),
    )
    .await
    .expect("read the response");
    parse_raw(&wire)
}

/// Parses an HTTP/1.1 response read to its end.
#[track_caller]
pub fn parse_raw(wire: &[u8]) -> Reply {
    let split = wire
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(wire)));
    let head = std::str::from_utf8(&wire[..split]).expect("an ASCII head");
    let rest = &wire[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let mut headers = HeaderMap::new();
    for line in lines {
        let (name, value) = line.split_once(':').expect("a header line");
        headers.append(
            HeaderName::from_bytes(name.trim().as_bytes()).unwrap(),
            HeaderValue::from_str(value.trim()).unwrap(),
        );
    }
    let chunked = headers
        .get("transfer-encoding")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"));
    let body = if chunked {
        dechunk(rest)
    } else if let Some(len) = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
    {
        rest[..len.min(rest.len())].to_vec()
    } else {
        rest.to_vec()
    };
    Reply {
        status: StatusCode::from_u16(status).unwrap(),
        headers,
        body: Bytes::from(body),
    }
}

/// Decodes a chunked body, as far as it goes (a body cut short yields what arrived).
pub fn dechunk(mut wire: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = wire.windows(2).position(|w| w == b"\r\n") {
        let size_text = std::str::from_utf8(&wire[..eol]).unwrap_or("");
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else {
            break;
        };
        wire = &wire[eol + 2..];
        if size == 0 {
            break;
        }
        let take = size.min(wire.len());
        out.extend_from_slice(&wire[..take]);
        wire = &wire[take..];
        wire = wire.strip_prefix(b"\r\n").unwrap_or(wire);
    }
    out
}
