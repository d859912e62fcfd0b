//! What the router makes of an incoming message: [`Incoming`], a [`Prepared`] request, and the
//! [`Checked`] one that [`Server::dispatch`](crate::Server::dispatch) takes.

use std::borrow::Cow;
use std::sync::Arc;

use kelson_jsonrpc::{ErrorObject, Id, RawValue};
use kelson_types::{Method, RequestMeta};

use super::reply::ReplyMessage;
use crate::registry::Registry;

/// A request whose envelope and `_meta` have been checked, ready for
/// [`Server::check`](crate::Server::check).
#[derive(Debug)]
pub struct Prepared<'a> {
    /// The request id.
    pub id: Id,
    /// The method, parsed once from the message.
    pub method: Method<'a>,
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
            method: self.method.into_owned(),
            params: self.params.map(|p| Cow::Owned(p.into_owned())),
            meta: self.meta,
            name: self.name.map(|n| Cow::Owned(n.into_owned())),
            call: self.call.into_owned(),
            legacy: self.legacy,
        }
    }

    /// Whether this is a handshake-era request, to be served on a legacy session
    /// ([`Server::legacy_dispatch`](crate::Server::legacy_dispatch)).
    pub fn is_legacy(&self) -> bool {
        self.legacy
    }

    /// Whether the request may get notifications before its result (it carries a `progressToken` or
    /// a `logLevel`), or is a listen stream. HTTP answers those with SSE and everything else with JSON.
    pub fn wants_stream(&self) -> bool {
        self.meta.progress_token.is_some()
            || self.meta.log_level.is_some()
            || matches!(self.method, Method::SubscriptionsListen)
    }

    /// The protocol version the request names.
    pub fn protocol_version(&self) -> &str {
        self.meta.protocol_version.as_deref().unwrap_or_default()
    }
}

/// A request that passed [`Server::check`](crate::Server::check): its protocol version is one the
/// server speaks and its method one the server serves. [`Server::dispatch`](crate::Server::dispatch)
/// takes only this, and checks nothing again.
///
/// It reads as the [`Prepared`] request it wraps, and keeps the generation of the registry it was
/// checked against, which the dispatch then serves it from.
pub struct Checked<'a> {
    pub(crate) req: Prepared<'a>,
    pub(crate) registry: Arc<Registry>,
}

impl<'a> Checked<'a> {
    /// Copies the borrowed parts so the request can outlive the buffer it was decoded from.
    pub fn into_owned(self) -> Checked<'static> {
        Checked {
            req: self.req.into_owned(),
            registry: self.registry,
        }
    }

    /// The request, unchecked again.
    pub fn into_inner(self) -> Prepared<'a> {
        self.req
    }
}

impl<'a> std::ops::Deref for Checked<'a> {
    type Target = Prepared<'a>;

    fn deref(&self) -> &Prepared<'a> {
        &self.req
    }
}

impl std::fmt::Debug for Checked<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Checked").field(&self.req).finish()
    }
}

/// A notification from the client, its method parsed.
#[derive(Debug)]
pub struct IncomingNotification<'a> {
    /// The method.
    pub method: Method<'a>,
    /// The raw params, if any.
    pub params: Option<&'a RawValue>,
}

/// What [`Server::prepare`](crate::Server::prepare) made of one incoming message.
///
/// It is matched right away, once per message, so the size of `Prepared` costs nothing, while boxing
/// it would cost an allocation per request.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A request to check ([`Server::check`](crate::Server::check)) and dispatch.
    Request(Prepared<'a>),
    /// A request without the modern `_meta` envelope, from a handshake-era client: the transport
    /// serves it on the client's legacy session
    /// ([`Server::legacy_dispatch`](crate::Server::legacy_dispatch)), starts one if it is
    /// `initialize` ([`Server::legacy_initialize`](crate::Server::legacy_initialize)), or refuses
    /// it without a session ([`Server::without_session`](crate::Server::without_session)). Only a
    /// server that serves both eras produces these.
    Legacy(Prepared<'a>),
    /// A notification; the server never answers these.
    Notification(IncomingNotification<'a>),
    /// A JSON-RPC response sent by the client: in 2026-07-28 clients never send one, but a
    /// handshake-era client answers the server's requests (elicitation, sampling, roots) this way.
    /// Hand it to [`Server::deliver_response`](crate::Server::deliver_response).
    Response(kelson_jsonrpc::Response<'a>),
    /// A message refused before dispatch; send this error.
    Rejected(ReplyMessage),
}
