//! Writing HTTP/1.1 responses: a whole body with its length, a stream as chunks (or, to an
//! HTTP/1.0 client, delimited by closing).

use std::io;
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http_body_util::BodyExt as _;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

use super::{McpBody, Peer, watch_peer};

/// Writes `parts` and `body`: a whole body with its `Content-Length`, a streamed one chunked (or,
/// to an HTTP/1.0 client, delimited by closing). Returns whether the connection must close.
pub(super) async fn write(
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
            write!(out, "content-length: {len}\r\n\r\n")?;
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
            frame = body.frame() => frame,
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
        write!(chunk, "{:x}\r\n", data.len())?;
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
