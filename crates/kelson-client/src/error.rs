//! The crate's one error type.

use std::time::Duration;

use kelson_http::client::HttpError;
use kelson_jsonrpc::{ErrorObject, code};
use kelson_types::Method;

/// What went wrong with a request, told apart by who is to blame.
///
/// - [`Error::Protocol`]: the server answered with a JSON-RPC error.
/// - [`Error::Io`], [`Error::Http`], [`Error::Disconnected`], [`Error::Spawn`],
///   [`Error::ServerStart`]: the transport failed.
/// - [`Error::Timeout`]: a local timeout; the request was cancelled, and the server is not blamed.
/// - [`Error::InvalidServerBehaviour`]: the server broke the protocol.
/// - the rest are local: a failed or missing input handler, no common protocol version, a feature
///   the server does not offer.
///
/// [`Error::kind`] sorts them into the classes a command-line client maps to exit codes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered the request with a JSON-RPC error.
    #[error("{method}: {error}")]
    Protocol {
        /// The method of the request.
        method: String,
        /// The error object, as the server sent it.
        #[source]
        error: ErrorObject,
    },
    /// Reading from or writing to the server's pipe failed.
    #[error("I/O error talking to the server: {0}")]
    Io(#[from] std::io::Error),
    /// The HTTP exchange failed: connection, status without a JSON-RPC body, 413, 431, framing.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// Obtaining or renewing an OAuth token for the server failed ([`crate::auth`]).
    #[error(transparent)]
    Auth(#[from] crate::auth::AuthError),
    /// The server process could not be started.
    #[error("{}", spawn_message(program, source))]
    Spawn {
        /// The program that was run.
        program: String,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A server started over stdio never spoke MCP: it exited, printed something that is not
    /// JSON-RPC on its stdout, or said nothing at all. What it printed comes with the error.
    #[error("the server {command:?} {}", describe_start(problem, stdout))]
    ServerStart {
        /// The command line.
        command: String,
        /// What went wrong.
        problem: StartProblem,
        /// The first lines it printed on stdout that are not JSON-RPC, cut short.
        stdout: Vec<String>,
        /// The last lines it wrote on stderr, when stderr is captured ([`Stderr::Capture`]).
        ///
        /// [`Stderr::Capture`]: crate::Stderr::Capture
        stderr_tail: Option<String>,
    },
    /// The connection ended (the child exited, the pipe or the response stream closed) before the
    /// answer arrived, or the client was closed.
    #[error("the connection to the server ended: {reason}")]
    Disconnected {
        /// What was seen.
        reason: String,
    },
    /// No answer within the time allowed. This is a local decision: the request was cancelled, and
    /// nothing about it is attributed to the server.
    #[error("{method}: no answer within {after:?} (local timeout{}); the request was cancelled",
        if *.hard { ", hard maximum" } else { "" })]
    Timeout {
        /// The method of the request.
        method: String,
        /// How long the client waited.
        after: Duration,
        /// True when the hard maximum fired, false for the idle timeout that progress resets.
        hard: bool,
    },
    /// The caller cancelled the request ([`Request::cancel_token`]); a task it had become was
    /// cancelled with `tasks/cancel`.
    ///
    /// [`Request::cancel_token`]: crate::Request::cancel_token
    #[error("{method}: cancelled by the caller{}", task_note(task_id.as_deref()))]
    Cancelled {
        /// The method of the request.
        method: String,
        /// The task the call had become, if it had.
        task_id: Option<String>,
    },
    /// A task reached the `cancelled` status without this call cancelling it: another client (or
    /// the same principal elsewhere) cancelled it, or the server did.
    #[error("task {task_id} was cancelled{}", status_note(status_message.as_deref()))]
    TaskCancelled {
        /// The task.
        task_id: String,
        /// The task's last status message, if it had one.
        status_message: Option<String>,
    },
    /// The server broke the protocol.
    #[error("invalid server behaviour: {0}")]
    InvalidServerBehaviour(#[from] Violation),
    /// A `list_all_*` walk reached one of the client's bounds before the server's list ended:
    /// the server kept answering with a new `nextCursor` (a list that never ends, or one larger
    /// than this client accepts). What was received is dropped. The bounds are set with
    /// [`ClientBuilder::max_list_pages`], [`ClientBuilder::max_list_items`] and
    /// [`ClientBuilder::max_list_bytes`].
    ///
    /// [`ClientBuilder::max_list_pages`]: crate::ClientBuilder::max_list_pages
    /// [`ClientBuilder::max_list_items`]: crate::ClientBuilder::max_list_items
    /// [`ClientBuilder::max_list_bytes`]: crate::ClientBuilder::max_list_bytes
    #[error(
        "{method}: the server's list did not end within {limit}: it sent {pages} pages \
         ({items} items, {}), each but the last with a new nextCursor; the walk was stopped",
        describe_bytes(*bytes)
    )]
    ListTooLong {
        /// The list method.
        method: String,
        /// The bound that was reached.
        limit: ListLimit,
        /// The pages received.
        pages: usize,
        /// The items those pages held.
        items: usize,
        /// The size of those pages' results, in bytes.
        bytes: usize,
    },
    /// An input handler of the application failed.
    #[error("the {method} input handler failed: {source}")]
    InputHandler {
        /// The embedded method it was answering.
        method: &'static str,
        /// The handler's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server asked for input the application installed no handler for (sampling or roots;
    /// elicitation without a handler is declined instead).
    #[error("the server asked for {method}, and no handler for it is installed")]
    MissingHandler {
        /// The embedded method.
        method: &'static str,
    },
    /// The server speaks no protocol revision this client does.
    #[error("no common protocol version: the server supports {supported:?}, this client {ours:?}")]
    UnsupportedVersion {
        /// What the server offers.
        supported: Vec<String>,
        /// What this client speaks.
        ours: Vec<&'static str>,
    },
    /// The connection was forced to the modern era ([`EraChoice::Modern`]) and the server answered
    /// the `server/discover` probe as a handshake-era (2025) server does; `initialize` was not
    /// tried.
    ///
    /// [`EraChoice::Modern`]: crate::EraChoice::Modern
    #[error(
        "the server does not speak the modern protocol ({}): {answer}",
        crate::MODERN_VERSIONS.join(", ")
    )]
    NotModern {
        /// What the server answered, in words.
        answer: String,
    },
    /// The server does not offer what was asked for (for example `listen` on a legacy server without
    /// a notification stream).
    #[error("not supported by this server: {0}")]
    Unsupported(&'static str),
    /// A value given by the application cannot be sent (a header value with a line break, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// One of the bounds of a `list_all_*` walk, with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListLimit {
    /// At most this many pages ([`ClientBuilder::max_list_pages`]).
    ///
    /// [`ClientBuilder::max_list_pages`]: crate::ClientBuilder::max_list_pages
    Pages(usize),
    /// At most this many items over all pages ([`ClientBuilder::max_list_items`]).
    ///
    /// [`ClientBuilder::max_list_items`]: crate::ClientBuilder::max_list_items
    Items(usize),
    /// At most this many bytes of results over all pages ([`ClientBuilder::max_list_bytes`]).
    ///
    /// [`ClientBuilder::max_list_bytes`]: crate::ClientBuilder::max_list_bytes
    Bytes(usize),
}

impl std::fmt::Display for ListLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListLimit::Pages(n) => write!(f, "the bound of {n} pages"),
            ListLimit::Items(n) => write!(f, "the bound of {n} items"),
            ListLimit::Bytes(n) => write!(f, "the bound of {}", describe_bytes(*n)),
        }
    }
}

/// `512 bytes`, `64 KiB`, `1.5 MiB`: a size as a person reads it.
fn describe_bytes(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    let (unit, scale) = match n {
        n if n >= MIB => ("MiB", MIB),
        n if n >= KIB => ("KiB", KIB),
        _ => return format!("{n} bytes"),
    };
    if n.is_multiple_of(scale) {
        format!("{} {unit}", n / scale)
    } else {
        let value = n as f64 / scale as f64;
        format!("{value:.1} {unit}")
    }
}

fn task_note(task: Option<&str>) -> String {
    task.map(|t| format!(" (task {t} cancelled with tasks/cancel)"))
        .unwrap_or_default()
}

fn status_note(message: Option<&str>) -> String {
    message.map(|m| format!(": {m}")).unwrap_or_default()
}

/// Why a program could not be started, as a shell would say it for the usual reasons.
fn spawn_message(program: &str, source: &std::io::Error) -> String {
    match source.kind() {
        std::io::ErrorKind::NotFound => format!("command not found: {program}"),
        std::io::ErrorKind::PermissionDenied => format!("cannot run {program}: permission denied"),
        _ => format!("could not start the server {program:?}: {source}"),
    }
}

/// Why a server started over stdio never spoke MCP.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartProblem {
    /// It closed its stdout before answering: it exited with this status, or (`None`) it keeps
    /// running without its stdout.
    Exited(Option<std::process::ExitStatus>),
    /// It printed lines that are not JSON-RPC, and nothing else.
    NotJsonRpc,
    /// It printed nothing on stdout within this time (the era probe's wait, then `initialize`'s).
    Silent(Duration),
}

impl std::fmt::Display for StartProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartProblem::Exited(None) => f.write_str("closed its stdout before answering"),
            StartProblem::Exited(Some(status)) => {
                #[cfg(unix)]
                if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(status) {
                    return write!(f, "was killed by signal {signal} before answering");
                }
                match status.code() {
                    Some(code) => write!(f, "exited with status {code} before answering"),
                    None => write!(f, "exited ({status}) before answering"),
                }
            }
            StartProblem::NotJsonRpc => {
                f.write_str("printed text that is not JSON-RPC on its stdout")
            }
            StartProblem::Silent(after) => {
                write!(f, "said nothing on its stdout within {}", seconds(*after))
            }
        }
    }
}

/// `2s`, `1.5s`, `70s`: a wait as a person would write it.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{s:.1}s")
    }
}

/// The problem and what the server printed on stdout, for [`Error::ServerStart`]'s message.
fn describe_start(problem: &StartProblem, stdout: &[String]) -> String {
    if stdout.is_empty() {
        return problem.to_string();
    }
    let quoted: Vec<String> = stdout.iter().map(|l| format!("{l:?}")).collect();
    let quoted = quoted.join(", ");
    match problem {
        StartProblem::NotJsonRpc => format!("{problem}: {quoted}"),
        _ => format!("{problem}; it printed {quoted} on its stdout"),
    }
}

/// How the server broke the protocol.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// A `resultType` the client does not recognise (spec 2026-07-28 basic/index: treat as invalid).
    #[error("{method}: unknown resultType {value}")]
    UnknownResultType {
        /// The method of the request.
        method: String,
        /// The value, as JSON.
        value: String,
    },
    /// `input_required` on a method that does not allow it.
    #[error("{method}: input_required is not allowed on this method")]
    UnexpectedInputRequired {
        /// The method of the request.
        method: String,
    },
    /// More `input_required` rounds than the configured bound.
    #[error("{method}: still input_required after {rounds} rounds (the bound)")]
    TooManyRounds {
        /// The method of the request.
        method: String,
        /// The bound that was reached.
        rounds: usize,
    },
    /// The first message of a listen stream was not the acknowledgement.
    #[error("subscriptions/listen: the first message was {first}, not the acknowledgement")]
    NotAcknowledged {
        /// What came first.
        first: String,
    },
    /// The acknowledgement honours something that was not requested.
    #[error("subscriptions/listen: the acknowledgement honours {extra}, which was not requested")]
    AckMismatch {
        /// What was acknowledged without being requested.
        extra: String,
    },
    /// A result or message that does not decode as its method's type.
    #[error("{method}: malformed message: {detail}")]
    Malformed {
        /// The method of the request, or the notification.
        method: String,
        /// Why it does not decode.
        detail: String,
    },
    /// A task status this client does not know.
    #[error("task {task_id}: unknown status {status:?}")]
    UnknownTaskStatus {
        /// The task.
        task_id: String,
        /// The status, as sent.
        status: String,
    },
    /// Pagination returned a cursor already followed.
    #[error("{method}: the server returned cursor {cursor:?} twice")]
    CursorLoop {
        /// The list method.
        method: String,
        /// The repeated cursor.
        cursor: String,
    },
}

/// The class of an [`Error`], for mapping to exit codes or retry policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The server answered with a JSON-RPC error, or broke the protocol.
    Protocol,
    /// The transport failed: I/O, HTTP, the process or the connection.
    Transport,
    /// A local timeout cancelled the request.
    Timeout,
    /// The caller cancelled the request.
    Cancelled,
    /// A local problem: a handler, an argument, no common version, an unsupported feature.
    Local,
}

impl Error {
    /// The class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Protocol { .. }
            | Error::InvalidServerBehaviour(_)
            | Error::ListTooLong { .. }
            | Error::NotModern { .. }
            | Error::TaskCancelled { .. } => ErrorKind::Protocol,
            Error::Cancelled { .. } => ErrorKind::Cancelled,
            Error::Io(_)
            | Error::Http(_)
            | Error::Auth(_)
            | Error::Spawn { .. }
            | Error::ServerStart { .. }
            | Error::Disconnected { .. } => ErrorKind::Transport,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::InputHandler { .. }
            | Error::MissingHandler { .. }
            | Error::UnsupportedVersion { .. }
            | Error::Unsupported(_)
            | Error::InvalidArgument(_) => ErrorKind::Local,
        }
    }

    /// The JSON-RPC error the server sent, if this is one.
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match self {
            Error::Protocol { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The JSON-RPC error code the server sent, if this is a protocol error.
    pub fn code(&self) -> Option<i64> {
        self.error_object().map(|e| e.code)
    }

    /// True when the server said the resource does not exist: -32602 on `resources/read`
    /// (2026-07-28), or the retired -32002 that legacy servers still send (spec 2026-07-28 basic:
    /// clients SHOULD accept it).
    pub fn is_resource_not_found(&self) -> bool {
        match self {
            Error::Protocol { method, error } => {
                error.code == code::LEGACY_RESOURCE_NOT_FOUND
                    || (error.code == code::INVALID_PARAMS
                        && matches!(Method::parse(method), Method::ReadResource))
            }
            _ => false,
        }
    }

    pub(crate) fn protocol(method: &str, error: ErrorObject) -> Self {
        Error::Protocol {
            method: method.to_owned(),
            error,
        }
    }

    pub(crate) fn malformed(method: &str, detail: impl std::fmt::Display) -> Self {
        Error::InvalidServerBehaviour(Violation::Malformed {
            method: method.to_owned(),
            detail: detail.to_string(),
        })
    }

    pub(crate) fn disconnected(reason: impl Into<String>) -> Self {
        Error::Disconnected {
            reason: reason.into(),
        }
    }
}

/// A cloneable description of why a connection ended, handed to every request it strands.
#[derive(Debug, Clone)]
pub(crate) struct Closed(pub(crate) std::sync::Arc<str>);

impl Closed {
    pub(crate) fn to_error(&self) -> Error {
        Error::disconnected(&*self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_separate_blame() {
        let p = Error::protocol("tools/call", ErrorObject::invalid_params("x"));
        assert_eq!(p.kind(), ErrorKind::Protocol);
        assert_eq!(p.code(), Some(-32602));
        let t = Error::Timeout {
            method: "tools/call".into(),
            after: Duration::from_secs(1),
            hard: false,
        };
        assert_eq!(t.kind(), ErrorKind::Timeout);
        assert!(t.to_string().contains("local timeout"));
        assert_eq!(Error::disconnected("eof").kind(), ErrorKind::Transport);
        let v = Error::from(Violation::TooManyRounds {
            method: "tools/call".into(),
            rounds: 8,
        });
        assert_eq!(v.kind(), ErrorKind::Protocol);
        assert!(v.to_string().contains("8 rounds"));
    }

    #[test]
    fn a_list_too_long_names_the_bound_and_what_came() {
        let e = Error::ListTooLong {
            method: "tools/list".into(),
            limit: ListLimit::Bytes(64 * 1024 * 1024),
            pages: 70,
            items: 70_000,
            bytes: 67_200_000,
        };
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert_eq!(
            e.to_string(),
            "tools/list: the server's list did not end within the bound of 64 MiB: it sent 70 \
             pages (70000 items, 64.1 MiB), each but the last with a new nextCursor; the walk \
             was stopped"
        );
        assert_eq!(ListLimit::Pages(3).to_string(), "the bound of 3 pages");
        assert_eq!(ListLimit::Items(9).to_string(), "the bound of 9 items");
        assert_eq!(describe_bytes(512), "512 bytes");
        assert_eq!(describe_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn resource_not_found_in_both_eras() {
        let legacy = Error::protocol(
            "resources/read",
            ErrorObject::new(-32002, "Resource not found"),
        );
        assert!(legacy.is_resource_not_found());
        let modern = Error::protocol("resources/read", ErrorObject::invalid_params("nope"));
        assert!(modern.is_resource_not_found());
        let other = Error::protocol("tools/call", ErrorObject::invalid_params("nope"));
        assert!(!other.is_resource_not_found());
    }
}
