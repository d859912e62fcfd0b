//! Reading an HTTP answer: status mapping, JSON bodies and event streams.

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt as _};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, StatusCode};

use super::HttpError;
use crate::sse::SseParser;

/// The answer to a POST or GET that was not refused at the HTTP level.
#[derive(Debug)]
pub struct HttpReply {
    /// The status. A non-2xx status arrives here only with a JSON body, which usually holds a
    /// JSON-RPC error response.
    pub status: StatusCode,
    /// The response headers (for the legacy `Mcp-Session-Id`).
    pub headers: HeaderMap,
    /// The body.
    pub body: ReplyBody,
}

/// The body of an [`HttpReply`].
#[derive(Debug)]
pub enum ReplyBody {
    /// No body: 202 Accepted for a notification or a response (legacy), or an empty 2xx.
    Empty,
    /// An `application/json` body: one JSON-RPC message.
    Json(Bytes),
    /// A `text/event-stream` body: messages as the server sends them.
    Events(EventStream),
}

/// The JSON-RPC messages of an SSE response, one per event.
///
/// Comment lines (keep-alives) and events of other types are skipped, as are events without data.
/// Dropping the stream closes the response, which the server takes as cancellation.
pub struct EventStream {
    body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    parser: SseParser,
    done: bool,
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl EventStream {
    fn new(response: reqwest::Response, max_message: usize) -> Self {
        EventStream {
            body: Box::pin(response.bytes_stream()),
            parser: SseParser::with_max_event_size(max_message),
            done: false,
        }
    }

    /// The data of the next event: one JSON-RPC message as text. `None` once the stream ended; an
    /// error ends it too.
    pub async fn next_message(&mut self) -> Option<Result<String, HttpError>> {
        loop {
            while let Some(event) = self.parser.next_event() {
                // spec 2026-07-28 streamable-http: messages travel in events of the default type.
                if event.event == "message" && !event.data.trim().is_empty() {
                    return Some(Ok(event.data));
                }
            }
            if self.done {
                return None;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => {
                    if let Err(e) = self.parser.feed(&chunk) {
                        self.done = true;
                        return Some(Err(e.into()));
                    }
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(HttpError::Request(e)));
                }
                None => self.done = true,
            }
        }
    }

    /// The id of the last event the server gave one (`id:`), if any: what a legacy (2025)
    /// client sends as `Last-Event-ID` to resume the stream.
    pub fn last_event_id(&self) -> Option<&str> {
        Some(self.parser.last_event_id()).filter(|id| !id.is_empty())
    }

    /// The reconnection delay the server asked for with the SSE `retry:` field, if it sent one so
    /// far. Only a legacy (2025) client reconnects a stream (its GET stream); a 2026-07-28 stream
    /// is never resumed.
    pub fn retry(&self) -> Option<Duration> {
        self.parser.retry().map(Duration::from_millis)
    }
}

/// The media type of a response, lowercased, without parameters.
fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

fn is_json(media: &str) -> bool {
    media == "application/json" || media.ends_with("+json")
}

pub(super) async fn read(
    mut response: reqwest::Response,
    body_size: usize,
    header_size: usize,
    max_message: usize,
) -> Result<HttpReply, HttpError> {
    let status = response.status();
    // spec 2026-07-28 streamable-http: header and body size limits are deployment-defined, and clients
    // should handle 413 and 431; say which limit was hit whatever the body holds.
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return Err(HttpError::PayloadTooLarge { size: body_size });
    }
    if status == StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE {
        return Err(HttpError::HeadersTooLarge { size: header_size });
    }
    let headers = std::mem::take(response.headers_mut());
    let media = media_type(&headers);
    if media == "text/event-stream" && status.is_success() {
        return Ok(HttpReply {
            status,
            headers,
            body: ReplyBody::Events(EventStream::new(response, max_message)),
        });
    }
    let body = read_bounded(&mut response, max_message).await?;
    let body = if is_json(&media) && !body.is_empty() {
        ReplyBody::Json(body)
    } else if !status.is_success() {
        return Err(refusal(status, &headers, &body));
    } else if body.iter().all(u8::is_ascii_whitespace) {
        ReplyBody::Empty
    } else {
        return Err(HttpError::UnexpectedContentType(media));
    };
    Ok(HttpReply {
        status,
        headers,
        body,
    })
}

/// Reads the answer to a GET that must open an event stream: anything but a 2xx
/// `text/event-stream` answer is an error, whatever its body.
pub(super) async fn read_stream(
    mut response: reqwest::Response,
    header_size: usize,
    max_message: usize,
) -> Result<EventStream, HttpError> {
    let status = response.status();
    if status == StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE {
        return Err(HttpError::HeadersTooLarge { size: header_size });
    }
    let media = media_type(response.headers());
    if status.is_success() && media == "text/event-stream" {
        return Ok(EventStream::new(response, max_message));
    }
    if status.is_success() {
        return Err(HttpError::UnexpectedContentType(media));
    }
    // Keep the start of the body for the message; a JSON-RPC error body names the refusal.
    let headers = std::mem::take(response.headers_mut());
    let body = read_prefix(&mut response, 4096).await;
    Err(refusal(status, &headers, &body))
}

/// The error for a non-2xx answer without a JSON-RPC body: [`HttpError::Unauthorized`] for a 401,
/// or a 403 with an authentication challenge (RFC 6750 §3.1 `insufficient_scope`), else
/// [`HttpError::Status`].
fn refusal(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> HttpError {
    let challenges = www_authenticate(headers);
    if status == StatusCode::UNAUTHORIZED
        || (status == StatusCode::FORBIDDEN && !challenges.is_empty())
    {
        let HttpError::Status { body, .. } = HttpError::status(status, body) else {
            unreachable!("HttpError::status makes a Status")
        };
        return HttpError::Unauthorized {
            status,
            www_authenticate: challenges,
            body,
        };
    }
    HttpError::status(status, body)
}

/// The values of the `WWW-Authenticate` headers, as text.
pub fn www_authenticate(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect()
}

/// Up to about `limit` bytes of the body, for an error message; a failed read ends it early.
async fn read_prefix(response: &mut reqwest::Response, limit: usize) -> Bytes {
    let mut out = BytesMut::new();
    while out.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => out.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    out.truncate(limit);
    out.freeze()
}

async fn read_bounded(response: &mut reqwest::Response, limit: usize) -> Result<Bytes, HttpError> {
    let mut out = BytesMut::new();
    while let Some(chunk) = response.chunk().await.map_err(HttpError::Request)? {
        if out.len() + chunk.len() > limit {
            return Err(HttpError::MessageTooLarge { limit });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn media_types_ignore_parameters_and_case() {
        let mut h = HeaderMap::new();
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("Application/JSON; charset=utf-8"),
        );
        assert!(is_json(&media_type(&h)));
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        assert!(is_json(&media_type(&h)));
        h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        assert_eq!(media_type(&h), "text/event-stream");
        assert_eq!(media_type(&HeaderMap::new()), "");
    }
}
