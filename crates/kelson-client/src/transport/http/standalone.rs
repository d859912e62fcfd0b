//! The legacy session's GET stream: one per session, for the client's life.
//!
//! spec 2025-11-25 basic/transports (Streamable HTTP, "Listening for Messages from the Server"):
//! the client MAY open an SSE stream with a GET; on it the server sends its own requests
//! (`roots/list`, `sampling/createMessage`, `elicitation/create`, `ping`) and notifications that
//! belong to no client request. The TypeScript SDK v1 drops such messages when no GET stream is
//! open, and refuses a second GET stream on a session with 409. So the client opens exactly one,
//! right after `notifications/initialized`, and shares it:
//!
//! - server requests go to the same input handlers as MRTR input, answered with a POST;
//! - progress goes to the request in flight whose token it names (the token is the request's id),
//!   log messages to the requests in flight that asked for them (as on stdio);
//! - every other notification invalidates the cache and feeds each legacy listen, whose filter
//!   picks what it asked for.
//!
//! If the stream drops while the client is alive, it is opened again after the server's SSE
//! `retry:` delay, or else after an exponential backoff (reset once a stream proved healthy). A
//! 405 means the server has no GET stream: that is remembered, and legacy listens are refused. A
//! 404 means the session is gone (spec 2025-11-25: the client would have to initialize again), so
//! the stream ends for good. `Last-Event-ID` is not sent: a fresh GET is always valid, and resuming
//! is where servers differ most (server-everything's event store returns an event id where the
//! SDK expects a stream id, which would leave the resumed stream unregistered).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::StatusCode;
use kelson_http::client::HttpError;
use kelson_jsonrpc::{Id, Message, RawValue};
use kelson_types::method_names;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Shared, to_value};
use crate::Error;
use crate::transport::{Event, ListenSink, Outgoing, ProgressTokenParam};

/// The first reconnection delay, doubled after each failed attempt up to [`MAX_BACKOFF`].
const INITIAL_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A stream that lasted this long (or delivered a message) was healthy: the backoff starts over.
const HEALTHY: Duration = Duration::from_secs(5);

/// Where the GET stream is.
#[derive(Debug, Default)]
enum Stream {
    /// Not started (a modern server, or before the handshake ended).
    #[default]
    Idle,
    /// Opening, open, or waiting to reconnect.
    Live,
    /// The server has no GET stream (405).
    Absent,
    /// Closed for good: the client was closed, or the session ended.
    Ended(Arc<str>),
}

/// A legacy request in flight, for the notifications the server sends about it on the GET stream.
struct InFlight {
    events: mpsc::UnboundedSender<Event>,
    wants_log: bool,
}

#[derive(Default)]
struct State {
    stream: Stream,
    listeners: HashMap<u64, ListenSink>,
    next_listener: u64,
    requests: HashMap<Id, InFlight>,
}

/// The routing table of the notifications that belong to no response stream.
#[derive(Default)]
pub(super) struct Notices {
    state: Mutex<State>,
}

impl Notices {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("notices lock")
    }

    /// Adds a legacy listen; refused when the server has no GET stream or it ended.
    pub(super) fn add_listener(&self, sink: ListenSink) -> Result<u64, Error> {
        let mut state = self.lock();
        match &state.stream {
            Stream::Absent => return Err(absent()),
            Stream::Ended(reason) => return Err(Error::disconnected(&**reason)),
            Stream::Idle | Stream::Live => {}
        }
        let key = state.next_listener;
        state.next_listener += 1;
        state.listeners.insert(key, sink);
        Ok(key)
    }

    pub(super) fn remove_listener(&self, key: u64) {
        self.lock().listeners.remove(&key);
    }

    /// The stream is closed for good: the listens still open end with `reason`.
    pub(super) fn end(&self, reason: &str) {
        self.finish(Stream::Ended(Arc::from(reason)), || {
            Error::disconnected(reason)
        });
    }

    fn finish(&self, stream: Stream, error: impl Fn() -> Error) {
        let listeners = {
            let mut state = self.lock();
            if matches!(state.stream, Stream::Ended(_) | Stream::Absent) {
                return;
            }
            state.stream = stream;
            std::mem::take(&mut state.listeners)
        };
        for sink in listeners.values() {
            sink.fail(error());
        }
    }

    fn set_live(&self) {
        let mut state = self.lock();
        if matches!(state.stream, Stream::Idle) {
            state.stream = Stream::Live;
        }
    }
}

fn absent() -> Error {
    Error::Unsupported("the legacy server offers no GET notification stream (HTTP 405)")
}

/// Keeps a legacy request reachable by the GET stream's notifications until it is dropped.
pub(super) struct Tracked {
    shared: Arc<Shared>,
    id: Id,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.shared.notices.lock().requests.remove(&self.id);
    }
}

pub(super) fn track(
    shared: &Arc<Shared>,
    out: &Outgoing,
    events: &mpsc::UnboundedSender<Event>,
) -> Tracked {
    shared.notices.lock().requests.insert(
        out.id.clone(),
        InFlight {
            events: events.clone(),
            wants_log: out.wants_log,
        },
    );
    Tracked {
        shared: shared.clone(),
        id: out.id.clone(),
    }
}

impl Shared {
    /// One message of the GET stream.
    fn on_standalone_message(self: &Arc<Self>, text: &str) {
        match kelson_jsonrpc::decode_str(text) {
            Ok(Message::Request(r)) => self.answer_server_request(r.id, &r.method, r.params),
            Ok(Message::Notification(n)) => self.on_notification(&n.method, n.params),
            Ok(Message::Response(r)) => {
                tracing::debug!(id = ?r.id, "ignored a response on the legacy GET stream");
            }
            Err(e) => {
                tracing::warn!(error = %e.error, "ignored an unreadable message on the legacy GET stream");
            }
        }
    }

    /// A notification of the GET stream: a request's progress or log message, or an untagged one.
    fn on_notification(&self, method: &str, params: Option<&RawValue>) {
        match method {
            method_names::NOTIFICATIONS_PROGRESS => {
                let token = params
                    .and_then(|p| serde_json::from_str::<ProgressTokenParam>(p.get()).ok())
                    .and_then(|p| p.progress_token);
                let state = self.notices.lock();
                if let Some(request) = token.and_then(|t| state.requests.get(&t))
                    && let Some(event) = Event::parse(method, params)
                {
                    let _ = request.events.send(event);
                }
            }
            method_names::NOTIFICATIONS_MESSAGE => {
                let state = self.notices.lock();
                for request in state.requests.values().filter(|r| r.wants_log) {
                    if let Some(event) = Event::parse(method, params) {
                        let _ = request.events.send(event);
                    }
                }
            }
            _ => self.untagged(method, params),
        }
    }

    /// A notification tied to no request (list changes, resource updates, ...): it invalidates the
    /// cache and feeds every legacy listen that wants it.
    pub(super) fn untagged(&self, method: &str, params: Option<&RawValue>) {
        let value = params.and_then(to_value);
        if let Some(cache) = self.legacy.get().and_then(|l| l.cache.as_ref()) {
            let uri = value
                .as_ref()
                .and_then(|v| v.get("uri"))
                .and_then(serde_json::Value::as_str);
            cache.on_notification(method, uri);
        }
        self.notices
            .lock()
            .listeners
            .retain(|_, sink| sink.notification(method, value.clone()));
    }

    /// Opens the GET stream once.
    async fn open_get(&self) -> Result<kelson_http::client::EventStream, Error> {
        self.get_stream(self.legacy_headers()).await
    }
}

/// Keeps the GET stream open until `stop`. `settled` fires once the first attempt has an answer.
pub(super) async fn run(
    shared: Arc<Shared>,
    stop: CancellationToken,
    settled: oneshot::Sender<()>,
) {
    shared.notices.set_live();
    let mut settled = Some(settled);
    let mut settle = move || {
        if let Some(tx) = settled.take() {
            let _ = tx.send(());
        }
    };
    let mut backoff = INITIAL_BACKOFF;
    loop {
        let opened = tokio::select! {
            biased;
            () = stop.cancelled() => return,
            opened = shared.open_get() => opened,
        };
        let mut asked = None;
        match opened {
            Ok(mut stream) => {
                settle();
                tracing::debug!("the legacy GET stream is open");
                let since = Instant::now();
                let mut delivered = false;
                let why = loop {
                    let next = tokio::select! {
                        biased;
                        () = stop.cancelled() => return,
                        next = stream.next_message() => next,
                    };
                    match next {
                        Some(Ok(text)) => {
                            delivered = true;
                            shared.on_standalone_message(&text);
                        }
                        Some(Err(e)) => break e.to_string(),
                        None => break "the server closed it".to_owned(),
                    }
                };
                tracing::debug!(%why, "the legacy GET stream dropped; opening it again");
                asked = stream.retry();
                if delivered || since.elapsed() >= HEALTHY {
                    backoff = INITIAL_BACKOFF;
                }
            }
            Err(Error::Http(HttpError::Status { status, .. }))
                if status == StatusCode::METHOD_NOT_ALLOWED =>
            {
                tracing::debug!("the legacy server offers no GET stream (HTTP 405)");
                shared.notices.finish(Stream::Absent, absent);
                settle();
                return;
            }
            Err(Error::Http(HttpError::Status { status, .. }))
                if status == StatusCode::NOT_FOUND =>
            {
                tracing::warn!("the legacy server ended the session (HTTP 404 on the GET stream)");
                shared
                    .notices
                    .end("the legacy server ended the session (HTTP 404 on the GET stream)");
                settle();
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not open the legacy GET stream; trying again");
                settle();
            }
        }
        let delay = asked.unwrap_or(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
    }
}
