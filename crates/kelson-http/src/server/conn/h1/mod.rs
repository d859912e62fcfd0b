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
//!   that did not come whole with its head;
//! - the next request must begin within the idle timeout, or the connection is closed; a response
//!   that makes no progress (the client reads none of it) for the write timeout is abandoned and
//!   the connection closed; a large response is refused with 503 when the listener's response
//!   memory is in use.
//!
//! A body longer than the endpoint's limit is not read: the endpoint sees its declared size (and
//! answers 413 after its earlier checks), and the connection closes after the answer. A client that
//! closes its connection while its request is being handled cancels the request, as with hyper.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode, Version};
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::time::Instant;

use kelson_server::observe::{CloseReason, ConnectionStats};

use super::io::{Conn, Peer};
use super::stop::Stop;
use super::timer::Deadline;
use crate::server::endpoint::{BoxError, McpBody};

#[doc(hidden)]
pub mod fuzz;
mod request;
use request::Head;
mod response;
#[cfg(test)]
mod tests;

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
    /// How long the connection may wait for the next request; zero waits forever.
    pub(crate) idle_timeout: Duration,
    /// How long a response may make no progress before it is abandoned; zero waits forever.
    pub(crate) write_timeout: Duration,
    /// The most bytes large responses may hold across the listener (see [`super::memory`]).
    pub(crate) response_memory: u64,
    /// The largest request head (request line and header fields) read; 431 beyond it.
    pub(crate) max_head: usize,
}

/// What writing a response needs besides the socket: the connection's timer, its limits and the
/// listener's counters.
pub(super) struct Out {
    timer: Deadline,
    write_timeout: Duration,
    response_memory: u64,
    stats: Arc<ConnectionStats>,
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

/// Serves HTTP/1.1 requests on `io` with `handler` until the peer closes the connection, a request
/// asks to close it, or `stop` drains the server (an idle connection closes at once, a busy one
/// after its response).
pub(crate) async fn serve<C, H, F>(
    mut io: C,
    handler: H,
    stop: Arc<Stop>,
    settings: Settings,
    stats: Arc<ConnectionStats>,
) -> io::Result<()>
where
    C: Conn,
    H: Fn(Request<RequestBody>) -> F,
    F: Future<Output = Response<McpBody>> + Send + 'static,
{
    let mut buf = BytesMut::new();
    let mut out = Out {
        timer: Deadline::default(),
        write_timeout: settings.write_timeout,
        response_memory: settings.response_memory,
        stats,
    };
    loop {
        if buf.is_empty() {
            // Idle between requests: hold no buffer while waiting for the next one. The timer is
            // looked at only if the next request is not already here.
            let mut due = None;
            let next = poll_fn(|cx| {
                if stop.is_draining() {
                    return Poll::Ready(Ok(Idle::Stop));
                }
                // The request's first bytes are read here, while the idle timer still runs,
                // rather than by a read that would wait for them untimed.
                match io.poll_first_read(cx, &mut buf) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Ok(Idle::Closed)),
                    Poll::Ready(Ok(_)) => return Poll::Ready(Ok(Idle::Request)),
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => {}
                }
                if settings.idle_timeout.is_zero() {
                    return Poll::Pending;
                }
                let due = *due.get_or_insert_with(|| Instant::now() + settings.idle_timeout);
                out.timer.poll_until(due, cx).map(|()| Ok(Idle::Expired))
            })
            .await?;
            match next {
                Idle::Request => {}
                Idle::Closed | Idle::Stop => return Ok(()),
                Idle::Expired => {
                    out.stats.closed(CloseReason::Idle);
                    return shut(&mut io).await;
                }
            }
        }
        let (head, body, in_sync) = match request::read(&mut io, &mut buf, settings).await {
            Ok(Some(request)) => request,
            Ok(None) => return Ok(()),
            Err(Fail::Io(e)) => return Err(e),
            Err(Fail::Refuse(status, why)) => {
                tracing::debug!(%status, why, "refused an HTTP/1.1 request");
                if status == StatusCode::REQUEST_TIMEOUT {
                    out.stats.closed(CloseReason::ReadTimeout);
                }
                let response = crate::server::endpoint::http_error(status, why);
                let (parts, body) = response.into_parts();
                response::write(&mut io, &mut out, &parts, body, true, false, false).await?;
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
                peer = io.watch_peer(), if watching => match peer {
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
        let close =
            response::write(&mut io, &mut out, &parts, body, close, head_only, http10).await?;
        if !in_sync {
            return shut_lingering(&mut io).await;
        }
        if close {
            return shut(&mut io).await;
        }
    }
}

/// How the wait between requests ended.
enum Idle {
    /// Bytes arrived, now in the buffer: the next request.
    Request,
    /// The peer closed the connection.
    Closed,
    /// The server stops.
    Stop,
    /// The idle timeout passed.
    Expired,
}

async fn shut<C: Conn>(io: &mut C) -> io::Result<()> {
    // The peer may be gone already; closing is all that is left either way.
    shut_down(io).await;
    Ok(())
}

/// Shuts the write side. A stream that buffers (TLS) first sends what it holds and its closing
/// alert, which a client that reads nothing would hold up: it gets the linger time for that.
async fn shut_down<C: Conn>(io: &mut C) {
    if C::BUFFERED {
        let _ = tokio::time::timeout(LINGER_TIME, io.shutdown()).await;
    } else {
        let _ = io.shutdown().await;
    }
}

/// How long, and for how many bytes, a connection closed with a request still arriving keeps
/// reading (and discarding) before it lets go.
const LINGER_TIME: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 16 * 1024 * 1024;

/// Closes a connection whose client may still be sending (a body left unread, a refused request):
/// closing a socket with unread bytes makes the kernel reset the connection, and a client still
/// writing would see the reset instead of the answer. So the write side is shut first, and what
/// the client sends is read and dropped until it closes too, for a bounded time and amount.
async fn shut_lingering<C: Conn>(io: &mut C) -> io::Result<()> {
    shut_down(io).await;
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
