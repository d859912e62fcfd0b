//! The handler's view of one request.

use std::sync::Mutex;

use kelson_jsonrpc::{ErrorObject, Id};
use kelson_types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Implementation, InputRequest, JsonObject, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParams, Method, ProgressNotificationParams, RequestMeta,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::error::{HandlerError, InputRequired};
use crate::router::NotificationSink;
use crate::{Principal, Server};

/// Everything a handler may know about and do for the request it serves.
///
/// The context is owned by the handler: it holds the request's `_meta` (client info and the
/// capabilities declared on *this* request), the principal, the cancellation token, a progress
/// reporter, a log sink and the MRTR answers gathered so far.
pub struct RequestContext {
    pub(crate) id: Id,
    /// One of the spec's methods: `tools/call`, `resources/read`, `prompts/get` or
    /// `completion/complete`.
    pub(crate) method: Method<'static>,
    pub(crate) meta: Box<RequestMeta>,
    pub(crate) principal: Principal,
    pub(crate) cancel: CancellationToken,
    pub(crate) sink: Option<std::sync::Arc<dyn NotificationSink>>,
    pub(crate) server: Server,
    last_progress: Mutex<Option<f64>>,
    pub(crate) mrtr: Mrtr,
    /// Set when the call may run as a task (the tasks extension).
    task: Option<std::sync::Arc<crate::tasks::TaskLink>>,
}

/// MRTR bookkeeping for one round.
#[derive(Default)]
pub(crate) struct Mrtr {
    /// Answers from earlier rounds plus this round's `inputResponses` for the keys last asked.
    pub(crate) answers: JsonObject,
    /// Input requests gathered by [`RequestContext::request_input`] and not yet answered.
    pub(crate) pending: kelson_types::InputRequests,
    /// Handler state carried by the verified `requestState`, replaced by `set_round_state`.
    pub(crate) state: Option<Value>,
    /// The verified incoming state's unique value, if the request carried one.
    pub(crate) nonce: Option<String>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl RequestContext {
    /// The context of one request, from what the transport handed the router (`io`: the caller,
    /// the cancellation token, the notification sink) and what the router read of the request.
    pub(crate) fn new(
        server: &Server,
        io: &crate::transport::RequestIo<'_>,
        id: Id,
        method: Method<'static>,
        meta: Box<RequestMeta>,
        mrtr: Mrtr,
    ) -> Self {
        RequestContext {
            id,
            method,
            meta,
            principal: io.principal.clone(),
            // With a handler deadline, the handler's token is a child of the transport's: the
            // deadline stops the handler without making the transport take the request for one
            // the client cancelled (and so send no answer).
            cancel: if server.inner.config.handler_timeout.is_some() {
                io.cancel.child_token()
            } else {
                io.cancel.clone()
            },
            sink: io.sink.clone(),
            server: server.clone(),
            last_progress: Mutex::new(None),
            mrtr,
            task: None,
        }
    }

    /// The context of a `tools/call` that may run as a task: its cancellation is the task's, not
    /// the request's.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn for_task(
        server: &Server,
        principal: Principal,
        cancel: CancellationToken,
        sink: Option<std::sync::Arc<dyn NotificationSink>>,
        id: Id,
        meta: Box<RequestMeta>,
        mrtr: Mrtr,
        link: std::sync::Arc<crate::tasks::TaskLink>,
    ) -> Self {
        RequestContext {
            id,
            method: Method::CallTool,
            meta,
            principal,
            cancel,
            sink,
            server: server.clone(),
            last_progress: Mutex::new(None),
            mrtr,
            task: Some(link),
        }
    }

    /// Asks for this call to continue as a task (the tasks extension): the request is answered
    /// with the task now, and the handler goes on running; its result becomes the task's. Returns
    /// whether the call may become a task: the tool supports tasks and the request declared the
    /// extension. A call that is a task already stays one.
    ///
    /// This is how a tool registered with [`TaskStart::OnRequest`](crate::TaskStart::OnRequest)
    /// gathers its input over MRTR first and then starts the long part; any tool that supports
    /// tasks may call it, for instance once it knows the work will be long.
    pub fn run_as_task(&self) -> bool {
        match &self.task {
            Some(link) => {
                if link.is_inline() {
                    link.detach.notify_one();
                }
                true
            }
            None => false,
        }
    }

    /// The task this call runs as, once it is one.
    pub fn task_id(&self) -> Option<String> {
        self.task.as_ref().and_then(|link| link.task_id())
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &Id {
        &self.id
    }

    /// The method being served (`tools/call`, `resources/read`, ...).
    pub fn method(&self) -> &'static str {
        // A context is made only for a method of the spec, whose name is `'static`.
        self.method.known_name().unwrap_or_default()
    }

    /// The request's `_meta`, including keys this library does not interpret.
    pub fn meta(&self) -> &RequestMeta {
        &self.meta
    }

    /// The protocol version the request names.
    pub fn protocol_version(&self) -> &str {
        self.meta.protocol_version.as_deref().unwrap_or_default()
    }

    /// The capabilities the client declared on this request. Never infer them from other requests.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        static NONE: std::sync::OnceLock<ClientCapabilities> = std::sync::OnceLock::new();
        self.meta
            .client_capabilities
            .as_deref()
            .unwrap_or_else(|| NONE.get_or_init(ClientCapabilities::default))
    }

    /// The client's self-reported identity: for display and logs, never for decisions.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.meta.client_info.as_deref()
    }

    /// Who is calling.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// Refuses the request unless the caller may use what `scopes` protects (see [`Scopes`]):
    /// for checks that depend on the arguments, such as a tool that serves several databases with
    /// a scope each. `what` names the operation in the refusal (`query on "sales"`).
    ///
    /// Return the error before sending anything (progress, log messages): over HTTP it becomes a
    /// 403 with an `insufficient_scope` challenge only while no stream has started.
    ///
    /// [`Scopes`]: crate::Scopes
    pub fn require_scopes(&self, what: &str, scopes: &crate::Scopes) -> Result<(), HandlerError> {
        if scopes.allows(&self.principal) {
            Ok(())
        } else {
            Err(crate::InsufficientScope::new(what, scopes).into())
        }
    }

    /// The server serving this request, to change its registry or notify listeners.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Whether the client has cancelled the request.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when the client cancels the request, the server shuts down, or the handler
    /// deadline ([`ServerConfig::handler_timeout`](crate::ServerConfig::handler_timeout)) passes.
    ///
    /// The transports also drop the handler's future when its request is cancelled, so a handler
    /// that only awaits stops at its next await without looking. This is for work that outlives
    /// the future: a task spawned with the context, a blocking thread, a query on a server that
    /// must be told to stop.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// The token the handler deadline fires, when the server has one.
    pub(crate) fn deadline_token(&self) -> Option<CancellationToken> {
        self.server
            .inner
            .config
            .handler_timeout
            .map(|_| self.cancel.clone())
    }

    /// The request's cancellation token, to hand to work that outlives a borrow of the context.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Reports progress, if the request asked for it with a `progressToken`.
    ///
    /// spec 2026-07-28 basic/patterns/progress: the value must increase with every notification, so
    /// a value not above the last one sent is dropped.
    ///
    /// In a task, progress becomes the task's `statusMessage` (`message`, or `progress/total`),
    /// which clients see when they poll it.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(task) = self.task_id() {
            if !progress.is_finite() || self.cancel.is_cancelled() {
                return;
            }
            let text = match (message, total) {
                (Some(m), _) => m.to_owned(),
                (None, Some(total)) => format!("{progress}/{total}"),
                (None, None) => format!("{progress}"),
            };
            self.server.task_message(task, text);
            return;
        }
        let (Some(token), Some(sink)) = (&self.meta.progress_token, &self.sink) else {
            return;
        };
        if !progress.is_finite() || self.cancel.is_cancelled() {
            return;
        }
        {
            let mut last = self.last_progress.lock().expect("progress lock");
            if last.is_some_and(|l| progress <= l) {
                return;
            }
            *last = Some(progress);
        }
        let params = ProgressNotificationParams {
            meta: None,
            progress_token: token.clone(),
            progress,
            total,
            message: message.map(str::to_owned),
        };
        send(sink.as_ref(), &Method::Progress, &params);
    }

    /// Whether a log message at `level` would be delivered: the request set a `logLevel` at or below it.
    pub fn log_enabled(&self, level: LoggingLevel) -> bool {
        self.sink.is_some() && self.meta.log_level.is_some_and(|min| level >= min)
    }

    /// Sends a log message on this request's stream (deprecated in 2026-07-28, still specified).
    ///
    /// spec 2026-07-28 server/utilities/logging: without a `logLevel` in the request's `_meta` the
    /// server sends nothing; with one, only messages at that level or above.
    pub fn log(&self, level: LoggingLevel, logger: Option<&str>, data: impl Serialize) {
        if !self.log_enabled(level) || self.cancel.is_cancelled() {
            return;
        }
        let Ok(data) = serde_json::to_value(data) else {
            return;
        };
        let params = LoggingMessageNotificationParams {
            meta: None,
            level,
            logger: logger.map(str::to_owned),
            data,
        };
        if let Some(sink) = &self.sink {
            send(sink.as_ref(), &Method::LoggingMessage, &params);
        }
    }

    /// Tells every listener subscribed to `uri` (or to a resource containing it) that it changed.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.server.notify_resource_updated(uri);
    }

    // ---- MRTR (spec 2026-07-28 basic/patterns/mrtr) ----

    /// The answer to input request `key`, from this round or an earlier one.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.mrtr.answers.get(key)
    }

    /// Sets aside the answer to input request `key`, so that the next `elicit`, `create_message`,
    /// `list_roots` or `request_input` for it asks the client again; returns the answer set aside.
    ///
    /// This is how a handler that must know the server asked (see [`state_nonce`](Self::state_nonce))
    /// refuses an answer that came without a verified `requestState`: it forgets it and asks.
    pub fn forget_input(&mut self, key: &str) -> Option<Value> {
        self.mrtr.answers.remove(key)
    }

    /// Asks for input without stopping: returns the answer when there is one, and otherwise queues
    /// the request so that [`require_inputs`](Self::require_inputs) asks for all of them at once.
    ///
    /// Fails with -32021 when the client did not declare, on this request, the capability the input
    /// request needs: such a request is never sent.
    pub fn request_input(
        &mut self,
        key: &str,
        request: InputRequest,
    ) -> Result<Option<&Value>, HandlerError> {
        self.check_capability(&request)?;
        if self.mrtr.answers.contains_key(key) {
            return Ok(self.mrtr.answers.get(key));
        }
        self.mrtr.pending.insert(key.to_owned(), request);
        Ok(None)
    }

    /// Stops with `input_required` if any input requested by [`request_input`](Self::request_input)
    /// is still unanswered.
    pub fn require_inputs(&mut self) -> Result<(), HandlerError> {
        if self.mrtr.pending.is_empty() {
            Ok(())
        } else {
            Err(self.input_required())
        }
    }

    /// Asks the user through elicitation (form or URL mode) and returns the answer, or stops with
    /// `input_required` until the client supplies it.
    pub fn elicit(
        &mut self,
        key: &str,
        params: impl Into<ElicitRequestParams>,
    ) -> Result<ElicitResult, HandlerError> {
        self.ask(key, InputRequest::Elicit(params.into()))
    }

    /// Asks the client's model for a completion (sampling, deprecated in 2026-07-28).
    pub fn create_message(
        &mut self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, HandlerError> {
        self.ask(key, InputRequest::CreateMessage(params))
    }

    /// Asks the client for its roots (deprecated in 2026-07-28).
    pub fn list_roots(&mut self, key: &str) -> Result<ListRootsResult, HandlerError> {
        self.ask(key, InputRequest::ListRoots(None))
    }

    /// Handler state from the previous round, if the request carried a verified `requestState`.
    pub fn round_state<T: DeserializeOwned>(&self) -> Option<T> {
        self.mrtr
            .state
            .as_ref()
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// Keeps a value for the next round; it travels sealed inside `requestState`.
    ///
    /// The client can read it (it is signed, not encrypted): keep secrets out.
    pub fn set_round_state(&mut self, state: impl Serialize) -> Result<(), HandlerError> {
        let value = serde_json::to_value(state)
            .map_err(|e| HandlerError::Protocol(ErrorObject::internal_error(e)))?;
        self.mrtr.state = Some(value);
        Ok(())
    }

    /// A value unique to the verified `requestState` this request carried, for handlers that must
    /// act at most once per issued state (an approval, say): record it when acting and refuse it
    /// when it comes back.
    ///
    /// `None` means the request carried no state, so any answers it holds were not asked for by
    /// this server: a handler that needs a solicited answer must ask (again).
    pub fn state_nonce(&self) -> Option<&str> {
        self.mrtr.nonce.as_deref()
    }

    /// Stops with an `input_required` result that carries only `requestState`, inviting the client to
    /// retry (spec 2026-07-28 MRTR: "load shedding").
    pub fn retry_later(&mut self) -> HandlerError {
        self.input_required()
    }

    fn ask<T: DeserializeOwned>(
        &mut self,
        key: &str,
        request: InputRequest,
    ) -> Result<T, HandlerError> {
        self.check_capability(&request)?;
        match self.mrtr.answers.get(key) {
            Some(answer) => serde_json::from_value(answer.clone()).map_err(|e| {
                HandlerError::Protocol(ErrorObject::invalid_params(format_args!(
                    "inputResponses[{key:?}] is malformed: {e}"
                )))
            }),
            None => {
                self.mrtr.pending.insert(key.to_owned(), request);
                Err(self.input_required())
            }
        }
    }

    fn input_required(&mut self) -> HandlerError {
        HandlerError::InputRequired(Box::new(InputRequired {
            requests: std::mem::take(&mut self.mrtr.pending),
            answers: self.mrtr.answers.clone(),
            state: self.mrtr.state.clone(),
        }))
    }

    fn check_capability(&self, request: &InputRequest) -> Result<(), HandlerError> {
        let caps = self.client_capabilities();
        let (ok, required, what) = match request {
            InputRequest::Elicit(ElicitRequestParams::Form(_)) => (
                caps.supports_elicitation_form(),
                json!({"elicitation": {"form": {}}}),
                "form elicitation",
            ),
            InputRequest::Elicit(ElicitRequestParams::Url(_)) => (
                caps.supports_elicitation_url(),
                json!({"elicitation": {"url": {}}}),
                "URL elicitation",
            ),
            InputRequest::CreateMessage(p) if p.tools.is_some() || p.tool_choice.is_some() => (
                caps.supports_sampling_tools(),
                json!({"sampling": {"tools": {}}}),
                "sampling with tools",
            ),
            InputRequest::CreateMessage(_) => (
                caps.supports_sampling(),
                json!({"sampling": {}}),
                "sampling",
            ),
            InputRequest::ListRoots(_) => (caps.supports_roots(), json!({"roots": {}}), "roots"),
        };
        if ok {
            Ok(())
        } else {
            Err(HandlerError::Protocol(
                ErrorObject::missing_client_capability(
                    required,
                    format_args!("this request needs {what}, which the client did not declare"),
                ),
            ))
        }
    }
}

fn send<T: Serialize>(sink: &dyn NotificationSink, method: &Method<'_>, params: &T) {
    let mut out = Vec::with_capacity(128);
    if kelson_jsonrpc::write_notification(&mut out, method.as_str(), params).is_ok() {
        sink.send(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kelson_types::{ElicitRequestFormParams, RequestedSchema};

    fn context(answers: JsonObject) -> RequestContext {
        let server = Server::builder("t", "1")
            .build()
            .expect("empty server builds");
        RequestContext::new(
            &server,
            &crate::transport::RequestIo::plain(&server),
            Id::Int(1),
            Method::CallTool,
            Box::new(RequestMeta::latest(
                ClientCapabilities::default().with_elicitation_form(),
            )),
            Mrtr {
                answers,
                ..Mrtr::default()
            },
        )
    }

    #[test]
    fn a_forgotten_answer_is_asked_for_again() {
        let answer = json!({"action": "accept", "content": {"ok": true}});
        let mut answers = JsonObject::new();
        answers.insert("confirm".to_owned(), answer.clone());
        let mut ctx = context(answers);
        let form = || ElicitRequestFormParams::new("Please confirm", RequestedSchema::new());

        // Without forgetting, the unsolicited answer is used as is.
        assert!(ctx.elicit("confirm", form()).is_ok());

        assert_eq!(ctx.forget_input("confirm"), Some(answer));
        assert_eq!(ctx.forget_input("confirm"), None);
        assert!(ctx.input_response("confirm").is_none());
        match ctx.elicit("confirm", form()) {
            Err(HandlerError::InputRequired(input)) => {
                assert!(input.requests.contains_key("confirm"));
                assert!(!input.answers.contains_key("confirm"));
            }
            other => panic!("expected input_required, got {other:?}"),
        }
    }
}
