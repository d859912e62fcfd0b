//! A reader of `text/event-stream` responses on top of [`SseParser`].

use http::{Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use kelson_http::sse::SseParser;
use serde_json::Value;

use super::within;

/// The events of a `text/event-stream` response, read with [`SseParser`].
pub struct SseStream {
    body: Incoming,
    parser: SseParser,
    raw: Vec<u8>,
    ended: bool,
    /// The transport error that ended the stream, if any.
    pub error: Option<hyper::Error>,
}

impl SseStream {
    /// Asserts the headers of an SSE response and starts reading it.
    #[track_caller]
    pub fn new(response: Response<Incoming>) -> Self {
        let (parts, body) = response.into_parts();
        let header = |name: &str| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        assert_eq!(parts.status, StatusCode::OK);
        assert_eq!(header("content-type"), "text/event-stream");
        assert_eq!(header("cache-control"), "no-cache");
        assert_eq!(header("x-accel-buffering"), "no");
        assert!(!parts.headers.contains_key("content-length"));
        SseStream {
            body,
            parser: SseParser::new(),
            raw: Vec::new(),
            ended: false,
            error: None,
        }
    }

    /// Reads one more frame; `false` once the body has ended.
    async fn fill(&mut self) -> bool {
        if self.ended {
            return false;
        }
        match self.body.frame().await {
            None => {
                self.ended = true;
                false
            }
            Some(Err(e)) => {
                self.error = Some(e);
                self.ended = true;
                false
            }
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.raw.extend_from_slice(&data);
                    self.parser.feed(&data).expect("events stay small");
                }
                true
            }
        }
    }

    /// The next message, or `None` once the stream has ended; fails the test after [`PATIENCE`].
    ///
    /// Each event must carry exactly one JSON-RPC message on one `data:` line, with the default
    /// event type.
    pub async fn next(&mut self) -> Option<Value> {
        within("the next SSE event", async {
            loop {
                if let Some(event) = self.parser.next_event() {
                    assert_eq!(event.event, "message", "default event type");
                    assert!(
                        !event.data.contains('\n'),
                        "one data line: {:?}",
                        event.data
                    );
                    let message: Value = serde_json::from_str(&event.data)
                        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", event.data));
                    assert_eq!(message["jsonrpc"], "2.0", "{message}");
                    return Some(message);
                }
                if !self.fill().await {
                    return None;
                }
            }
        })
        .await
    }

    /// The id of the last event read that had one (empty before any).
    pub fn last_event_id(&self) -> String {
        self.parser.last_event_id().to_owned()
    }

    /// Asserts that the stream ends now, with no further event or comment.
    pub async fn expect_end(&mut self) {
        let before = self.raw.len();
        assert_eq!(self.next().await, None, "the stream goes on");
        assert!(
            self.error.is_none(),
            "the stream broke instead of ending: {:?}",
            self.error
        );
        assert_eq!(
            &self.raw[before..],
            b"",
            "bytes after the final message: {:?}",
            String::from_utf8_lossy(&self.raw[before..])
        );
    }

    /// How many comment lines (keep-alives) have arrived so far.
    pub fn comment_lines(&self) -> usize {
        self.raw
            .split(|&b| b == b'\n')
            .filter(|l| l.starts_with(b":"))
            .count()
    }

    /// Reads until at least `n` comment lines have arrived.
    pub async fn wait_comments(&mut self, n: usize) {
        within("keep-alive comments", async {
            while self.comment_lines() < n {
                assert!(
                    self.fill().await,
                    "the stream ended while waiting for comments"
                );
            }
        })
        .await;
    }

    /// Asserts the stream used no SSE resumability fields: no `id:`, no `retry:`, no `event:`.
    #[track_caller]
    pub fn assert_plain_framing(&self) {
        for line in self.raw.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            assert!(
                line.is_empty() || line.starts_with(b"data:") || line.starts_with(b":"),
                "unexpected SSE line {:?}",
                String::from_utf8_lossy(line)
            );
        }
        assert_eq!(self.parser.last_event_id(), "");
        assert_eq!(self.parser.retry(), None);
    }
}
