//! For the fuzz targets (`fuzz/` at the repository root), not part of the API: the request reader
//! run over bytes in memory, delivered in reads of chosen sizes, as a connection would read them.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::FutureExt as _;
use http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::super::io::{Conn, Peer};
use super::{Fail, RequestBody, Settings, request};

/// One request read: its head, whether the connection may stay open after it, its body (`Err`:
/// left unread with this declared or least size) and whether the connection is still in step.
#[derive(Debug)]
pub struct Read {
    /// The request head.
    pub parts: http::request::Parts,
    /// Whether the connection may stay open after this request.
    pub keep_alive: bool,
    /// The body, or the size of one left unread.
    pub body: Result<Option<Bytes>, u64>,
    /// Whether the whole body was consumed.
    pub in_sync: bool,
}

/// How reading ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The input ended between requests.
    Closed,
    /// A request was refused with this status and reason (the connection then closes).
    Refused(StatusCode, &'static str),
    /// The input ended inside a request.
    Io(io::ErrorKind),
    /// The last request asked to close, or left its body unread: nothing more is read.
    Stopped,
}

/// Reads requests from `input` as a connection with a body limit of `max_body` would, the input
/// arriving in reads of the sizes in `reads` (repeated; a zero counts as one), until the input
/// ends, a request is refused or the connection would close. Returns the requests, how it ended
/// and the bytes written back (interim `100 Continue` responses).
pub fn read_requests(input: &[u8], reads: &[usize], max_body: usize) -> (Vec<Read>, End, Vec<u8>) {
    let mut conn = Memory {
        input,
        reads,
        turn: 0,
        written: Vec::new(),
    };
    let settings = Settings {
        max_body,
        // No timers: the reader must not wait on memory, which is always ready.
        head_timeout: Duration::ZERO,
        idle_timeout: Duration::ZERO,
        write_timeout: Duration::ZERO,
        response_memory: 0,
        max_head: 64 * 1024,
    };
    let mut buf = BytesMut::new();
    let mut requests = Vec::new();
    let end = loop {
        let read = request::read(&mut conn, &mut buf, settings)
            .now_or_never()
            .expect("reading from memory never waits");
        match read {
            Ok(Some((head, body, in_sync))) => {
                let body = match body {
                    RequestBody::Read(bytes) => Ok(bytes),
                    RequestBody::Unread(len) => Err(len),
                    RequestBody::Hyper(_) => unreachable!("HTTP/1.1 bodies are read here"),
                };
                let keep_alive = head.keep_alive;
                requests.push(Read {
                    parts: head.parts,
                    keep_alive,
                    body,
                    in_sync,
                });
                if !keep_alive || !in_sync {
                    break End::Stopped;
                }
            }
            Ok(None) => break End::Closed,
            Err(Fail::Refuse(status, why)) => break End::Refused(status, why),
            Err(Fail::Io(e)) => break End::Io(e.kind()),
        }
    };
    (requests, end, conn.written)
}

/// A connection whose peer sent `input` and nothing more.
struct Memory<'a> {
    input: &'a [u8],
    reads: &'a [usize],
    turn: usize,
    written: Vec<u8>,
}

impl AsyncRead for Memory<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let size = match this.reads {
            [] => usize::MAX,
            reads => reads[this.turn % reads.len()].max(1),
        };
        this.turn += 1;
        let n = size.min(this.input.len()).min(buf.remaining());
        buf.put_slice(&this.input[..n]);
        this.input = &this.input[n..];
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Memory<'_> {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().written.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl Conn for Memory<'_> {
    const BUFFERED: bool = false;

    fn poll_first_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        let mut read = std::pin::pin!(tokio::io::AsyncReadExt::read_buf(self, buf));
        read.as_mut().poll(cx)
    }

    fn watch_peer(&self) -> impl Future<Output = Peer> + Send + '_ {
        std::future::pending()
    }
}
