//! Multi round-trip requests (spec 2026-07-28 [basic/patterns/mrtr][spec]), server side.
//!
//! A handler asks for input through its [`RequestContext`](crate::RequestContext); the runtime answers
//! `input_required` with the input requests and a sealed `requestState`. When the client retries with
//! `inputResponses` and the state, the runtime verifies the state, keeps only the answers to what was
//! asked, and runs the handler again with every answer gathered so far.
//!
//! [spec]: https://modelcontextprotocol.io/specification/2026-07-28/basic/patterns/mrtr

mod state;

use kelson_jsonrpc::{ErrorObject, Id, RawValue};
use kelson_types::{
    InputRequiredResult, InputResponses, JsonObject, Method, ResultMeta, ResultType,
};

pub use state::{KeyTooShort, MIN_KEY_LEN, StateError, StateSealer};

use crate::context::Mrtr;
use crate::error::InputRequired;
use crate::router::{Outcome, ReplyMessage, error_reply};
use crate::{Principal, Server};

/// The request fields that bind a state: method, salient params and principal.
///
/// The params digest is computed only when a state is opened or sealed, from the request's raw
/// params, so a request that never takes part in MRTR pays nothing for it.
pub(crate) struct Binding<'a> {
    pub(crate) method: Method<'static>,
    params: Option<&'a RawValue>,
    pub(crate) principal: &'a Principal,
    digest: std::sync::OnceLock<String>,
}

impl<'a> Binding<'a> {
    pub(crate) fn new(
        method: Method<'static>,
        params: Option<&'a RawValue>,
        principal: &'a Principal,
    ) -> Self {
        Binding {
            method,
            params,
            principal,
            digest: std::sync::OnceLock::new(),
        }
    }

    /// The digest of the params without `_meta`, `inputResponses` and `requestState`.
    pub(crate) fn digest(&self) -> &str {
        self.digest.get_or_init(|| {
            let params: JsonObject = self
                .params
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .unwrap_or_default();
            state::params_digest(&params)
        })
    }
}

impl Server {
    /// Opens the round a request belongs to: verifies its `requestState` and gathers the answers.
    pub(crate) fn open_round(
        &self,
        binding: &Binding<'_>,
        input_responses: Option<InputResponses>,
        request_state: Option<&str>,
    ) -> Result<Mrtr, StateError> {
        let Some(token) = request_state else {
            // Without a state the answers are unsolicited: a client may answer before it is asked,
            // and the spec's conformance suite expects such answers to be used. They carry no
            // guarantee, so `RequestContext::state_nonce` is `None` and a handler that must know
            // the server asked (an approval, say) refuses to act on them.
            let answers = input_responses
                .into_iter()
                .flatten()
                .filter_map(|(key, response)| Some((key, serde_json::to_value(&response).ok()?)))
                .collect();
            return Ok(Mrtr {
                answers,
                ..Mrtr::default()
            });
        };
        let payload = self.inner.sealer.open(
            token,
            binding.method.as_str(),
            binding.digest(),
            &binding.principal.id(),
        )?;
        let mut answers = payload.a;
        if let Some(responses) = input_responses {
            for (key, response) in responses {
                // Extra keys are ignored (spec: SHOULD ignore unexpected inputResponses keys).
                if payload.k.contains(&key)
                    && let Ok(value) = serde_json::to_value(&response)
                {
                    answers.insert(key, value);
                }
            }
        }
        Ok(Mrtr {
            answers,
            pending: Default::default(),
            state: payload.s,
            nonce: Some(payload.n),
        })
    }

    /// Encodes an `input_required` result with a freshly sealed state.
    pub(crate) fn input_required_reply(
        &self,
        id: &Id,
        binding: &Binding<'_>,
        input: InputRequired,
    ) -> ReplyMessage {
        let payload = state::StatePayload {
            v: 1,
            m: binding.method.as_str().to_owned(),
            d: binding.digest().to_owned(),
            p: binding.principal.id(),
            e: self.inner.sealer.expiry(),
            k: input.requests.keys().cloned().collect(),
            a: input.answers,
            s: input.state,
            n: state::nonce(),
        };
        let result = InputRequiredResult {
            result_type: ResultType::InputRequired,
            input_requests: (!input.requests.is_empty()).then_some(input.requests),
            request_state: Some(self.inner.sealer.seal(&payload)),
            meta: Some(self.result_meta()),
        };
        self.result_reply(id, &result, Outcome::InputRequired)
    }

    pub(crate) fn result_meta(&self) -> ResultMeta {
        ResultMeta {
            server_info: Some(self.inner.info.clone()),
            ..ResultMeta::default()
        }
    }

    /// Encodes a result that has no `_meta` of its own, adding `_meta` with `serverInfo`.
    ///
    /// The `_meta` member is appended to the encoded result from bytes prepared once per server,
    /// instead of cloning the server's identity into every result.
    pub(crate) fn result_reply_with_info<T: serde::Serialize>(
        &self,
        id: &Id,
        result: &T,
        outcome: Outcome,
    ) -> ReplyMessage {
        // Room for the `_meta` member from the start: the body is not copied to grow for it.
        let capacity = REPLY_CAPACITY + self.inner.meta_member.len();
        let mut reply = self.encode_result(id, result, outcome, capacity);
        // The body ends with the result's `}` and the envelope's `}`.
        if matches!(reply.outcome, Outcome::Error { .. }) || !reply.body.ends_with(b"}}") {
            return reply;
        }
        let end = reply.body.len() - 2;
        reply.body.truncate(end);
        reply
            .body
            .extend_from_slice(self.inner.meta_member.as_bytes());
        reply.body.extend_from_slice(b"}}");
        reply
    }

    /// Encodes a result, or -32603 if it cannot be serialized.
    pub(crate) fn result_reply<T: serde::Serialize>(
        &self,
        id: &Id,
        result: &T,
        outcome: Outcome,
    ) -> ReplyMessage {
        self.encode_result(id, result, outcome, REPLY_CAPACITY)
    }

    fn encode_result<T: serde::Serialize>(
        &self,
        id: &Id,
        result: &T,
        outcome: Outcome,
        capacity: usize,
    ) -> ReplyMessage {
        let mut body = Vec::with_capacity(capacity);
        match kelson_jsonrpc::write_result(&mut body, id, result) {
            Ok(()) => ReplyMessage { body, outcome },
            Err(e) => {
                tracing::error!(error = %e, "a result could not be serialized");
                error_reply(
                    Some(id),
                    &ErrorObject::internal_error("the result could not be encoded"),
                    false,
                )
            }
        }
    }
}

/// The room an encoded result starts with: a small tool result fits without growing the buffer.
const REPLY_CAPACITY: usize = 512;

/// The protocol error for a refused state outside `tools/call`.
pub(crate) fn state_error(e: StateError) -> ErrorObject {
    ErrorObject::invalid_params(format_args!("invalid requestState: {e}"))
}
