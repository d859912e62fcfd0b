//! The handshake era (2025-03-26 to 2025-11-25), served from the same registry.
//!
//! spec 2026-07-28 [basic/versioning][spec]: a dual-era server serves requests with the modern
//! `_meta` envelope statelessly, and an `initialize` starts legacy semantics scoped to the stdio
//! process or the HTTP session. This module is that legacy side, written once for every transport:
//!
//! - [`Server::legacy_initialize`] negotiates the version (always down to a legacy one, even when
//!   the client offers 2026-07-28) and makes a [`LegacySession`] that remembers what the handshake
//!   settled: the version, the client's capabilities and identity, the log level set by
//!   `logging/setLevel`, and the resources subscribed to.
//! - [`Server::legacy_dispatch`] serves one request of a session: the methods that exist only in
//!   that era (`ping`, `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`) here,
//!   everything else through the modern router with `_meta` filled in from the session, so
//!   handlers never ask which era they are in. Results lose `resultType`, which the era does not
//!   have, and an `input_required` answer becomes real server-to-client requests (see
//!   [`bridge`]).
//! - [`LegacySession::notifications`] is the session's stream of change notifications
//!   (`list_changed` and `resources/updated` for its subscriptions), without the
//!   `subscriptionId` of modern listen streams.
//!
//! [spec]: https://modelcontextprotocol.io/specification/2026-07-28/basic/versioning

mod bridge;
mod eras;
mod events;
mod limits;
mod outbound;
mod subscribe;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kelson_jsonrpc::{ErrorObject, Id, RawValue};
use kelson_types::{ClientCapabilities, Implementation, LoggingLevel, Method};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

pub use eras::{Eras, LEGACY_VERSIONS};
pub use events::LegacyNotifications;
pub(crate) use limits::Kept;
pub use limits::{DECLARATION_FACTOR, SessionLimits, URI_OVERHEAD};
pub(crate) use outbound::Outbound;

use crate::observe::RequestEra;
use crate::router::{Outcome, Prepared, Reply, ReplyMessage, RequestIo, error_reply};
use crate::{Principal, Server};

/// What one `initialize` settled, for the requests that follow it on the same stdio process or
/// HTTP session. Cloning is cheap: every clone is the same session.
#[derive(Clone)]
pub struct LegacySession {
    inner: Arc<SessionState>,
}

struct SessionState {
    /// Unguessable: on HTTP this is the `Mcp-Session-Id`.
    id: String,
    version: &'static str,
    /// Shared with every request of the session, which stands them in for its `_meta`.
    capabilities: Arc<ClientCapabilities>,
    client_info: Option<Arc<Implementation>>,
    log_level: Mutex<Option<LoggingLevel>>,
    subscriptions: Mutex<BTreeSet<String>>,
    /// The bytes this session keeps of what its client sent, counted against the server's
    /// [`SessionLimits::memory`]; given back when the session is dropped.
    charge: Option<limits::Charge>,
    /// Who subscribed: the updates of resources below a subscribed URI are checked against it.
    /// On HTTP a session serves only the principal that opened it.
    subscriber: Mutex<Principal>,
    initialized: AtomicBool,
    /// Requests of this session in flight, for `notifications/cancelled` on transports where it
    /// arrives apart from its request (HTTP).
    in_flight: Mutex<HashMap<Id, CancellationToken>>,
    /// Fired when the session ends: its notification streams end and its requests are cancelled.
    closed: CancellationToken,
    /// Made for one request of a client served without sessions: answers to its server-to-client
    /// requests may come on any later request (none names a session).
    stateless: bool,
}

impl std::fmt::Debug for LegacySession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySession")
            .field("version", &self.inner.version)
            .field("client", &self.inner.client_info.as_ref().map(|i| &i.name))
            .finish_non_exhaustive()
    }
}

impl LegacySession {
    /// The session id: 128 random bits, hex. HTTP sends it as `Mcp-Session-Id`.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The revision `initialize` settled on.
    pub fn version(&self) -> &'static str {
        self.inner.version
    }

    /// The capabilities the client declared at `initialize`.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// The client's self-reported identity.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.client_info.as_deref()
    }

    /// What this session is charged for keeping what its client sent: its declarations and its
    /// subscriptions, estimated as [`SessionLimits::memory`] describes.
    pub fn kept_bytes(&self) -> usize {
        self.inner.charge.as_ref().map_or(0, limits::Charge::bytes)
    }

    /// Whether the client has sent `notifications/initialized`.
    pub fn is_initialized(&self) -> bool {
        self.inner.initialized.load(Ordering::Relaxed)
    }

    /// Takes a notification the client sent on this session: `notifications/initialized`, and
    /// `notifications/cancelled` for a request of the session still in flight. Others are ignored.
    pub fn notification(&self, method: &Method<'_>, params: Option<&RawValue>) {
        match method {
            Method::Initialized => self.inner.initialized.store(true, Ordering::Relaxed),
            Method::Cancelled => {
                #[derive(Deserialize)]
                struct Cancel {
                    #[serde(rename = "requestId")]
                    request_id: Option<Id>,
                }
                if let Some(Ok(Cancel {
                    request_id: Some(id),
                })) = params.map(|p| serde_json::from_str::<Cancel>(p.get()))
                    && let Some(token) = self.in_flight().get(&id)
                {
                    token.cancel();
                }
            }
            _ => {}
        }
    }

    /// Registers a request in flight so that `notifications/cancelled` reaches it; the guard
    /// unregisters it. A duplicate id in flight is refused with the error to answer.
    pub fn track(&self, id: &Id, cancel: &CancellationToken) -> Result<TrackGuard, ErrorObject> {
        let mut in_flight = self.in_flight();
        if in_flight.contains_key(id) {
            return Err(ErrorObject::invalid_request(format_args!(
                "id {id} is already used by a request in flight"
            )));
        }
        in_flight.insert(id.clone(), cancel.clone());
        Ok(TrackGuard {
            session: self.clone(),
            id: id.clone(),
        })
    }

    /// Ends the session: its notification streams end and its requests in flight are cancelled.
    pub fn close(&self) {
        self.inner.closed.cancel();
        for token in self.in_flight().values() {
            token.cancel();
        }
    }

    /// How many of the session's requests are in flight (tracked with [`track`](Self::track)).
    pub fn requests_in_flight(&self) -> usize {
        self.in_flight().len()
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<Id, CancellationToken>> {
        self.inner.in_flight.lock().expect("in-flight lock")
    }

    fn log_level(&self) -> Option<LoggingLevel> {
        *self.inner.log_level.lock().expect("log level lock")
    }

    /// Whether the subscriber may read `uri` (a resource below a subscribed URI may need scopes
    /// the subscribed one did not).
    fn may_read(&self, registry: &crate::registry::Registry, uri: &str) -> bool {
        let subscriber = self.inner.subscriber.lock().expect("subscriber");
        registry.may_read(uri, &subscriber)
    }

    fn subscribed_to(&self, uri: &str) -> bool {
        let subs = self.inner.subscriptions.lock().expect("subscriptions lock");
        // As for listen streams: an update may name a resource below a subscribed URI.
        subs.iter().any(|s| {
            uri == s
                || (uri.starts_with(s.as_str())
                    && (s.ends_with('/') || uri[s.len()..].starts_with('/')))
        })
    }
}

/// Unregisters a request of a session when it ends.
#[derive(Debug)]
pub struct TrackGuard {
    session: LegacySession,
    id: Id,
}

impl Drop for TrackGuard {
    fn drop(&mut self) {
        self.session.in_flight().remove(&self.id);
    }
}

/// `initialize` params, as far as the server uses them; the declarations are measured before
/// they are read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams<'a> {
    protocol_version: String,
    #[serde(default, borrow)]
    capabilities: Option<&'a RawValue>,
    #[serde(default, borrow)]
    client_info: Option<&'a RawValue>,
}

/// Reads `clientInfo`, which a session keeps for logs and handlers: one larger than `limit` bytes
/// of JSON is kept without its `icons` (a server never shows them, and an icon as a `data:` URI is
/// what makes an identity large); one still larger is refused with -32602.
fn client_info(
    raw: Option<&RawValue>,
    limit: usize,
) -> Result<(Option<Implementation>, usize), ErrorObject> {
    let Some(raw) = raw.filter(|r| r.get() != "null") else {
        return Ok((None, 0));
    };
    if raw.get().len() <= limit {
        return declaration(Some(raw), "clientInfo", limit);
    }
    let mut info = crate::methods::decode::<Implementation>(Some(raw)).map_err(|e| {
        ErrorObject::invalid_params(format_args!("params.clientInfo: {}", e.message))
    })?;
    info.icons = None;
    let len = serde_json::to_string(&info).map_or(usize::MAX, |text| text.len());
    if len > limit {
        return Err(ErrorObject::invalid_params(format_args!(
            "initialize: params.clientInfo is {} bytes of JSON ({len} without its icons); a session keeps at most {limit}",
            raw.get().len()
        )));
    }
    Ok((Some(info), len))
}

/// Reads one declaration of `initialize` that a session keeps, refusing one larger than `limit`
/// bytes of JSON with -32602.
fn declaration<T: serde::de::DeserializeOwned>(
    raw: Option<&RawValue>,
    name: &str,
    limit: usize,
) -> Result<(Option<T>, usize), ErrorObject> {
    let Some(raw) = raw.filter(|r| r.get() != "null") else {
        return Ok((None, 0));
    };
    let len = raw.get().len();
    if len > limit {
        return Err(ErrorObject::invalid_params(format_args!(
            "initialize: params.{name} is {len} bytes of JSON; a session keeps at most {limit}"
        )));
    }
    let value = crate::methods::decode::<T>(Some(raw))
        .map_err(|e| ErrorObject::invalid_params(format_args!("params.{name}: {}", e.message)))?;
    Ok((Some(value), len))
}

/// A fresh session id: 128 bits from the operating system's CSPRNG, as 32 hex digits (visible
/// ASCII, as the transport requires of `Mcp-Session-Id`).
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Server {
    /// Whether this server answers handshake-era clients ([`Eras::Both`]).
    pub fn serves_legacy(&self) -> bool {
        self.inner.config.eras == Eras::Both
    }

    /// Answers `initialize` and starts the session it opens; an `initialize` that cannot be read
    /// gets its error instead.
    ///
    /// spec 2026-07-28 basic/versioning: `initialize` always starts the handshake era, even when it
    /// offers 2026-07-28, as hosts such as ChatGPT's connectors may (rmcp, the Go SDK and the C#
    /// SDK each had to fix answering it in the new era); the answer is the version asked for when
    /// it is one of [`LEGACY_VERSIONS`], else the newest of them.
    pub fn legacy_initialize(
        &self,
        req: &Prepared<'_>,
    ) -> Result<(ReplyMessage, LegacySession), ReplyMessage> {
        let params: InitializeParams<'_> =
            crate::methods::params(req).map_err(|e| error_reply(Some(&req.id), &e, false))?;
        let bounds = &self.inner.config.sessions;
        let read = || -> Result<_, ErrorObject> {
            let (capabilities, a) = declaration::<ClientCapabilities>(
                params.capabilities,
                "capabilities",
                bounds.capabilities,
            )?;
            let (client_info, b) = client_info(params.client_info, bounds.client_info)?;
            Ok((capabilities.unwrap_or_default(), client_info, a + b))
        };
        let (capabilities, client_info, declared) =
            read().map_err(|e| error_reply(Some(&req.id), &e, false))?;
        let version = LEGACY_VERSIONS
            .iter()
            .copied()
            .find(|v| *v == params.protocol_version)
            .unwrap_or(LEGACY_VERSIONS[0]);
        let registry = self.inner.registry.load();
        let mut result = Map::new();
        result.insert("protocolVersion".into(), version.into());
        result.insert(
            "capabilities".into(),
            serde_json::to_value(self.capabilities(&registry)).unwrap_or_else(|_| json!({})),
        );
        result.insert(
            "serverInfo".into(),
            serde_json::to_value(&self.inner.info).unwrap_or_else(|_| json!({})),
        );
        if let Some(instructions) = &self.inner.instructions {
            result.insert("instructions".into(), instructions.clone().into());
        }
        let reply = self.result_reply(&req.id, &result, Outcome::Success);
        let session = LegacySession {
            inner: Arc::new(SessionState {
                id: session_id(),
                version,
                capabilities: Arc::new(capabilities),
                client_info: client_info.map(Arc::new),
                log_level: Mutex::new(None),
                subscriptions: Mutex::new(BTreeSet::new()),
                charge: Some(limits::Charge::new(
                    self.inner.kept.clone(),
                    limits::declaration_charge(declared),
                )),
                subscriber: Mutex::new(Principal::anonymous()),
                initialized: AtomicBool::new(false),
                in_flight: Mutex::new(HashMap::new()),
                closed: CancellationToken::new(),
                stateless: false,
            }),
        };
        Ok((reply, session))
    }

    /// A session for one request of a handshake-era client served without sessions (stateless
    /// HTTP behind a load balancer): the version its `MCP-Protocol-Version` header names (the era's
    /// rule: 2025-03-26 when absent), and, since no `initialize` was seen, the capabilities of a
    /// current host (form elicitation, sampling, roots). A client without one of them answers the
    /// server's request with an error, which the request that needed it reports.
    pub fn stateless_session(&self, version: Option<&str>) -> LegacySession {
        let version = version
            .and_then(|v| LEGACY_VERSIONS.iter().copied().find(|known| *known == v))
            .unwrap_or("2025-03-26");
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {}, "sampling": {}, "roots": {}}))
                .unwrap_or_default();
        LegacySession {
            inner: Arc::new(SessionState {
                id: session_id(),
                version,
                capabilities: Arc::new(capabilities),
                client_info: None,
                log_level: Mutex::new(None),
                subscriptions: Mutex::new(BTreeSet::new()),
                // One request's session keeps nothing past its request.
                charge: None,
                subscriber: Mutex::new(Principal::anonymous()),
                initialized: AtomicBool::new(true),
                in_flight: Mutex::new(HashMap::new()),
                closed: CancellationToken::new(),
                stateless: true,
            }),
        }
    }

    /// The answer to a handshake-era request that arrives with no session to serve it on: `ping`
    /// is answered (the era allows it before `initialize`), and anything else is refused as a
    /// modern request without its `_meta` envelope would be (-32602), since that is what it is to
    /// a server that has no session for it.
    pub fn without_session(&self, req: &Prepared<'_>) -> ReplyMessage {
        if matches!(req.method, Method::Ping) {
            return self.result_reply(&req.id, &json!({}), Outcome::Success);
        }
        let what = if req.params.is_none() {
            "missing params (every request needs params._meta; a handshake-era client starts with initialize)".to_owned()
        } else if req.params.as_deref().is_some_and(has_meta) {
            format!(
                "_meta is missing {}",
                kelson_types::meta_keys::PROTOCOL_VERSION
            )
        } else {
            "missing params._meta (a handshake-era client starts with initialize)".to_owned()
        };
        error_reply(Some(&req.id), &ErrorObject::invalid_params(what), true)
    }

    /// Serves one request of a legacy session (never `initialize`, which starts a session).
    ///
    /// `io.sink` carries the request's notifications and, when a handler needs input, the
    /// server-to-client requests that ask for it; without a sink such a request fails with an
    /// error that says so.
    pub async fn legacy_dispatch(
        &self,
        session: &LegacySession,
        mut req: Prepared<'_>,
        mut io: RequestIo<'_>,
    ) -> Reply {
        if let Some(probe) = io.probe_mut() {
            probe.set_era(RequestEra::Legacy {
                version: Some(session.version()),
            });
        }
        let id = req.id.clone();
        let empty = |server: &Server| {
            Reply::Message(server.result_reply(&id, &json!({}), Outcome::Success))
        };
        match req.method {
            Method::Ping => return empty(self),
            Method::Initialize => {
                let e = ErrorObject::invalid_request("the session is already initialized");
                return Reply::Message(error_reply(Some(&id), &e, false));
            }
            Method::SetLevel => {
                #[derive(Deserialize)]
                struct SetLevel {
                    level: LoggingLevel,
                }
                return match crate::methods::params::<SetLevel>(&req) {
                    Ok(p) => {
                        *session.inner.log_level.lock().expect("log level lock") = Some(p.level);
                        empty(self)
                    }
                    Err(e) => Reply::Message(error_reply(Some(&id), &e, false)),
                };
            }
            Method::Subscribe | Method::Unsubscribe => {
                if !self.inner.registry.load().has_resources() {
                    let e = ErrorObject::method_not_found(req.method.as_str());
                    return Reply::Message(error_reply(Some(&id), &e, false));
                }
                #[derive(Deserialize)]
                struct Subscribe {
                    uri: String,
                }
                return match crate::methods::params::<Subscribe>(&req) {
                    Ok(p) if matches!(req.method, Method::Subscribe) => {
                        Reply::Message(self.subscribe(session, &id, p.uri, &io.principal))
                    }
                    Ok(p) => {
                        session.unsubscribe(&p.uri);
                        empty(self)
                    }
                    Err(e) => Reply::Message(error_reply(Some(&id), &e, false)),
                };
            }
            _ => {}
        }
        // What the handshake settled stands in for the modern per-request envelope.
        req.meta.protocol_version = Some(session.inner.version.to_owned());
        req.meta.client_capabilities = Some(Arc::clone(&session.inner.capabilities));
        req.meta.client_info = session.inner.client_info.clone();
        req.meta.log_level = session.log_level();
        req.legacy = true;
        match self.bridged(session, req, io).await {
            Reply::Message(mut m) => {
                if matches!(m.outcome, Outcome::Success | Outcome::ToolError) {
                    m.body = without_result_type(m.body);
                }
                Reply::Message(m)
            }
            listen @ Reply::Listen(_) => listen,
        }
    }
}

/// Whether a params object has a `_meta` member.
fn has_meta(params: &RawValue) -> bool {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a RawValue>,
    }
    serde_json::from_str::<Probe<'_>>(params.get()).is_ok_and(|p| p.meta.is_some())
}

/// A result as the handshake era writes it: without `resultType`.
///
/// The result types of this crate encode `resultType` first, so it is cut out of the encoded bytes
/// where it stands (a quote inside a JSON string is always escaped, so the pattern cannot match
/// inside one); anything else is decoded and encoded again.
pub(crate) fn without_result_type(mut body: Vec<u8>) -> Vec<u8> {
    const FIELD: &[u8] = br#""result":{"resultType":"complete""#;
    if let Some(at) = find(&body, FIELD) {
        let start = at + br#""result":{"#.len();
        let mut end = at + FIELD.len();
        if body.get(end) == Some(&b',') {
            end += 1;
        }
        body.drain(start..end);
        return body;
    }
    if find(&body, br#""resultType""#).is_none() {
        return body;
    }
    let Ok(mut message) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    if let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) {
        result.remove("resultType");
    }
    serde_json::to_vec(&message).unwrap_or(body)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests;
