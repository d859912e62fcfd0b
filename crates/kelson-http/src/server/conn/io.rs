//! The byte streams connections are served on: a TCP socket, or (with the `tls` feature) TLS over
//! one.
//!
//! HTTP/1.1 connections ([`super::h1`]) wait between requests without holding a buffer, and watch
//! for the client leaving while a request runs, both by asking the TCP socket directly (readiness,
//! `peek`). A TLS stream cannot be peeked at through its encryption, so those two steps are the
//! methods of [`Conn`]: the TCP socket keeps its exact code, monomorphised as before, and the TLS
//! stream does the nearest thing it can.

use std::future::Future;
use std::io;
use std::pin::pin;
use std::task::{Context, Poll, ready};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite};
use tokio::net::TcpStream;

/// The room each read of a request asks for at least.
pub(crate) const READ_CHUNK: usize = 4 * 1024;

/// A connection's byte stream, as HTTP/1.1 serving needs it.
pub(crate) trait Conn: AsyncRead + AsyncWrite + Unpin + Send {
    /// Whether writes may stay in a buffer of the stream until flushed (TLS records), so that
    /// closing has to send them and can wait on a client that reads nothing.
    const BUFFERED: bool;

    /// Reads the next request's first bytes into `buf` if they are there, without holding a
    /// buffer while they are not: `Pending` leaves `buf` empty and unallocated. `Ok(0)` is the
    /// peer's closing.
    fn poll_first_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>>;

    /// Resolves when the peer closes the connection or sends more bytes, without reading them.
    fn watch_peer(&self) -> impl Future<Output = Peer> + Send + '_;
}

/// What the peer did while a response was pending.
pub(crate) enum Peer {
    /// It closed the connection, or the connection failed.
    Gone,
    /// It sent more bytes (a pipelined request), which stay unread.
    Sent,
}

impl Conn for TcpStream {
    const BUFFERED: bool = false;

    fn poll_first_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_read_ready(cx))?;
        // Readiness may have nothing behind it (an event handled after the bytes it reported
        // were read), so the read must not wait: a read that finds nothing clears the readiness
        // and waits for the next, and the buffer goes again.
        read_or_release(self, cx, buf)
    }

    fn watch_peer(&self) -> impl Future<Output = Peer> + Send + '_ {
        peek_peer(self)
    }
}

/// Reads into `buf` (grown by a chunk first); when nothing is there, lets the buffer go.
fn read_or_release<R: AsyncRead + Unpin>(
    io: &mut R,
    cx: &mut Context<'_>,
    buf: &mut BytesMut,
) -> Poll<io::Result<usize>> {
    buf.reserve(READ_CHUNK);
    match pin!(io.read_buf(buf)).poll(cx) {
        Poll::Pending => {
            *buf = BytesMut::new();
            Poll::Pending
        }
        done => done,
    }
}

/// Resolves when the peer closes `socket` or sends more bytes, without reading them.
async fn peek_peer(socket: &TcpStream) -> Peer {
    let mut byte = [0u8; 1];
    loop {
        match socket.peek(&mut byte).await {
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

#[cfg(feature = "tls")]
impl Conn for tokio_rustls::server::TlsStream<TcpStream> {
    const BUFFERED: bool = true;

    fn poll_first_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        // The TLS stream reads records into its own buffer and answers `Pending` when no whole
        // record has arrived, so a read is the wait.
        read_or_release(self, cx, buf)
    }

    fn watch_peer(&self) -> impl Future<Output = Peer> + Send + '_ {
        // The encrypted bytes under the TLS stream: the client closing, or sending anything (a
        // pipelined request, an alert), shows there as it does on a plain socket.
        peek_peer(self.get_ref().0)
    }
}
