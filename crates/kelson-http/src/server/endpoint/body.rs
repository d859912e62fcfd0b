//! The response body: a single JSON message, nothing, or a request-scoped SSE stream.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use http_body::{Body, Frame, SizeHint};
use kelson_server::transport::ListenStream;
use tokio::sync::mpsc;
use tokio::time::{Interval, MissedTickBehavior};
use tokio_util::sync::DropGuard;

use crate::sse;

/// The error type HTTP bodies are boxed into.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the dispatch task of a streamed request sends to its body.
#[derive(Debug)]
pub(crate) enum Event {
    /// A notification for this request (progress, log).
    Notification(Vec<u8>),
    /// The final response and how it ended; the stream ends after it.
    Final(Vec<u8>, kelson_server::transport::Outcome),
}

/// The body of every response of [`McpService`](super::McpService).
///
/// Dropping an SSE body before it ends cancels the request it belongs to: for a listen stream that
/// unsubscribes, for any other request it fires the handler's cancellation token.
pub struct McpBody {
    kind: Kind,
}

enum Kind {
    Full(Option<Bytes>),
    Sse(Box<SseBody>),
}

struct SseBody {
    source: Source,
    keep_alive: Option<Interval>,
    done: bool,
    /// Cancels the request when the body is dropped early.
    _cancel: Option<DropGuard>,
}

enum Source {
    Events(mpsc::Receiver<Event>, Option<Event>),
    Listen(ListenStream),
    /// The GET stream of a handshake-era session.
    /// Its guard counts the stream as open while it lives and hands it the session's events.
    Session(super::legacy::StreamGuard),
}

/// A whole body, for the responses of services in front of [`McpService`](super::McpService)
/// (an auth layer's challenges, say).
impl From<Bytes> for McpBody {
    fn from(bytes: Bytes) -> Self {
        McpBody::full(bytes)
    }
}

impl std::fmt::Debug for McpBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Full(b) => f
                .debug_tuple("McpBody::Full")
                .field(&b.as_ref().map_or(0, Bytes::len))
                .finish(),
            Kind::Sse(_) => f.write_str("McpBody::Sse"),
        }
    }
}

impl McpBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        McpBody {
            kind: Kind::Full(Some(bytes.into())),
        }
    }

    pub(crate) fn empty() -> Self {
        McpBody {
            kind: Kind::Full(None),
        }
    }

    /// The whole body, if it is one; the body itself if it is a stream.
    pub(crate) fn into_full(self) -> Result<Option<Bytes>, McpBody> {
        match self.kind {
            Kind::Full(bytes) => Ok(bytes),
            kind @ Kind::Sse(_) => Err(McpBody { kind }),
        }
    }

    pub(crate) fn events(
        first: Event,
        rx: mpsc::Receiver<Event>,
        keep_alive: Option<Duration>,
        cancel: DropGuard,
    ) -> Self {
        Self::sse(Source::Events(rx, Some(first)), keep_alive, Some(cancel))
    }

    pub(crate) fn listen(stream: ListenStream, keep_alive: Option<Duration>) -> Self {
        Self::sse(Source::Listen(stream), keep_alive, None)
    }

    /// A legacy session's GET stream; `guard` counts it as open for as long as it lives.
    pub(crate) fn session(guard: super::legacy::StreamGuard, keep_alive: Option<Duration>) -> Self {
        Self::sse(Source::Session(guard), keep_alive, None)
    }

    fn sse(source: Source, keep_alive: Option<Duration>, cancel: Option<DropGuard>) -> Self {
        let keep_alive = keep_alive.filter(|d| !d.is_zero()).map(|period| {
            let mut interval =
                tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
            interval
        });
        McpBody {
            kind: Kind::Sse(Box::new(SseBody {
                source,
                keep_alive,
                done: false,
                _cancel: cancel,
            })),
        }
    }
}

fn data_frame(message: &[u8]) -> Frame<Bytes> {
    let mut out = Vec::with_capacity(message.len() + 8);
    sse::write_event(&mut out, message);
    Frame::data(Bytes::from(out))
}

impl SseBody {
    /// The next event as a whole frame, and whether it is the last.
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<(Frame<Bytes>, bool)>> {
        match &mut self.source {
            Source::Events(rx, first) => {
                let event = match first.take() {
                    Some(e) => Some(e),
                    None => ready!(rx.poll_recv(cx)),
                };
                Poll::Ready(event.map(|e| match e {
                    Event::Notification(m) => (data_frame(&m), false),
                    Event::Final(m, _) => (data_frame(&m), true),
                }))
            }
            Source::Listen(stream) => {
                Poll::Ready(ready!(Pin::new(stream).poll_next(cx)).map(|m| (data_frame(&m), false)))
            }
            Source::Session(guard) => {
                Poll::Ready(ready!(guard.poll_frame(cx)).map(|f| (Frame::data(f), false)))
            }
        }
    }
}

impl Body for McpBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.kind {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Sse(sse) => {
                if sse.done {
                    return Poll::Ready(None);
                }
                match sse.poll_event(cx) {
                    Poll::Ready(Some((frame, last))) => {
                        if last {
                            sse.done = true;
                        }
                        if let Some(k) = &mut sse.keep_alive {
                            k.reset();
                        }
                        return Poll::Ready(Some(Ok(frame)));
                    }
                    Poll::Ready(None) => {
                        sse.done = true;
                        return Poll::Ready(None);
                    }
                    Poll::Pending => {}
                }
                // Nothing to say: a comment line now and then keeps proxies from timing the stream
                // out and lets the server notice a client that has gone away.
                if let Some(k) = &mut sse.keep_alive
                    && k.poll_tick(cx).is_ready()
                {
                    let mut out = Vec::with_capacity(16);
                    sse::write_comment(&mut out, "keep-alive");
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Full(b) => b.is_none(),
            Kind::Sse(sse) => sse.done,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Sse(_) => SizeHint::default(),
        }
    }
}
