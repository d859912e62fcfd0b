//! The HTTP/1.1 request reader (kelson-http `server/h1/request.rs`) fed arbitrary bytes, through
//! the hidden `kelson_http::server::__fuzz::read_requests`, which runs it over memory exactly as a
//! connection runs it over a socket.
//!
//! Input: four control bytes (three read sizes and a body limit), then the bytes the client sent.
//!
//! Properties:
//! - never a panic;
//! - the same bytes give the same requests and the same ending whether they arrive at once, in
//!   reads of the sizes chosen, or one byte at a time;
//! - every request read is well framed: HTTP/1.0 or 1.1, one `Host` on 1.1, never both
//!   `Transfer-Encoding` and `Content-Length`, a body no longer than the limit and as long as
//!   `Content-Length` says, a body left unread only when it is over the limit (and the connection
//!   then closes); `Connection: close` is honoured;
//! - all that is ever written back is `100 Continue`.

#![no_main]

use http::Version;
use http::header::{CONNECTION, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use libfuzzer_sys::fuzz_target;
use kelson_http::server::__fuzz::{End, Read, read_requests};

const LIMITS: [usize; 6] = [0, 1, 16, 64, 1024, 65536];

/// A request as comparable data.
#[derive(Debug, PartialEq)]
struct Seen {
    method: String,
    uri: String,
    version: Version,
    headers: Vec<(String, Vec<u8>)>,
    keep_alive: bool,
    body: Result<Option<Vec<u8>>, u64>,
    in_sync: bool,
}

fn seen(read: &Read) -> Seen {
    Seen {
        method: read.parts.method.to_string(),
        uri: read.parts.uri.to_string(),
        version: read.parts.version,
        headers: read
            .parts
            .headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect(),
        keep_alive: read.keep_alive,
        body: read.body.clone().map(|b| b.map(|b| b.to_vec())),
        in_sync: read.in_sync,
    }
}

fn run(input: &[u8], reads: &[usize], max_body: usize) -> (Vec<Seen>, End, Vec<u8>) {
    let (requests, end, written) = read_requests(input, reads, max_body);
    (requests.iter().map(seen).collect(), end, written)
}

fn check_framing(read: &Read, max_body: usize) {
    let headers = &read.parts.headers;
    assert!(matches!(
        read.parts.version,
        Version::HTTP_10 | Version::HTTP_11
    ));
    if read.parts.version == Version::HTTP_11 {
        assert_eq!(
            headers.get_all(HOST).iter().count(),
            1,
            "one Host on HTTP/1.1"
        );
    }
    assert!(
        !(headers.contains_key(TRANSFER_ENCODING) && headers.contains_key(CONTENT_LENGTH)),
        "both Transfer-Encoding and Content-Length"
    );
    let length = headers.get(CONTENT_LENGTH).map(|v| {
        let first = v
            .as_bytes()
            .split(|b| *b == b',')
            .next()
            .unwrap()
            .trim_ascii();
        std::str::from_utf8(first).unwrap().parse::<u64>().unwrap()
    });
    match &read.body {
        Ok(body) => {
            assert!(read.in_sync);
            let len = body.as_ref().map_or(0, |b| b.len());
            assert!(
                body.as_ref().is_none_or(|b| !b.is_empty()),
                "an empty body is None"
            );
            assert!(
                len <= max_body,
                "a body of {len} bytes passed the limit of {max_body}"
            );
            if let Some(length) = length {
                assert_eq!(
                    len as u64, length,
                    "the body is not as long as Content-Length says"
                );
            }
        }
        Err(len) => {
            assert!(
                *len > max_body as u64,
                "a body of {len} bytes was left unread"
            );
            assert!(!read.in_sync);
        }
    }
    let close = headers.get_all(CONNECTION).iter().any(|v| {
        v.as_bytes()
            .split(|b| *b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
    });
    if close {
        assert!(!read.keep_alive, "Connection: close was not honoured");
    }
}

fuzz_target!(|data: &[u8]| {
    let [a, b, c, limit, input @ ..] = data else {
        return;
    };
    let max_body = LIMITS[usize::from(*limit) % LIMITS.len()];
    let reads = [
        usize::from(*a) + 1,
        usize::from(*b % 16) + 1,
        usize::from(*c) * 8 + 1,
    ];

    let (requests, _, written) = read_requests(input, &[], max_body);
    for read in &requests {
        check_framing(read, max_body);
    }
    assert!(
        written
            .chunks(25)
            .all(|c| c == b"HTTP/1.1 100 Continue\r\n\r\n"),
        "wrote {:?}",
        String::from_utf8_lossy(&written)
    );

    let whole = run(input, &[], max_body);
    let chunked = run(input, &reads, max_body);
    assert_eq!(
        whole.0, chunked.0,
        "the requests depend on how the bytes arrived ({reads:?})"
    );
    assert_eq!(
        whole.1, chunked.1,
        "the ending depends on how the bytes arrived ({reads:?})"
    );
    let bytewise = run(input, &[1], max_body);
    assert_eq!(
        whole.0, bytewise.0,
        "the requests differ when read byte by byte"
    );
    assert_eq!(
        whole.1, bytewise.1,
        "the ending differs when read byte by byte"
    );
});
