//! The answers the endpoint writes itself (JSON replies, SSE responses, HTTP-level refusals), the
//! status of each JSON-RPC outcome, and the checks of a request's media types and body size.

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use kelson_jsonrpc::{ErrorObject, Id};
use kelson_server::RequestProbe;
use kelson_server::transport::{Outcome, ReplyMessage};

use super::{BoxError, McpBody, scope};

pub(super) const JSON: HeaderValue = HeaderValue::from_static("application/json");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

/// The HTTP status of a JSON-RPC outcome. spec 2026-07-28 basic/index and
/// basic/transports/streamable-http fix 400 for -32020, -32021, -32022 and a missing `_meta` key,
/// and 404 for -32601; 400 for -32700 and -32600, and 200 for the errors of a method, are the
/// SDKs' convention where the spec says nothing.
pub(super) fn status_for(outcome: Outcome) -> StatusCode {
    use kelson_jsonrpc::code;
    match outcome {
        Outcome::Success | Outcome::ToolError | Outcome::InputRequired => StatusCode::OK,
        Outcome::Error { code, rejected } => match code {
            code::PARSE_ERROR
            | code::INVALID_REQUEST
            | code::HEADER_MISMATCH
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
            code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            // spec 2026-07-28 basic/authorization: insufficient scope is a 403.
            kelson_server::INSUFFICIENT_SCOPE => StatusCode::FORBIDDEN,
            // A missing `_meta` key is a 400; a -32602 from a method is answered in band.
            code::INVALID_PARAMS if rejected => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        },
    }
}

pub(super) fn reject(id: &Id, error: &ErrorObject) -> ReplyMessage {
    let mut body = Vec::with_capacity(128);
    kelson_jsonrpc::write_error(&mut body, Some(id), error);
    ReplyMessage {
        body,
        outcome: Outcome::Error {
            code: error.code,
            rejected: true,
        },
    }
}

/// Why a request body was not read.
pub(super) enum BodyError {
    TooLarge,
    Read(BoxError),
}

/// Reads a request body of at most `max` bytes. A body that arrives as one chunk (the usual case:
/// the HTTP/1.1 connection reads it whole, hyper hands over what came with the h2c headers) is used
/// as it is, without a copy or a list of chunks; only a body in several chunks is gathered.
pub(super) async fn read_body<B>(body: B, max: usize) -> Result<Bytes, BodyError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut gathered: Vec<u8> = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(|e| BodyError::Read(e.into()))?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers carry nothing we read
        };
        let so_far = first.as_ref().map_or(gathered.len(), Bytes::len);
        if so_far + data.len() > max {
            return Err(BodyError::TooLarge);
        }
        match first.take() {
            None if gathered.is_empty() => first = Some(data),
            None => gathered.extend_from_slice(&data),
            Some(earlier) => {
                gathered.reserve(earlier.len() + data.len());
                gathered.extend_from_slice(&earlier);
                gathered.extend_from_slice(&data);
            }
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(gathered)))
}

/// Ends the probe with `reply`'s outcome and answers with it.
pub(super) fn answer(probe: &mut RequestProbe, reply: ReplyMessage) -> Response<McpBody> {
    probe.finish(reply.outcome);
    json_reply(reply)
}

pub(super) fn json_reply(reply: ReplyMessage) -> Response<McpBody> {
    let refusal = reply.insufficient_scope();
    let mut response = Response::new(McpBody::full(reply.body));
    *response.status_mut() = status_for(reply.outcome);
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    if let Some(refusal) = refusal {
        scope::forbid(&mut response, refusal);
    }
    response
}

pub(super) fn sse_response(body: McpBody) -> Response<McpBody> {
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, EVENT_STREAM);
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // spec 2026-07-28 streamable-http: servers SHOULD set this so proxies do not buffer the stream.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

pub(super) fn plain(status: StatusCode) -> Response<McpBody> {
    let mut response = Response::new(McpBody::empty());
    *response.status_mut() = status;
    response
}

/// An HTTP-level refusal, with a JSON-RPC error body without `id` (the message was not read).
pub(crate) fn http_error(status: StatusCode, message: &str) -> Response<McpBody> {
    let mut body = Vec::with_capacity(64 + message.len());
    kelson_jsonrpc::write_error(&mut body, None, &ErrorObject::invalid_request(message));
    let mut response = Response::new(McpBody::full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

/// spec 2026-07-28 streamable-http: the client MUST list both media types. Wildcards that cover a
/// type count as listing it.
pub(super) fn accepts_both(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(http::header::ACCEPT).iter();
    // What MCP clients send, answered with one comparison; anything else is parsed below.
    if let (Some(only), None) = (values.next(), values.next())
        && only.as_bytes() == b"application/json, text/event-stream"
    {
        return true;
    }
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(http::header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            // Media types are case-insensitive; compared in place, without allocating.
            let media = range.split(';').next().unwrap_or("").trim();
            let is = |name: &str| media.eq_ignore_ascii_case(name);
            if is("*/*") {
                (json, sse) = (true, true);
            } else if is("application/json") || is("application/*") {
                json = true;
            } else if is("text/event-stream") || is("text/*") {
                sse = true;
            }
        }
    }
    json && sse
}

pub(super) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    /// A body that yields these chunks (or an error where a chunk is `None`).
    fn chunked(
        chunks: Vec<Option<&'static [u8]>>,
    ) -> impl http_body::Body<Data = Bytes, Error = std::io::Error> {
        let frames = chunks.into_iter().map(|c| match c {
            Some(bytes) => Ok(http_body::Frame::data(Bytes::from_static(bytes))),
            None => Err(std::io::Error::other("the client went away")),
        });
        http_body_util::StreamBody::new(futures_util::stream::iter(frames))
    }

    fn read(chunks: Vec<Option<&'static [u8]>>, max: usize) -> Result<Bytes, BodyError> {
        futures_util::FutureExt::now_or_never(read_body(chunked(chunks), max))
            .expect("the body is ready")
    }

    #[test]
    fn bodies_are_read_whole_within_the_limit() {
        let one = read(vec![Some(b"{\"a\":1}")], 16).ok().expect("read");
        assert_eq!(&one[..], b"{\"a\":1}");
        let many = read(vec![Some(b"ab"), Some(b""), Some(b"cd"), Some(b"e")], 5)
            .ok()
            .expect("read");
        assert_eq!(&many[..], b"abcde");
        let empty = read(vec![], 5).ok().expect("read");
        assert!(empty.is_empty());
    }

    #[test]
    fn bodies_over_the_limit_or_broken_are_errors() {
        assert!(matches!(
            read(vec![Some(b"abcdef")], 5),
            Err(BodyError::TooLarge)
        ));
        assert!(matches!(
            read(vec![Some(b"abc"), Some(b"def")], 5),
            Err(BodyError::TooLarge)
        ));
        assert!(matches!(
            read(vec![Some(b"abc"), None], 5),
            Err(BodyError::Read(_))
        ));
    }

    #[test]
    fn accept_needs_both_types() {
        assert!(accepts_both(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
        assert!(accepts_both(&headers(&[(
            "accept",
            "text/event-stream;q=0.9,application/json"
        )])));
        assert!(accepts_both(&headers(&[
            ("accept", "application/json"),
            ("accept", "text/event-stream")
        ])));
        assert!(accepts_both(&headers(&[("accept", "*/*")])));
        assert!(!accepts_both(&headers(&[("accept", "application/json")])));
        assert!(!accepts_both(&headers(&[("accept", "text/event-stream")])));
        assert!(!accepts_both(&headers(&[])));
    }

    #[test]
    fn content_type_must_be_json() {
        assert!(is_json(&headers(&[("content-type", "application/json")])));
        assert!(is_json(&headers(&[(
            "content-type",
            "Application/JSON; charset=utf-8"
        )])));
        assert!(!is_json(&headers(&[("content-type", "text/plain")])));
        assert!(!is_json(&headers(&[])));
    }

    #[test]
    fn statuses_follow_the_spec() {
        use kelson_jsonrpc::code::*;
        let e = |code, rejected| status_for(Outcome::Error { code, rejected });
        assert_eq!(e(HEADER_MISMATCH, false), StatusCode::BAD_REQUEST);
        assert_eq!(
            e(MISSING_REQUIRED_CLIENT_CAPABILITY, false),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            e(UNSUPPORTED_PROTOCOL_VERSION, true),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(e(METHOD_NOT_FOUND, true), StatusCode::NOT_FOUND);
        assert_eq!(e(INVALID_PARAMS, true), StatusCode::BAD_REQUEST);
        assert_eq!(e(INVALID_PARAMS, false), StatusCode::OK);
        assert_eq!(e(INTERNAL_ERROR, false), StatusCode::OK);
        assert_eq!(status_for(Outcome::ToolError), StatusCode::OK);
    }
}
