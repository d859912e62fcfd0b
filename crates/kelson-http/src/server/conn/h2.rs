//! HTTP/2 connections (h2c), served by hyper, with the limits hyper does not have: an idle
//! timeout (no open stream for that long: GOAWAY, then close) and a write timeout (response data
//! waiting for a client that reads none of it for that long: the connection is closed), and the
//! memory budget of large responses.
//!
//! hyper runs each stream in a task of its own, so the connection learns of its streams through
//! [`Track`], shared with every stream's response body ([`Counted`]): how many streams are open,
//! how many bodies have handed data to hyper that it has not been able to send yet, and when a
//! body last got to hand over more. The connection's own task checks them when it wakes: its
//! timer fires at least once per write timeout while streams are open, and the last stream to end
//! wakes it so that the idle timeout starts. Large bodies are handed
//! to hyper in frames of at most [`FRAME`] bytes, so that what hyper buffers for a client that
//! does not read stays small and "no progress" can be seen.
//!
//! The write timeout is the connection's: a connection on which no body made progress for that
//! long is closed, with every stream on it. hyper keeps a stream's sending to itself, so one
//! stream cannot be reset alone.
//!
//! Closing gracefully (idle, or the server stopping) sends GOAWAY, after which hyper waits for the
//! client to answer a PING before it closes. A connection with no stream left is dropped when the
//! client has not answered within [`GOAWAY_GRACE`], so that a client that does not take part
//! cannot hold it open.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::task::AtomicWaker;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kelson_server::observe::{CloseReason, ConnectionStats};
use tokio::time::Instant;

use super::h1::RequestBody;
use super::memory::{self, Held, OverMemory};
use super::stop::{Stop, Watched};
use super::timer::{Deadline, now_ms};
use crate::server::endpoint::{BoxError, McpBody};

/// The largest DATA frame handed to hyper: HTTP/2's default frame size.
const FRAME: usize = 16 * 1024;
/// How long a connection without streams that has been sent GOAWAY waits for the client before it
/// is dropped. hyper sends a PING after the first GOAWAY and closes only once the client answers
/// it (RFC 9113 §6.8's round trip for streams already under way); a client that never answers,
/// having read nothing or ignoring the PING, would keep the connection forever.
const GOAWAY_GRACE: Duration = Duration::from_secs(1);

/// The limits of one connection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub(crate) idle_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) response_memory: u64,
}

/// What a connection and its streams' bodies share.
#[derive(Default)]
struct Track {
    /// Streams whose request arrived and whose response body is not finished.
    open: AtomicUsize,
    /// Bodies that handed hyper a frame it has not asked past yet: data waiting for the client.
    owing: AtomicUsize,
    /// When a body last handed hyper a frame ([`now_ms`]).
    progress_ms: AtomicU64,
    /// The connection's task.
    waker: AtomicWaker,
}

impl Track {
    fn stream_ended(&self) {
        if self.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The last stream: the connection is idle from now on.
            self.waker.wake();
        }
    }
}

/// One open stream; ends it when dropped.
struct Stream(Arc<Track>);

impl Stream {
    fn open(track: &Arc<Track>) -> Self {
        track.open.fetch_add(1, Ordering::AcqRel);
        Stream(track.clone())
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.0.stream_ended();
    }
}

/// Serves HTTP/2 on `io` with `handler` until the connection ends or `stop` cuts it off
/// (`None`); a stop that drains sends GOAWAY.
pub(crate) fn serve<I, H, F>(
    io: I,
    handler: H,
    builder: &hyper::server::conn::http2::Builder<TokioExecutor>,
    stop: Arc<Stop>,
    settings: Settings,
    stats: Arc<ConnectionStats>,
) -> impl Future<Output = Option<Result<(), BoxError>>>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    H: Fn(Request<RequestBody>) -> F + Send + Sync + 'static,
    F: Future<Output = Response<McpBody>> + Send + 'static,
{
    let track = Arc::new(Track::default());
    let streams = track.clone();
    let memory_stats = stats.clone();
    let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        // hyper keeps the box it puts each request's future in for the stream's whole life, so
        // the future it sees is a pointer: the request's own state is allocated per request and
        // freed with it.
        let stream = Stream::open(&streams);
        let handling = handler(req.map(RequestBody::Hyper));
        let stats = memory_stats.clone();
        Box::pin(async move {
            let response = handling.await;
            Ok::<_, std::convert::Infallible>(counted(
                response,
                stream,
                &stats,
                settings.response_memory,
            ))
        })
    });
    let conn = builder.serve_connection(TokioIo::new(io), service);
    let shutdown = for_type(&conn, |conn| conn.graceful_shutdown());
    let watch = Watch {
        conn: Box::pin(conn),
        shutdown,
        track,
        settings,
        stats,
        timer: Deadline::default(),
        idle_due: None,
        busy_due: None,
        closing: false,
        drop_due: None,
    };
    Watched::new(
        watch,
        |w: Pin<&mut Watch<_, _>>| w.get_mut().graceful_shutdown(),
        stop,
    )
}

/// `shutdown`, its argument's type taken from `_conn` (a closure cannot name hyper's connection
/// type, whose service is a closure too).
fn for_type<C, G: FnMut(Pin<&mut C>)>(_conn: &C, shutdown: G) -> G {
    shutdown
}

/// Wraps a response's body so that the connection sees it: a large body holds memory from the
/// budget (or the response becomes a 503), and the stream stays open until the body is dropped.
fn counted(
    response: Response<McpBody>,
    stream: Stream,
    stats: &Arc<ConnectionStats>,
    limit: u64,
) -> Response<Counted> {
    let len = response.body().size_hint().exact().unwrap_or(0);
    let (response, held) =
        match memory::hold(stats, usize::try_from(len).unwrap_or(usize::MAX), limit) {
            Ok(held) => (response, held),
            Err(OverMemory) => (memory::over_memory(), None),
        };
    response.map(|body| Counted {
        body,
        rest: None,
        owing: false,
        _held: held,
        stream,
    })
}

/// A response body as hyper sees it (see the module's documentation).
pub(crate) struct Counted {
    body: McpBody,
    /// What is left of a data frame larger than [`FRAME`].
    rest: Option<Bytes>,
    /// Whether the last frame handed over has not been followed by a poll yet.
    owing: bool,
    _held: Option<Held>,
    stream: Stream,
}

impl Counted {
    fn hand_over(&mut self, mut data: Bytes) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if data.len() > FRAME {
            self.rest = Some(data.split_off(FRAME));
        }
        if !self.owing {
            self.owing = true;
            // The first body to owe: the write timeout runs from now. The connection's task need
            // not be woken: it checks whenever its timer fires while it has streams.
            let track = &self.stream.0;
            if track.owing.fetch_add(1, Ordering::AcqRel) == 0 {
                track.progress_ms.store(now_ms(), Ordering::Release);
            }
        }
        Poll::Ready(Some(Ok(Frame::data(data))))
    }

    fn settle(&mut self) {
        if self.owing {
            self.owing = false;
            self.stream.0.owing.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Body for Counted {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.owing {
            // hyper asks for more: what it had went out (or into its bounded buffer).
            this.stream.0.progress_ms.store(now_ms(), Ordering::Release);
        }
        if let Some(rest) = this.rest.take() {
            return this.hand_over(rest);
        }
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        match polled {
            Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) if !data.is_empty() => this.hand_over(data),
                Ok(data) => {
                    this.settle();
                    Poll::Ready(Some(Ok(Frame::data(data))))
                }
                Err(frame) => {
                    this.settle();
                    Poll::Ready(Some(Ok(frame)))
                }
            },
            Poll::Ready(None) => {
                this.settle();
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(never))) => match never {},
            Poll::Pending => {
                // Nothing to send: waiting for the handler is not waiting for the client.
                this.settle();
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_none() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let rest = self.rest.as_ref().map_or(0, |r| r.len() as u64);
        let inner = self.body.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.settle();
    }
}

/// hyper's connection with the idle and write timeouts; `G` asks it to shut down gracefully.
struct Watch<C, G> {
    conn: Pin<Box<C>>,
    shutdown: G,
    track: Arc<Track>,
    settings: Settings,
    stats: Arc<ConnectionStats>,
    timer: Deadline,
    /// When the idle timeout passes, while the connection has no open stream.
    idle_due: Option<Instant>,
    /// When to look for a client that stopped reading next, while streams are open.
    busy_due: Option<Instant>,
    /// Whether GOAWAY has been asked for.
    closing: bool,
    /// When a closing connection with no open stream is dropped.
    drop_due: Option<Instant>,
}

impl<C, G: FnMut(Pin<&mut C>)> Watch<C, G> {
    /// Asks hyper to send GOAWAY and close once its streams end.
    fn graceful_shutdown(&mut self) {
        self.closing = true;
        self.timer.disarm();
        (self.shutdown)(self.conn.as_mut());
    }
}

impl<C, G> Future for Watch<C, G>
where
    C: Future<Output = Result<(), hyper::Error>>,
    G: FnMut(Pin<&mut C>) + Unpin,
{
    type Output = Result<(), BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        this.track.waker.register(cx.waker());
        loop {
            if let Poll::Ready(done) = this.conn.as_mut().poll(cx) {
                return Poll::Ready(done.map_err(Into::into));
            }
            if this.track.open.load(Ordering::Acquire) == 0 {
                this.busy_due = None;
                if this.closing {
                    // GOAWAY went out and no stream is left to finish: hyper now waits for the
                    // answer to its PING. A client that gives none within the grace is dropped,
                    // which closes the socket.
                    let due = *this
                        .drop_due
                        .get_or_insert_with(|| Instant::now() + GOAWAY_GRACE);
                    if this.timer.poll_until(due, cx).is_pending() {
                        return Poll::Pending;
                    }
                    tracing::debug!(
                        "dropped an HTTP/2 connection whose client did not answer GOAWAY"
                    );
                    return Poll::Ready(Ok(()));
                }
                if this.settings.idle_timeout.is_zero() {
                    return Poll::Pending;
                }
                let idle = this.settings.idle_timeout;
                let due = *this.idle_due.get_or_insert_with(|| Instant::now() + idle);
                if this.timer.poll_until(due, cx).is_pending() {
                    return Poll::Pending;
                }
                // No stream for the whole idle timeout: GOAWAY, and hyper closes, having no
                // stream to finish.
                this.stats.closed(CloseReason::Idle);
                this.graceful_shutdown();
                continue;
            }
            this.idle_due = None;
            this.drop_due = None;
            let timeout = this.settings.write_timeout;
            if timeout.is_zero() {
                return Poll::Pending;
            }
            // While streams are open, the timer fires at least once per write timeout (a
            // connection with streams is woken rarely by it, and no response has to wake it):
            // then, if some body has been waiting for the client since the last progress for the
            // whole timeout, the connection is given up.
            let due = *this
                .busy_due
                .get_or_insert_with(|| Instant::now() + timeout);
            if this.timer.poll_until(due, cx).is_pending() {
                return Poll::Pending;
            }
            let waited = if this.track.owing.load(Ordering::Acquire) == 0 {
                Duration::ZERO
            } else {
                let last = this.track.progress_ms.load(Ordering::Acquire);
                Duration::from_millis(now_ms().saturating_sub(last))
            };
            if waited >= timeout {
                this.stats.closed(CloseReason::WriteTimeout);
                tracing::debug!("closed an HTTP/2 connection whose client stopped reading");
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no response made progress",
                )
                .into()));
            }
            this.busy_due = Some(Instant::now() + (timeout - waited));
        }
    }
}
