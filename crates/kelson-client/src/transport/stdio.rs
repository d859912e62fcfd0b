//! Newline-delimited JSON-RPC over any byte stream: a child's stdin and stdout, or an in-memory pipe.
//!
//! spec 2026-07-28 [basic/transports/stdio][spec]: one compact message per line. The server
//! writes responses, request-scoped notifications (progress, log) and listen notifications tagged
//! with `subscriptionId`, interleaved; the reader task demultiplexes them: responses by id, progress
//! by token (the token of a request is its id), log messages to the requests that asked for them
//! (stdio gives no other way to tell), listen notifications by `subscriptionId`. Cancellation is
//! `notifications/cancelled`, sent when a request's future is dropped; a response that arrives
//! later is ignored. A legacy (2025) server also sends requests, which go to the input handlers.
//!
//! [spec]: https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/stdio

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use kelson_jsonrpc::{ErrorObject, Id, Message, RawValue};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{
    Event, ListenSink, Outgoing, ProgressTokenParam, Reply, RequestIdParam, cancelled_notification,
    subscription_id,
};
use crate::Error;
use crate::error::Closed;
use crate::handlers::Handlers;

/// The longest line accepted from the server.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// How many unreadable lines before the first message are kept, for an error message.
const NOISE_LINES: usize = 5;
/// How much of each of them is kept.
const NOISE_CHARS: usize = 200;

struct Pending {
    tx: oneshot::Sender<Result<Box<RawValue>, ErrorObject>>,
    events: mpsc::UnboundedSender<Event>,
    wants_log: bool,
}

#[derive(Default)]
struct State {
    pending: HashMap<Id, Pending>,
    subscriptions: HashMap<Id, ListenSink>,
    legacy_listeners: HashMap<u64, ListenSink>,
    next_listener: u64,
    closed: Option<Closed>,
    /// Whether a JSON-RPC message arrived yet.
    heard: bool,
    /// Lines that were not JSON-RPC, from before the first message (the first few, cut short).
    noise: Vec<String>,
}

struct Shared {
    out: mpsc::UnboundedSender<Bytes>,
    state: Mutex<State>,
    /// Set once the server turned out to be legacy: its requests are answered with these.
    legacy: OnceLock<Handlers>,
    close: CancellationToken,
    /// Set when a line that is not JSON-RPC arrives before any message.
    noisy: tokio::sync::watch::Sender<bool>,
}

/// The line transport of one connection.
pub(crate) struct StdioTransport {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport").finish_non_exhaustive()
    }
}

impl StdioTransport {
    /// Starts the reader and writer tasks over `reader` (the server's output) and `writer` (its
    /// input).
    pub(crate) fn start<R, W>(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            out,
            state: Mutex::new(State::default()),
            legacy: OnceLock::new(),
            close: CancellationToken::new(),
            noisy: tokio::sync::watch::Sender::new(false),
        });
        tokio::spawn(write_loop(writer, rx, shared.clone()));
        tokio::spawn(read_loop(reader, shared.clone()));
        StdioTransport { shared }
    }

    /// From now on, requests from the server are answered with `handlers` (legacy servers only).
    pub(crate) fn answer_server_requests(&self, handlers: Handlers) {
        let _ = self.shared.legacy.set(handlers);
    }

    /// Queues one message for writing.
    pub(crate) fn send(&self, message: Bytes) -> Result<(), Error> {
        if let Some(closed) = &self.shared.state.lock().expect("state lock").closed {
            return Err(closed.to_error());
        }
        self.shared
            .out
            .send(message)
            .map_err(|_| Error::disconnected("the writer stopped"))
    }

    pub(crate) async fn request(
        &self,
        out: Outgoing,
        events: mpsc::UnboundedSender<Event>,
    ) -> Result<Reply, Error> {
        let (tx, rx) = oneshot::channel();
        {
            let mut state = self.shared.state.lock().expect("state lock");
            if let Some(closed) = &state.closed {
                return Err(closed.to_error());
            }
            state.pending.insert(
                out.id.clone(),
                Pending {
                    tx,
                    events,
                    wants_log: out.wants_log,
                },
            );
        }
        let mut guard = PendingGuard {
            shared: self.shared.clone(),
            id: out.id,
            cancel: out.cancel_on_drop,
            done: false,
        };
        self.send(out.body)?;
        let outcome = rx.await.map_err(|_| self.closed_error())?;
        guard.done = true;
        Ok(Reply {
            outcome,
            status: None,
        })
    }

    pub(crate) fn listen(&self, out: Outgoing, sink: ListenSink) -> Result<ListenGuard, Error> {
        {
            let mut state = self.shared.state.lock().expect("state lock");
            if let Some(closed) = &state.closed {
                return Err(closed.to_error());
            }
            state.subscriptions.insert(out.id.clone(), sink);
        }
        let guard = ListenGuard {
            shared: self.shared.clone(),
            which: Which::Modern(out.id),
        };
        self.send(out.body)?;
        Ok(guard)
    }

    pub(crate) fn legacy_listen(&self, sink: ListenSink) -> ListenGuard {
        let mut state = self.shared.state.lock().expect("state lock");
        if let Some(closed) = &state.closed {
            sink.fail(closed.to_error());
        }
        let key = state.next_listener;
        state.next_listener += 1;
        state.legacy_listeners.insert(key, sink);
        ListenGuard {
            shared: self.shared.clone(),
            which: Which::Legacy(key),
        }
    }

    /// Whether any JSON-RPC message arrived from the server yet.
    pub(crate) fn heard(&self) -> bool {
        self.shared.state.lock().expect("state lock").heard
    }

    /// The lines the server printed that are not JSON-RPC, when nothing else came before them
    /// (the first few, cut short); empty otherwise.
    pub(crate) fn noise(&self) -> Vec<String> {
        let state = self.shared.state.lock().expect("state lock");
        if state.heard {
            Vec::new()
        } else {
            state.noise.clone()
        }
    }

    /// Resolves `grace` after the first line that is not JSON-RPC, if it came before any message;
    /// never otherwise.
    pub(crate) async fn noise_then(&self, grace: std::time::Duration) {
        let mut noisy = self.shared.noisy.subscribe();
        if noisy.wait_for(|noisy| *noisy).await.is_err() {
            return std::future::pending().await;
        }
        tokio::time::sleep(grace).await;
    }

    /// Stops writing, which closes the server's input; the reader ends when the server closes its
    /// output.
    pub(crate) fn close(&self) {
        self.shared.close.cancel();
    }

    fn closed_error(&self) -> Error {
        match &self.shared.state.lock().expect("state lock").closed {
            Some(closed) => closed.to_error(),
            None => Error::disconnected("the connection closed"),
        }
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.shared.close.cancel();
    }
}

/// Cancels a request whose future was dropped before its response arrived.
struct PendingGuard {
    shared: Arc<Shared>,
    id: Id,
    cancel: bool,
    done: bool,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let was_pending = {
            let mut state = self.shared.state.lock().expect("state lock");
            state.pending.remove(&self.id).is_some() && state.closed.is_none()
        };
        // spec 2026-07-28 basic/patterns/cancellation: on stdio the client MUST send
        // notifications/cancelled; the server then sends nothing more for the request.
        if was_pending && self.cancel {
            let _ = self
                .shared
                .out
                .send(cancelled_notification(&self.id, "cancelled by the client"));
        }
    }
}

enum Which {
    Modern(Id),
    Legacy(u64),
}

/// Keeps a listen stream routed; dropping it ends the subscription.
pub(crate) struct ListenGuard {
    shared: Arc<Shared>,
    which: Which,
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        let mut state = self.shared.state.lock().expect("state lock");
        match &self.which {
            Which::Modern(id) => {
                // spec 2026-07-28 basic/patterns/subscriptions: the client ends a stdio subscription
                // with notifications/cancelled naming the listen request.
                if state.subscriptions.remove(id).is_some() && state.closed.is_none() {
                    let _ = self
                        .shared
                        .out
                        .send(cancelled_notification(id, "unsubscribed"));
                }
            }
            Which::Legacy(key) => {
                state.legacy_listeners.remove(key);
            }
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    shared: Arc<Shared>,
) {
    let mut writer = BufWriter::new(writer);
    let result: std::io::Result<()> = async {
        loop {
            tokio::select! {
                biased;
                message = rx.recv() => {
                    let Some(message) = message else { return Ok(()) };
                    writer.write_all(&message).await?;
                    writer.write_all(b"\n").await?;
                    if rx.is_empty() {
                        writer.flush().await?;
                    }
                }
                () = shared.close.cancelled() => return Ok(()),
            }
        }
    }
    .await;
    let _ = writer.flush().await;
    // Closing the server's input is how a stdio client says goodbye (spec: shutdown).
    let _ = writer.shutdown().await;
    if let Err(e) = result {
        shared.closed(format!("writing to the server failed: {e}"));
    }
}

async fn read_loop<R: AsyncRead + Unpin>(reader: R, shared: Arc<Shared>) {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line = Vec::new();
    let mut discarding = false;
    let reason = loop {
        let buf = match reader.fill_buf().await {
            Ok(buf) => buf,
            Err(e) => break format!("reading from the server failed: {e}"),
        };
        if buf.is_empty() {
            if !discarding && !line.is_empty() {
                shared.on_line(&line);
            }
            break "the server closed its output".to_owned();
        }
        let (chunk, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !discarding {
            if line.len() + chunk.len() > MAX_LINE {
                tracing::warn!(
                    limit = MAX_LINE,
                    "skipped an over-long line from the server"
                );
                discarding = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = complete.unwrap_or(buf.len());
        reader.consume(consumed);
        if complete.is_some() {
            if !discarding {
                shared.on_line(&line);
            }
            discarding = false;
            line.clear();
        }
    };
    shared.closed(reason);
}

impl Shared {
    /// Marks the connection closed and fails everything waiting on it.
    fn closed(&self, reason: String) {
        let (pending, subscriptions, listeners, closed) = {
            let mut state = self.state.lock().expect("state lock");
            if state.closed.is_some() {
                return;
            }
            let closed = Closed(Arc::from(reason));
            state.closed = Some(closed.clone());
            (
                std::mem::take(&mut state.pending),
                std::mem::take(&mut state.subscriptions),
                std::mem::take(&mut state.legacy_listeners),
                closed,
            )
        };
        // Dropping the senders wakes every waiting request, which reads the reason.
        drop(pending);
        for sink in subscriptions.values().chain(listeners.values()) {
            sink.fail(closed.to_error());
        }
        self.close.cancel();
    }

    fn on_line(self: &Arc<Self>, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let message = match kelson_jsonrpc::decode(line) {
            Ok(message) => message,
            Err(e) => {
                // Before the first message this is likely a program that does not speak MCP on
                // stdio at all, which the connection's error reports with the line itself.
                if self.unreadable(line) {
                    tracing::debug!(error = %e.error, "an unreadable line before any message");
                } else {
                    tracing::warn!(error = %e.error, "ignored an unreadable message from the server");
                }
                return;
            }
        };
        self.state.lock().expect("state lock").heard = true;
        match message {
            Message::Response(response) => {
                let Some(id) = response.id else {
                    if let Err(e) = response.outcome {
                        tracing::warn!(error = %e, "the server reported an error without an id");
                    }
                    return;
                };
                let mut state = self.state.lock().expect("state lock");
                if let Some(pending) = state.pending.remove(&id) {
                    let _ = pending.tx.send(response.outcome.map(ToOwned::to_owned));
                } else if let Some(sink) = state.subscriptions.remove(&id) {
                    // The graceful end of a listen stream, or the refusal of the listen request.
                    match response.outcome {
                        Ok(_) => sink.end(),
                        Err(error) => sink.fail(Error::protocol(
                            kelson_types::method_names::SUBSCRIPTIONS_LISTEN,
                            error,
                        )),
                    }
                } else {
                    tracing::debug!(%id, "ignored a response to no request in flight");
                }
            }
            Message::Notification(n) => self.on_notification(&n.method, n.params),
            Message::Request(request) => {
                let Some(handlers) = self.legacy.get().cloned() else {
                    tracing::warn!(method = %request.method, "ignored a request from a 2026-07-28 server; servers never send requests");
                    return;
                };
                let id = request.id;
                let method = request.method.into_owned();
                let params = request.params.map(ToOwned::to_owned);
                let shared = self.clone();
                tokio::spawn(async move {
                    let answer = handlers.answer_legacy(&method, params.as_deref()).await;
                    let mut out = Vec::with_capacity(128);
                    match answer {
                        Ok(result) => {
                            kelson_jsonrpc::write_result(&mut out, &id, &result)
                                .expect("a JSON value serializes");
                        }
                        Err(error) => kelson_jsonrpc::write_error(&mut out, Some(&id), &error),
                    }
                    let _ = shared.out.send(Bytes::from(out));
                });
            }
        }
    }

    /// Keeps the start of a line that is not JSON-RPC, when nothing came before it: a program
    /// that prints text on stdout does not speak MCP on stdio, and what it printed says why.
    /// True when the line came before any message (and is kept if there is room).
    fn unreadable(&self, line: &[u8]) -> bool {
        {
            let mut state = self.state.lock().expect("state lock");
            if state.heard {
                return false;
            }
            if state.noise.len() >= NOISE_LINES {
                return true;
            }
            let text = String::from_utf8_lossy(line);
            let text = text.trim();
            let mut kept: String = text.chars().take(NOISE_CHARS).collect();
            if kept.len() < text.len() {
                kept.push('…');
            }
            state.noise.push(kept);
        }
        self.noisy.send_replace(true);
        true
    }

    fn on_notification(&self, method: &str, params: Option<&RawValue>) {
        let mut state = self.state.lock().expect("state lock");
        if let Some(sid) = subscription_id(params) {
            if let Some(sink) = state.subscriptions.get(&sid) {
                sink.notification(method, params.and_then(to_value));
            }
            return;
        }
        match method {
            kelson_types::method_names::NOTIFICATIONS_PROGRESS => {
                let token = params
                    .and_then(|p| serde_json::from_str::<ProgressTokenParam>(p.get()).ok())
                    .and_then(|p| p.progress_token);
                if let Some(pending) = token.and_then(|t| state.pending.get(&t))
                    && let Some(event) = Event::parse(method, params)
                {
                    let _ = pending.events.send(event);
                }
            }
            kelson_types::method_names::NOTIFICATIONS_MESSAGE => {
                for pending in state.pending.values().filter(|p| p.wants_log) {
                    if let Some(event) = Event::parse(method, params) {
                        let _ = pending.events.send(event);
                    }
                }
            }
            kelson_types::method_names::NOTIFICATIONS_CANCELLED => {
                let id = params
                    .and_then(|p| serde_json::from_str::<RequestIdParam>(p.get()).ok())
                    .and_then(|p| p.request_id);
                // spec 2026-07-28 basic/patterns/cancellation: a server may end a listen stream
                // this way on stdio.
                if let Some(sink) = id.and_then(|id| state.subscriptions.remove(&id)) {
                    sink.end();
                }
            }
            _ => {
                // Untagged notifications come from legacy servers: they feed legacy listeners.
                let value = params.and_then(to_value);
                state
                    .legacy_listeners
                    .retain(|_, sink| sink.notification(method, value.clone()));
            }
        }
    }
}

fn to_value(raw: &RawValue) -> Option<Value> {
    serde_json::from_str(raw.get()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::duplex;

    fn request(id: i64, method: &'static str) -> Outgoing {
        let mut body = Vec::new();
        kelson_jsonrpc::write_request(&mut body, &Id::Int(id), method, &serde_json::json!({}))
            .unwrap();
        Outgoing {
            id: Id::Int(id),
            method,
            body: Bytes::from(body),
            version: None,
            legacy: false,
            name: None,
            param_headers: Vec::new(),
            wants_log: false,
            cancel_on_drop: true,
        }
    }

    #[tokio::test]
    async fn responses_are_matched_by_id_and_drops_cancel() {
        let (client_io, server_io) = duplex(4096);
        let (client_r, client_w) = tokio::io::split(client_io);
        let transport = StdioTransport::start(client_r, client_w);
        let (server_r, mut server_w) = tokio::io::split(server_io);
        let mut server_lines = BufReader::new(server_r).lines();

        // A request whose future is dropped is cancelled on the wire.
        let (events, _) = mpsc::unbounded_channel();
        let dropped = transport.request(request(1, "tools/call"), events);
        let dropped = tokio::time::timeout(std::time::Duration::from_millis(1), dropped).await;
        assert!(dropped.is_err());
        let sent = server_lines.next_line().await.unwrap().unwrap();
        assert!(sent.contains(r#""id":1"#));
        let cancel = server_lines.next_line().await.unwrap().unwrap();
        assert!(cancel.contains("notifications/cancelled") && cancel.contains(r#""requestId":1"#));

        // A late response to it is ignored; the next request gets its own answer.
        let (events, _) = mpsc::unbounded_channel();
        let call = tokio::spawn(async move {
            let reply = transport.request(request(2, "tools/list"), events).await;
            (transport, reply)
        });
        let sent = server_lines.next_line().await.unwrap().unwrap();
        assert!(sent.contains(r#""id":2"#));
        server_w
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"ok\":true}}\n")
            .await
            .unwrap();
        let (_transport, reply) = call.await.unwrap();
        assert_eq!(reply.unwrap().outcome.unwrap().get(), r#"{"ok":true}"#);
    }

    #[tokio::test]
    async fn eof_fails_requests_in_flight() {
        let (client_io, server_io) = duplex(4096);
        let (client_r, client_w) = tokio::io::split(client_io);
        let transport = StdioTransport::start(client_r, client_w);
        let (events, _) = mpsc::unbounded_channel();
        let call = tokio::spawn(async move { transport.request(request(1, "x"), events).await });
        drop(server_io);
        let err = call.await.unwrap().unwrap_err();
        assert!(matches!(err, Error::Disconnected { .. }), "{err}");
    }
}
