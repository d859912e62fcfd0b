//! [`RequestLog`]: one structured `tracing` event per request, under the target [`LOG_TARGET`].

use kelson_jsonrpc::{Id, code};
use tracing::Level;

use super::{
    ListenRecord, NotificationRecord, RequestObserver, RequestOutcome, RequestRecord, Target,
    Transport, Wants,
};

/// The `tracing` target of every event [`RequestLog`] emits, for filters such as
/// `KELSON_LOG=info,kelson::request=off`.
pub const LOG_TARGET: &str = "kelson::request";

/// Logs one event per request, per client notification, and per listen stream opened and closed,
/// through `tracing` (the subscriber decides the format and the destination: stderr, on stdio).
///
/// A request event (message `request`, level INFO, WARN for an internal error) has the fields
/// `transport`, `era` (`modern` or `legacy`), `legacy_version` for a legacy request served on a
/// session (the revision it settled), `id`, `method`, `tool` / `prompt` / `uri` where the method names one, `outcome`
/// (`success`, `tool_error`, `input_required`, `error`, `rejected`, `cancelled`), `code` for a
/// JSON-RPC error, `status` for an HTTP-level refusal, and `duration_us`. Client-supplied strings
/// are recorded as `&str` values, which subscribers quote and escape, so a name cannot forge a line.
///
/// Headers are never logged (not `Authorization`, not `Mcp-Param-*`), and neither are tool
/// arguments, unless [`with_arguments`](Self::with_arguments) is set *and* the target is enabled at
/// DEBUG: then the request event gains an `arguments` field with the raw JSON.
///
/// While the target is disabled, a request costs this observer one callsite check and nothing is
/// copied or formatted.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestLog {
    arguments: bool,
}

impl RequestLog {
    /// Logs requests without their arguments.
    pub fn new() -> Self {
        RequestLog::default()
    }

    /// Also logs the arguments of `tools/call` and `prompts/get` while [`LOG_TARGET`] is enabled at
    /// DEBUG. They may hold user data: an operator's choice, off by default.
    #[must_use]
    pub fn with_arguments(mut self, arguments: bool) -> Self {
        self.arguments = arguments;
        self
    }
}

impl RequestObserver for RequestLog {
    fn wants(&self) -> Wants {
        let names = tracing::enabled!(target: LOG_TARGET, Level::INFO);
        Wants {
            names,
            arguments: names
                && self.arguments
                && tracing::enabled!(target: LOG_TARGET, Level::DEBUG),
        }
    }

    fn request_finished(&self, r: &RequestRecord<'_>) {
        let (tool, prompt, uri) = match r.target {
            Target::None => (None, None, None),
            Target::Tool { name, .. } => (Some(name), None, None),
            Target::Prompt { name, .. } => (None, Some(name), None),
            Target::Resource { uri } => (None, None, Some(uri)),
        };
        let (code, status) = match r.outcome {
            RequestOutcome::Error { code } => (Some(code), None),
            RequestOutcome::Rejected { status } => (None, Some(status)),
            _ => (None, None),
        };
        let duration_us = u64::try_from(r.duration.as_micros()).unwrap_or(u64::MAX);
        // One callsite per level: a tracing level is part of the callsite's static metadata.
        macro_rules! emit {
            ($level:expr) => {
                tracing::event!(
                    target: LOG_TARGET,
                    $level,
                    transport = r.transport.as_str(),
                    era = r.era.as_str(),
                    legacy_version = r.era.legacy_version(),
                    id = r.id.map(display),
                    method = r.method_name(),
                    tool,
                    prompt,
                    uri,
                    outcome = r.outcome.class(),
                    code,
                    status,
                    duration_us,
                    arguments = r.arguments.map(|a| a.get()),
                    "request"
                )
            };
        }
        if code == Some(code::INTERNAL_ERROR) {
            emit!(Level::WARN);
        } else {
            emit!(Level::INFO);
        }
    }

    fn notification(&self, r: &NotificationRecord<'_>) {
        tracing::info!(
            target: LOG_TARGET,
            transport = r.transport.as_str(),
            method = r.method.as_str(),
            "notification"
        );
    }

    fn listen_opened(&self, transport: Transport, id: &Id) {
        tracing::info!(
            target: LOG_TARGET,
            transport = transport.as_str(),
            id = %id,
            "listen opened"
        );
    }

    fn listen_closed(&self, r: &ListenRecord<'_>) {
        let duration_ms = u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX);
        tracing::info!(
            target: LOG_TARGET,
            transport = r.transport.as_str(),
            id = %r.id,
            duration_ms,
            graceful = r.graceful,
            "listen closed"
        );
    }
}
