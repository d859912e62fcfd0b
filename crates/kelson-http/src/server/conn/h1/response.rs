//! Writing HTTP/1.1 responses: a whole body with its length, a stream as chunks (or, to an
//! HTTP/1.0 client, delimited by closing).

use std::future::poll_fn;
use std::io;
use std::io::Write as _;
use std::pin::Pin;
use std::task::Poll;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http_body_util::BodyExt as _;
use kelson_server::observe::CloseReason;
use tokio::time::Instant;

use super::super::io::{Conn, Peer};
use super::super::memory::{self, OverMemory};
use super::{McpBody, Out};

/// Writes `parts` and `body`: a whole body with its `Content-Length`, a streamed one chunked (or,
/// to an HTTP/1.0 client, delimited by closing). Returns whether the connection must close.
pub(super) async fn write(
    io: &mut impl Conn,
    out: &mut Out,
    parts: &http::response::Parts,
    body: McpBody,
    close: bool,
    head_only: bool,
    http10: bool,
) -> io::Result<bool> {
    let mut body = body.into_full();
    // A large body holds memory from the listener's budget until it is written; without room,
    // the client gets 503 and the body is freed now.
    let mut refused = None;
    let mut held = None;
    if let Ok(Some(bytes)) = &body
        && !head_only
    {
        match memory::hold(&out.stats, bytes.len(), out.response_memory) {
            Ok(h) => held = h,
            Err(OverMemory) => {
                let (parts, over) = memory::over_memory().into_parts();
                body = over.into_full();
                refused = Some(parts);
            }
        }
    }
    let parts = refused.as_ref().unwrap_or(parts);
    let close = close || refused.is_some();
    // An HTTP/1.0 client cannot read chunks: a stream to it ends when the connection closes.
    let close = close || http10 && body.is_err();
    // A small body is sent in one write with its head: room for it from the start, so that the
    // head is not copied to grow for it.
    let inline = match &body {
        Ok(Some(bytes)) if !head_only && bytes.len() <= INLINE_BODY => bytes.len(),
        _ => 0,
    };
    let mut head = Vec::with_capacity(256 + inline);
    head.extend_from_slice(b"HTTP/1.1 ");
    head.extend_from_slice(parts.status.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(parts.status.canonical_reason().unwrap_or("").as_bytes());
    head.extend_from_slice(b"\r\n");
    for (name, value) in &parts.headers {
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING || name == CONNECTION {
            continue; // the framing is this function's to state
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"date: ");
    head.extend_from_slice(&date());
    head.extend_from_slice(b"\r\n");
    if close {
        head.extend_from_slice(b"connection: close\r\n");
    } else if http10 {
        head.extend_from_slice(b"connection: keep-alive\r\n");
    }
    match body {
        Ok(bytes) => {
            let len = bytes.as_ref().map_or(0, Bytes::len);
            head.extend_from_slice(b"content-length: ");
            push_decimal(&mut head, len as u64);
            head.extend_from_slice(b"\r\n\r\n");
            match bytes {
                Some(bytes) if !head_only && bytes.len() <= INLINE_BODY => {
                    head.extend_from_slice(&bytes);
                    send(io, out, &head).await?;
                }
                Some(bytes) if !head_only => {
                    send(io, out, &head).await?;
                    send(io, out, &bytes).await?;
                }
                _ => send(io, out, &head).await?,
            }
            drop(held);
            Ok(close)
        }
        Err(stream) => {
            if !http10 {
                head.extend_from_slice(b"transfer-encoding: chunked\r\n");
            }
            head.extend_from_slice(b"\r\n");
            send(io, out, &head).await?;
            drop(head);
            if !head_only {
                write_stream(io, out, stream, !http10).await?;
            }
            Ok(close)
        }
    }
}

/// The largest body written in one piece with its head.
const INLINE_BODY: usize = 16 * 1024;

/// Appends `n` in decimal, without the formatting machinery `write!` goes through on every
/// response.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Writes a streamed body frame by frame as they come (as chunks if `chunked`), until it ends.
/// The body is dropped, which cancels its request, if the peer goes away in the meantime.
async fn write_stream(
    io: &mut impl Conn,
    out: &mut Out,
    mut body: McpBody,
    chunked: bool,
) -> io::Result<()> {
    let mut watching = true;
    loop {
        let frame = tokio::select! {
            biased;
            frame = body.frame() => frame,
            peer = io.watch_peer(), if watching => match peer {
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
                send(io, out, b"0\r\n\r\n").await
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
        // A large event (a big final result) holds memory like a large body; without room, the
        // stream is cut, since its status line is long gone.
        let _held = memory::hold(&out.stats, data.len(), out.response_memory)
            .map_err(|OverMemory| io::Error::other("the response memory is in use"))?;
        if !chunked {
            send(io, out, &data).await?;
            continue;
        }
        let mut chunk = Vec::with_capacity(data.len() + 20);
        write!(chunk, "{:x}\r\n", data.len())?;
        chunk.extend_from_slice(&data);
        chunk.extend_from_slice(b"\r\n");
        send(io, out, &chunk).await?;
    }
}

/// Writes all of `data`, and on a stream that buffers writes (TLS) flushes it. While the socket
/// takes nothing (the client is not reading), the write timeout runs from the last write that
/// made progress; when it passes, the write fails with `TimedOut` and the connection is given up.
/// A write the socket takes at once, the usual case, looks at no clock and no timer.
async fn send<C: Conn>(io: &mut C, out: &mut Out, mut data: &[u8]) -> io::Result<()> {
    let mut progress: Option<Instant> = None;
    poll_fn(|cx| {
        loop {
            if !data.is_empty() {
                match Pin::new(&mut *io).poll_write(cx, data) {
                    Poll::Ready(Ok(0)) => {
                        return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                    }
                    Poll::Ready(Ok(n)) => {
                        data = &data[n..];
                        if progress.is_some() {
                            progress = Some(Instant::now());
                        }
                        continue;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => {}
                }
            } else if C::BUFFERED {
                // The response is written once the stream has sent what it holds (TLS records
                // it did not get onto the socket yet).
                match Pin::new(&mut *io).poll_flush(cx) {
                    Poll::Pending => {}
                    done => return done,
                }
            } else {
                return Poll::Ready(Ok(()));
            }
            if out.write_timeout.is_zero() {
                return Poll::Pending;
            }
            let since = *progress.get_or_insert_with(Instant::now);
            if out
                .timer
                .poll_until(since + out.write_timeout, cx)
                .is_ready()
            {
                out.stats.closed(CloseReason::WriteTimeout);
                return Poll::Ready(Err(io::ErrorKind::TimedOut.into()));
            }
            return Poll::Pending;
        }
    })
    .await
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
    use super::push_decimal;

    #[test]
    fn decimals_are_written_as_format_would() {
        for n in [0, 7, 10, 99, 100, 16_384, 1_234_567_890, u64::MAX] {
            let mut out = b"x".to_vec();
            push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}").into_bytes());
        }
    }
}
