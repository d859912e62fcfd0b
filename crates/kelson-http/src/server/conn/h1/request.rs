//! Reading HTTP/1.1 requests: the head (parsed with httparse, values sharing its bytes), how the
//! body is framed, and the body itself, whole or chunked.

use std::io;
use std::mem::MaybeUninit;
use std::time::Duration;

use bytes::{Buf as _, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, EXPECT, HOST, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri, Version};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::time::Instant;

use super::super::io::Conn;
pub(super) use super::super::io::READ_CHUNK;
use super::{Fail, RequestBody, Settings};

/// The most header fields a request may carry.
const MAX_HEADERS: usize = 100;
/// The longest chunk-size line (with extensions) or trailer section of a chunked body.
const MAX_CHUNK_LINE: usize = 4 * 1024;
const MAX_TRAILERS: usize = 16 * 1024;
/// The interim response to `Expect: 100-continue`.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// A parsed request head.
pub(super) struct Head {
    pub(super) parts: http::request::Parts,
    framing: Framing,
    pub(super) keep_alive: bool,
    expect_continue: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Framing {
    None,
    Length(u64),
    Chunked,
}

/// Reads the next request: its head, then its body. `None`: the peer closed the connection before
/// a request began. The flag says whether the connection is still in step with the client, that
/// is whether the whole body was consumed.
pub(super) async fn read(
    io: &mut impl Conn,
    buf: &mut BytesMut,
    settings: Settings,
) -> Result<Option<(Head, RequestBody, bool)>, Fail> {
    let Some(head) = read_head(io, buf, settings.head_timeout, settings.max_head).await? else {
        return Ok(None);
    };
    // A body that came whole with its head (the usual case) sets no timer; one still arriving
    // must arrive within the same time a head may take.
    let untimed = settings.head_timeout.is_zero() || body_is_here(&head, buf);
    let body = read_body(io, buf, &head, settings.max_body);
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
    Ok(Some((head, body, in_sync)))
}

/// Reads into `buf` until it holds a whole request head, and parses it. `None`: the peer closed
/// the connection before a request began.
async fn read_head(
    io: &mut impl Conn,
    buf: &mut BytesMut,
    timeout: Duration,
    max_head: usize,
) -> Result<Option<Head>, Fail> {
    let mut deadline: Option<Instant> = None;
    loop {
        if !buf.is_empty() {
            if let Some(head) = parse_head(buf)? {
                return Ok(Some(head));
            }
            if buf.len() >= max_head {
                return Err(Fail::Refuse(
                    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                    "the request head exceeds the server's header size limit",
                ));
            }
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        // The connection reads a request's first bytes itself, under the idle timeout: from
        // them on, the head has the head timeout.
        let n = if timeout.is_zero() {
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
    // httparse fills only the fields the head has: nothing is written into the other slots first.
    let mut fields = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut []);
    let len = match request.parse_with_uninit_headers(&buf[..], &mut fields) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Fail::Refuse(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "the request has more than 100 header fields",
            ));
        }
        // Until the request line ends, what follows `HTTP/` is unknown and a version that is not
        // served (505) cannot be told from a malformed line (400): wait for the line's end, so that
        // the answer does not depend on how the bytes were split into reads.
        Err(httparse::Error::Version) if !buf.iter().any(|&b| b == b'\r' || b == b'\n') => {
            return Ok(None);
        }
        Err(httparse::Error::Version) if names_a_version(buf) => {
            return Err(Fail::Refuse(
                StatusCode::HTTP_VERSION_NOT_SUPPORTED,
                "only HTTP/1.0 and HTTP/1.1 are served here",
            ));
        }
        Err(_) => return Err(Fail::Refuse(BAD, "a malformed request head")),
    };
    // The spans below are 32-bit offsets into the head, a table small enough to clear cheaply on
    // every request; a head of 4 GiB or more is refused as any too large one is.
    if len > u32::MAX as usize {
        return Err(Fail::Refuse(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "the request head exceeds the server's header size limit",
        ));
    }
    let version = match request.version {
        Some(0) => Version::HTTP_10,
        _ => Version::HTTP_11,
    };
    let method = Method::from_bytes(request.method.unwrap_or_default().as_bytes())
        .map_err(|_| Fail::Refuse(BAD, "a malformed method"))?;
    let base = buf.as_ptr() as usize;
    // Where a slice of the head starts and ends in it, as 32-bit offsets (the head fits, above).
    let span = |s: &[u8]| {
        let at = s.as_ptr() as usize - base;
        (at as u32, (at + s.len()) as u32)
    };
    let target = span(request.path.unwrap_or_default().as_bytes());
    // Where each field sits in the head, so that values can share the head's bytes.
    let mut spans = [(0u32, 0u32, 0u32, 0u32); MAX_HEADERS];
    let count = request.headers.len();
    for (slot, field) in spans.iter_mut().zip(request.headers.iter()) {
        let (name, name_end) = span(field.name.as_bytes());
        let (value, value_end) = span(field.value);
        *slot = (name, name_end, value, value_end);
    }
    let head = buf.split_to(len).freeze();
    let range = |from: u32, to: u32| from as usize..to as usize;
    let uri = Uri::from_maybe_shared(head.slice(range(target.0, target.1)))
        .map_err(|_| Fail::Refuse(BAD, "a malformed request target"))?;
    let mut headers = HeaderMap::with_capacity(count);
    // Which of the fields this function reads the head has, noted as they go into the map, so that
    // the map is searched only for those that are there.
    let mut seen = Seen::default();
    for &(name, name_end, value, value_end) in &spans[..count] {
        let name = &head[range(name, name_end)];
        let name = match mcp_header_name(name) {
            Some(known) => known,
            None => HeaderName::from_bytes(name)
                .map_err(|_| Fail::Refuse(BAD, "a malformed header field name"))?,
        };
        let value = HeaderValue::from_maybe_shared(head.slice(range(value, value_end)))
            .map_err(|_| Fail::Refuse(BAD, "a malformed header field value"))?;
        seen.note(&name);
        headers.append(name, value);
    }

    let framing = framing(&headers, version, &seen)?;
    if version == Version::HTTP_11 && seen.hosts != 1 {
        return Err(Fail::Refuse(
            BAD,
            "an HTTP/1.1 request must carry exactly one Host field",
        ));
    }
    let (mut close, mut keep) = (false, false);
    if seen.connection {
        for token in headers
            .get_all(CONNECTION)
            .iter()
            .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        {
            let token = token.trim_ascii();
            close |= token.eq_ignore_ascii_case(b"close");
            keep |= token.eq_ignore_ascii_case(b"keep-alive");
        }
    }
    let keep_alive = !close && (version == Version::HTTP_11 || keep);
    let mut expect_continue = false;
    if seen.expect {
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

/// Which of the fields [`parse_head`] reads a head has (and how many `Host` fields).
#[derive(Default)]
struct Seen {
    hosts: usize,
    content_length: bool,
    transfer_encoding: bool,
    connection: bool,
    expect: bool,
}

impl Seen {
    fn note(&mut self, name: &HeaderName) {
        if name == HOST {
            self.hosts += 1;
        } else if name == CONTENT_LENGTH {
            self.content_length = true;
        } else if name == TRANSFER_ENCODING {
            self.transfer_encoding = true;
        } else if name == CONNECTION {
            self.connection = true;
        } else if name == EXPECT {
            self.expect = true;
        }
    }
}

/// The MCP binding's own header names, which every MCP request carries, as the constants of
/// [`crate::headers`]: those share static bytes, where `HeaderName::from_bytes` copies a name it
/// does not know into an allocation of its own, on every request. Header names are
/// case-insensitive, and the constants are in lowercase as a parsed name would be.
fn mcp_header_name(name: &[u8]) -> Option<HeaderName> {
    use crate::headers::{
        LAST_EVENT_ID, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID,
    };
    let known = match name.len() {
        8 => MCP_NAME,
        10 => MCP_METHOD,
        13 => LAST_EVENT_ID,
        14 => MCP_SESSION_ID,
        20 => MCP_PROTOCOL_VERSION,
        _ => return None,
    };
    name.eq_ignore_ascii_case(known.as_str().as_bytes())
        .then_some(known)
}

/// How the request's body is delimited (RFC 9112 §6), refusing what could be read two ways.
fn framing(headers: &HeaderMap, version: Version, fields: &Seen) -> Result<Framing, Fail> {
    const BAD: StatusCode = StatusCode::BAD_REQUEST;
    if !fields.transfer_encoding && !fields.content_length {
        return Ok(Framing::None);
    }
    let chunked = if fields.transfer_encoding {
        let codings = headers.get_all(TRANSFER_ENCODING).iter();
        if version == Version::HTTP_10 {
            return Err(Fail::Refuse(BAD, "Transfer-Encoding is not HTTP/1.0"));
        }
        if fields.content_length {
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
    io: &mut impl Conn,
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
                io.flush().await?;
            }
            fill(io, buf, len).await?;
            Ok((RequestBody::Read(Some(buf.split_to(len).freeze())), true))
        }
        Framing::Chunked => {
            if head.expect_continue && buf.is_empty() {
                io.write_all(CONTINUE).await?;
                io.flush().await?;
            }
            read_chunked(io, buf, max).await
        }
    }
}

/// Decodes a chunked body (RFC 9112 §7.1): chunk extensions and trailer fields are read and
/// ignored. A body longer than `max` is left unread.
async fn read_chunked(
    io: &mut impl Conn,
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
async fn fill_line(io: &mut impl Conn, buf: &mut BytesMut, max: usize) -> Result<usize, Fail> {
    let mut scanned = 0;
    loop {
        if let Some(at) = buf[scanned..]
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
        {
            let at = scanned + at;
            // The bound holds however the line arrived: whole in one read, or in pieces, when the
            // check below refuses it before its end is seen.
            if at > max {
                return Err(Fail::Refuse(
                    StatusCode::BAD_REQUEST,
                    "a chunk-size line or trailer field is too long",
                ));
            }
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
async fn fill(io: &mut impl Conn, buf: &mut BytesMut, len: usize) -> Result<(), Fail> {
    if buf.len() < len {
        buf.reserve(len - buf.len());
    }
    while buf.len() < len {
        read_more(io, buf).await?;
    }
    Ok(())
}

async fn read_more(io: &mut impl Conn, buf: &mut BytesMut) -> Result<(), Fail> {
    if buf.capacity() == buf.len() {
        buf.reserve(READ_CHUNK);
    }
    if io.read_buf(buf).await? == 0 {
        return Err(Fail::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(())
}
