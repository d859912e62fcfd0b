//! The GET streams of a handshake-era session: which one carries the session's notifications, and
//! how a client that lost one resumes it.
//!
//! spec 2025-11-25 streamable-http ("Multiple Connections", "Resumability and Redelivery"): a client
//! may hold several streams; the server sends each message on only one of them. It may attach ids
//! to its events, unique across all of the session's streams; a client that reconnects names the
//! last one it received in `Last-Event-ID`, and the server may replay what it sent after that on
//! the stream that broke, never what it sent on another stream.
//!
//! A session has one subscription to the server's change events, made at its first GET and kept
//! while no stream is open, so what happens between a broken stream and its replacement waits for
//! the replacement (bounded by the hub's buffer; beyond it the client is told to re-list). The
//! newest open stream carries it; when that one closes, the newest of those left takes over. Every
//! event sent is numbered and kept in a short log with the stream that carried it, which is what a
//! reconnecting client's `Last-Event-ID` is looked up in.

use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures_util::Stream;
use kelson_server::Server;
use kelson_server::transport::{LegacyNotifications, LegacySession};

use crate::sse;

/// The most events a session remembers for replay.
const LOG_EVENTS: usize = 64;
/// The most bytes of events a session remembers for replay.
const LOG_BYTES: usize = 64 * 1024;

/// The open GET streams of one session and the notifications they carry.
#[derive(Default)]
pub(crate) struct OpenStreams {
    next: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Open streams by the order they were opened in, each with the waker of its body's last poll.
    open: BTreeMap<u64, Option<Waker>>,
    /// The session's change notifications, made at its first GET.
    source: Option<LegacyNotifications>,
    /// The id of the last event sent; ids start at 1.
    last_id: u64,
    /// The latest events sent, oldest first.
    log: VecDeque<Logged>,
    log_bytes: usize,
}

struct Logged {
    id: u64,
    /// The stream that carried it.
    ticket: u64,
    frame: Bytes,
}

impl OpenStreams {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("streams lock")
    }

    /// Opens a stream, which carries the session's notifications from now on. With the
    /// `Last-Event-ID` of a stream that broke, it first replays what that stream was sent after
    /// that event; when the event is too old to be remembered, it first tells the client to
    /// re-list what it follows, since something may have been lost.
    pub(crate) fn open(
        self: &Arc<Self>,
        session: &LegacySession,
        server: &Server,
        last_event_id: Option<&str>,
    ) -> StreamGuard {
        let ticket = self.next.fetch_add(1, Ordering::Relaxed);
        let mut state = self.state();
        if state.source.is_none() {
            state.source = Some(session.notifications(server));
        }
        let mut replay = VecDeque::new();
        // An id this server did not write (not a number, or beyond the last) is ignored: the
        // client gets what comes from now on, as without the header.
        if let Some(seen) = last_event_id.and_then(|v| v.trim().parse::<u64>().ok())
            && seen < state.last_id
        {
            match state.log.iter().position(|e| e.id == seen) {
                Some(at) => {
                    let broke = state.log[at].ticket;
                    replay.extend(
                        state
                            .log
                            .iter()
                            .skip(at + 1)
                            .filter(|e| e.ticket == broke)
                            .map(|e| e.frame.clone()),
                    );
                }
                None => {
                    for message in session.resync(server) {
                        state.last_id += 1;
                        let id = state.last_id;
                        replay.push_back(frame(id, &message));
                    }
                }
            }
        }
        // The stream that was carrying the notifications stops; it waits, as every older one does.
        state.open.insert(ticket, None);
        drop(state);
        StreamGuard {
            streams: self.clone(),
            ticket,
            replay,
        }
    }

    /// Whether any stream is open (a session with one is never idle).
    pub(crate) fn any(&self) -> bool {
        !self.state().open.is_empty()
    }
}

fn frame(id: u64, message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 32);
    sse::write_event_with_id(&mut out, id, message);
    Bytes::from(out)
}

/// One open GET stream of a session, counted for as long as it lives.
pub(crate) struct StreamGuard {
    streams: Arc<OpenStreams>,
    ticket: u64,
    /// Events to send before any new one: a replay after `Last-Event-ID`.
    replay: VecDeque<Bytes>,
}

impl StreamGuard {
    /// The next event for this stream, as a whole SSE frame with its id. Pending while a newer
    /// stream carries the notifications; `None` once the session or the server ends.
    pub(crate) fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Some(frame) = self.replay.pop_front() {
            return Poll::Ready(Some(frame));
        }
        let mut state = self.streams.state();
        let state = &mut *state;
        // Every poll leaves its waker, so that the stream can be woken when it becomes the newest
        // again, whether it was waiting for that or for the next message when a newer one opened.
        if let Some(waker) = state.open.get_mut(&self.ticket)
            && !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker()))
        {
            *waker = Some(cx.waker().clone());
        }
        if state.open.last_key_value().map(|(t, _)| *t) != Some(self.ticket) {
            return Poll::Pending;
        }
        let Some(source) = state.source.as_mut() else {
            return Poll::Ready(None);
        };
        // Polled under the lock: a poll does not block, and no other stream may take a message
        // out between this one and its place in the log.
        let Some(message) = std::task::ready!(Pin::new(source).poll_next(cx)) else {
            return Poll::Ready(None);
        };
        state.last_id += 1;
        let id = state.last_id;
        let frame = frame(id, &message);
        state.log_bytes += frame.len();
        state.log.push_back(Logged {
            id,
            ticket: self.ticket,
            frame: frame.clone(),
        });
        while state.log.len() > LOG_EVENTS || state.log_bytes > LOG_BYTES {
            let Some(old) = state.log.pop_front() else {
                break;
            };
            state.log_bytes -= old.frame.len();
        }
        Poll::Ready(Some(frame))
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let mut state = self.streams.state();
        state.open.remove(&self.ticket);
        // The newest of the streams left carries the notifications now: wake it.
        if let Some((_, Some(waker))) = state.open.iter().next_back() {
            waker.wake_by_ref();
        }
    }
}
