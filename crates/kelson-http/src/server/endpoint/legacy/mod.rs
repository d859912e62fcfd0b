//! The handshake era (2025-03-26 to 2025-11-25) on the same endpoint.
//!
//! A request with the modern `_meta` envelope is served statelessly as before. Anything else comes
//! from a handshake-era client and is served here, per the 2025-11-25 Streamable HTTP transport:
//!
//! - **Sessions** (the default, [`LegacyMode::Sessions`]): `initialize` mints an `Mcp-Session-Id`
//!   (128 bits from the OS CSPRNG); every later request must carry it (400 without, 404 for an
//!   unknown or ended one); `GET` with it opens the session's stream of change notifications;
//!   `DELETE` ends it. Sessions are bounded in number and closed after an idle time.
//! - **Stateless** ([`LegacyMode::Stateless`]), for instances behind a load balancer: no session
//!   ids; every request is served on its own, `GET` and `DELETE` get 405, and change notifications
//!   are not delivered (there is no stream to carry them).
//!
//! In both, a request whose handler needs input (elicitation, sampling, roots) turns into an SSE
//! response that carries the server's request; the client POSTs its answer, which is handed to the
//! waiting handler. A JSON-RPC error is answered with 200, as that era does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::header::{ACCEPT, CONTENT_TYPE, HeaderName};
use http::{HeaderValue, Response, StatusCode};
use kelson_server::observe::RequestEra;
use kelson_server::transport::{
    LegacySession, NotificationSink, Outcome, Prepared, Reply, ReplyMessage, RequestIo,
};
use kelson_server::{LEGACY_VERSIONS, Principal, RequestProbe};
use kelson_types::Method;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::body::{Event, McpBody};
use super::{JSON, McpService, http_error, keep_alive, plain, sse_response, status_for};
use crate::headers::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID};

mod streams;

/// The header a reconnecting client names the last event it received in.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

pub(crate) use streams::{OpenStreams, StreamGuard};

/// How handshake-era clients are served on the HTTP endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LegacyMode {
    /// `Mcp-Session-Id` sessions, as the hosts of that era expect: change notifications and
    /// resource subscriptions work. Sessions live in this process, so several instances need
    /// sticky routing.
    #[default]
    Sessions,
    /// No sessions: every request is served on its own, so any instance can serve any request.
    /// Change notifications and subscriptions are not delivered.
    Stateless,
}

/// The address a request came from, put in its extensions by the listener ([`serve`] and its
/// siblings). Behind an auth layer sessions are counted per principal; without one, per address
/// (loopback addresses excepted, since every local client shares them). When the service is
/// mounted elsewhere, insert it to get the same.
///
/// [`serve`]: crate::server::serve
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub std::net::SocketAddr);

/// The live sessions of one endpoint.
#[derive(Default)]
pub(crate) struct Sessions {
    map: Mutex<Table>,
    next_sweep: Mutex<Option<Instant>>,
}

#[derive(Default)]
struct Table {
    entries: HashMap<String, Entry>,
    /// How many sessions each caller holds, by [`Entry::caller`].
    per_caller: HashMap<Arc<str>, usize>,
}

struct Entry {
    session: LegacySession,
    /// The principal that opened it ([`Principal::id`]; empty when anonymous): only it may use it.
    owner: String,
    /// Whose share of the sessions it counts against: the principal, or for anonymous callers
    /// the address they came from; `None` when neither is known (loopback).
    caller: Option<Arc<str>>,
    last_used: Instant,
    /// Open GET streams: a session with one is never idle.
    streams: Arc<OpenStreams>,
}

impl Entry {
    /// Whether the session is in use: a request in flight or a GET stream open.
    fn busy(&self) -> bool {
        self.streams.any() || self.session.requests_in_flight() > 0
    }
}

impl Table {
    fn remove(&mut self, id: &str) -> Option<Entry> {
        let entry = self.entries.remove(id)?;
        if let Some(caller) = &entry.caller
            && let Some(count) = self.per_caller.get_mut(caller)
        {
            *count -= 1;
            if *count == 0 {
                self.per_caller.remove(caller);
            }
        }
        Some(entry)
    }
}

/// Why a new session was not kept.
pub(crate) enum Full {
    /// The endpoint holds as many sessions as it may.
    Endpoint,
    /// The caller holds as many as one caller may, and none of them is idle.
    Caller,
}

/// How many sessions an endpoint keeps, in all and per caller.
#[derive(Clone, Copy)]
pub(crate) struct Quota {
    pub(crate) max: usize,
    pub(crate) per_caller: usize,
    pub(crate) idle: Duration,
}

/// Why a session header could not be used.
enum Lookup {
    Missing,
    Malformed,
    Unknown,
}

impl Sessions {
    /// Removes sessions idle for longer than `idle`, at most once a second (every lookup may call
    /// it); ended sessions are closed, which ends their streams and requests.
    fn sweep(&self, idle: Duration, now: Instant) {
        {
            let mut next = self.next_sweep.lock().expect("sweep lock");
            if next.is_some_and(|at| now < at) {
                return;
            }
            *next = Some(now + Duration::from_secs(1).min(idle));
        }
        let mut ended = Vec::new();
        {
            let mut table = self.map.lock().expect("sessions lock");
            let expired: Vec<String> = table
                .entries
                .iter()
                .filter(|(_, e)| now.duration_since(e.last_used) >= idle && !e.busy())
                .map(|(id, _)| id.clone())
                .collect();
            for id in expired {
                if let Some(e) = table.remove(&id) {
                    ended.push(e.session);
                }
            }
            // A burst of sessions that has ended should not keep its table: give most of it back.
            let map = &mut table.entries;
            if map.capacity() > 64 && map.len() < map.capacity() / 4 {
                let keep = map.len() * 2;
                map.shrink_to(keep);
            }
            let counts = &mut table.per_caller;
            if counts.capacity() > 64 && counts.len() < counts.capacity() / 4 {
                let keep = counts.len() * 2;
                counts.shrink_to(keep);
            }
        }
        for session in ended {
            session.close();
        }
    }

    /// Keeps a new session, or says why not. A caller at its share makes room by ending its own
    /// least recently used idle session (its host, told 404 next time, starts again, as after an
    /// expiry); one whose sessions are all in use is refused. So no caller can take the sessions
    /// of others, and a caller that leaves sessions behind only ever loses its own.
    fn insert(
        &self,
        session: LegacySession,
        owner: String,
        caller: Option<Arc<str>>,
        quota: Quota,
    ) -> Result<(), Full> {
        let now = Instant::now();
        self.sweep(quota.idle, now);
        let mut evicted = None;
        let mut table = self.map.lock().expect("sessions lock");
        if let Some(caller) = &caller
            && table.per_caller.get(caller).copied().unwrap_or(0) >= quota.per_caller
        {
            let oldest = table
                .entries
                .iter()
                .filter(|(_, e)| e.caller.as_ref() == Some(caller) && !e.busy())
                .min_by_key(|(_, e)| e.last_used)
                .map(|(id, _)| id.clone());
            let Some(oldest) = oldest else {
                return Err(Full::Caller);
            };
            evicted = table.remove(&oldest).map(|e| e.session);
        }
        if table.entries.len() >= quota.max {
            return Err(Full::Endpoint);
        }
        if let Some(caller) = &caller {
            *table.per_caller.entry(caller.clone()).or_insert(0) += 1;
        }
        table.entries.insert(
            session.id().to_owned(),
            Entry {
                session,
                owner,
                caller,
                last_used: now,
                streams: Arc::new(OpenStreams::default()),
            },
        );
        drop(table);
        if let Some(session) = evicted {
            tracing::debug!(
                "a caller at its share of sessions opened another; its oldest idle one ended"
            );
            session.close();
        }
        Ok(())
    }

    fn find(
        &self,
        parts: &http::request::Parts,
        idle: Duration,
    ) -> Result<(LegacySession, Arc<OpenStreams>), Lookup> {
        let headers = &parts.headers;
        let mut values = headers.get_all(MCP_SESSION_ID).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(if headers.contains_key(MCP_SESSION_ID) {
                Lookup::Malformed
            } else {
                Lookup::Missing
            });
        };
        // spec 2025-11-25 streamable-http: a session id is visible ASCII (0x21 to 0x7E).
        let id = value.as_bytes();
        if id.is_empty() || id.len() > 256 || !id.iter().all(|b| (0x21..=0x7e).contains(b)) {
            return Err(Lookup::Malformed);
        }
        let id = std::str::from_utf8(id).map_err(|_| Lookup::Malformed)?;
        let now = Instant::now();
        self.sweep(idle, now);
        let mut table = self.map.lock().expect("sessions lock");
        let entry = table.entries.get_mut(id).ok_or(Lookup::Unknown)?;
        // A session belongs to the caller that opened it: behind an auth layer, another token's
        // holder who learnt its id is told it does not exist, as for any id it could guess.
        if entry.owner != owner_of(parts) {
            return Err(Lookup::Unknown);
        }
        entry.last_used = now;
        Ok((entry.session.clone(), entry.streams.clone()))
    }

    fn remove(&self, id: &str) -> Option<LegacySession> {
        self.map
            .lock()
            .expect("sessions lock")
            .remove(id)
            .map(|e| e.session)
    }

    pub(crate) fn len(&self) -> usize {
        self.map.lock().expect("sessions lock").entries.len()
    }

    /// Ends every session (the endpoint is going away).
    pub(crate) fn close_all(&self) {
        let all: Vec<_> = {
            let mut table = self.map.lock().expect("sessions lock");
            table.per_caller.clear();
            table.entries.drain().map(|(_, e)| e.session).collect()
        };
        for session in all {
            session.close();
        }
    }
}

fn lookup_error(probe: &mut RequestProbe, why: Lookup) -> Response<McpBody> {
    let (status, message) = match why {
        Lookup::Missing => (
            StatusCode::BAD_REQUEST,
            "Bad Request: this request needs the Mcp-Session-Id that initialize returned",
        ),
        Lookup::Malformed => (
            StatusCode::BAD_REQUEST,
            "Bad Request: the Mcp-Session-Id header must be one value of visible ASCII",
        ),
        // spec 2025-11-25 streamable-http: an unknown or ended session gets 404, and the client
        // starts a new one with initialize.
        Lookup::Unknown => (
            StatusCode::NOT_FOUND,
            "Not Found: no such session (it ended or expired); initialize again",
        ),
    };
    probe.rejected(status.as_u16(), None);
    http_error(status, message)
}

/// A legacy reply: a JSON-RPC error is answered with 200, as the handshake era does, except a
/// refusal of the envelope itself.
fn legacy_json(probe: &mut RequestProbe, reply: ReplyMessage) -> Response<McpBody> {
    probe.finish(reply.outcome);
    legacy_reply(reply)
}

/// A legacy reply as HTTP: 200, the status of an envelope refusal, or a 403 with its challenge
/// for want of scopes (authorization is the same in both eras).
fn legacy_reply(reply: ReplyMessage) -> Response<McpBody> {
    let status = match reply.outcome {
        Outcome::Error { rejected: true, .. } => status_for(reply.outcome),
        _ => StatusCode::OK,
    };
    let refusal = reply.insufficient_scope();
    let mut response = Response::new(McpBody::full(reply.body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    if let Some(refusal) = refusal {
        super::scope::forbid(&mut response, refusal);
    }
    response
}

/// Where a legacy request's notifications and server-to-client requests go before its response.
struct LegacySink(mpsc::Sender<Event>);

impl NotificationSink for LegacySink {
    fn send(&self, message: Vec<u8>) {
        if self.0.try_send(Event::Notification(message)).is_err() {
            tracing::debug!("SSE queue full or closed; dropped a notification");
        }
    }

    fn send_request(&self, message: Vec<u8>) {
        // The handler waits for the answer: the request is never dropped for a full queue.
        if let Err(mpsc::error::TrySendError::Full(event)) =
            self.0.try_send(Event::Notification(message))
        {
            let tx = self.0.clone();
            tokio::spawn(async move {
                let _ = tx.send(event).await;
            });
        }
    }
}

impl McpService {
    /// The session a POSTed notification or JSON-RPC response belongs to, when sessions are kept.
    ///
    /// A message that names a session which cannot be used gets the answer a request would: 404
    /// for an unknown or ended one, so that its host learns at once to start again with
    /// `initialize`, and 400 for a malformed id. A message without the header belongs to no
    /// session, and so does one from a modern client (its `MCP-Protocol-Version` names a modern
    /// revision), which sessions do not concern.
    fn session_of(&self, parts: &http::request::Parts) -> Result<Option<LegacySession>, Lookup> {
        let headers = &parts.headers;
        let server = &self.inner.server;
        let modern = headers
            .get(MCP_PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| server.supported_versions().contains(&v));
        if self.inner.config.legacy != LegacyMode::Sessions || !server.serves_legacy() || modern {
            return Ok(None);
        }
        match self
            .inner
            .sessions
            .find(parts, self.inner.config.session_idle)
        {
            Ok((session, _)) => Ok(Some(session)),
            Err(Lookup::Missing) => Ok(None),
            Err(why) => Err(why),
        }
    }

    /// `GET` and `DELETE` of the endpoint: a legacy session's notification stream and its end.
    /// `None` when the request is not one of those (no session header, or sessions are off): the
    /// caller answers 405 as a modern endpoint does.
    pub(super) fn legacy_get_or_delete(
        &self,
        probe: &mut RequestProbe,
        parts: &http::request::Parts,
    ) -> Option<Response<McpBody>> {
        let config = &self.inner.config;
        let is_get = parts.method == http::Method::GET;
        if !self.inner.server.serves_legacy()
            || config.legacy != LegacyMode::Sessions
            || !(is_get || parts.method == http::Method::DELETE)
            || !parts.headers.contains_key(MCP_SESSION_ID)
        {
            return None;
        }
        let (session, streams) = match self.inner.sessions.find(parts, config.session_idle) {
            Ok(found) => found,
            Err(why) => return Some(lookup_error(probe, why)),
        };
        if !is_get {
            if let Some(ended) = self.inner.sessions.remove(session.id()) {
                ended.close();
            }
            probe.dismiss();
            return Some(plain(StatusCode::OK));
        }
        let wants_sse = parts
            .headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| {
                v.split(',').any(|m| {
                    let m = m.split(';').next().unwrap_or("").trim();
                    m.eq_ignore_ascii_case("text/event-stream") || m == "*/*"
                })
            });
        if !wants_sse {
            probe.rejected(StatusCode::NOT_ACCEPTABLE.as_u16(), None);
            return Some(http_error(
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: the GET stream is text/event-stream",
            ));
        }
        let last_event_id = parts
            .headers
            .get(LAST_EVENT_ID)
            .and_then(|v| v.to_str().ok());
        let guard = streams.open(&session, &self.inner.server, last_event_id);
        probe.dismiss();
        Some(sse_response(McpBody::session(guard, keep_alive(config))))
    }

    /// The answer to a request that is not a POST and that no session took: what the endpoint
    /// allows, and (when the answer is 405) the `Allow` header naming it.
    ///
    /// With sessions, `GET` (a session's notification stream) and `DELETE` (its end) are served
    /// to requests that name their session; without `Mcp-Session-Id` they get 400, as the
    /// 2025-11-25 transport asks of a server that requires a session id. A modern client (its
    /// `MCP-Protocol-Version` names a modern revision), or an endpoint without sessions, gets
    /// 405 with `Allow: POST`: the 2026-07-28 endpoint has no GET stream.
    pub(super) fn not_post(
        &self,
        parts: &http::request::Parts,
    ) -> (StatusCode, &'static str, Option<&'static str>) {
        let server = &self.inner.server;
        let modern = parts
            .headers
            .get(MCP_PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| server.supported_versions().contains(&v));
        let sessions = server.serves_legacy() && self.inner.config.legacy == LegacyMode::Sessions;
        if !sessions || modern {
            return (
                StatusCode::METHOD_NOT_ALLOWED,
                "this endpoint accepts only POST (no GET stream and no session to DELETE)",
                Some("POST"),
            );
        }
        if matches!(parts.method, http::Method::GET | http::Method::DELETE) {
            return (
                StatusCode::BAD_REQUEST,
                "Bad Request: GET (a session's notification stream) and DELETE (its end) need the \
                 Mcp-Session-Id header that initialize returned",
                None,
            );
        }
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "this endpoint accepts POST, and GET and DELETE with an Mcp-Session-Id",
            Some("GET, POST, DELETE"),
        )
    }

    /// A POSTed notification: handed to its session when it names one (`notifications/initialized`,
    /// `notifications/cancelled` of a legacy client), and accepted with 202.
    pub(super) fn notification(
        &self,
        probe: &mut RequestProbe,
        parts: &http::request::Parts,
        method: &Method<'_>,
        params: Option<&kelson_jsonrpc::RawValue>,
    ) -> Response<McpBody> {
        match self.session_of(parts) {
            Err(why) => return lookup_error(probe, why),
            Ok(Some(session)) => session.notification(method, params),
            Ok(None) => {}
        }
        probe.notification(method);
        plain(StatusCode::ACCEPTED)
    }

    /// A POSTed JSON-RPC response: a handshake-era client's answer to a server-to-client request,
    /// accepted with 202 as that era does. Anything else is refused.
    pub(super) fn response(
        &self,
        probe: &mut RequestProbe,
        parts: &http::request::Parts,
        response: &kelson_jsonrpc::Response<'_>,
    ) -> Response<McpBody> {
        let session = match self.session_of(parts) {
            Ok(session) => session,
            Err(why) => return lookup_error(probe, why),
        };
        let principal = parts
            .extensions
            .get::<Principal>()
            .cloned()
            .unwrap_or_default();
        if self
            .inner
            .server
            .deliver_response(response, session.as_ref(), &principal)
        {
            probe.dismiss();
            return plain(StatusCode::ACCEPTED);
        }
        probe.rejected(StatusCode::BAD_REQUEST.as_u16(), None);
        http_error(
            StatusCode::BAD_REQUEST,
            "a JSON-RPC response is accepted only as the answer to a request of this server",
        )
    }

    /// A request without the modern envelope.
    pub(super) async fn serve_legacy(
        &self,
        probe: &mut RequestProbe,
        parts: http::request::Parts,
        req: Prepared<'_>,
    ) -> Response<McpBody> {
        let config = &self.inner.config;
        let server = &self.inner.server;
        let version = parts
            .headers
            .get(MCP_PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok());
        // spec 2026-07-28 basic/versioning: `initialize` always starts the handshake era, whatever
        // version its header names: a dual-era host that spoke 2026-07-28 to this endpoint before,
        // or offers it (as ChatGPT's connectors may), may still send that header with its
        // handshake. Several peer SDKs had to fix answering such an `initialize` in the new era.
        if matches!(req.method, Method::Initialize) {
            return match server.legacy_initialize(&req) {
                Err(reply) => legacy_json(probe, reply),
                Ok((reply, session)) => {
                    probe.set_era(RequestEra::Legacy {
                        version: Some(session.version()),
                    });
                    let mut id = None;
                    if config.legacy == LegacyMode::Sessions {
                        let quota = Quota {
                            max: config.max_sessions,
                            per_caller: config.max_sessions_per_caller,
                            idle: config.session_idle,
                        };
                        let kept = if server.legacy_sessions_full() {
                            Err(Full::Endpoint)
                        } else {
                            self.inner.sessions.insert(
                                session.clone(),
                                owner_of(&parts),
                                caller_of(&parts),
                                quota,
                            )
                        };
                        if let Err(full) = kept {
                            return too_many_sessions(probe, &full);
                        }
                        id = HeaderValue::from_str(session.id()).ok();
                    }
                    let mut response = legacy_json(probe, reply);
                    if let Some(id) = id {
                        response.headers_mut().insert(MCP_SESSION_ID, id);
                    }
                    response
                }
            };
        }
        // A client that names the modern revision sent a modern request without its envelope.
        if let Some(v) = version
            && server.supported_versions().contains(&v)
        {
            probe.set_era(RequestEra::Modern);
            let reply = server.without_session(&req);
            probe.finish(reply.outcome);
            return super::json_reply(reply);
        }
        // spec 2025-06-18 streamable-http: an unsupported MCP-Protocol-Version is a 400; a
        // missing one is taken as 2025-03-26.
        if let Some(v) = version
            && !LEGACY_VERSIONS.contains(&v)
        {
            probe.rejected(StatusCode::BAD_REQUEST.as_u16(), None);
            return http_error(
                StatusCode::BAD_REQUEST,
                &format!(
                    "Bad Request: unsupported MCP-Protocol-Version {v:?} (supported: {}, {})",
                    server.supported_versions().join(", "),
                    LEGACY_VERSIONS.join(", ")
                ),
            );
        }
        let session = match config.legacy {
            LegacyMode::Sessions => {
                match self.inner.sessions.find(&parts, config.session_idle) {
                    Ok((session, _)) => session,
                    // Neither the modern envelope nor a session: the modern refusal of a request
                    // without `_meta` (400, -32602, with the id), which also tells a
                    // handshake-era client to initialize; `ping` may come before initialize.
                    Err(Lookup::Missing) => {
                        let reply = server.without_session(&req);
                        probe.finish(reply.outcome);
                        return super::json_reply(reply);
                    }
                    Err(why) => return lookup_error(probe, why),
                }
            }
            LegacyMode::Stateless => server.stateless_session(version),
        };
        let principal = parts
            .extensions
            .get::<Principal>()
            .cloned()
            .unwrap_or_default();
        Box::pin(self.run_legacy(session, req.into_owned(), principal, probe.take())).await
    }

    /// Runs a legacy request. Its handler is polled right here; if it finishes without a word
    /// before its answer, the answer is JSON. If it sends something first (progress, a log
    /// message, a request for input), the response becomes an SSE stream and the handler moves to
    /// a task of its own to finish it.
    async fn run_legacy(
        &self,
        session: LegacySession,
        req: Prepared<'static>,
        principal: Principal,
        mut probe: RequestProbe,
    ) -> Response<McpBody> {
        let config = &self.inner.config;
        let cancel = CancellationToken::new();
        let track = match session.track(&req.id, &cancel) {
            Ok(track) => track,
            Err(e) => {
                let mut body = Vec::with_capacity(128);
                kelson_jsonrpc::write_error(&mut body, Some(&req.id), &e);
                return legacy_json(
                    &mut probe,
                    ReplyMessage {
                        body,
                        outcome: Outcome::Error {
                            code: e.code,
                            rejected: false,
                        },
                    },
                );
            }
        };
        let (tx, mut rx) = mpsc::channel::<Event>(config.notification_buffer.max(1));
        let sink = Arc::new(LegacySink(tx.clone()));
        let server = self.inner.server.clone();
        let task_cancel = cancel.clone();
        let mut work = Box::pin(async move {
            let io = RequestIo {
                principal,
                cancel: task_cancel.clone(),
                sink: Some(sink),
                guard: None,
                close: None,
                probe: Some(&mut probe),
            };
            let reply = tokio::select! {
                biased;
                () = task_cancel.cancelled() => None,
                reply = server.legacy_dispatch(&session, req, io) => Some(reply),
            };
            drop(track);
            match reply {
                Some(Reply::Message(m)) => {
                    probe.finish(m.outcome);
                    Some((m, probe))
                }
                Some(Reply::Listen(_)) | None => {
                    probe.cancelled();
                    None
                }
            }
        });
        // If the client leaves before the answer, this future is dropped: cancel the handler.
        let armed = cancel.drop_guard();
        tokio::select! {
            biased;
            done = &mut work => {
                armed.disarm();
                match done {
                    Some((m, _)) => legacy_reply(m),
                    None => http_error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the request ended without a response",
                    ),
                }
            }
            first = rx.recv() => {
                let Some(first) = first else {
                    return http_error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the request ended without a response",
                    );
                };
                tokio::spawn(async move {
                    if let Some((m, _)) = work.await {
                        // The body may be gone already; then nobody is listening.
                        let _ = tx.send(Event::Final(m.body, m.outcome)).await;
                    }
                });
                sse_response(McpBody::events(first, rx, keep_alive(config), armed))
            }
        }
    }
}

/// The 503 for an `initialize` whose session cannot be kept.
fn too_many_sessions(probe: &mut RequestProbe, full: &Full) -> Response<McpBody> {
    probe.rejected(StatusCode::SERVICE_UNAVAILABLE.as_u16(), None);
    let message = match full {
        Full::Endpoint => "Service Unavailable: too many sessions; try again later",
        Full::Caller => {
            "Service Unavailable: this caller has as many sessions as one caller may, all in use; \
             end one (DELETE) or try again later"
        }
    };
    let mut response = http_error(StatusCode::SERVICE_UNAVAILABLE, message);
    response
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// Whose share of the sessions a request counts against: its principal when an auth layer
/// authenticated it, else the address it came from unless that is loopback (or unknown).
fn caller_of(parts: &http::request::Parts) -> Option<Arc<str>> {
    if let Some(principal) = parts.extensions.get::<Principal>()
        && !principal.is_anonymous()
    {
        return Some(Arc::from(format!("p:{}", principal.id())));
    }
    let ClientAddr(addr) = parts.extensions.get::<ClientAddr>()?;
    let ip = addr.ip().to_canonical();
    if ip.is_loopback() {
        return None;
    }
    let ip = match ip {
        // One host commonly holds a whole /64: count the prefix, not the address.
        std::net::IpAddr::V6(v6) => std::net::IpAddr::V6(std::net::Ipv6Addr::from(
            v6.to_bits() & !(u128::from(u64::MAX)),
        )),
        v4 => v4,
    };
    Some(Arc::from(format!("a:{ip}")))
}

/// Who a request comes from, as sessions record it: the principal an auth layer in front put in
/// its extensions, or the empty id of the anonymous caller.
fn owner_of(parts: &http::request::Parts) -> String {
    parts
        .extensions
        .get::<Principal>()
        .map(Principal::id)
        .unwrap_or_default()
}
