//! The request pipeline: decode -> check `_meta` -> route -> validate -> call -> encode.
//!
//! [`Server::prepare`] runs the transport-independent checks that come before a transport's own
//! (HTTP compares headers with the body between the two), and [`Server::dispatch`] runs the rest.
//! The order: JSON parse, JSON-RPC shape, `_meta`, [headers], protocol version, method, params,
//! [`Mcp-Param-*`], client capabilities. spec 2026-07-28 basic/transports/streamable-http fixes no
//! order; this one agrees with every case the official conformance suite pins (a missing `_meta`
//! key beats a header mismatch, which beats an unsupported version).

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;
use kelson_jsonrpc::{ErrorObject, Id, Message, Notification, RawValue};
use kelson_types::{JsonObject, RequestMeta};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::context::NotificationSink;
use crate::hub::ListenStream;
use crate::observe::{RequestEra, RequestProbe, Transport};
use crate::{Principal, Server};

/// A request whose envelope and `_meta` have been checked, ready for [`Server::dispatch`].
#[derive(Debug)]
pub struct Prepared<'a> {
    /// The request id.
    pub id: Id,
    /// The method name.
    pub method: Cow<'a, str>,
    /// The raw params object.
    pub params: Option<Cow<'a, RawValue>>,
    /// The decoded `_meta`, with both required keys present. Boxed: it is 520 bytes, and a request
    /// moves it through several nested futures into the handler's context.
    pub meta: Box<RequestMeta>,
    /// `params.name` (`tools/call`, `prompts/get`), `params.uri` (`resources/read`) or
    /// `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`): what HTTP's `Mcp-Name` header
    /// must equal. Read in the same pass as `_meta`.
    pub name: Option<Cow<'a, str>>,
    /// The MRTR params of `tools/call`, `prompts/get` and `resources/read` (and `tools/call`'s
    /// arguments), raw, read in that same pass so that the call does not decode the params (and
    /// skip over `_meta`) a second time.
    pub(crate) call: CallFields<'a>,
    /// A handshake-era request (it carries no modern `_meta`): served on a legacy session, whose
    /// negotiated version and capabilities fill in `meta` before dispatch.
    pub(crate) legacy: bool,
}

/// `arguments`, `inputResponses` and `requestState` as they arrived (a JSON `null` included).
#[derive(Debug, Default)]
pub(crate) struct CallFields<'a> {
    pub(crate) arguments: Option<Cow<'a, RawValue>>,
    pub(crate) input_responses: Option<Cow<'a, RawValue>>,
    pub(crate) request_state: Option<Cow<'a, RawValue>>,
}

impl CallFields<'_> {
    /// spec 2026-07-28 basic/patterns/mrtr: `inputResponses` is an object and `requestState` a
    /// string when present; `null` for either is a malformed retry (-32602), not "absent" (the
    /// server would silently ask again).
    pub(crate) fn refuse_nulls(&self) -> Result<(), ErrorObject> {
        for (name, value) in [
            ("inputResponses", &self.input_responses),
            ("requestState", &self.request_state),
        ] {
            if value.as_deref().is_some_and(|v| v.get().trim() == "null") {
                return Err(ErrorObject::invalid_params(format_args!(
                    "{name} must not be null: leave it out when there is nothing to send"
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn into_owned(self) -> CallFields<'static> {
        let own = |raw: Option<Cow<'_, RawValue>>| raw.map(|r| Cow::Owned(r.into_owned()));
        CallFields {
            arguments: own(self.arguments),
            input_responses: own(self.input_responses),
            request_state: own(self.request_state),
        }
    }
}

impl Prepared<'_> {
    /// Copies the borrowed parts so the request can outlive the buffer it was decoded from.
    pub fn into_owned(self) -> Prepared<'static> {
        Prepared {
            id: self.id,
            method: Cow::Owned(self.method.into_owned()),
            params: self.params.map(|p| Cow::Owned(p.into_owned())),
            meta: self.meta,
            name: self.name.map(|n| Cow::Owned(n.into_owned())),
            call: self.call.into_owned(),
            legacy: self.legacy,
        }
    }

    /// Whether this is a handshake-era request, to be served on a legacy session
    /// ([`Server::legacy_dispatch`]).
    pub fn is_legacy(&self) -> bool {
        self.legacy
    }

    /// Whether the request may get notifications before its result (it carries a `progressToken` or
    /// a `logLevel`), or is a listen stream. HTTP answers those with SSE and everything else with JSON.
    pub fn wants_stream(&self) -> bool {
        self.meta.progress_token.is_some()
            || self.meta.log_level.is_some()
            || self.method == "subscriptions/listen"
    }

    /// The protocol version the request names.
    pub fn protocol_version(&self) -> &str {
        self.meta.protocol_version.as_deref().unwrap_or_default()
    }
}

/// What [`Server::prepare`] made of one incoming message.
///
/// It is matched right away, once per message, so the size of `Prepared` costs nothing, while boxing
/// it would cost an allocation per request.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A request to dispatch.
    Request(Prepared<'a>),
    /// A request without the modern `_meta` envelope, from a handshake-era client: the transport
    /// serves it on the client's legacy session ([`Server::legacy_dispatch`]), starts one if it is
    /// `initialize` ([`Server::legacy_initialize`]), or refuses it without a session
    /// ([`Server::without_session`]). Only a server that serves both eras produces these.
    Legacy(Prepared<'a>),
    /// A notification; the server never answers these.
    Notification(Notification<'a>),
    /// A JSON-RPC response sent by the client: in 2026-07-28 clients never send one, but a
    /// handshake-era client answers the server's requests (elicitation, sampling, roots) this way.
    /// Hand it to [`Server::deliver_response`].
    Response(kelson_jsonrpc::Response<'a>),
    /// A message refused before dispatch; send this error.
    Rejected(ReplyMessage),
}

/// How a reply ended, for transports (HTTP maps it to a status) and for logs and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A normal result.
    Success,
    /// A `tools/call` result with `isError: true`.
    ToolError,
    /// An `input_required` result.
    InputRequired,
    /// A JSON-RPC error response.
    Error {
        /// The error code.
        code: i64,
        /// Whether the request was refused before any method ran (a malformed envelope or `_meta`).
        /// Over HTTP such a -32602 is a 400, while a -32602 from a method is answered in band.
        rejected: bool,
    },
}

/// One complete JSON-RPC response, encoded.
#[derive(Debug)]
pub struct ReplyMessage {
    /// The response, compact JSON without a trailing newline.
    pub body: Vec<u8>,
    /// How it ended.
    pub outcome: Outcome,
}

/// What [`Server::dispatch`] produced.
#[derive(Debug)]
pub enum Reply {
    /// The single response to the request.
    Message(ReplyMessage),
    /// A `subscriptions/listen` stream.
    Listen(ListenStream),
}

/// Checks a `tools/call` against transport-specific rules once the tool is known (HTTP uses this
/// for the `Mcp-Param-*` headers of spec 2026-07-28 basic/transports/streamable-http).
pub trait ToolCallGuard: Send + Sync {
    /// Returns the error to answer with, if the call must be refused.
    fn check(
        &self,
        param_headers: &[kelson_types::ParamHeader],
        arguments: Option<&JsonObject>,
    ) -> Result<(), ErrorObject>;
}

/// What the transport supplies for one request.
pub struct RequestIo<'a> {
    /// Who is calling.
    pub principal: Principal,
    /// Fired when the client cancels the request; handlers observe it.
    pub cancel: CancellationToken,
    /// Where progress and log notifications go; `None` drops them (an HTTP JSON response).
    pub sink: Option<Arc<dyn NotificationSink>>,
    /// Transport checks for `tools/call`.
    pub guard: Option<&'a dyn ToolCallGuard>,
    /// Ends listen streams gracefully (the transport closing); server shutdown always does. `None`
    /// costs nothing, which is what plain requests pass.
    pub close: Option<CancellationToken>,
    /// The request's probe ([`Server::probe`]): the router records what the request names in it,
    /// and hands it to the stream of an accepted `subscriptions/listen`. The transport ends it.
    pub probe: Option<&'a mut RequestProbe>,
}

impl std::fmt::Debug for RequestIo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestIo")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl RequestIo<'_> {
    /// I/O for an anonymous caller that wants no notifications, with a fresh cancellation token;
    /// listen streams end with `server`'s shutdown.
    pub fn plain(_server: &Server) -> RequestIo<'static> {
        RequestIo {
            principal: Principal::anonymous(),
            cancel: CancellationToken::new(),
            sink: None,
            guard: None,
            close: None,
            probe: None,
        }
    }

    /// The probe, if the transport supplied one.
    pub(crate) fn probe_mut(&mut self) -> Option<&mut RequestProbe> {
        self.probe.as_deref_mut()
    }
}

pub(crate) fn error_reply(id: Option<&Id>, error: &ErrorObject, rejected: bool) -> ReplyMessage {
    let mut body = Vec::with_capacity(96 + error.message.len());
    kelson_jsonrpc::write_error(&mut body, id, error);
    ReplyMessage {
        body,
        outcome: Outcome::Error {
            code: error.code,
            rejected,
        },
    }
}

#[derive(Deserialize)]
struct MetaProbe<'a> {
    /// Decoded in this pass, not captured and decoded again.
    #[serde(rename = "_meta", default, deserialize_with = "meta_field")]
    meta: Option<Box<RequestMeta>>,
    /// Only read for a legacy `initialize`, whose params carry the version at the top level.
    #[serde(borrow, rename = "protocolVersion", default)]
    protocol_version: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(borrow, rename = "taskId", default)]
    task_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_field")]
    arguments: Option<&'a RawValue>,
    #[serde(
        borrow,
        rename = "inputResponses",
        default,
        deserialize_with = "raw_field"
    )]
    input_responses: Option<&'a RawValue>,
    #[serde(
        borrow,
        rename = "requestState",
        default,
        deserialize_with = "raw_field"
    )]
    request_state: Option<&'a RawValue>,
}

/// serde_json's message without its trailing " at line L column C".
fn without_position(message: &str) -> &str {
    let Some(at) = message.rfind(" at line ") else {
        return message;
    };
    let rest = &message[at + " at line ".len()..];
    let positional = rest.split_once(" column ").is_some_and(|(line, column)| {
        !line.is_empty()
            && !column.is_empty()
            && line
                .bytes()
                .chain(column.bytes())
                .all(|b| b.is_ascii_digit())
    });
    if positional { &message[..at] } else { message }
}

/// A present field as it arrived, `null` included (an `Option<&RawValue>` would read `null` as
/// absent).
fn raw_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// `_meta`, decoded where it stands; `null` reads as absent. An error names `_meta` and keeps
/// serde's message without a second position (the outer decoder appends the position).
fn meta_field<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Box<RequestMeta>>, D::Error> {
    Option::<Box<RequestMeta>>::deserialize(d).map_err(|e| {
        let message = e.to_string();
        serde::de::Error::custom(format_args!("_meta: {}", without_position(&message)))
    })
}

/// Reads a JSON string, borrowing it when it has no escapes.
fn raw_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    if let Ok(s) = serde_json::from_str::<&str>(raw.get()) {
        return Some(Cow::Borrowed(s));
    }
    serde_json::from_str::<String>(raw.get())
        .ok()
        .map(Cow::Owned)
}

/// `params.name` (`tools/call`, `prompts/get`), `params.uri` (`resources/read`) or `params.taskId`
/// (the tasks extension's methods).
fn call_name<'a>(method: &str, probe: &MetaProbe<'a>) -> Option<Cow<'a, str>> {
    match method {
        "tools/call" | "prompts/get" => probe.name.and_then(raw_str),
        "resources/read" => probe.uri.and_then(raw_str),
        "tasks/get" | "tasks/update" | "tasks/cancel" => probe.task_id.and_then(raw_str),
        _ => None,
    }
}

/// The MRTR fields of the three methods that take them.
fn call_fields<'a>(method: &str, probe: &MetaProbe<'a>) -> CallFields<'a> {
    if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
        CallFields {
            arguments: probe.arguments.map(Cow::Borrowed),
            input_responses: probe.input_responses.map(Cow::Borrowed),
            request_state: probe.request_state.map(Cow::Borrowed),
        }
    } else {
        CallFields::default()
    }
}

impl Server {
    /// Decodes one message and checks its envelope and `_meta`.
    pub fn prepare<'a>(&self, bytes: &'a [u8]) -> Incoming<'a> {
        self.prepare_observed(bytes, &mut RequestProbe::disabled())
    }

    /// [`prepare`](Self::prepare), recording the request's id and method in `probe` as soon as
    /// they are read, so that a request refused here is reported with them.
    pub fn prepare_observed<'a>(
        &self,
        bytes: &'a [u8],
        observed: &mut RequestProbe,
    ) -> Incoming<'a> {
        let request = match kelson_jsonrpc::decode(bytes) {
            Err(e) => {
                if let Some(id) = &e.id {
                    observed.set_id(id);
                }
                return Incoming::Rejected(error_reply(e.id.as_ref(), &e.error, true));
            }
            Ok(Message::Notification(n)) => return Incoming::Notification(n),
            Ok(Message::Response(r)) => return Incoming::Response(r),
            Ok(Message::Request(r)) => r,
        };
        observed.set_request(&request.id, &request.method);
        let reject = |e: ErrorObject| Incoming::Rejected(error_reply(Some(&request.id), &e, true));

        let mut probe = match request.params {
            None => MetaProbe {
                meta: None,
                protocol_version: None,
                name: None,
                uri: None,
                task_id: None,
                arguments: None,
                input_responses: None,
                request_state: None,
            },
            Some(raw) => match serde_json::from_str::<MetaProbe<'_>>(raw.get()) {
                Ok(p) => p,
                Err(e) => return reject(ErrorObject::invalid_params(e)),
            },
        };
        let meta = probe.meta.take();
        let modern = meta.as_ref().is_some_and(|m| m.protocol_version.is_some());

        // A request without the modern envelope comes from a handshake-era client: a dual-era
        // server serves it on a legacy session (spec 2026-07-28 basic/versioning).
        if !modern && self.serves_legacy() {
            // Its session, which names the version, is the transport's to find.
            observed.set_era(RequestEra::Legacy { version: None });
            let name = call_name(&request.method, &probe);
            let call = call_fields(&request.method, &probe);
            return Incoming::Legacy(Prepared {
                id: request.id,
                method: request.method,
                params: request.params.map(Cow::Borrowed),
                meta: meta.unwrap_or_default(),
                name,
                call,
                legacy: true,
            });
        }

        // spec 2026-07-28 basic/versioning: a modern-only server SHOULD name the versions it
        // speaks in its error to a legacy `initialize`, so an old client learns why rather than
        // getting a bare -32602. The spec leaves the code open; -32022 with `supported` is ours.
        if request.method == "initialize" && !modern {
            let requested = probe
                .protocol_version
                .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
                .unwrap_or_default();
            return reject(ErrorObject::unsupported_protocol_version(
                self.supported_versions(),
                &requested,
            ));
        }

        // spec 2026-07-28 basic/index: params._meta with protocolVersion and clientCapabilities is
        // required on every request; clientInfo is not.
        let Some(meta) = meta else {
            let what = if request.params.is_none() {
                "missing params (every request needs params._meta)"
            } else {
                "missing params._meta"
            };
            return reject(ErrorObject::invalid_params(what));
        };
        let missing: Vec<&str> = [
            (
                meta.protocol_version.is_none(),
                kelson_types::meta_keys::PROTOCOL_VERSION,
            ),
            (
                meta.client_capabilities.is_none(),
                kelson_types::meta_keys::CLIENT_CAPABILITIES,
            ),
        ]
        .into_iter()
        .filter_map(|(absent, key)| absent.then_some(key))
        .collect();
        if !missing.is_empty() {
            return reject(ErrorObject::invalid_params(format_args!(
                "_meta is missing {}",
                missing.join(" and ")
            )));
        }

        let name = call_name(&request.method, &probe);
        let call = call_fields(&request.method, &probe);
        Incoming::Request(Prepared {
            id: request.id,
            method: request.method,
            params: request.params.map(Cow::Borrowed),
            meta,
            name,
            call,
            legacy: false,
        })
    }

    /// The checks that come before a method runs: the protocol version is supported (-32022) and
    /// the method exists and its capability is advertised (-32601). [`dispatch`](Self::dispatch) runs
    /// them too; a transport calls this first when it must know the outcome before it commits to a
    /// response format (HTTP answers these with 400 and 404 even when it would stream).
    pub fn precheck(&self, req: &Prepared<'_>) -> Option<ReplyMessage> {
        let version = req.protocol_version();
        // A legacy request's version was negotiated at `initialize`.
        if !req.legacy && !self.supported_versions().contains(&version) {
            let e = ErrorObject::unsupported_protocol_version(self.supported_versions(), version);
            return Some(error_reply(Some(&req.id), &e, true));
        }
        let registry = self.inner.registry.load();
        let known = match req.method.as_ref() {
            // Neither exists in the handshake era.
            "server/discover" | "subscriptions/listen" => !req.legacy,
            "tools/list" | "tools/call" => registry.has_tools(),
            "resources/list" | "resources/templates/list" | "resources/read" => {
                registry.has_resources()
            }
            "prompts/list" | "prompts/get" => registry.has_prompts(),
            "completion/complete" => registry.has_completions(),
            // The tasks extension (2026-07-28 only); tasks/result and tasks/list were removed.
            "tasks/get" | "tasks/update" | "tasks/cancel" => !req.legacy && registry.has_tasks(),
            _ => false,
        };
        if known {
            None
        } else {
            // Unknown and removed methods (initialize with modern _meta, ping, logging/setLevel,
            // resources/subscribe, resources/unsubscribe), and methods of capabilities this server
            // does not advertise: spec 2026-07-28 schema (`MethodNotFoundError`) and changelog.
            let e = ErrorObject::method_not_found(&req.method);
            Some(error_reply(Some(&req.id), &e, true))
        }
    }

    /// Serves a prepared request, in a span of its own ([`observe::trace`](crate::observe::trace))
    /// when a subscriber wants one.
    pub async fn dispatch(&self, req: Prepared<'_>, io: RequestIo<'_>) -> Reply {
        let span = crate::observe::trace::request_span(&req);
        if span.is_disabled() {
            return self.dispatch_here(req, io).await;
        }
        let reply =
            tracing::Instrument::instrument(self.dispatch_here(req, io), span.clone()).await;
        if let Reply::Message(m) = &reply {
            crate::observe::trace::record_outcome(&span, m.outcome);
        }
        reply
    }

    async fn dispatch_here(&self, req: Prepared<'_>, mut io: RequestIo<'_>) -> Reply {
        if let Some(probe) = io.probe_mut() {
            probe.set_request(&req.id, &req.method);
            probe.capture_arguments(&req.method, req.params.as_deref());
        }
        if let Some(reply) = self.precheck(&req) {
            return Reply::Message(reply);
        }
        let registry = self.inner.registry.load_full();
        let method = req.method.as_ref();
        let routed = match method {
            "server/discover" => Some(self.discover(&req, &registry)),
            "tools/list" if registry.has_tools() => {
                Some(self.list_tools(&req, &registry, &io.principal))
            }
            "resources/list" if registry.has_resources() => {
                Some(self.list_resources(&req, &registry, &io.principal))
            }
            "resources/templates/list" if registry.has_resources() => {
                Some(self.list_templates(&req, &registry, &io.principal))
            }
            "prompts/list" if registry.has_prompts() => {
                Some(self.list_prompts(&req, &registry, &io.principal))
            }
            _ => None,
        };
        if let Some(reply) = routed {
            return Reply::Message(reply);
        }
        match method {
            "tools/call" if registry.has_tools() => {
                Reply::Message(self.call_tool(req, &registry, io).await)
            }
            "resources/read" if registry.has_resources() => {
                Reply::Message(self.read_resource(req, &registry, io).await)
            }
            "prompts/get" if registry.has_prompts() => {
                Reply::Message(self.get_prompt(req, &registry, io).await)
            }
            "completion/complete" if registry.has_completions() => {
                Reply::Message(self.complete(req, &registry, io).await)
            }
            "subscriptions/listen" => self.listen(req, &registry, io).await,
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                // The extension is declared per request; without it, even an unknown task id is
                // answered with -32021 (checked before the params).
                let declared = req
                    .meta
                    .client_capabilities
                    .as_ref()
                    .is_some_and(|c| c.supports_extension(kelson_types::TASKS_EXTENSION));
                if declared {
                    Reply::Message(self.task_method(req, io).await)
                } else {
                    let e = crate::tasks::undeclared(&req.method);
                    Reply::Message(error_reply(Some(&req.id), &e, false))
                }
            }
            // The registry changed between the precheck and here.
            other => Reply::Message(error_reply(
                Some(&req.id),
                &ErrorObject::method_not_found(other),
                true,
            )),
        }
    }

    /// Prepares and dispatches one message; `None` for messages that get no reply (notifications,
    /// responses). A convenience for transports without checks of their own, and for tests.
    ///
    /// Without a probe in `io`, observers see the message as [`Transport::InProcess`].
    pub async fn handle(&self, bytes: &[u8], mut io: RequestIo<'_>) -> Option<Reply> {
        let mut own;
        let probe = match io.probe.take() {
            Some(probe) => probe,
            None => {
                own = self.probe(Transport::InProcess);
                &mut own
            }
        };
        match self.prepare_observed(bytes, probe) {
            Incoming::Request(req) => {
                let reply = self
                    .dispatch(
                        req,
                        RequestIo {
                            probe: Some(&mut *probe),
                            ..io
                        },
                    )
                    .await;
                if let Reply::Message(m) = &reply {
                    probe.finish(m.outcome);
                }
                Some(reply)
            }
            Incoming::Rejected(reply) => {
                probe.finish(reply.outcome);
                Some(Reply::Message(reply))
            }
            Incoming::Notification(n) => {
                probe.notification(&n.method);
                None
            }
            Incoming::Legacy(req) => {
                // Without a session (this convenience keeps none), a legacy request is refused as
                // a modern one without its envelope would be.
                let reply = self.without_session(&req);
                probe.finish(reply.outcome);
                Some(Reply::Message(reply))
            }
            Incoming::Response(response) => {
                probe.dismiss();
                self.deliver_response(&response, None, &io.principal);
                None
            }
        }
    }

    /// Runs a handler future, turning a panic into -32603 for this request only.
    /// Runs a handler for `ctx`'s request: a panic becomes -32603 for that request only, and a
    /// handler still running after [`ServerConfig::handler_timeout`] is stopped (its context's
    /// cancellation fires, for work it spawned, and its future is dropped) and answered with
    /// `deadline`'s error: `Ok(Err(e))` lets a tool answer with a tool error instead.
    ///
    /// [`ServerConfig::handler_timeout`]: crate::ServerConfig::handler_timeout
    pub(crate) async fn run_handler<T>(
        &self,
        stop: Option<tokio_util::sync::CancellationToken>,
        fut: impl std::future::Future<Output = T> + Send,
        what: &str,
    ) -> Result<T, Stopped> {
        let Some(limit) = self.inner.config.handler_timeout else {
            return Self::guarded(fut, what).await.map_err(Stopped::Failed);
        };
        match tokio::time::timeout(limit, Self::guarded(fut, what)).await {
            Ok(done) => done.map_err(Stopped::Failed),
            Err(_) => {
                if let Some(stop) = stop {
                    stop.cancel();
                }
                tracing::warn!(handler = what, limit = ?limit, "handler stopped at its deadline");
                Err(Stopped::Deadline(limit))
            }
        }
    }

    pub(crate) async fn guarded<T>(
        fut: impl std::future::Future<Output = T> + Send,
        what: &str,
    ) -> Result<T, ErrorObject> {
        match AssertUnwindSafe(fut).catch_unwind().await {
            Ok(v) => Ok(v),
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned());
                tracing::error!(handler = what, panic = %msg, "handler panicked");
                Err(ErrorObject::internal_error(format_args!(
                    "the {what} handler failed"
                )))
            }
        }
    }
}

/// A duration in words: `1500 ms`, `30 s`, `2 min`.
pub(crate) fn human(d: std::time::Duration) -> String {
    match d.as_millis() {
        ms if ms < 10_000 && ms % 1000 != 0 => format!("{ms} ms"),
        ms if ms < 120_000 || ms % 60_000 != 0 => format!("{} s", d.as_secs()),
        ms => format!("{} min", ms / 60_000),
    }
}

/// Why a handler gave no answer of its own.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// It panicked: -32603.
    Failed(ErrorObject),
    /// It ran past the handler deadline and was stopped.
    Deadline(std::time::Duration),
}

impl Stopped {
    /// The JSON-RPC error for a method without a softer way to say it (tools answer a deadline
    /// with a tool error instead).
    pub(crate) fn into_error(self, what: &str) -> ErrorObject {
        match self {
            Stopped::Failed(e) => e,
            Stopped::Deadline(limit) => ErrorObject::internal_error(format_args!(
                "the {what} handler did not finish within {} and was stopped",
                crate::router::human(limit)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The MRTR fields `prepare` captured from a `tools/call` with these params.
    fn refuse_nulls(params: &str) -> Result<(), ErrorObject> {
        let server = Server::builder("t", "1").build().expect("builds");
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let params = format!("{{{meta},{}", &params[1..]);
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
        match server.prepare(body.as_bytes()) {
            Incoming::Request(p) => p.call.refuse_nulls(),
            _ => panic!("not a request: {body}"),
        }
    }

    #[test]
    fn null_mrtr_fields_are_invalid_params() {
        for body in [
            r#"{"name":"t","inputResponses":null}"#,
            r#"{"name":"t","requestState": null }"#,
        ] {
            let e = refuse_nulls(body).expect_err(body);
            assert_eq!(e.code, -32602, "{body}");
            assert!(e.message.contains("must not be null"), "{}", e.message);
        }
    }

    #[test]
    fn absent_fields_and_nulls_elsewhere_pass() {
        for body in [
            r#"{"name":"t"}"#,
            r#"{"name":"t","arguments":{"x":null}}"#,
            r#"{"name":"t","inputResponses":{"k":{"action":"decline"}},"requestState":"s"}"#,
        ] {
            refuse_nulls(body).expect(body);
        }
        assert!(CallFields::default().refuse_nulls().is_ok(), "no params");
    }

    #[test]
    fn positions_are_stripped_only_when_they_are_positions() {
        assert_eq!(
            without_position("invalid type: map, expected a string at line 1 column 42"),
            "invalid type: map, expected a string"
        );
        assert_eq!(without_position("no position here"), "no position here");
        assert_eq!(
            without_position("a value at line seven column 3"),
            "a value at line seven column 3"
        );
    }
}
