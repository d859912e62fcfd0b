//! Streamable HTTP, both eras, over `mcp_http::client`.
//!
//! spec 2026-07-28 basic/transports/streamable-http (DIGEST §16): one POST per message with the
//! standard headers; the answer is one JSON message or an SSE stream scoped to the request, whose
//! notifications come before the response. Closing the stream (dropping the future) cancels.
//! A legacy (2025) peer gets `MCP-Protocol-Version` with its revision and the `Mcp-Session-Id` it
//! minted at `initialize`; its requests to the client arrive on SSE streams and are answered with a
//! POST of the JSON-RPC response; its notifications arrive on the GET stream.

use std::sync::{Arc, Mutex, OnceLock, RwLock};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use mcp_http::client::{EventStream, HttpClient, HttpError, HttpReply, ReplyBody, request_headers};
use mcp_http::headers::MCP_SESSION_ID;
use mcp_jsonrpc::{Id, Message, RawValue};
use mcp_types::method_names;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{Event, ListenSink, Outgoing, Reply, subscription_id};
use crate::Error;
use crate::handlers::Handlers;

/// What the transport knows once the server turned out to be legacy.
#[derive(Debug)]
struct Legacy {
    version: &'static str,
    handlers: Handlers,
}

/// The HTTP transport of one client.
pub(crate) struct HttpTransport {
    http: HttpClient,
    extra: RwLock<HeaderMap>,
    session: Mutex<Option<HeaderValue>>,
    legacy: OnceLock<Arc<Legacy>>,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.http.url())
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    pub(crate) fn new(http: HttpClient, extra: HeaderMap) -> Self {
        HttpTransport {
            http,
            extra: RwLock::new(extra),
            session: Mutex::new(None),
            legacy: OnceLock::new(),
        }
    }

    pub(crate) fn origin(&self) -> String {
        self.http.origin()
    }

    /// Replaces or adds an extra header sent on every request (for example a refreshed
    /// `Authorization`).
    pub(crate) fn set_header(&self, name: HeaderName, value: HeaderValue) {
        self.extra
            .write()
            .expect("headers lock")
            .insert(name, value);
    }

    /// Switches to the legacy revision: its requests are answered with `handlers`.
    pub(crate) fn set_legacy(&self, version: &'static str, handlers: Handlers) {
        let _ = self.legacy.set(Arc::new(Legacy { version, handlers }));
    }

    /// The legacy session id, if the server minted one.
    pub(crate) fn session(&self) -> Option<HeaderValue> {
        self.session.lock().expect("session lock").clone()
    }

    /// Ends a legacy session with DELETE (spec 2025-11-25 transports); a 405 means the server does
    /// not let clients end sessions, which is fine.
    pub(crate) async fn end_session(&self, session: HeaderValue) -> Result<(), Error> {
        let version = self.legacy.get().map(|l| l.version);
        let mut headers = request_headers(version, None, None, [])
            .map_err(|e| Error::InvalidArgument(Box::new(e)))?;
        self.common_headers(&mut headers);
        headers.insert(MCP_SESSION_ID, session);
        self.http.delete(headers).await?;
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
        self.common_headers(&mut headers);
        Ok(headers)
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

    pub(crate) async fn request(
        &self,
        out: Outgoing,
        events: mpsc::UnboundedSender<Event>,
    ) -> Result<Reply, Error> {
        let headers = self.headers(&out)?;
        let reply = self.http.post(out.body, headers).await?;
        if out.method == method_names::INITIALIZE
            && let Some(session) = reply.headers.get(MCP_SESSION_ID)
        {
            *self.session.lock().expect("session lock") = Some(session.clone());
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
                while let Some(message) = stream.next_message().await {
                    let message = message?;
                    if let Some(reply) = self.on_stream_message(&message, &out.id, &events) {
                        return Ok(Reply {
                            outcome: reply,
                            status: Some(status),
                        });
                    }
                }
                // spec 2026-07-28 basic/utilities/cancellation: a broken stream loses the request; the
                // application may re-issue it as a new request.
                Err(Error::disconnected(format!(
                    "the response stream of {} ended before its response",
                    out.method
                )))
            }
        }
    }

    /// Handles one message of a request's SSE stream; returns the outcome when it is the response.
    fn on_stream_message(
        &self,
        text: &str,
        id: &Id,
        events: &mpsc::UnboundedSender<Event>,
    ) -> Option<Result<Box<RawValue>, mcp_jsonrpc::ErrorObject>> {
        let message = match mcp_jsonrpc::decode_str(text) {
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
                if let Some(event) = Event::parse(&n.method, n.params) {
                    let _ = events.send(event);
                }
                None
            }
            Message::Request(request) => {
                self.answer_server_request(request.id, &request.method, request.params);
                None
            }
        }
    }

    /// Answers a legacy server's request with a POST of the JSON-RPC response.
    fn answer_server_request(&self, id: Id, method: &str, params: Option<&RawValue>) {
        let Some(legacy) = self.legacy.get().cloned() else {
            tracing::warn!(%method, "ignored a request from a 2026-07-28 server; servers never send requests");
            return;
        };
        let mut headers = HeaderMap::new();
        self.common_headers(&mut headers);
        spawn_answer(self.http.clone(), legacy, headers, id, method, params);
    }

    pub(crate) async fn notify(&self, method: &'static str, body: Bytes) -> Result<(), Error> {
        let mut headers = match self.legacy.get() {
            Some(legacy) => request_headers(Some(legacy.version), None, None, []),
            None => request_headers(
                Some(mcp_types::LATEST_PROTOCOL_VERSION),
                Some(method),
                None,
                [],
            ),
        }
        .map_err(|e| Error::InvalidArgument(Box::new(e)))?;
        self.common_headers(&mut headers);
        let reply = self.http.post(body, headers).await?;
        if reply.status.is_success() {
            Ok(())
        } else {
            match reply.body {
                ReplyBody::Json(body) => match mcp_jsonrpc::decode(&body) {
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
        let reply = self.http.post(out.body, headers).await?;
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
        Ok(ListenGuard(task))
    }

    /// Opens the legacy GET stream; its untagged notifications feed `sink`.
    pub(crate) async fn legacy_listen(&self, sink: ListenSink) -> Result<ListenGuard, Error> {
        let Some(legacy) = self.legacy.get().cloned() else {
            return Err(Error::Unsupported(
                "a legacy notification stream on a 2026-07-28 server",
            ));
        };
        let mut headers = request_headers(Some(legacy.version), None, None, [])
            .map_err(|e| Error::InvalidArgument(Box::new(e)))?;
        self.common_headers(&mut headers);
        let reply = match self.http.get_stream(headers).await {
            Ok(reply) => reply,
            Err(HttpError::Status { status, .. }) if status == StatusCode::METHOD_NOT_ALLOWED => {
                return Err(Error::Unsupported(
                    "the legacy server offers no GET notification stream (HTTP 405)",
                ));
            }
            Err(e) => return Err(e.into()),
        };
        let ReplyBody::Events(stream) = reply.body else {
            return Err(Error::Unsupported(
                "the legacy server answered the GET stream without an event stream",
            ));
        };
        let http = self.http.clone();
        let mut common = HeaderMap::new();
        self.common_headers(&mut common);
        let task = tokio::spawn(pump(stream, sink, move |message, sink| {
            match message {
                Message::Notification(n) => {
                    sink.notification(&n.method, n.params.and_then(to_value));
                }
                Message::Request(r) => spawn_answer(
                    http.clone(),
                    legacy.clone(),
                    common.clone(),
                    r.id,
                    &r.method,
                    r.params,
                ),
                Message::Response(_) => {}
            }
            true
        }));
        Ok(ListenGuard(task))
    }
}

/// Answers one legacy server request in a task, and POSTs the JSON-RPC response.
fn spawn_answer(
    http: HttpClient,
    legacy: Arc<Legacy>,
    common: HeaderMap,
    id: Id,
    method: &str,
    params: Option<&RawValue>,
) {
    let method = method.to_owned();
    let params = params.map(ToOwned::to_owned);
    tokio::spawn(async move {
        let answer = legacy
            .handlers
            .answer_legacy(&method, params.as_deref())
            .await;
        let mut body = Vec::with_capacity(128);
        match answer {
            Ok(result) => {
                mcp_jsonrpc::write_result(&mut body, &id, &result)
                    .expect("a JSON value serializes");
            }
            Err(error) => mcp_jsonrpc::write_error(&mut body, Some(&id), &error),
        }
        let Ok(mut headers) = request_headers(Some(legacy.version), None, None, []) else {
            return;
        };
        headers.extend(common);
        if let Err(e) = http.post(Bytes::from(body), headers).await {
            tracing::warn!(error = %e, %method, "could not deliver the answer to a server request");
        }
    });
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
        match mcp_jsonrpc::decode_str(&text) {
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
    match mcp_jsonrpc::decode(body) {
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

/// Keeps an HTTP listen stream open; dropping it closes the response, which ends the subscription
/// (spec 2026-07-28 basic/patterns/subscriptions).
pub(crate) struct ListenGuard(JoinHandle<()>);

impl Drop for ListenGuard {
    fn drop(&mut self) {
        self.0.abort();
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
