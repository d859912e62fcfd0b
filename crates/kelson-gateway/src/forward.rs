//! A call through the gateway: the policy's checks, then the upstream's call with everything that
//! belongs to it forwarded (progress, log messages, cancellation, the time limit), then the audit
//! record.
//!
//! The upstream's era does not matter here: `kelson-client` speaks whichever it answers, and the
//! gateway's own server answers the caller in the caller's era, so a handshake-era host reaches a
//! 2026-07-28 upstream and the reverse. Only the arguments go upstream: the caller's token stays at
//! the front door (the upstream is reached with its own configured credentials).

use std::collections::HashMap;
use std::future::IntoFuture;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kelson_client::{Error as ClientError, ErrorKind};
use kelson_server::{HandlerError, RequestContext, ToolHandler, ToolResult};
use kelson_types::{
    BooleanSchema, CallToolResult, ElicitAction, ElicitRequestFormParams, ElicitValue, JsonObject,
    LoggingMessageNotificationParams, ProgressNotificationParams, RequestedSchema,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::Shared;
use crate::audit::{Decision, Outcome, Record, fingerprint, millis, now_ms};
use crate::upstream::Upstream;

/// The field of the approval form.
const APPROVE_FIELD: &str = "approve";

/// How a registered tool is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Forwarded to the upstream.
    Forward,
    /// The upstream's definition changed and is not accepted: every call is refused.
    PinRefused,
}

/// The handler of one exposed tool.
pub(crate) struct Forward {
    pub shared: Arc<Shared>,
    pub upstream: Arc<Upstream>,
    /// The tool's name upstream.
    pub tool: String,
    /// The tool's name as exposed.
    pub exposed: String,
    pub mode: Mode,
}

/// What the approval round keeps in the sealed `requestState`: the key the question was asked
/// under, which no answer can carry before it was asked.
#[derive(Serialize, Deserialize)]
struct Pending {
    key: String,
}

impl ToolHandler for Forward {
    fn call(
        &self,
        ctx: RequestContext,
        arguments: JsonObject,
    ) -> kelson_server::BoxFuture<ToolResult> {
        let shared = self.shared.clone();
        let upstream = self.upstream.clone();
        let tool = self.tool.clone();
        let exposed = self.exposed.clone();
        let mode = self.mode;
        Box::pin(async move {
            let started = Instant::now();
            let text = serde_json::to_string(&arguments).unwrap_or_default();
            let (argument_bytes, argument_sha256) = fingerprint(&text);
            let mut call = Audited {
                shared: &shared,
                principal: ctx.principal().id(),
                upstream: upstream.name().to_owned(),
                tool: exposed.clone(),
                argument_bytes,
                argument_sha256,
                arguments: shared
                    .audit
                    .records_arguments()
                    .then(|| Value::Object(arguments.clone())),
                started,
            };
            let mut ctx = ctx;
            let checks = Checks {
                principal: &call.principal,
                exposed: &exposed,
                mode,
                argument_bytes,
            };
            let decision = match admit(&shared, &mut ctx, &upstream, checks) {
                Ok(decision) => decision,
                Err((decision, error)) => {
                    let outcome = match &error {
                        HandlerError::InputRequired(_) => Outcome::InputRequired,
                        _ => Outcome::Refused,
                    };
                    call.record(decision, outcome, refusal_text(&error));
                    return Err(error);
                }
            };
            let result = forward(&shared, &ctx, &upstream, &tool, arguments).await;
            let (outcome, error) = match &result {
                Ok(r) if r.is_error == Some(true) => (Outcome::ToolError, None),
                Ok(_) => (Outcome::Ok, None),
                Err((outcome, e)) => (*outcome, refusal_text(e)),
            };
            call.record(decision, outcome, error);
            result.map_err(|(_, e)| e)
        })
    }
}

/// The audit record of a call in progress.
struct Audited<'a> {
    shared: &'a Shared,
    principal: String,
    upstream: String,
    tool: String,
    argument_bytes: usize,
    argument_sha256: String,
    arguments: Option<Value>,
    started: Instant,
}

impl Audited<'_> {
    fn record(&mut self, decision: Decision, outcome: Outcome, error: Option<String>) {
        self.shared.audit.record(Record {
            time_ms: now_ms(),
            principal: std::mem::take(&mut self.principal),
            upstream: std::mem::take(&mut self.upstream),
            tool: std::mem::take(&mut self.tool),
            argument_bytes: self.argument_bytes,
            argument_sha256: std::mem::take(&mut self.argument_sha256),
            arguments: self.arguments.take(),
            decision,
            outcome,
            error,
            duration_ms: millis(self.started.elapsed()),
        });
    }
}

fn refusal_text(error: &HandlerError) -> Option<String> {
    match error {
        HandlerError::Failed(message) => Some(message.clone()),
        HandlerError::Protocol(e) => Some(format!("{} ({})", e.message, e.code)),
        HandlerError::InputRequired(_) => None,
    }
}

/// What the policy's checks look at, besides the request.
struct Checks<'a> {
    /// The caller, as the audit record names it.
    principal: &'a str,
    exposed: &'a str,
    mode: Mode,
    argument_bytes: usize,
}

/// The policy's checks before anything goes upstream: the pin, the size of the arguments, the
/// rate limit, and the person's approval where the policy asks for it.
fn admit(
    shared: &Shared,
    ctx: &mut RequestContext,
    upstream: &Upstream,
    checks: Checks<'_>,
) -> Result<Decision, (Decision, HandlerError)> {
    let Checks {
        principal,
        exposed,
        mode,
        argument_bytes,
    } = checks;
    if mode == Mode::PinRefused {
        return Err((
            Decision::PinRefused,
            HandlerError::failed(format!(
                "The upstream {:?} changed the definition of {exposed:?} since it was approved, so \
                 the gateway does not forward calls to it. An operator can review the change with \
                 `kelson gateway pin --list` and accept it with `kelson gateway pin --accept {exposed}`.",
                upstream.name()
            )),
        ));
    }
    if let Some(max) = shared.policy.max_argument_bytes()
        && argument_bytes > max
    {
        return Err((
            Decision::TooLarge,
            HandlerError::failed(format!(
                "The arguments are {argument_bytes} bytes of JSON, over the gateway's limit of \
                 {max}; nothing was sent to the tool."
            )),
        ));
    }
    if let Err(wait) = shared.policy.admit(principal, exposed) {
        let limit = shared.policy.rate_limit().expect("a limiter has a limit");
        return Err((
            Decision::RateLimited,
            HandlerError::failed(format!(
                "Rate limit: {} calls to {exposed} per {} s for each caller. Retry in {:.1} s.",
                limit.calls,
                limit.per.as_secs(),
                wait.as_secs_f64().max(0.1)
            )),
        ));
    }
    if !shared.policy.needs_approval(exposed) {
        return Ok(Decision::Allowed);
    }
    approve(shared, ctx, upstream, exposed)
}

/// Asks the person to approve this call (form elicitation), or reads the answer. Each approval
/// counts once: its verified `requestState` is remembered and refused when it comes back.
fn approve(
    shared: &Shared,
    ctx: &mut RequestContext,
    upstream: &Upstream,
    exposed: &str,
) -> Result<Decision, (Decision, HandlerError)> {
    let form = approval_form(upstream, exposed);
    let pending = match ctx.state_nonce() {
        Some(_) => ctx.round_state::<Pending>(),
        None => None,
    };
    let Some(pending) = pending else {
        // Nothing asked yet in this exchange: ask, under a key no answer can carry already.
        let key = format!("approve-{}", crate::random_hex(8));
        ctx.set_round_state(Pending { key: key.clone() })
            .map_err(|e| (Decision::Declined, e))?;
        return match ctx.elicit(&key, form) {
            Err(e) => Err((Decision::Allowed, e)),
            Ok(_) => Err((
                Decision::Declined,
                HandlerError::failed("An answer arrived for a question that was never asked."),
            )),
        };
    };
    let answer = ctx
        .elicit(&pending.key, form)
        .map_err(|e| (Decision::Allowed, e))?;
    let nonce = ctx.state_nonce().unwrap_or_default().to_owned();
    let ticked = answer.action == ElicitAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get(APPROVE_FIELD))
            .and_then(ElicitValue::as_bool)
            == Some(true);
    if !ticked {
        let why = match answer.action {
            ElicitAction::Accept => "the person submitted the form without ticking the approval",
            ElicitAction::Decline => "the person declined it",
            ElicitAction::Cancel => "the person dismissed the question",
        };
        return Err((
            Decision::Declined,
            HandlerError::failed(format!("The call to {exposed} was not run: {why}.")),
        ));
    }
    if !shared.approvals.spend(&nonce) {
        return Err((
            Decision::Declined,
            HandlerError::failed(
                "This approval was used already; each approval runs one call. Call the tool again.",
            ),
        ));
    }
    Ok(Decision::Approved)
}

fn approval_form(upstream: &Upstream, exposed: &str) -> ElicitRequestFormParams {
    let message = format!(
        "Allow the call to {exposed} (on the server {:?})? It runs once, with the arguments the \
         assistant gave.",
        upstream.name()
    );
    let schema = RequestedSchema::new().required_property(
        APPROVE_FIELD,
        BooleanSchema {
            default: Some(false),
            ..BooleanSchema::new()
        }
        .with_title("Run this call")
        .with_description("Tick to let this one call run."),
    );
    ElicitRequestFormParams::new(message, schema)
}

/// The approvals used, by the unique value of their `requestState`, each kept as long as such a
/// state can be presented (its lifetime is ten minutes) and then forgotten.
#[derive(Debug, Default)]
pub(crate) struct Approvals {
    used: Mutex<HashMap<String, Instant>>,
}

/// How long a used approval is remembered: longer than any `requestState` lives.
const APPROVAL_MEMORY: Duration = Duration::from_secs(15 * 60);

impl Approvals {
    /// Marks `nonce` used; false when it was already.
    fn spend(&self, nonce: &str) -> bool {
        if nonce.is_empty() {
            return false;
        }
        let now = Instant::now();
        let mut used = self.used.lock().expect("approvals lock");
        used.retain(|_, at| now.duration_since(*at) < APPROVAL_MEMORY);
        used.insert(nonce.to_owned(), now).is_none()
    }
}

/// What forwarding yields: the upstream's result, or the outcome to record and the error to
/// answer with.
type Forwarded = Result<CallToolResult, (Outcome, HandlerError)>;

/// Sends the call upstream and relays its progress and log messages until it answers.
async fn forward(
    shared: &Shared,
    ctx: &RequestContext,
    upstream: &Upstream,
    tool: &str,
    arguments: JsonObject,
) -> Forwarded {
    let Some(client) = upstream.client() else {
        let why = match upstream.state() {
            crate::upstream::State::Down { reason } => format!(": {reason}"),
            _ => String::new(),
        };
        return Err((
            Outcome::Unavailable,
            HandlerError::failed(format!(
                "The server {:?} behind the gateway is not connected{why}. Try again shortly.",
                upstream.name()
            )),
        ));
    };
    let (progress_tx, mut progress_rx) = mpsc::unbounded_channel::<ProgressNotificationParams>();
    let (log_tx, mut log_rx) = mpsc::unbounded_channel::<LoggingMessageNotificationParams>();
    let mut request = client
        .call_tool(tool, Value::Object(arguments))
        .cancel_token(ctx.cancellation_token())
        .timeout(upstream.timeout());
    // Progress and log messages are asked for upstream only when the caller asked for them.
    if ctx.meta().progress_token.is_some() {
        request = request.on_progress(move |p| {
            let _ = progress_tx.send(p.clone());
        });
    }
    if let Some(level) = ctx.meta().log_level {
        request = request.on_log(level, move |m| {
            let _ = log_tx.send(m.clone());
        });
    }
    let mut call = std::pin::pin!(request.into_future());
    let answer = loop {
        tokio::select! {
            answer = &mut call => break answer,
            Some(p) = progress_rx.recv() => {
                ctx.progress(p.progress, p.total, p.message.as_deref());
            }
            Some(m) = log_rx.recv() => {
                let logger = match &m.logger {
                    Some(l) => format!("{}/{l}", upstream.name()),
                    None => upstream.name().to_owned(),
                };
                ctx.log(m.level, Some(&logger), &m.data);
            }
        }
    };
    // What arrived just before the answer still goes out before it.
    while let Ok(p) = progress_rx.try_recv() {
        ctx.progress(p.progress, p.total, p.message.as_deref());
    }
    match answer {
        Ok(result) => {
            if let Some(max) = shared.policy.max_result_bytes() {
                let size = serde_json::to_string(&result).map_or(0, |t| t.len());
                if size > max {
                    return Err((
                        Outcome::Refused,
                        HandlerError::failed(format!(
                            "The result is {size} bytes of JSON, over the gateway's limit of {max}."
                        )),
                    ));
                }
            }
            Ok(result)
        }
        Err(e) => Err(failure(upstream, e)),
    }
}

/// What the caller is told when the upstream call failed.
fn failure(upstream: &Upstream, e: ClientError) -> (Outcome, HandlerError) {
    let name = upstream.name();
    match e.kind() {
        // The upstream's own JSON-RPC error (an unknown tool, invalid arguments) is the answer.
        ErrorKind::Protocol => match e.error_object() {
            Some(error) => (Outcome::Error, HandlerError::protocol(error.clone())),
            None => (
                Outcome::Error,
                HandlerError::failed(format!("The server {name:?} behind the gateway: {e}")),
            ),
        },
        ErrorKind::Timeout => (
            Outcome::Timeout,
            HandlerError::failed(format!(
                "The server {name:?} behind the gateway did not answer within {} s.",
                upstream.timeout().as_secs_f64()
            )),
        ),
        ErrorKind::Cancelled => (Outcome::Cancelled, HandlerError::failed("Cancelled.")),
        ErrorKind::Transport => {
            upstream.broken.notify_one();
            (
                Outcome::Unavailable,
                HandlerError::failed(format!(
                    "The server {name:?} behind the gateway could not be reached: {e}"
                )),
            )
        }
        _ => (
            Outcome::Error,
            HandlerError::failed(format!("The server {name:?} behind the gateway: {e}")),
        ),
    }
}
