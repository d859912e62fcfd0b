//! HTTP/1.1 connections, served here rather than by hyper (which still serves h2c).
//!
//! hyper's HTTP/1 connection keeps an 8 KiB read buffer and an 8 KiB write buffer for as long as
//! it lives. On HTTP/1.1 every open `subscriptions/listen` stream holds a connection of its own,
//! so those buffers were most of what an idle stream cost (about 12 KB of RSS each). A connection
//! here holds no buffer while it waits: it waits for readability with nothing allocated, reads a
//! request into a buffer that is released once the request is handled (unless a pipelined request
//! follows in it), and writes each response, or each event of a streamed one, straight from the
//! bytes at hand.
//!
//! What it accepts (RFC 9112), and what it answers otherwise, before the MCP endpoint sees
//! anything:
//! - HTTP/1.0 and HTTP/1.1 requests (505 for other versions); a head of at most 64 KiB with at most
//!   100 header fields (431); one `Host` field on HTTP/1.1 (400);
//! - a body framed by one `Content-Length` (repeated only with the same value), by
//!   `Transfer-Encoding: chunked` alone, or by neither (no body). Both at once, a malformed length,
//!   a transfer coding on HTTP/1.0 or malformed chunks are refused with 400, other transfer codings
//!   with 501, and the connection is closed, since its framing can no longer be trusted;
//! - `Expect: 100-continue` (the interim response is sent when the body is read); other
//!   expectations get 417;
//! - a head that has started must be complete within the head timeout (408), and so must a body
//!   that did not come whole with its head.
//!
//! A body longer than the endpoint's limit is not read: the endpoint sees its declared size (and
//! answers 413 after its earlier checks), and the connection closes after the answer. A client that
//! closes its connection while its request is being handled cancels the request, as with hyper.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf as _, Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, EXPECT, HOST, TRANSFER_ENCODING};
use http::{
    HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri, Version,
};
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::stop::Stop;
use super::{BoxError, McpBody};

/// The largest request head: request line and header fields.
const MAX_HEAD: usize = 64 * 1024;
/// The most header fields a request may carry.
const MAX_HEADERS: usize = 100;
/// The room each read of a request asks for at least.
const READ_CHUNK: usize = 4 * 1024;
/// The longest chunk-size line (with extensions) or trailer section of a chunked body.
const MAX_CHUNK_LINE: usize = 4 * 1024;
const MAX_TRAILERS: usize = 16 * 1024;
/// The interim response to `Expect: 100-continue`.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The body of a request as the endpoint sees it: from hyper (h2c), read whole here (HTTP/1.1),
/// or too long to read, with its declared or least size.
pub(crate) enum RequestBody {
    Hyper(hyper::body::Incoming),
    Read(Option<Bytes>),
    Unread(u64),
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            RequestBody::Hyper(incoming) => Pin::new(incoming)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(Into::into))),
            RequestBody::Read(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            RequestBody::Unread(_) => Poll::Ready(Some(Err(
                "the request body exceeds the size limit and was not read".into(),
            ))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RequestBody::Hyper(incoming) => incoming.is_end_stream(),
            RequestBody::Read(bytes) => bytes.is_none(),
            RequestBody::Unread(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RequestBody::Hyper(incoming) => incoming.size_hint(),
            RequestBody::Read(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            RequestBody::Unread(len) => SizeHint::with_exact(*len),
        }
    }
}

/// What a connection needs to know besides its handler.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    /// The longest body read; longer ones are left unread (see [`RequestBody::Unread`]).
    pub(crate) max_body: usize,
    /// How long a request head may take to arrive once its first bytes have; zero waits forever.
    pub(crate) head_timeout: Duration,
}

/// Why a connection ends early.
enum Fail {
    /// The socket failed or the peer went away: nothing more can be said.
    Io(io::Error),
    /// The request cannot be served: answer with this status and close.
    Refuse(StatusCode, &'static str),
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Self {
        Fail::Io(e)
    }
}

/// A parsed request head.
struct Head {
    parts: http::request::Parts,
    framing: Framing,
    keep_alive: bool,
    expect_continue: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
}

/// Serves HTTP/1.1 requests on `io` with `handler` until the peer closes the connection, a request
/// asks to close it, or `stop` drains the server (an idle connection closes at once, a busy one
/// after its response).
pub(crate) async fn serve<H, F>(
    mut io: TcpStream,
    handler: H,
    stop: Arc<Stop>,
    settings: Settings,
) -> io::Result<()>
where
    H: Fn(Request<RequestBody>) -> F,
    F: Future<Output = Response<McpBody>> + Send + 'static,
{
    let mut buf = BytesMut::new();
    loop {
        if buf.is_empty() {
            // Idle between requests: hold no buffer while waiting for the next one.
            let next = poll_fn(|cx| {
                if stop.is_draining() {
                    return Poll::Ready(Ok(false));
                }
                io.poll_read_ready(cx).map_ok(|()| true)
            })
            .await?;
            if !next {
                return Ok(());
            }
        }
        let read = async {
            let Some(head) = read_head(&mut io, &mut buf, settings.head_timeout).await? else {
                return Ok(None);
            };
            // A body that came whole with its head (the usual case) sets no timer; one still
            // arriving must arrive within the same time a head may take.
            let untimed = settings.head_timeout.is_zero() || body_is_here(&head, &buf);
            let body = read_body(&mut io, &mut buf, &head, settings.max_body);
            let (body, in_sync) = if untimed {
                body.await?
            } else {
                tokio::time::timeout(settings.head_timeout, body)
                    .await
                    .map_err(|_| {
                        Fail::Refuse(
                            StatusCode::REQUEST_TIMEOUT,
                            "the request body did not arrive in time",
                        )
                    })??
            };
            Ok::<_, Fail>(Some((head, body, in_sync)))
        };
        let (head, body, in_sync) = match read.await {
            Ok(Some(request)) => request,
            Ok(None) => return Ok(()),
            Err(Fail::Io(e)) => return Err(e),
            Err(Fail::Refuse(status, why)) => {
                tracing::debug!(%status, why, "refused an HTTP/1.1 request");
                let response = super::http_error(status, why);
                let (parts, body) = response.into_parts();
                write_response(&mut io, &parts, body, true, false, false).await?;
                return shut_lingering(&mut io).await;
            }
        };
        if buf.is_empty() {
            // Nothing pipelined behind this request: let the read buffer go now, before a long
            // response (a listen stream) begins.
            buf = BytesMut::new();
        }
        let Head {
            parts, keep_alive, ..
        } = head;
        let head_only = parts.method == Method::HEAD;
        let http10 = parts.version == Version::HTTP_10;
        // The handler's future is boxed so that this connection's own state stays small while it
        // waits between requests or streams a response.
        let mut handling = Box::pin(handler(Request::from_parts(parts, body)));
        let mut watching = true;
        let response = loop {
            tokio::select! {
                biased;
                response = &mut handling => break response,
                peer = watch_peer(&io), if watching => match peer {
                    // The client left: dropping the handler's future cancels the request.
                    Peer::Gone => return Ok(()),
                    // A pipelined request: it waits in the socket until this one is answered.
                    Peer::Sent => watching = false,
                },
            }
        };
        drop(handling);
        let close = !keep_alive || !in_sync || stop.is_draining();
        let (parts, body) = response.into_parts();
        let close = write_response(&mut io, &parts, body, close, head_only, http10).await?;
        if !in_sync {
            return shut_lingering(&mut io).await;
        }
        if close {
            return shut(&mut io).await;
        }
    }
}

async fn shut(io: &mut TcpStream) -> io::Result<()> {
    // The peer may be gone already; closing is all that is left either way.
    let _ = io.shutdown().await;
    Ok(())
}

/// How long, and for how many bytes, a connection closed with a request still arriving keeps
/// reading (and discarding) before it lets go.
const LINGER_TIME: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 16 * 1024 * 1024;

/// Closes a connection whose client may still be sending (a body left unread, a refused request):
/// closing a socket with unread bytes makes the kernel reset the connection, and a client still
/// writing would see the reset instead of the answer. So the write side is shut first, and what
/// the client sends is read and dropped until it closes too, for a bounded time and amount.
async fn shut_lingering(io: &mut TcpStream) -> io::Result<()> {
    let _ = io.shutdown().await;
    let drain = async {
        let mut sink = vec![0u8; 16 * 1024];
        let mut total = 0;
        while total < LINGER_BYTES {
            match io.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, drain).await;
    Ok(())
}

/// What the peer did while a response was pending.
enum Peer {
    /// It closed the connection, or the connection failed.
    Gone,
    /// It sent more bytes (a pipelined request), which stay unread.
    Sent,
}

/// Resolves when the peer closes the connection or sends more bytes, without reading them.
async fn watch_peer(io: &TcpStream) -> Peer {
    let mut byte = [0u8; 1];
    loop {
        match io.peek(&mut byte).await {
            Ok(0) => return Peer::Gone,
            Ok(_) => return Peer::Sent,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return Peer::Gone,
        }
    }
}

/// Reads into `buf` until it holds a whole request head, and parses it. `None`: the peer closed
/// the connection before a request began.
async fn read_head(
    io: &mut TcpStream,
    buf: &mut BytesMut,
    timeout: Duration,
) -> Result<Option<Head>, Fail> {
    let mut deadline: Option<Instant> = None;
    loop {
        if !buf.is_empty() {
            if let Some(head) = parse_head(buf)? {
                return Ok(Some(head));
            }
            if buf.len() >= MAX_HEAD {
                return Err(Fail::Refuse(
                    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                    "the request head exceeds 64 KiB",
                ));
            }
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        let n = if buf.is_empty() || timeout.is_zero() {
            // Before a request's first byte the connection is idle, and idle is not timed.
            io.read_buf(buf).await?
        } else {
            let at = *deadline.get_or_insert_with(|| Instant::now() + timeout);
            match tokio::time::timeout_at(at, io.read_buf(buf)).await {
                Ok(n) => n?,
                Err(_) => {
                    return Err(Fail::Refuse(
                        StatusCode::REQUEST_TIMEOUT,
                        "the request head did not arrive in time",
                    ));
                }
            }
        };
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(Fail::Io(io::ErrorKind::UnexpectedEof.into()))
            };
        }
    }
}

/// Parses the head at the start of `buf` and removes it from `buf`; `None` if it is not complete
/// yet.
fn parse_head(buf: &mut BytesMut) -> Result<Option<Head>, Fail> {
    const BAD: StatusCode = StatusCode::BAD_REQUEST;
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut fields);
    let len = match request.parse(&buf[..]) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Fail::Refuse(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "the request has more than 100 header fields",
            ));
        }
        Err(httparse::Error::Version) if names_a_version(buf) => {
            return Err(Fail::Refuse(
                StatusCode::HTTP_VERSION_NOT_SUPPORTED,
                "only HTTP/1.0 and HTTP/1.1 are served here",
            ));
        }
        Err(_) => return Err(Fail::Refuse(BAD, "a malformed request head")),
    };
    let version = match request.version {
        Some(0) => Version::HTTP_10,
        _ => Version::HTTP_11,
    };
    let method = Method::from_bytes(request.method.unwrap_or_default().as_bytes())
        .map_err(|_| Fail::Refuse(BAD, "a malformed method"))?;
    let base = buf.as_ptr() as usize;
    let offset = |s: &[u8]| s.as_ptr() as usize - base;
    let target = request.path.unwrap_or_default().as_bytes();
    let target = (offset(target), target.len());
    // Where each field sits in the head, so that values can share the head's bytes.
    let mut spans = [(0usize, 0usize, 0usize, 0usize); MAX_HEADERS];
    let count = request.headers.len();
    for (span, field) in spans.iter_mut().zip(request.headers.iter()) {
        *span = (
            offset(field.name.as_bytes()),
            field.name.len(),
            offset(field.value),
            field.value.len(),
        );
    }
    let head = buf.split_to(len).freeze();
    let uri = Uri::from_maybe_shared(head.slice(target.0..target.0 + target.1))
        .map_err(|_| Fail::Refuse(BAD, "a malformed request target"))?;
    let mut headers = HeaderMap::with_capacity(count);
    for &(name_at, name_len, value_at, value_len) in &spans[..count] {
        let name = HeaderName::from_bytes(&head[name_at..name_at + name_len])
            .map_err(|_| Fail::Refuse(BAD, "a malformed header field name"))?;
        let value = HeaderValue::from_maybe_shared(head.slice(value_at..value_at + value_len))
            .map_err(|_| Fail::Refuse(BAD, "a malformed header field value"))?;
        headers.append(name, value);
    }

    let framing = framing(&headers, version)?;
    if version == Version::HTTP_11 && headers.get_all(HOST).iter().count() != 1 {
        return Err(Fail::Refuse(
            BAD,
            "an HTTP/1.1 request must carry exactly one Host field",
        ));
    }
    let (mut close, mut keep) = (false, false);
    for token in headers
        .get_all(CONNECTION)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
    {
        let token = token.trim_ascii();
        close |= token.eq_ignore_ascii_case(b"close");
        keep |= token.eq_ignore_ascii_case(b"keep-alive");
    }
    let keep_alive = !close && (version == Version::HTTP_11 || keep);
    let mut expect_continue = false;
    for value in headers.get_all(EXPECT) {
        if value
            .as_bytes()
            .trim_ascii()
            .eq_ignore_ascii_case(b"100-continue")
        {
            expect_continue = version == Version::HTTP_11;
        } else {
            return Err(Fail::Refuse(
                StatusCode::EXPECTATION_FAILED,
                "the only expectation met is 100-continue",
            ));
        }
    }

    let (mut parts, ()) = Request::new(()).into_parts();
    parts.method = method;
    parts.uri = uri;
    parts.version = version;
    parts.headers = headers;
    Ok(Some(Head {
        parts,
        framing,
        keep_alive,
        expect_continue,
    }))
}

/// Whether the request line ends in an HTTP version (`HTTP/d.d`), one that is not served.
fn names_a_version(buf: &[u8]) -> bool {
    let line = buf
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or_default();
    line.rsplit(|&b| b == b' ')
        .next()
        .is_some_and(|v| matches!(v, [b'H', b'T', b'T', b'P', b'/', major, b'.', minor] if major.is_ascii_digit() && minor.is_ascii_digit()))
}

/// How the request's body is delimited (RFC 9112 §6), refusing what could be read two ways.
fn framing(headers: &HeaderMap, version: Version) -> Result<Framing, Fail> {
    const BAD: StatusCode = StatusCode::BAD_REQUEST;
    let mut codings = headers.get_all(TRANSFER_ENCODING).iter().peekable();
    let chunked = if codings.peek().is_some() {
        if version == Version::HTTP_10 {
            return Err(Fail::Refuse(BAD, "Transfer-Encoding is not HTTP/1.0"));
        }
        if headers.contains_key(CONTENT_LENGTH) {
            return Err(Fail::Refuse(
                BAD,
                "a request cannot carry both Transfer-Encoding and Content-Length",
            ));
        }
        let mut names = codings.flat_map(|v| v.as_bytes().split(|&b| b == b','));
        match (names.next(), names.next()) {
            (Some(only), None) if only.trim_ascii().eq_ignore_ascii_case(b"chunked") => true,
            _ => {
                return Err(Fail::Refuse(
                    StatusCode::NOT_IMPLEMENTED,
                    "the only transfer coding served is chunked",
                ));
            }
        }
    } else {
        false
    };
    if chunked {
        return Ok(Framing::Chunked);
    }
    let mut length: Option<u64> = None;
    for member in headers
        .get_all(CONTENT_LENGTH)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
    {
        let member = member.trim_ascii();
        let parsed =
            (!member.is_empty() && member.len() <= 19 && member.iter().all(u8::is_ascii_digit))
                .then(|| {
                    member
                        .iter()
                        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'))
                });
        match (parsed, length) {
            (None, _) => return Err(Fail::Refuse(BAD, "a malformed Content-Length")),
            (Some(n), Some(seen)) if n != seen => {
                return Err(Fail::Refuse(BAD, "conflicting Content-Length values"));
            }
            (Some(n), _) => length = Some(n),
        }
    }
    Ok(length.map_or(Framing::None, Framing::Length))
}

/// Whether the request's body needs no more reading: it has none, it is not going to be read, or it
/// is in `buf` already.
fn body_is_here(head: &Head, buf: &BytesMut) -> bool {
    match head.framing {
        Framing::None => true,
        Framing::Length(len) => len <= buf.len() as u64,
        Framing::Chunked => false,
    }
}

/// Reads the request's body from `buf` and the connection. The flag says whether the connection
/// is still in step with the client, that is whether the whole body was consumed.
async fn read_body(
    io: &mut TcpStream,
    buf: &mut BytesMut,
    head: &Head,
    max: usize,
) -> Result<(RequestBody, bool), Fail> {
    match head.framing {
        Framing::None | Framing::Length(0) => Ok((RequestBody::Read(None), true)),
        Framing::Length(len) if len > max as u64 => Ok((RequestBody::Unread(len), false)),
        Framing::Length(len) => {
            let len = len as usize;
            if head.expect_continue && buf.len() < len {
                io.write_all(CONTINUE).await?;
            }
            if buf.len() < len {
                buf.reserve(len - buf.len());
            }
            while buf.len() < len {
                if io.read_buf(buf).await? == 0 {
                    return Err(Fail::Io(io::ErrorKind::UnexpectedEof.into()));
                }
            }
            Ok((RequestBody::Read(Some(buf.split_to(len).freeze())), true))
        }
        Framing::Chunked => {
            if head.expect_continue && buf.is_empty() {
                io.write_all(CONTINUE).await?;
            }
            read_chunked(io, buf, max).await
        }
    }
}

/// Decodes a chunked body (RFC 9112 §7.1): chunk extensions and trailer fields are read and
/// ignored. A body longer than `max` is left unread.
async fn read_chunked(
    io: &mut TcpStream,
    buf: &mut BytesMut,
    max: usize,
) -> Result<(RequestBody, bool), Fail> {
    const BAD: StatusCode = StatusCode::BAD_REQUEST;
    let mut body = BytesMut::new();
    loop {
        let line = fill_line(io, buf, MAX_CHUNK_LINE).await?;
        let size = chunk_size(&buf[..line]).ok_or(Fail::Refuse(BAD, "a malformed chunk size"))?;
        buf.advance(line + 2);
        if size == 0 {
            break;
        }
        if body.len() as u64 + size > max as u64 {
            return Ok((RequestBody::Unread(max as u64 + 1), false));
        }
        let size = size as usize;
        fill(io, buf, size + 2).await?;
        if &buf[size..size + 2] != b"\r\n" {
            return Err(Fail::Refuse(
                BAD,
                "a chunk does not end where its size says",
            ));
        }
        body.extend_from_slice(&buf[..size]);
        buf.advance(size + 2);
    }
    // Trailer fields, up to the empty line that ends the body.
    let mut trailers = 0;
    loop {
        let line = fill_line(io, buf, MAX_CHUNK_LINE).await?;
        let field = &buf[..line];
        if !field.is_empty() && !field.contains(&b':') {
            return Err(Fail::Refuse(BAD, "a malformed trailer field"));
        }
        buf.advance(line + 2);
        trailers += line + 2;
        if line == 0 {
            break;
        }
        if trailers > MAX_TRAILERS {
            return Err(Fail::Refuse(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "the trailer section exceeds 16 KiB",
            ));
        }
    }
    let body = (!body.is_empty()).then(|| body.freeze());
    Ok((RequestBody::Read(body), true))
}

/// The size of a chunk-size line (without its CRLF): hexadecimal digits, then nothing or an
/// extension introduced by optional whitespace and `;`.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 || digits > 15 {
        return None;
    }
    let after = &line[digits..];
    if !(after.is_empty() || after.trim_ascii_start().first() == Some(&b';')) {
        return None;
    }
    let text = std::str::from_utf8(&line[..digits]).ok()?;
    u64::from_str_radix(text, 16).ok()
}

/// Reads until `buf` holds a CRLF-terminated line and returns the line's length (without CRLF).
/// A CR or LF anywhere else in the line, or a line longer than `max`, is refused.
async fn fill_line(io: &mut TcpStream, buf: &mut BytesMut, max: usize) -> Result<usize, Fail> {
    let mut scanned = 0;
    loop {
        if let Some(at) = buf[scanned..]
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
        {
            let at = scanned + at;
            if buf[at] == b'\n' {
                return Err(Fail::Refuse(
                    StatusCode::BAD_REQUEST,
                    "a bare LF in chunked framing",
                ));
            }
            if at + 1 < buf.len() {
                if buf[at + 1] != b'\n' {
                    return Err(Fail::Refuse(
                        StatusCode::BAD_REQUEST,
                        "a bare CR in chunked framing",
                    ));
                }
                return Ok(at);
            }
            scanned = at;
        } else {
            scanned = buf.len();
        }
        if scanned > max {
            return Err(Fail::Refuse(
                StatusCode::BAD_REQUEST,
                "a chunk-size line or trailer field is too long",
            ));
        }
        read_more(io, buf).await?;
    }
}

/// Reads until `buf` holds at least `len` bytes.
async fn fill(io: &mut TcpStream, buf: &mut BytesMut, len: usize) -> Result<(), Fail> {
    if buf.len() < len {
        buf.reserve(len - buf.len());
    }
    while buf.len() < len {
        read_more(io, buf).await?;
    }
    Ok(())
}

async fn read_more(io: &mut TcpStream, buf: &mut BytesMut) -> Result<(), Fail> {
    if buf.capacity() == buf.len() {
        buf.reserve(READ_CHUNK);
    }
    if io.read_buf(buf).await? == 0 {
        return Err(Fail::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(())
}

/// Writes `parts` and `body`: a whole body with its `Content-Length`, a streamed one chunked (or,
/// to an HTTP/1.0 client, delimited by closing). Returns whether the connection must close.
async fn write_response(
    io: &mut TcpStream,
    parts: &http::response::Parts,
    body: McpBody,
    close: bool,
    head_only: bool,
    http10: bool,
) -> io::Result<bool> {
    let body = body.into_full();
    // An HTTP/1.0 client cannot read chunks: a stream to it ends when the connection closes.
    let close = close || http10 && body.is_err();
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(parts.status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(parts.status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in &parts.headers {
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING || name == CONNECTION {
            continue; // the framing is this function's to state
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"date: ");
    out.extend_from_slice(&date());
    out.extend_from_slice(b"\r\n");
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    } else if http10 {
        out.extend_from_slice(b"connection: keep-alive\r\n");
    }
    match body {
        Ok(bytes) => {
            let len = bytes.as_ref().map_or(0, Bytes::len);
            out.extend_from_slice(format!("content-length: {len}\r\n\r\n").as_bytes());
            match bytes {
                Some(bytes) if !head_only && bytes.len() <= 16 * 1024 => {
                    out.extend_from_slice(&bytes);
                    io.write_all(&out).await?;
                }
                Some(bytes) if !head_only => {
                    io.write_all(&out).await?;
                    io.write_all(&bytes).await?;
                }
                _ => io.write_all(&out).await?,
            }
            Ok(close)
        }
        Err(stream) => {
            if !http10 {
                out.extend_from_slice(b"transfer-encoding: chunked\r\n");
            }
            out.extend_from_slice(b"\r\n");
            io.write_all(&out).await?;
            drop(out);
            if !head_only {
                write_stream(io, stream, !http10).await?;
            }
            Ok(close)
        }
    }
}

/// Writes a streamed body frame by frame as they come (as chunks if `chunked`), until it ends.
/// The body is dropped, which cancels its request, if the peer goes away in the meantime.
async fn write_stream(io: &mut TcpStream, mut body: McpBody, chunked: bool) -> io::Result<()> {
    let mut watching = true;
    loop {
        let frame = tokio::select! {
            biased;
            frame = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)) => frame,
            peer = watch_peer(io), if watching => match peer {
                Peer::Gone => return Err(io::ErrorKind::ConnectionAborted.into()),
                // A pipelined request waits until the stream ends.
                Peer::Sent => {
                    watching = false;
                    continue;
                }
            },
        };
        let Some(Ok(frame)) = frame else {
            return if chunked {
                io.write_all(b"0\r\n\r\n").await
            } else {
                Ok(())
            };
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        if !chunked {
            io.write_all(&data).await?;
            continue;
        }
        let mut chunk = Vec::with_capacity(data.len() + 20);
        chunk.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        chunk.extend_from_slice(&data);
        chunk.extend_from_slice(b"\r\n");
        io.write_all(&chunk).await?;
    }
}

/// The `Date` field value (RFC 9110 §6.6.1), formatted once a second per thread.
fn date() -> [u8; 29] {
    use std::cell::Cell;
    thread_local! {
        static CACHED: Cell<(u64, [u8; 29])> = const { Cell::new((u64::MAX, [0; 29])) };
    }
    let now = SystemTime::now();
    let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    CACHED.with(|cached| {
        let (at, text) = cached.get();
        if at == second {
            return text;
        }
        let mut text = [0u8; 29];
        let formatted = httpdate::fmt_http_date(now);
        text.copy_from_slice(&formatted.as_bytes()[..29]);
        cached.set((second, text));
        text
    })
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicBool, Ordering};

    use tokio::io::AsyncReadExt as _;
    use tokio::net::TcpListener;

    use super::super::body::Event;
    use super::super::stop::Watched;
    use super::*;

    const SETTINGS: Settings = Settings {
        max_body: 64,
        head_timeout: Duration::from_secs(5),
    };

    /// Answers with what it saw: `METHOD PATH body=...` (or `unread=N` for a body left unread).
    /// `/stream` answers with a two-event SSE stream, `/hang` never answers and sets `dropped`
    /// when its future is dropped.
    async fn handle(request: Request<RequestBody>, dropped: Arc<AtomicBool>) -> Response<McpBody> {
        let (parts, body) = request.into_parts();
        match parts.uri.path() {
            "/stream" => {
                let (tx, rx) = tokio::sync::mpsc::channel(4);
                tx.send(Event::Final(
                    b"{\"last\":true}".to_vec(),
                    mcp_server::Outcome::Success,
                ))
                .await
                .expect("send");
                let first = Event::Notification(b"{\"first\":true}".to_vec());
                let guard = tokio_util::sync::CancellationToken::new().drop_guard();
                Response::new(McpBody::events(first, rx, None, guard))
            }
            "/hang" => {
                struct SetOnDrop(Arc<AtomicBool>);
                impl Drop for SetOnDrop {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let _guard = SetOnDrop(dropped);
                std::future::pending().await
            }
            path => {
                let seen = match body {
                    RequestBody::Read(bytes) => format!(
                        "body={}",
                        String::from_utf8_lossy(&bytes.unwrap_or_default())
                    ),
                    RequestBody::Unread(len) => format!("unread={len}"),
                    RequestBody::Hyper(_) => unreachable!(),
                };
                Response::new(McpBody::full(format!("{} {path} {seen}", parts.method)))
            }
        }
    }

    /// Serves one connection with [`handle`] and `settings`; the flag is the `/hang` handler's.
    async fn start(
        settings: Settings,
    ) -> (
        SocketAddr,
        Arc<Stop>,
        Arc<AtomicBool>,
        tokio::task::JoinHandle<()>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = Stop::new();
        let dropped = Arc::new(AtomicBool::new(false));
        let (task_stop, flag) = (stop.clone(), dropped.clone());
        let task = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.expect("accept");
            let handler = move |r| handle(r, flag.clone());
            let conn = serve(stream, handler, task_stop.clone(), settings);
            let _ = Watched::new(conn, |_: Pin<&mut _>| {}, task_stop).await;
        });
        (addr, stop, dropped, task)
    }

    async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(5), f)
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
    }

    /// Writes `wire` on a new connection and reads until the server closes it.
    async fn exchange(settings: Settings, wire: &[u8]) -> String {
        let (addr, _stop, _dropped, _task) = start(settings).await;
        let mut client = TcpStream::connect(addr).await.expect("connect");
        client.write_all(wire).await.expect("write");
        read_to_close(&mut client).await
    }

    /// A connection that has sent one request and read its answer, and is kept open.
    async fn answered_once(addr: SocketAddr) -> TcpStream {
        let mut client = TcpStream::connect(addr).await.expect("connect");
        client
            .write_all(post("/a", "", "one").as_bytes())
            .await
            .expect("write");
        read_until(&mut client, "body=one").await;
        client
    }

    async fn read_to_close(client: &mut TcpStream) -> String {
        let mut out = Vec::new();
        within("the server to close", client.read_to_end(&mut out))
            .await
            .expect("read");
        String::from_utf8(out).expect("utf-8")
    }

    /// Reads until `wanted` has arrived; returns all read.
    async fn read_until(client: &mut TcpStream, wanted: &str) -> String {
        let mut out = Vec::new();
        while !String::from_utf8_lossy(&out).contains(wanted) {
            let mut chunk = [0u8; 1024];
            let n = within(wanted, client.read(&mut chunk)).await.expect("read");
            assert!(
                n > 0,
                "closed before {wanted:?}: {}",
                String::from_utf8_lossy(&out)
            );
            out.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8(out).expect("utf-8")
    }

    fn post(path: &str, extra: &str, body: &str) -> String {
        format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    /// The status codes of the response heads in `wire`.
    fn statuses(wire: &str) -> Vec<&str> {
        wire.match_indices("HTTP/1.1 ")
            .map(|(at, _)| &wire[at + 9..])
            .filter(|rest| {
                rest.len() > 3
                    && rest[..3].bytes().all(|b| b.is_ascii_digit())
                    && &rest[3..4] == " "
            })
            .map(|rest| &rest[..3])
            .collect()
    }

    #[tokio::test]
    async fn pipelined_requests_are_answered_in_order_on_one_connection() {
        let wire = format!(
            "{}{}",
            post("/a", "", "one"),
            post("/b", "Connection: close\r\n", "two")
        );
        let out = exchange(SETTINGS, wire.as_bytes()).await;
        assert_eq!(statuses(&out), ["200", "200"], "{out}");
        let first = out.find("POST /a body=one").expect("first");
        let second = out.find("POST /b body=two").expect("second");
        assert!(first < second);
        assert_eq!(out.matches("connection: close").count(), 1, "{out}");
        let date = out
            .lines()
            .find_map(|l| l.strip_prefix("date: "))
            .expect("a date");
        httpdate::parse_http_date(date).expect("an HTTP date");
    }

    #[tokio::test]
    async fn a_kept_connection_serves_the_next_request_after_the_first_is_answered() {
        let (addr, _stop, _dropped, _task) = start(SETTINGS).await;
        let mut client = answered_once(addr).await;
        let last = post("/b", "Connection: close\r\n", "two");
        client.write_all(last.as_bytes()).await.expect("write");
        assert!(
            read_to_close(&mut client)
                .await
                .contains("POST /b body=two")
        );
    }

    #[tokio::test]
    async fn chunked_bodies_are_decoded_with_extensions_and_trailers() {
        let wire = "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
                    5;name=value\r\nhello\r\n6 ; x\r\n world\r\n0\r\nX-Trailer: y\r\n\r\n";
        let out = exchange(SETTINGS, wire.as_bytes()).await;
        assert!(out.contains("POST /c body=hello world"), "{out}");
    }

    #[tokio::test]
    async fn malformed_or_ambiguous_requests_are_refused_and_the_connection_closed() {
        let cases: &[(&str, &str)] = &[
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
                "400",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                "501",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
                "501",
            ),
            (
                "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                "400",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 4\r\n\r\nabcd",
                "400",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
                "400",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc",
                "400",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x3\r\n\r\nabc",
                "400",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "400",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
                "400",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n",
                "400",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n",
                "400",
            ),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
                "400",
            ),
            ("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "400"),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nHost: y\r\nContent-Length: 0\r\n\r\n",
                "400",
            ),
            ("POST / HTTP/2.0\r\nHost: x\r\n\r\n", "505"),
            (
                "POST / HTTP/1.1\r\nHost: x\r\nExpect: something\r\nContent-Length: 0\r\n\r\n",
                "417",
            ),
            ("POST / HTTP/1.1\r\nHost: x\r\n folded: no\r\n\r\n", "400"),
            ("not http at all\r\n\r\n", "400"),
        ];
        for (wire, status) in cases {
            let out = exchange(SETTINGS, wire.as_bytes()).await;
            assert_eq!(statuses(&out), [*status], "{wire:?} got {out}");
            assert!(out.contains("connection: close"), "{out}");
            assert!(
                out.contains("\"code\":-32600"),
                "a JSON-RPC error body: {out}"
            );
        }
        // Repeating the same length is not a conflict.
        let out = exchange(
            SETTINGS,
            b"POST /same HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\nConnection: close\r\n\r\nabc",
        )
        .await;
        assert!(out.contains("POST /same body=abc"), "{out}");
    }

    #[tokio::test]
    async fn heads_too_large_or_with_too_many_fields_get_431() {
        let many: String = (0..101).map(|i| format!("X-{i}: v\r\n")).collect();
        let wire = format!("POST / HTTP/1.1\r\nHost: x\r\n{many}\r\n");
        assert_eq!(
            statuses(&exchange(SETTINGS, wire.as_bytes()).await),
            ["431"]
        );
        let long = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\n\r\n",
            "a".repeat(70_000)
        );
        assert_eq!(
            statuses(&exchange(SETTINGS, long.as_bytes()).await),
            ["431"]
        );
    }

    #[tokio::test]
    async fn expect_continue_gets_the_interim_response_before_the_body_is_sent() {
        let (addr, _stop, _dropped, _task) = start(SETTINGS).await;
        let mut client = TcpStream::connect(addr).await.expect("connect");
        let head = "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\n";
        client.write_all(head.as_bytes()).await.expect("write");
        let interim = read_until(&mut client, "\r\n\r\n").await;
        assert_eq!(interim, "HTTP/1.1 100 Continue\r\n\r\n");
        client.write_all(b"hello").await.expect("write");
        let out = read_to_close(&mut client).await;
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(out.contains("POST /e body=hello"), "{out}");
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_left_unread_and_the_connection_closed() {
        let wire = post("/big", "", &"x".repeat(100));
        let out = exchange(SETTINGS, wire.as_bytes()).await;
        assert!(out.contains("POST /big unread=100"), "{out}");
        assert!(out.contains("connection: close"), "{out}");
        let chunked = "POST /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n";
        let chunked = format!("{chunked}{}\r\n1\r\nx\r\n0\r\n\r\n", "y".repeat(64));
        let out = exchange(SETTINGS, chunked.as_bytes()).await;
        assert!(out.contains("POST /big unread=65"), "{out}");
    }

    #[tokio::test]
    async fn http10_closes_unless_asked_to_keep_the_connection() {
        let out = exchange(
            SETTINGS,
            b"POST /old HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi",
        )
        .await;
        assert!(
            out.contains("POST /old body=hi") && out.contains("connection: close"),
            "{out}"
        );
        let wire = "POST /k HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\na\
                    POST /l HTTP/1.0\r\nContent-Length: 1\r\n\r\nb";
        let out = exchange(SETTINGS, wire.as_bytes()).await;
        assert!(
            out.contains("connection: keep-alive") && out.contains("POST /l body=b"),
            "{out}"
        );
        // A stream to an HTTP/1.0 client is not chunked: it ends with the connection.
        let out = exchange(
            SETTINGS,
            b"POST /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        )
        .await;
        assert!(!out.contains("transfer-encoding"), "{out}");
        let body = &out[out.find("\r\n\r\n").expect("head") + 4..];
        assert_eq!(body, "data: {\"first\":true}\n\ndata: {\"last\":true}\n\n");
    }

    #[tokio::test]
    async fn head_requests_get_the_length_but_no_body() {
        let out = exchange(
            SETTINGS,
            b"HEAD /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(out.contains("content-length: 13\r\n"), "{out}");
        assert!(out.ends_with("\r\n\r\n"), "{out}");
    }

    #[tokio::test]
    async fn a_head_that_does_not_arrive_in_time_gets_408() {
        let settings = Settings {
            head_timeout: Duration::from_millis(200),
            ..SETTINGS
        };
        let out = exchange(settings, b"POST / HTTP/1.1\r\nHost: x\r\n").await;
        assert_eq!(statuses(&out), ["408"], "{out}");
    }

    #[tokio::test]
    async fn a_body_that_does_not_arrive_in_time_gets_408() {
        let settings = Settings {
            head_timeout: Duration::from_millis(200),
            ..SETTINGS
        };
        let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc";
        let out = exchange(settings, head.as_bytes()).await;
        assert_eq!(statuses(&out), ["408"], "{out}");
        let chunked =
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n";
        let out = exchange(settings, chunked.as_bytes()).await;
        assert_eq!(statuses(&out), ["408"], "{out}");
    }

    #[tokio::test]
    async fn a_body_sent_after_its_head_is_read_within_the_timeout() {
        let (addr, _stop, _dropped, _task) = start(SETTINGS).await;
        let mut client = TcpStream::connect(addr).await.expect("connect");
        let wire = post("/late", "Connection: close\r\n", "later");
        let (head, body) = wire.split_at(wire.len() - 5);
        client.write_all(head.as_bytes()).await.expect("write");
        tokio::time::sleep(Duration::from_millis(50)).await;
        client.write_all(body.as_bytes()).await.expect("write");
        let out = read_to_close(&mut client).await;
        assert!(out.ends_with("POST /late body=later"), "{out}");
    }

    #[tokio::test]
    async fn a_client_that_leaves_cancels_its_request() {
        let (addr, _stop, dropped, task) = start(SETTINGS).await;
        let mut client = TcpStream::connect(addr).await.expect("connect");
        client
            .write_all(post("/hang", "", "").as_bytes())
            .await
            .expect("write");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!dropped.load(Ordering::SeqCst));
        drop(client);
        within("the connection to end", task).await.expect("joins");
        assert!(
            dropped.load(Ordering::SeqCst),
            "the handler's future was dropped"
        );
    }

    #[tokio::test]
    async fn streams_are_chunked_and_the_connection_serves_on_after_them() {
        let wire = format!(
            "POST /stream HTTP/1.1\r\nHost: x\r\n\r\n{}",
            post("/after", "Connection: close\r\n", "z")
        );
        let out = exchange(SETTINGS, wire.as_bytes()).await;
        assert!(out.contains("transfer-encoding: chunked"), "{out}");
        assert!(
            out.contains(
                "16\r\ndata: {\"first\":true}\n\n\r\n15\r\ndata: {\"last\":true}\n\n\r\n0\r\n\r\n"
            ),
            "{out}"
        );
        assert!(out.contains("POST /after body=z"), "{out}");
    }

    #[tokio::test]
    async fn an_idle_connection_closes_when_the_server_drains() {
        let (addr, stop, _dropped, task) = start(SETTINGS).await;
        let mut client = answered_once(addr).await;
        assert!(!task.is_finished());
        stop.drain();
        within("the connection to close", task)
            .await
            .expect("joins");
        assert_eq!(read_to_close(&mut client).await, "");
    }

    /// Runs `f` on a runtime of its own (a proptest case is synchronous).
    fn block_on<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    /// Writes `wire`, shuts the client's write side and reads until the server closes.
    async fn exchange_and_hang_up(settings: Settings, wire: &[u8]) -> String {
        let (addr, _stop, _dropped, task) = start(settings).await;
        let mut client = TcpStream::connect(addr).await.expect("connect");
        // The server may refuse and close before all of it is written.
        let _ = client.write_all(wire).await;
        let _ = client.shutdown().await;
        let mut out = Vec::new();
        let _ = within("the server to close", client.read_to_end(&mut out)).await;
        within("the connection task to end", task)
            .await
            .expect("the connection task does not panic");
        String::from_utf8_lossy(&out).into_owned()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// However a body is cut into chunks, with or without extensions and trailer fields, the
        /// endpoint sees the bytes that were sent.
        #[test]
        fn a_chunked_body_reads_back_whole(
            body in "[a-z0-9]{0,120}",
            cuts in proptest::collection::vec(1usize..40, 0..8),
            extensions in proptest::prelude::any::<bool>(),
            trailer in proptest::prelude::any::<bool>(),
        ) {
            let mut wire = String::from(
                "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            );
            let mut rest = body.as_str();
            for cut in cuts.iter().copied().chain(std::iter::repeat(usize::MAX)) {
                if rest.is_empty() {
                    break;
                }
                let (chunk, after) = rest.split_at(cut.min(rest.len()));
                let ext = if extensions { " ;a=b" } else { "" };
                wire.push_str(&format!("{:X}{ext}\r\n{chunk}\r\n", chunk.len()));
                rest = after;
            }
            wire.push_str(if trailer { "0\r\nX-Sum: 1\r\n\r\n" } else { "0\r\n\r\n" });
            let settings = Settings { max_body: 1024, ..SETTINGS };
            let out = block_on(exchange(settings, wire.as_bytes()));
            proptest::prop_assert_eq!(statuses(&out), ["200"], "{}", out);
            let expected = format!("POST /c body={body}");
            proptest::prop_assert!(out.ends_with(&expected), "{}", out);
        }

        /// Whatever arrives, alone or after a valid request line, the connection answers with
        /// status lines or nothing, closes once the client hangs up, and its task does not panic.
        #[test]
        fn any_input_is_answered_or_closed(
            prefix in proptest::sample::select(vec![
                "",
                "POST / HTTP/1.1\r\n",
                "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                "GET / HTTP/1.0\r\n",
            ]),
            noise in proptest::collection::vec(
                proptest::sample::select(vec![
                    b'a', b'0', b'F', b' ', b':', b';', b'\r', b'\n', b'\t', 0, 0x7f, 0xff, b'/',
                ]),
                0..200,
            ),
        ) {
            let mut wire = prefix.as_bytes().to_vec();
            wire.extend_from_slice(&noise);
            let out = block_on(exchange_and_hang_up(SETTINGS, &wire));
            proptest::prop_assert!(out.is_empty() || out.starts_with("HTTP/1.1 "), "{:?}", out);
            proptest::prop_assert!(!statuses(&out).is_empty() || out.is_empty(), "{:?}", out);
        }
    }
}
