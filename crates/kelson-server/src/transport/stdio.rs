//! The stdio transport: newline-delimited JSON-RPC on a byte stream.
//!
//! spec 2026-07-28 [basic/transports/stdio][spec]: one message per line, compact JSON, UTF-8;
//! only protocol messages on stdout and logs on stderr; requests are served concurrently and their
//! notifications interleave; `notifications/cancelled` stops a request and nothing more is sent for
//! it; on end of input, requests in flight finish, listen streams end with their graceful result, and
//! the server exits. The same framing works over any reliable byte stream (a Unix socket, TCP).
//!
//! [spec]: https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/stdio

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt as _;
use kelson_jsonrpc::{ErrorObject, Id};
use kelson_types::Method;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::observe::{RequestEra, Transport};
use crate::router::{Incoming, NotificationSink, Reply, RequestIo, error_reply};
use crate::transport::LegacySession;
use crate::{Principal, Server};

/// Settings for a stdio (or other byte-stream) connection.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The longest line accepted, in bytes; a longer one is answered with an error and skipped
    /// without being buffered whole.
    pub max_line: usize,
    /// How many outgoing messages may queue before senders wait (responses, listen notifications)
    /// or drop (progress and log notifications, which are advisory).
    pub out_queue: usize,
    /// The principal every request on this connection runs as (stdio takes credentials from the
    /// environment, not from the protocol).
    pub principal: Principal,
}

impl Default for StdioConfig {
    fn default() -> Self {
        StdioConfig {
            max_line: 4 * 1024 * 1024,
            out_queue: 1024,
            principal: Principal::anonymous(),
        }
    }
}

/// Serves `server` on the process's stdin and stdout until stdin closes.
///
/// Where stdin and stdout are pipes or Unix sockets (as a host spawns a server), they are read
/// and written through the runtime's reactor rather than tokio's blocking thread pool, which
/// costs two thread hand-offs per message; they are made blocking again when serving ends.
pub async fn serve_stdio(server: Server, config: StdioConfig) -> std::io::Result<()> {
    use super::process_io::{Input, Output};
    serve_stream(server, Input::stdin(), Output::stdout(), config).await
}

/// Serves `server` on any pair of byte streams with stdio framing until the reader ends.
pub async fn serve_stream<R, W>(
    server: Server,
    reader: R,
    writer: W,
    config: StdioConfig,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Vec<u8>>(config.out_queue.max(1));
    // Fired when stdout fails: the client closed its end and can read nothing more.
    let gone = CancellationToken::new();
    let writer_task = tokio::spawn(write_loop(writer, rx, gone.clone()));
    let conn = Connection {
        server: server.clone(),
        out: tx,
        in_flight: Arc::new(Mutex::new(HashMap::new())),
        close: server.shutdown_token().child_token(),
        tracker: TaskTracker::new(),
        principal: config.principal.clone(),
        session: Mutex::new(None),
    };

    let read_result = tokio::select! {
        read = read_loop(&conn, reader, config.max_line) => read,
        // Nobody reads the answers any more: stop reading requests, and cancel those in flight.
        () = gone.cancelled() => {
            tracing::info!("stdout is closed: the client has gone; stopping");
            for token in conn.in_flight.lock().expect("in-flight lock").values() {
                token.cancel();
            }
            Ok(())
        }
    };

    // End of input: listen streams end gracefully, requests in flight finish, then the writer drains.
    conn.close.cancel();
    if let Some(session) = conn.session.lock().expect("session lock").take() {
        session.close();
    }
    conn.tracker.close();
    conn.tracker.wait().await;
    drop(conn);
    let write_result = match writer_task.await {
        Ok(result) => result,
        Err(e) => Err(std::io::Error::other(e)),
    };
    // A client that closes its end of stdout has left, which is how a stdio session may end.
    let write_result = match write_result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    };
    read_result.and(write_result)
}

struct Connection {
    server: Server,
    out: mpsc::Sender<Vec<u8>>,
    in_flight: Arc<Mutex<HashMap<Id, CancellationToken>>>,
    close: CancellationToken,
    tracker: TaskTracker,
    principal: Principal,
    /// The handshake-era session `initialize` opened on this connection, if any: requests without
    /// the modern `_meta` envelope are served on it (spec basic/versioning, dual-era).
    session: Mutex<Option<LegacySession>>,
}

/// Writes the queued messages, one per line; a write that fails (the client closed stdout) ends
/// it and fires `gone`.
async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    rx: mpsc::Receiver<Vec<u8>>,
    gone: CancellationToken,
) -> std::io::Result<()> {
    let result = write_all(writer, rx).await;
    if result.is_err() {
        gone.cancel();
    }
    result
}

async fn write_all<W: AsyncWrite + Unpin>(
    writer: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    while let Some(msg) = rx.recv().await {
        writer.write_all(&msg).await?;
        writer.write_all(b"\n").await?;
        // Flush once the queue is momentarily empty, so bursts share one write.
        if rx.is_empty() {
            writer.flush().await?;
        }
    }
    writer.flush().await?;
    writer.shutdown().await
}

async fn read_loop<R: AsyncRead + Unpin>(
    conn: &Connection,
    reader: R,
    max_line: usize,
) -> std::io::Result<()> {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line: Vec<u8> = Vec::new();
    let mut discarding = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            // A last message without its newline still counts.
            if !discarding && !line.is_empty() {
                conn.on_line(std::mem::take(&mut line)).await;
            }
            return Ok(());
        }
        let (chunk, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !discarding {
            if line.len() + chunk.len() > max_line {
                discarding = true;
                line = Vec::new();
                let e = ErrorObject::invalid_request(format_args!(
                    "the message exceeds the {max_line}-byte limit"
                ));
                let reply = error_reply(None, &e, true);
                conn.server.probe(Transport::Stdio).finish(reply.outcome);
                conn.send(reply.body).await;
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = complete.unwrap_or(buf.len());
        reader.consume(consumed);
        if complete.is_some() {
            if discarding {
                discarding = false;
            } else {
                conn.on_line(std::mem::take(&mut line)).await;
            }
        }
    }
}

#[derive(Deserialize)]
struct CancelParams {
    #[serde(rename = "requestId")]
    request_id: Option<Id>,
}

/// Progress and log notifications: dropped rather than queued without bound when the client is slow.
struct Sink(mpsc::Sender<Vec<u8>>);

impl NotificationSink for Sink {
    fn send(&self, message: Vec<u8>) {
        if self.0.try_send(message).is_err() {
            tracing::debug!("stdio output queue full; dropped a notification");
        }
    }

    fn send_request(&self, message: Vec<u8>) {
        // A request waits for its answer, so it is never dropped: when the queue is full it is
        // queued from a task of its own.
        if let Err(mpsc::error::TrySendError::Full(message)) = self.0.try_send(message) {
            let out = self.0.clone();
            tokio::spawn(async move {
                let _ = out.send(message).await;
            });
        }
    }
}

impl Connection {
    /// Forwards a legacy session's change notifications to the output until the session or the
    /// connection ends.
    fn pump(&self, session: LegacySession) {
        let mut notifications = session.notifications(&self.server);
        let out = self.out.clone();
        let close = self.close.clone();
        self.tracker.spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    () = close.cancelled() => break,
                    item = notifications.next() => match item {
                        Some(message) => {
                            if out.send(message).await.is_err() {
                                break;
                            }
                        }
                        None => break,
                    },
                }
            }
        });
    }

    async fn send(&self, message: Vec<u8>) {
        // The writer only stops when stdout is gone; nothing can be delivered then.
        let _ = self.out.send(message).await;
    }

    async fn on_line(&self, mut line: Vec<u8>) {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let mut probe = self.server.probe(Transport::Stdio);
        let session = self.session.lock().expect("session lock").clone();
        let (prepared, session) = match self.server.prepare_observed(&line, &mut probe) {
            Incoming::Request(req) => (req.into_owned(), None),
            Incoming::Legacy(req) if matches!(req.method, Method::Initialize) => {
                // Every `initialize` starts a session, replacing the one before it (a host that
                // probed with `server/discover` may still send it, and is served as legacy from
                // then on).
                let reply = match self.server.legacy_initialize(&req) {
                    Ok((reply, session)) => {
                        probe.set_era(RequestEra::Legacy {
                            version: Some(session.version()),
                        });
                        let old = self
                            .session
                            .lock()
                            .expect("session lock")
                            .replace(session.clone());
                        if let Some(old) = old {
                            old.close();
                        }
                        self.pump(session);
                        reply
                    }
                    Err(reply) => reply,
                };
                probe.finish(reply.outcome);
                return self.send(reply.body).await;
            }
            Incoming::Legacy(req) => match session {
                Some(session) => (req.into_owned(), Some(session)),
                None => {
                    let reply = self.server.without_session(&req);
                    probe.finish(reply.outcome);
                    return self.send(reply.body).await;
                }
            },
            Incoming::Rejected(reply) => {
                probe.finish(reply.outcome);
                return self.send(reply.body).await;
            }
            Incoming::Response(response) => {
                probe.dismiss();
                if !self
                    .server
                    .deliver_response(&response, session.as_ref(), &self.principal)
                {
                    tracing::debug!("ignored a JSON-RPC response that answers nothing asked");
                }
                return;
            }
            Incoming::Notification(n) => {
                probe.notification(&n.method);
                if let Some(session) = &session
                    && matches!(n.method, Method::Initialized)
                {
                    session.notification(&n.method, n.params);
                }
                if matches!(n.method, Method::Cancelled)
                    && let Some(params) = n.params
                    && let Ok(CancelParams {
                        request_id: Some(id),
                    }) = serde_json::from_str(params.get())
                    && let Some(token) = self.in_flight.lock().expect("in-flight lock").get(&id)
                {
                    token.cancel();
                }
                return;
            }
        };

        let id = prepared.id.clone();
        let cancel = CancellationToken::new();
        let duplicate = {
            let mut in_flight = self.in_flight.lock().expect("in-flight lock");
            let duplicate = in_flight.contains_key(&id);
            if !duplicate {
                in_flight.insert(id.clone(), cancel.clone());
            }
            duplicate
        };
        if duplicate {
            let e = ErrorObject::invalid_request(format_args!(
                "id {id} is already used by a request in flight"
            ));
            let reply = error_reply(Some(&id), &e, true);
            probe.finish(reply.outcome);
            return self.send(reply.body).await;
        }

        let server = self.server.clone();
        let out = self.out.clone();
        let in_flight = self.in_flight.clone();
        let close = self.close.clone();
        let principal = self.principal.clone();
        self.tracker.spawn(async move {
            let sink: Arc<dyn NotificationSink> = Arc::new(Sink(out.clone()));
            let io = |probe| RequestIo {
                principal,
                cancel: cancel.clone(),
                sink: Some(sink),
                guard: None,
                close: Some(close),
                probe: Some(probe),
            };
            let reply = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                reply = async {
                    match &session {
                        Some(session) => {
                            server.legacy_dispatch(session, prepared, io(&mut probe)).await
                        }
                        // Checked once, here; the dispatch checks nothing again.
                        None => match server.check_to_dispatch(prepared, Some(&mut probe)) {
                            Ok(checked) => server.dispatch(checked, io(&mut probe)).await,
                            Err(reply) => Reply::Message(reply),
                        },
                    }
                } => Some(reply),
            };
            match reply {
                None => probe.cancelled(),
                Some(Reply::Message(m)) if !cancel.is_cancelled() => {
                    probe.finish(m.outcome);
                    let _ = out.send(m.body).await;
                }
                // Cancelled after the handler finished: nothing is sent, as for any cancellation.
                Some(Reply::Message(_)) => probe.cancelled(),
                Some(Reply::Listen(mut stream)) => loop {
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => break,
                        item = stream.next() => match item {
                            Some(msg) => { let _ = out.send(msg).await; }
                            None => break,
                        }
                    }
                },
            }
            in_flight.lock().expect("in-flight lock").remove(&id);
        });
    }
}
