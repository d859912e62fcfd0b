//! Input requests, handshake-era style: a modern handler that stops with `input_required` gets its
//! answers through real server-to-client requests on the request's stream.
//!
//! The handler runs through the modern router; when it asks for input, the router answers
//! `input_required` with the input requests and a sealed `requestState`. For a legacy session this
//! module sends each input request to the client as a JSON-RPC request (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) on the request's sink, waits for the responses (which the
//! transport hands to [`Server::deliver_response`]), and runs the same request again with those
//! answers as `inputResponses` and the sealed state, exactly as a modern client would retry. So the
//! handler, the state's integrity checks and the one-time approvals built on them work unchanged.

use std::borrow::Cow;
use std::time::Duration;

use kelson_jsonrpc::{ErrorObject, Id, RawValue};
use kelson_types::Method;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::LegacySession;
use super::outbound::Outbound;
use crate::router::NotificationSink;
use crate::router::{CallFields, Outcome, Prepared, Reply, RequestIo, error_reply};
use crate::{Principal, Server};

/// The most rounds of input one request may take before it is refused; a handler that keeps
/// asking would otherwise hold the request forever.
const MAX_ROUNDS: usize = 16;

/// Removes a pending request when its waiter goes away, answered or not; one left unanswered
/// (the request that asked was cancelled, or the session ended) is cancelled on the client too.
struct Forget<'a> {
    outbound: &'a Outbound,
    id: &'a str,
    sink: &'a dyn NotificationSink,
    answered: bool,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.outbound.forget(self.id);
        if !self.answered {
            // spec 2025-11-25 basic/utilities/cancellation: either side may cancel a request it
            // sent; the client stops asking the user.
            let mut note = Vec::with_capacity(128);
            if kelson_jsonrpc::write_notification(
                &mut note,
                Method::Cancelled.as_str(),
                &json!({"requestId": self.id, "reason": "the request that asked for this ended"}),
            )
            .is_ok()
            {
                self.sink.send(note);
            }
        }
    }
}

/// `result.inputRequests` and `result.requestState` of an encoded `input_required` reply.
#[derive(Deserialize)]
struct InputRequiredReply {
    result: InputRequiredBody,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequiredBody {
    #[serde(default)]
    input_requests: Map<String, Value>,
    #[serde(default)]
    request_state: Option<String>,
}

#[derive(Deserialize)]
struct Embedded {
    method: String,
    #[serde(default)]
    params: Option<Value>,
}

impl Server {
    /// Hands a JSON-RPC response from a client to the server-to-client request it answers.
    ///
    /// `session` is the session the response came on (if any) and `principal` who sent it. The
    /// answer is taken only when a request with its id waits for an answer from that principal on
    /// that session; returns whether it was. An answer to nothing, or to a request sent to another
    /// principal or session, is dropped and changes nothing: the request keeps waiting.
    pub fn deliver_response(
        &self,
        response: &kelson_jsonrpc::Response<'_>,
        session: Option<&LegacySession>,
        principal: &Principal,
    ) -> bool {
        let Some(Id::Str(id)) = &response.id else {
            return false;
        };
        let Some(waiting) =
            self.inner
                .outbound
                .take(id, session.map(LegacySession::id), &principal.id())
        else {
            return false;
        };
        let answer = match &response.outcome {
            Ok(raw) => Ok((*raw).to_owned()),
            Err(e) => Err(e.clone()),
        };
        waiting.send(answer).is_ok()
    }

    /// How many server-to-client requests wait for their answers (for tests and metrics).
    pub fn outbound_waiting(&self) -> usize {
        self.inner.outbound.waiting()
    }

    /// Runs a legacy request through the modern router, turning each `input_required` answer into
    /// server-to-client requests and a retry with their answers.
    pub(super) async fn bridged(
        &self,
        session: &LegacySession,
        req: Prepared<'_>,
        mut io: RequestIo<'_>,
    ) -> Reply {
        if !req.method.allows_input_required() {
            return self.check_and_dispatch(req, io).await;
        }
        let req = req.into_owned();
        let id = req.id.clone();
        let method = req.method.clone();
        let original: Map<String, Value> = req
            .params
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        let meta = req.meta.clone();
        let name = req.name.clone();
        let arguments = req.call.arguments.clone();
        let mut next = Some(req);
        for _ in 0..MAX_ROUNDS {
            let round = next.take().expect("a request for this round");
            let round_io = RequestIo {
                principal: io.principal.clone(),
                cancel: io.cancel.clone(),
                sink: io.sink.clone(),
                guard: io.guard,
                close: io.close.clone(),
                probe: io.probe.as_deref_mut(),
            };
            let reply = self.check_and_dispatch(round, round_io).await;
            let Reply::Message(m) = &reply else {
                return reply;
            };
            if m.outcome != Outcome::InputRequired {
                return reply;
            }
            let Ok(asked) = serde_json::from_slice::<InputRequiredReply>(&m.body) else {
                let e = ErrorObject::internal_error("an input_required result could not be read");
                return Reply::Message(error_reply(Some(&id), &e, false));
            };
            let Some(sink) = io.sink.clone() else {
                let e = ErrorObject::internal_error(
                    "this request needs input from the client, and this transport has no way to ask for it",
                );
                return Reply::Message(error_reply(Some(&id), &e, false));
            };
            let answers = match self
                .ask_all(
                    session,
                    &io.principal,
                    &sink,
                    asked.result.input_requests,
                    &io.cancel,
                )
                .await
            {
                Ok(answers) => answers,
                Err(e) => return Reply::Message(error_reply(Some(&id), &e, false)),
            };
            // The same request again, with the answers and the sealed state, as a modern client
            // retries (spec basic/patterns/mrtr).
            let mut params = original.clone();
            params.remove("inputResponses");
            params.remove("requestState");
            params.insert("inputResponses".into(), Value::Object(answers));
            if let Some(state) = asked.result.request_state {
                params.insert("requestState".into(), Value::String(state));
            }
            let raw = |v: &Value| -> Option<Cow<'static, RawValue>> {
                serde_json::value::to_raw_value(v).ok().map(Cow::Owned)
            };
            next = Some(Prepared {
                id: id.clone(),
                method: method.clone(),
                params: raw(&Value::Object(params.clone())),
                meta: meta.clone(),
                name: name.clone(),
                call: CallFields {
                    arguments: arguments.clone(),
                    input_responses: params.get("inputResponses").and_then(raw),
                    request_state: params.get("requestState").and_then(raw),
                },
                legacy: true,
            });
        }
        let e = ErrorObject::internal_error(format_args!(
            "the handler asked for input more than {MAX_ROUNDS} times"
        ));
        Reply::Message(error_reply(Some(&id), &e, false))
    }

    /// Checks a request of the session (every round is one, checked against the registry as it
    /// is then) and dispatches it.
    async fn check_and_dispatch(&self, req: Prepared<'_>, mut io: RequestIo<'_>) -> Reply {
        match self.check_to_dispatch(req, io.probe_mut()) {
            Ok(checked) => self.dispatch(checked, io).await,
            Err(reply) => Reply::Message(reply),
        }
    }

    /// Sends every input request to the client at once and gathers the answers by key.
    async fn ask_all(
        &self,
        session: &LegacySession,
        principal: &Principal,
        sink: &std::sync::Arc<dyn NotificationSink>,
        requests: Map<String, Value>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Map<String, Value>, ErrorObject> {
        let asks = requests.into_iter().map(|(key, request)| async move {
            let embedded: Embedded = serde_json::from_value(request).map_err(|e| {
                ErrorObject::internal_error(format_args!("input request {key}: {e}"))
            })?;
            let params = legacy_params(session.version(), &embedded.method, embedded.params);
            let answer = self
                .ask(session, principal, sink, &embedded.method, params, cancel)
                .await?;
            Ok::<_, ErrorObject>((key, answer))
        });
        let answers = futures_util::future::try_join_all(asks).await?;
        Ok(answers.into_iter().collect())
    }

    /// One server-to-client request: sent on `sink`, answered through [`Server::deliver_response`].
    async fn ask(
        &self,
        session: &LegacySession,
        principal: &Principal,
        sink: &std::sync::Arc<dyn NotificationSink>,
        method: &str,
        params: Value,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Value, ErrorObject> {
        let outbound = &self.inner.outbound;
        // A stateless session's answer comes on a request that names no session.
        let bound = (!session.inner.stateless).then(|| session.id());
        let (id, answer) = outbound.register(bound, principal.id());
        let mut forget = Forget {
            outbound,
            id: &id,
            sink: sink.as_ref(),
            answered: false,
        };
        let request_id = Id::from(id.clone());
        let mut message = Vec::with_capacity(256);
        kelson_jsonrpc::write_request(&mut message, &request_id, method, &params)
            .map_err(ErrorObject::internal_error)?;
        sink.send_request(message);
        // The same bound as a modern client's retry: past it the sealed state has expired anyway.
        let patience = self.inner.config.state_ttl.max(Duration::from_secs(1));
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ErrorObject::internal_error("the request was cancelled")),
            () = session.inner.closed.cancelled() => return Err(ErrorObject::internal_error("the session ended")),
            answer = tokio::time::timeout(patience, answer) => answer,
        };
        forget.answered = answer.is_ok();
        match answer {
            Ok(Ok(Ok(raw))) => serde_json::from_str(raw.get()).map_err(|e| {
                ErrorObject::internal_error(format_args!("the client's answer to {method}: {e}"))
            }),
            Ok(Ok(Err(e))) => Err(ErrorObject::internal_error(format_args!(
                "the client answered {method} with error {}: {}",
                e.code, e.message
            ))),
            Ok(Err(_)) => Err(ErrorObject::internal_error("the answer was lost")),
            Err(_) => Err(ErrorObject::internal_error(format_args!(
                "the client did not answer {method} within {} s",
                patience.as_secs()
            ))),
        }
    }
}

/// An input request's params as the session's revision writes them.
///
/// 2025-11-25 requires an `elicitationId` on URL-mode elicitation, which 2026-07-28 removed;
/// `roots/list` takes no params.
fn legacy_params(version: &str, method: &str, params: Option<Value>) -> Value {
    let mut params = params.unwrap_or_else(|| json!({}));
    if matches!(Method::parse(method), Method::Elicit)
        && version == "2025-11-25"
        && let Some(object) = params.as_object_mut()
        && object.get("mode").and_then(Value::as_str) == Some("url")
        && !object.contains_key("elicitationId")
    {
        let mut bytes = [0u8; 12];
        getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        object.insert("elicitationId".into(), Value::String(id));
    }
    params
}
