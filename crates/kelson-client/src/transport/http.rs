//! Streamable HTTP, both eras, over `kelson_http::client`.
//!
//! spec 2026-07-28 [basic/transports/streamable-http][sh]: one POST per message with the
//! standard headers; the answer is one JSON message or an SSE stream scoped to the request, whose
//! notifications come before the response. Closing the stream (dropping the future) cancels.
//!
//! A legacy (2025) peer gets `MCP-Protocol-Version` with its revision and the `Mcp-Session-Id` it
//! minted at `initialize`. Its requests to the client arrive on SSE streams (a POST's, or the
//! session's GET stream) and are answered with a POST of the JSON-RPC response. The session's one
//! GET stream ([`standalone`]) is opened right after the handshake and kept for the client's life:
//! it carries the server's requests and notifications that belong to no client request, and every
//! legacy listen reads from it.
//!
//! [sh]: https://modelcontextprotocol.io/specification/2026-07-28/basic/transports/streamable-http

mod standalone;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use kelson_http::client::{
    EventStream, HttpClient, HttpError, HttpReply, ReplyBody, request_headers, www_authenticate,
};
use kelson_http::headers::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use kelson_jsonrpc::{Id, Message, RawValue};
use kelson_types::method_names;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Event, ListenSink, Outgoing, Reply, subscription_id};
use crate::Error;
use crate::auth::{OAuth, Refusal};
use crate::cache::Cache;
use crate::handlers::Handlers;
use standalone::Notices;

/// How many times a handshake-era response stream that closed before its response is resumed.
const MAX_RESUMPTIONS: usize = 3;

/// How long to wait before resuming a stream whose server gave no `retry` delay.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// The header that resumes an SSE stream after the last event received.
const LAST_EVENT_ID: http::HeaderName = http::HeaderName::from_static("last-event-id");

/// How many times one message is sent again after the OAuth flow answered a refusal.
const MAX_AUTH_RETRIES: usize = 3;

/// The refusal of a request that carried `sent`, when `status` is one and a `Bearer` challenge may
/// say more.
fn refusal(
    status: StatusCode,
    challenges: &[String],
    sent: &Option<HeaderValue>,
) -> Option<Refusal> {
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    Some(Refusal {
        status,
        challenge: crate::auth::challenge_bearer(challenges),
        sent: sent.clone(),
    })
}

/// What the transport knows once the server turned out to be legacy.
struct Legacy {
    version: &'static str,
    handlers: Handlers,
    /// Invalidated by every notification not tied to a request.
    cache: Option<Arc<Cache>>,
}

/// What the transport shares with its background tasks (the GET stream, answers to server
/// requests): they always send the current session and headers.
struct Shared {
    http: HttpClient,
    /// OAuth for a server that requires it: its token on every request, its flow on a refusal.
    oauth: Option<OAuth>,
    extra: RwLock<HeaderMap>,
    session: Mutex<Option<HeaderValue>>,
    legacy: OnceLock<Legacy>,
    /// Legacy only: where notifications that belong to no response stream go.
    notices: Notices,
}

/// The HTTP transport of one client.
pub(crate) struct HttpTransport {
    shared: Arc<Shared>,
    /// Whether the legacy GET stream was started (once per client).
    standalone: AtomicBool,
    /// Stops the GET stream: on `close`, or when the client is dropped.
    stop: CancellationToken,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.shared.http.url())
            .finish_non_exhaustive()
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        // The last handle on the client is gone: nothing will read the GET stream any more.
        self.stop.cancel();
    }
}

impl HttpTransport {
    pub(crate) fn new(http: HttpClient, extra: HeaderMap, oauth: Option<OAuth>) -> Self {
        HttpTransport {
            shared: Arc::new(Shared {
                http,
                oauth,
                extra: RwLock::new(extra),
                session: Mutex::new(None),
                legacy: OnceLock::new(),
                notices: Notices::default(),
            }),
            standalone: AtomicBool::new(false),
            stop: CancellationToken::new(),
        }
    }

    pub(crate) fn origin(&self) -> String {
        self.shared.http.origin()
    }

    /// Replaces or adds an extra header sent on every request (for example a refreshed
    /// `Authorization`), the GET stream's reconnections included.
    pub(crate) fn set_header(&self, name: HeaderName, value: HeaderValue) {
        self.shared
            .extra
            .write()
            .expect("headers lock")
            .insert(name, value);
    }

    /// Switches to the legacy revision: its requests are answered with `handlers`, and its
    /// notifications invalidate `cache`.
    pub(crate) fn set_legacy(
        &self,
        version: &'static str,
        handlers: Handlers,
        cache: Option<Arc<Cache>>,
    ) {
        let _ = self.shared.legacy.set(Legacy {
            version,
            handlers,
            cache,
        });
    }

    /// The legacy session id, if the server minted one.
    pub(crate) fn session(&self) -> Option<HeaderValue> {
        self.shared.session()
    }

    /// Opens the legacy session's GET stream and keeps it open (reconnecting with backoff) until
    /// the client is closed or dropped. Waits at most `wait` for the server's first answer, so that
    /// the stream is in place before the first call: a server request sent while no GET stream is
    /// open is lost (the TypeScript SDK v1 drops it). A 405 means the server has no such stream;
    /// that is remembered, and the client carries on without it. Does nothing on a modern server
    /// or when the stream was already started.
    pub(crate) async fn open_standalone(&self, wait: Duration) {
        if self.shared.legacy.get().is_none() || self.standalone.swap(true, Ordering::SeqCst) {
            return;
        }
        let (settled, first_answer) = oneshot::channel();
        tokio::spawn(standalone::run(
            self.shared.clone(),
            self.stop.clone(),
            settled,
        ));
        if tokio::time::timeout(wait, first_answer).await.is_err() {
            tracing::debug!(
                ?wait,
                "the legacy GET stream is not open yet; it keeps trying in the background"
            );
        }
    }

    /// Closes the GET stream for good; legacy listens still open end with an error.
    pub(crate) fn close_standalone(&self) {
        self.stop.cancel();
        self.shared.notices.end("the client was closed");
    }

    /// Ends a legacy session with DELETE (spec 2025-11-25 transports); a 405 means the server does
    /// not let clients end sessions, which is fine.
    pub(crate) async fn end_session(&self, session: HeaderValue) -> Result<(), Error> {
        let mut headers = self.shared.legacy_headers();
        headers.insert(MCP_SESSION_ID, session);
        self.shared.delete(headers).await?;
        Ok(())
    }

    fn headers(&self, out: &Outgoing) -> Result<HeaderMap, Error> {
        let invalid = |e: http::header::InvalidHeaderValue| Error::InvalidArgument(Box::new(e));
        let mut headers = if out.legacy {
            request_headers(out.version, None, None, []).map_err(invalid)?
        } else {
            request_headers(
                out.version,
                Some(out.method),
                out.name.as_deref(),
                out.param_headers.iter().cloned(),
            )
            .map_err(invalid)?
        };
        self.shared.common_headers(&mut headers);
        Ok(headers)
    }

    pub(crate) async fn request(
        &self,
        out: Outgoing,
        events: mpsc::UnboundedSender<Event>,
    ) -> Result<Reply, Error> {
        let headers = self.headers(&out)?;
        // A legacy server may send this request's progress (and log messages) on the GET stream.
        let _tracked = self
            .shared
            .legacy
            .get()
            .map(|_| standalone::track(&self.shared, &out, &events));
        let reply = self.shared.post(out.body, headers).await?;
        if out.method == method_names::INITIALIZE
            && let Some(session) = reply.headers.get(MCP_SESSION_ID)
        {
            *self.shared.session.lock().expect("session lock") = Some(session.clone());
        }
        let status = reply.status;
        match reply.body {
            ReplyBody::Empty => Err(if status.is_success() {
                Error::malformed(out.method, format!("HTTP {status} without a response"))
            } else {
                HttpError::status(status, b"").into()
            }),
            ReplyBody::Json(body) => decode_reply(&body, &out.id, status, out.method),
            ReplyBody::Events(mut stream) => {
                let mut resumed = 0;
                loop {
                    while let Some(message) = stream.next_message().await {
                        let message = message?;
                        if let Some(reply) = self.on_stream_message(&message, &out.id, &events) {
                            return Ok(Reply {
                                outcome: reply,
                                status: Some(status),
                            });
                        }
                    }
                    // spec 2025-11-25 basic/transports (SEP-1699): a handshake-era server may
                    // close a response stream before the response, having given its events ids;
                    // the client resumes it with a GET carrying `Last-Event-ID`, after the
                    // `retry` delay the server asked for. 2026-07-28 streams are never resumed:
                    // a broken stream loses the request (spec 2026-07-28
                    // basic/patterns/cancellation), and the application may send it again.
                    let resume = match (self.shared.legacy.get(), stream.last_event_id()) {
                        (Some(_), Some(id)) if resumed < MAX_RESUMPTIONS => {
                            HeaderValue::from_str(id).ok()
                        }
                        _ => None,
                    };
                    let Some(last_event_id) = resume else {
                        return Err(Error::disconnected(format!(
                            "the response stream of {} ended before its response",
                            out.method
                        )));
                    };
                    resumed += 1;
                    tokio::time::sleep(stream.retry().unwrap_or(DEFAULT_RETRY)).await;
                    let mut headers = self.shared.legacy_headers();
                    headers.insert(LAST_EVENT_ID, last_event_id);
                    stream = self.shared.get_stream(headers).await?;
                }
            }
        }
    }

    /// Handles one message of a request's SSE stream; returns the outcome when it is the response.
    fn on_stream_message(
        &self,
        text: &str,
        id: &Id,
        events: &mpsc::UnboundedSender<Event>,
    ) -> Option<Result<Box<RawValue>, kelson_jsonrpc::ErrorObject>> {
        let message = match kelson_jsonrpc::decode_str(text) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e.error, "ignored an unreadable message on a response stream");
                return None;
            }
        };
        match message {
            Message::Response(r) if r.id.as_ref() == Some(id) || r.id.is_none() => {
                Some(r.outcome.map(ToOwned::to_owned))
            }
            Message::Response(r) => {
                tracing::debug!(id = ?r.id, "ignored a response for another request");
                None
            }
            Message::Notification(n) => {
                match Event::parse(&n.method, n.params) {
                    Some(event) => {
                        let _ = events.send(event);
                    }
                    // A legacy server may send any notification on a response stream; those that
                    // are not the request's own go where the GET stream's go.
                    None if self.shared.legacy.get().is_some() => {
                        self.shared.untagged(&n.method, n.params);
                    }
                    None => {}
                }
                None
            }
            Message::Request(request) => {
                self.shared
                    .answer_server_request(request.id, &request.method, request.params);
                None
            }
        }
    }

    pub(crate) async fn notify(&self, method: &'static str, body: Bytes) -> Result<(), Error> {
        let mut headers = match self.shared.legacy.get() {
            Some(legacy) => request_headers(Some(legacy.version), None, None, []),
            None => request_headers(
                Some(kelson_types::LATEST_PROTOCOL_VERSION),
                Some(method),
                None,
                [],
            ),
        }
        .map_err(|e| Error::InvalidArgument(Box::new(e)))?;
        self.shared.common_headers(&mut headers);
        let reply = self.shared.post(body, headers).await?;
        if reply.status.is_success() {
            Ok(())
        } else {
            match reply.body {
                ReplyBody::Json(body) => match kelson_jsonrpc::decode(&body) {
                    Ok(Message::Response(r)) if r.outcome.is_err() => {
                        Err(Error::protocol(method, r.outcome.unwrap_err()))
                    }
                    _ => Err(HttpError::status(reply.status, &body).into()),
                },
                _ => Err(HttpError::status(reply.status, b"").into()),
            }
        }
    }

    /// Opens a modern listen stream: one POST whose SSE stream stays open.
    pub(crate) async fn listen(
        &self,
        out: Outgoing,
        sink: ListenSink,
    ) -> Result<ListenGuard, Error> {
        let headers = self.headers(&out)?;
        let reply = self.shared.post(out.body, headers).await?;
        let stream = expect_stream(reply, &out.id, out.method)?;
        let id = out.id;
        let task = tokio::spawn(pump(stream, sink, move |message, sink| match message {
            Message::Notification(n) => {
                // Only this subscription's notifications travel here; anything else is ignored.
                if subscription_id(n.params).as_ref() == Some(&id) {
                    sink.notification(&n.method, n.params.and_then(to_value));
                }
                true
            }
            Message::Response(r) if r.id.as_ref() == Some(&id) => {
                sink.end();
                false
            }
            _ => true,
        }));
        Ok(ListenGuard(Guard::Stream(task)))
    }

    /// Adds a legacy listen to the session's GET stream, which every legacy listen shares; its
    /// untagged notifications feed `sink` from now on.
    pub(crate) fn legacy_listen(&self, sink: ListenSink) -> Result<ListenGuard, Error> {
        if self.shared.legacy.get().is_none() {
            return Err(Error::Unsupported(
                "a legacy notification stream on a 2026-07-28 server",
            ));
        }
        // The transport invalidates the cache for every notification, listened to or not.
        let key = self.shared.notices.add_listener(sink.without_cache())?;
        Ok(ListenGuard(Guard::Legacy {
            shared: self.shared.clone(),
            key,
        }))
    }
}

impl Shared {
    fn session(&self) -> Option<HeaderValue> {
        self.session.lock().expect("session lock").clone()
    }

    /// POSTs one message with the OAuth token, if any. A refusal that the OAuth flow can answer
    /// (401; 403 with `insufficient_scope`) runs it, and the message is sent again with the new
    /// token, a few times at most.
    async fn post(&self, body: Bytes, headers: HeaderMap) -> Result<HttpReply, Error> {
        let Some(oauth) = &self.oauth else {
            return Ok(self.http.post(body, headers).await?);
        };
        let url = self.http.url().to_owned();
        let mut attempts = 0;
        loop {
            let mut sending = headers.clone();
            let sent = oauth.flow.header(&url).await?;
            if let Some(token) = &sent {
                sending.insert(AUTHORIZATION, token.clone());
            }
            let result = self.http.post(body.clone(), sending).await;
            let refusal = match &result {
                Ok(reply) => refusal(reply.status, &www_authenticate(&reply.headers), &sent),
                Err(HttpError::Unauthorized {
                    status,
                    www_authenticate,
                    ..
                }) => refusal(*status, www_authenticate, &sent),
                Err(_) => None,
            };
            match refusal {
                Some(refusal) if refusal.is_auth() && attempts < MAX_AUTH_RETRIES => {
                    attempts += 1;
                    oauth.flow.refused(&url, refusal).await?;
                }
                _ => {
                    if result.as_ref().is_ok_and(|r| r.status.is_success()) {
                        oauth.flow.accepted();
                    }
                    return Ok(result?);
                }
            }
        }
    }

    /// Opens the legacy GET stream with the OAuth token, if any; a refusal runs the flow once.
    async fn get_stream(&self, headers: HeaderMap) -> Result<EventStream, Error> {
        let Some(oauth) = &self.oauth else {
            return Ok(self.http.get_stream(headers).await?);
        };
        let url = self.http.url().to_owned();
        let mut retried = false;
        loop {
            let mut sending = headers.clone();
            let sent = oauth.flow.header(&url).await?;
            if let Some(token) = &sent {
                sending.insert(AUTHORIZATION, token.clone());
            }
            match self.http.get_stream(sending).await {
                Err(HttpError::Unauthorized {
                    status,
                    www_authenticate,
                    ..
                }) if !retried => {
                    retried = true;
                    match refusal(status, &www_authenticate, &sent) {
                        Some(r) if r.is_auth() => oauth.flow.refused(&url, r).await?,
                        _ => unreachable!("an Unauthorized error is a refusal"),
                    }
                }
                other => return Ok(other?),
            }
        }
    }

    /// Ends a legacy session, with the OAuth token, if any.
    async fn delete(&self, mut headers: HeaderMap) -> Result<StatusCode, Error> {
        if let Some(oauth) = &self.oauth
            && let Some(token) = oauth.flow.header(self.http.url()).await?
        {
            headers.insert(AUTHORIZATION, token);
        }
        Ok(self.http.delete(headers).await?)
    }

    /// The session and the application's extra headers.
    fn common_headers(&self, headers: &mut HeaderMap) {
        if let Some(session) = self.session() {
            headers.insert(MCP_SESSION_ID, session);
        }
        for (name, value) in self.extra.read().expect("headers lock").iter() {
            headers.insert(name, value.clone());
        }
    }

    /// The headers of a legacy message that is no request of ours (an answer, the GET, the
    /// DELETE): the revision, the session and the extra headers.
    fn legacy_headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(legacy) = self.legacy.get() {
            headers.insert(
                MCP_PROTOCOL_VERSION,
                HeaderValue::from_static(legacy.version),
            );
        }
        self.common_headers(&mut headers);
        headers
    }

    /// Answers a legacy server's request in a task, with a POST of the JSON-RPC response.
    fn answer_server_request(self: &Arc<Self>, id: Id, method: &str, params: Option<&RawValue>) {
        if self.legacy.get().is_none() {
            tracing::warn!(%method, "ignored a request from a 2026-07-28 server; servers never send requests");
            return;
        }
        let shared = self.clone();
        let method = method.to_owned();
        let params = params.map(ToOwned::to_owned);
        tokio::spawn(async move {
            let Some(legacy) = shared.legacy.get() else {
                return;
            };
            let answer = legacy
                .handlers
                .answer_legacy(&method, params.as_deref())
                .await;
            let mut body = Vec::with_capacity(128);
            match answer {
                Ok(result) => {
                    kelson_jsonrpc::write_result(&mut body, &id, &result)
                        .expect("a JSON value serializes");
                }
                Err(error) => kelson_jsonrpc::write_error(&mut body, Some(&id), &error),
            }
            let headers = shared.legacy_headers();
            if let Err(e) = shared.post(Bytes::from(body), headers).await {
                tracing::warn!(error = %e, %method, "could not deliver the answer to a server request");
            }
        });
    }
}

/// Reads a stream until it ends, the handler says stop, or the subscription is dropped.
async fn pump(
    mut stream: EventStream,
    sink: ListenSink,
    mut on_message: impl FnMut(Message<'_>, &ListenSink) -> bool + Send,
) {
    while let Some(message) = stream.next_message().await {
        let text = match message {
            Ok(text) => text,
            Err(e) => return sink.fail(e.into()),
        };
        match kelson_jsonrpc::decode_str(&text) {
            Ok(message) => {
                if !on_message(message, &sink) {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e.error, "ignored an unreadable message on a listen stream")
            }
        }
        if sink.is_closed() {
            return;
        }
    }
    sink.fail(Error::disconnected("the listen stream closed"));
}

/// The SSE body of a listen answer, or the error the server sent instead.
fn expect_stream(reply: HttpReply, id: &Id, method: &'static str) -> Result<EventStream, Error> {
    let status = reply.status;
    match reply.body {
        ReplyBody::Events(stream) => Ok(stream),
        ReplyBody::Json(body) => match decode_reply(&body, id, status, method)?.outcome {
            Err(error) => Err(Error::protocol(method, error)),
            Ok(_) => Err(Error::malformed(
                method,
                "a result instead of an event stream",
            )),
        },
        ReplyBody::Empty => Err(Error::malformed(method, "an empty answer")),
    }
}

/// Reads a JSON body as the response to `id`. A non-2xx status whose body is not a JSON-RPC
/// response is an HTTP error.
fn decode_reply(
    body: &[u8],
    id: &Id,
    status: StatusCode,
    method: &'static str,
) -> Result<Reply, Error> {
    match kelson_jsonrpc::decode(body) {
        Ok(Message::Response(r)) if r.id.as_ref() == Some(id) || r.id.is_none() => Ok(Reply {
            outcome: r.outcome.map(ToOwned::to_owned),
            status: Some(status),
        }),
        _ if !status.is_success() => Err(HttpError::status(status, body).into()),
        Ok(_) => Err(Error::malformed(method, "the body is not the response")),
        Err(e) => Err(Error::malformed(method, e.error)),
    }
}

fn to_value(raw: &RawValue) -> Option<Value> {
    serde_json::from_str(raw.get()).ok()
}

/// Keeps an HTTP listen open; dropping it ends the subscription.
pub(crate) struct ListenGuard(Guard);

enum Guard {
    /// A modern listen: the task that reads its response stream. Aborting it closes the response,
    /// which ends the subscription (spec 2026-07-28 basic/patterns/subscriptions).
    Stream(JoinHandle<()>),
    /// A legacy listen: its place among the GET stream's listeners. The stream itself stays, for
    /// the other listens and for the server's requests.
    Legacy { shared: Arc<Shared>, key: u64 },
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        match &self.0 {
            Guard::Stream(task) => task.abort(),
            Guard::Legacy { shared, key } => shared.notices.remove_listener(*key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_bodies_become_replies_or_http_errors() {
        let id = Id::Int(3);
        let ok = decode_reply(
            br#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete"}}"#,
            &id,
            StatusCode::OK,
            "tools/list",
        )
        .unwrap();
        assert!(ok.outcome.is_ok());
        let err = decode_reply(
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32020,"message":"Header mismatch"}}"#,
            &id,
            StatusCode::BAD_REQUEST,
            "tools/call",
        )
        .unwrap();
        assert_eq!(err.outcome.unwrap_err().code, -32020);
        assert_eq!(err.status, Some(StatusCode::BAD_REQUEST));
        let not_rpc = decode_reply(
            br#"{"detail":"nope"}"#,
            &id,
            StatusCode::BAD_GATEWAY,
            "tools/call",
        )
        .unwrap_err();
        assert!(matches!(not_rpc, Error::Http(HttpError::Status { .. })));
    }
}
