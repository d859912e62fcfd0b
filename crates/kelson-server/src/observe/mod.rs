//! The operator's view: a hook that sees every request, notification and listen stream, and its two
//! users, [`Metrics`] (Prometheus text format) and [`RequestLog`] (structured `tracing` events).
//!
//! Transports report through a [`RequestProbe`], one per incoming message, made by
//! [`Server::probe`](crate::Server::probe). The router fills in what only it learns (the tool,
//! prompt or resource a request names); the transport says how the request ended, including the
//! ways only it knows about (an HTTP-level refusal, a cancellation). Each ending reaches every
//! [`RequestObserver`] set on the [`ServerBuilder`](crate::ServerBuilder) as one small record.
//!
//! Without an observer a probe is an empty `Option`: no clock read, no reference count, no call.
//!
//! ```
//! use kelson_server::Server;
//! use kelson_server::observe::{Metrics, RequestLog};
//!
//! # fn main() -> Result<(), kelson_server::BuildError> {
//! let metrics = Metrics::new();
//! let server = Server::builder("demo", "1.0.0")
//!     .enable_tools()
//!     .metrics(metrics.clone())
//!     .observer(RequestLog::new())
//!     .build()?;
//! assert!(server.metrics().is_some());
//! assert!(metrics.render().contains("# TYPE mcp_requests_total counter"));
//! # Ok(())
//! # }
//! ```

mod connections;
mod labels;
mod log;
mod metrics;
mod probe;
mod text;
pub mod trace;

use std::sync::Arc;
use std::time::Duration;

use kelson_jsonrpc::{Id, RawValue};
use kelson_types::Method;

use crate::transport::Outcome;

pub use connections::{CloseReason, ConnectionStats};
pub use log::{LOG_TARGET, RequestLog};
pub use metrics::{CONTENT_TYPE, Metrics};
pub use probe::RequestProbe;

pub(crate) use probe::{ListenWatch, Named};

/// The transport a message arrived on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Transport {
    /// Newline-delimited JSON on a byte stream (stdio, or a socket with stdio framing).
    Stdio,
    /// Streamable HTTP.
    Http,
    /// A direct call of [`Server::handle`](crate::Server::handle) in the same process.
    InProcess,
}

impl Transport {
    /// The name used in logs: `stdio`, `http` or `in_process`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
            Transport::InProcess => "in_process",
        }
    }
}

/// 2026-07-28's client requests (`ClientRequest` in spec 2026-07-28 schema): a bounded set, which
/// probes keep without being asked for names and metrics label by name.
pub(crate) const CLIENT_REQUESTS: [Method<'static>; 10] = [
    Method::Discover,
    Method::ListTools,
    Method::CallTool,
    Method::ListResources,
    Method::ListResourceTemplates,
    Method::ReadResource,
    Method::ListPrompts,
    Method::GetPrompt,
    Method::Complete,
    Method::SubscriptionsListen,
];

/// The protocol era a request came in, with the revision of its legacy session: a bounded label,
/// since the revisions are the three of [`LEGACY_VERSIONS`](crate::LEGACY_VERSIONS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RequestEra {
    /// With the modern `_meta` envelope, or refused before it could be read.
    #[default]
    Modern,
    /// Without the modern envelope, from a handshake-era client: served on a session (a stdio
    /// process's, an HTTP session, or one made for the request by a stateless endpoint) that
    /// settled `version`, or, with `None`, refused for want of one (or an `initialize` that failed).
    Legacy {
        /// The revision the session settled on.
        version: Option<&'static str>,
    },
}

impl RequestEra {
    /// The era label: `modern` or `legacy`.
    pub const fn as_str(self) -> &'static str {
        match self {
            RequestEra::Modern => "modern",
            RequestEra::Legacy { .. } => "legacy",
        }
    }

    /// The revision of a legacy request's session.
    pub const fn legacy_version(self) -> Option<&'static str> {
        match self {
            RequestEra::Modern => None,
            RequestEra::Legacy { version } => version,
        }
    }

    pub(crate) const LABELS: [&'static str; 2] = ["modern", "legacy"];

    pub(crate) const fn index(self) -> usize {
        match self {
            RequestEra::Modern => 0,
            RequestEra::Legacy { .. } => 1,
        }
    }

    /// The era a probe keeps as one byte: 0 modern, 1 legacy without a session, 2 and on the
    /// legacy revisions in the order of [`LEGACY_VERSIONS`](crate::LEGACY_VERSIONS).
    pub(crate) fn from_byte(byte: u8) -> Self {
        match byte {
            0 => RequestEra::Modern,
            n => RequestEra::Legacy {
                version: usize::from(n)
                    .checked_sub(2)
                    .and_then(|i| crate::LEGACY_VERSIONS.get(i))
                    .copied(),
            },
        }
    }

    /// The byte [`from_byte`](Self::from_byte) reads for a legacy request of `version`.
    pub(crate) fn legacy_byte(version: Option<&str>) -> u8 {
        version
            .and_then(|v| crate::LEGACY_VERSIONS.iter().position(|known| *known == v))
            .and_then(|i| u8::try_from(i + 2).ok())
            .unwrap_or(1)
    }
}

/// How a request ended. An HTTP-level refusal, a JSON-RPC error and a tool's `isError` result are
/// three different outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestOutcome {
    /// A normal result.
    Success,
    /// A `tools/call` result with `isError: true`: the call worked, the tool reported a failure.
    ToolError,
    /// An `input_required` result (MRTR).
    InputRequired,
    /// A JSON-RPC error response.
    Error {
        /// The error code.
        code: i64,
    },
    /// Refused by the HTTP layer before the message was read (403, 405, 406, 413, 415, or a 400
    /// for a body that could not be read); no JSON-RPC processing happened.
    Rejected {
        /// The HTTP status.
        status: u16,
    },
    /// The client cancelled the request or went away before its response; nothing was sent.
    Cancelled,
}

impl RequestOutcome {
    /// The outcome class, a bounded label: `success`, `tool_error`, `input_required`, `error`,
    /// `rejected` or `cancelled`.
    pub const fn class(self) -> &'static str {
        match self {
            RequestOutcome::Success => "success",
            RequestOutcome::ToolError => "tool_error",
            RequestOutcome::InputRequired => "input_required",
            RequestOutcome::Error { .. } => "error",
            RequestOutcome::Rejected { .. } => "rejected",
            RequestOutcome::Cancelled => "cancelled",
        }
    }

    pub(crate) const fn index(self) -> usize {
        match self {
            RequestOutcome::Success => 0,
            RequestOutcome::ToolError => 1,
            RequestOutcome::InputRequired => 2,
            RequestOutcome::Error { .. } => 3,
            RequestOutcome::Rejected { .. } => 4,
            RequestOutcome::Cancelled => 5,
        }
    }

    pub(crate) const CLASSES: [&'static str; 6] = [
        "success",
        "tool_error",
        "input_required",
        "error",
        "rejected",
        "cancelled",
    ];
}

impl From<Outcome> for RequestOutcome {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Success => RequestOutcome::Success,
            Outcome::ToolError => RequestOutcome::ToolError,
            Outcome::InputRequired => RequestOutcome::InputRequired,
            Outcome::Error { code, .. } => RequestOutcome::Error { code },
        }
    }
}

/// What a request named, where its method names something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// Nothing named, or not known (the request failed before it was read, or the observers did
    /// not ask for names that would cost an allocation).
    None,
    /// The tool of a `tools/call`.
    Tool {
        /// The tool name.
        name: &'a str,
        /// Whether a tool of that name is registered. Only registered names are safe as metric
        /// labels: a client can send any name, and an unknown one is a -32602 error.
        registered: bool,
    },
    /// The prompt of a `prompts/get`.
    Prompt {
        /// The prompt name.
        name: &'a str,
        /// Whether a prompt of that name is registered.
        registered: bool,
    },
    /// The resource of a `resources/read`.
    Resource {
        /// The URI as the client sent it.
        uri: &'a str,
    },
}

/// One finished request.
#[derive(Clone, Copy, Debug)]
pub struct RequestRecord<'a> {
    /// Where it arrived.
    pub transport: Transport,
    /// Its JSON-RPC id, when one could be read.
    pub id: Option<&'a Id>,
    /// The era it came in, bounded.
    pub era: RequestEra,
    /// Its method, when it is one of 2026-07-28's client requests (`ClientRequest`), or any other
    /// when the observers asked for names ([`Wants::names`]); `None` when no method could be read
    /// or it was not kept. Another method is unbounded (an [`Other`](Method::Other) name is as
    /// sent): never use it as a metric label.
    pub method: Option<&'a Method<'a>>,
    /// The tool, prompt or resource it named.
    pub target: Target<'a>,
    /// The raw JSON of `params.arguments` of a `tools/call` or `prompts/get`, only when an observer
    /// asked for it ([`Wants::arguments`]).
    pub arguments: Option<&'a RawValue>,
    /// From arrival to the response (or to the cancellation).
    pub duration: Duration,
    /// How it ended.
    pub outcome: RequestOutcome,
}

impl RequestRecord<'_> {
    /// The method name to show: the spec's name, the name as sent for another method when it
    /// was kept, or `None` when no method could be read.
    pub fn method_name(&self) -> Option<&str> {
        self.method.map(Method::as_str)
    }
}

/// One client notification.
#[derive(Clone, Copy, Debug)]
pub struct NotificationRecord<'a> {
    /// Where it arrived.
    pub transport: Transport,
    /// Its method (an [`Other`](Method::Other) name is as sent, unbounded: never a metric label).
    pub method: &'a Method<'a>,
}

/// A `subscriptions/listen` stream that closed.
#[derive(Clone, Copy, Debug)]
pub struct ListenRecord<'a> {
    /// Where it was opened.
    pub transport: Transport,
    /// The listen request's id, which is also the subscription id.
    pub id: &'a Id,
    /// How long it was open.
    pub duration: Duration,
    /// Whether the server ended it with its final result (shutdown, end of input); otherwise
    /// the client closed or cancelled it.
    pub graceful: bool,
}

/// What an observer needs beyond the bounded essentials. Asked once per request, so a logger can
/// answer from its current level and cost nothing while disabled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wants {
    /// Names that cost an allocation to keep: resource URIs, unknown tool and prompt names, and
    /// methods other than 2026-07-28's client requests. Registered tool and prompt names are always kept (without copying).
    pub names: bool,
    /// The raw arguments of `tools/call` and `prompts/get`, which may hold user data.
    pub arguments: bool,
}

impl Wants {
    fn or(self, other: Wants) -> Wants {
        Wants {
            names: self.names || other.names,
            arguments: self.arguments || other.arguments,
        }
    }
}

/// Sees every request, client notification and listen stream a server handles, on every
/// transport.
///
/// Calls are made on the task that handles the message, synchronously: keep them short and never
/// block. For each request exactly one of [`request_finished`](Self::request_finished) and
/// [`listen_opened`](Self::listen_opened) follows [`request_started`](Self::request_started).
pub trait RequestObserver: Send + Sync + 'static {
    /// What this observer needs besides the bounded essentials; nothing by default.
    fn wants(&self) -> Wants {
        Wants::default()
    }

    /// A message is known to be a request (or was refused at the HTTP level); it is now in flight.
    fn request_started(&self, transport: Transport) {
        let _ = transport;
    }

    /// A request ended.
    fn request_finished(&self, record: &RequestRecord<'_>);

    /// A client notification arrived.
    fn notification(&self, record: &NotificationRecord<'_>) {
        let _ = record;
    }

    /// A `subscriptions/listen` request was accepted: the request in flight became an open stream.
    fn listen_opened(&self, transport: Transport, id: &Id) {
        let _ = (transport, id);
    }

    /// A listen stream closed.
    fn listen_closed(&self, record: &ListenRecord<'_>) {
        let _ = record;
    }
}

/// Several observers as one. Aligned, like the metrics registry, to keep the `Arc`'s reference
/// count off the line of the observer list.
#[repr(align(64))]
pub(crate) struct Fanout(pub(crate) Box<[Arc<dyn RequestObserver>]>);

impl RequestObserver for Fanout {
    fn wants(&self) -> Wants {
        self.0
            .iter()
            .fold(Wants::default(), |acc, o| acc.or(o.wants()))
    }

    fn request_started(&self, transport: Transport) {
        for o in &self.0 {
            o.request_started(transport);
        }
    }

    fn request_finished(&self, record: &RequestRecord<'_>) {
        for o in &self.0 {
            o.request_finished(record);
        }
    }

    fn notification(&self, record: &NotificationRecord<'_>) {
        for o in &self.0 {
            o.notification(record);
        }
    }

    fn listen_opened(&self, transport: Transport, id: &Id) {
        for o in &self.0 {
            o.listen_opened(transport, id);
        }
    }

    fn listen_closed(&self, record: &ListenRecord<'_>) {
        for o in &self.0 {
            o.listen_closed(record);
        }
    }
}

#[cfg(test)]
mod tests;
