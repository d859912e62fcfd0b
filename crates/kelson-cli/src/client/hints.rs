//! What the user can do about an error: a hint added to the message when the error has a usual
//! cause (nothing listening, a wrong endpoint path, the Host check of `kelson serve`).

use std::process::ExitStatus;

use http::StatusCode;
use kelson_client::{ErrorKind, HttpError};
use kelson_jsonrpc::{ErrorObject, code};
use kelson_types::Method;

use super::{CliError, Common, words};

/// How many of the last lines of a failed server's stderr are shown.
const STDERR_TAIL: usize = 20;

/// How a stdio server ended, once the client closed it.
pub(crate) struct ServerEnd {
    /// What it wrote on stderr, when it was captured.
    pub(crate) stderr: Option<String>,
    /// Its exit status.
    pub(crate) status: Option<ExitStatus>,
}

/// `error` with a hint, when one applies to it and to how the server was reached, and with the end
/// of a stdio server's stderr when the server failed: when it would not start (the error carries
/// it), or when `end` says how it ended after an error of the connection, a timeout or a broken
/// protocol. A JSON-RPC error or a tool's error is the server working as it should, and gets
/// none of it.
pub(crate) fn explain(error: CliError, common: &Common, end: Option<ServerEnd>) -> CliError {
    let CliError::Client(client_error) = &error else {
        return error;
    };
    let failed = matches!(
        client_error.kind(),
        ErrorKind::Transport | ErrorKind::Timeout
    ) || matches!(
        client_error,
        kelson_client::Error::InvalidServerBehaviour(_) | kelson_client::Error::ListTooLong { .. }
    );
    let end = end.filter(|_| failed);
    let mut hint = hint(client_error, common);
    if hint.is_none()
        && let kelson_client::Error::Disconnected { .. } = client_error
        && let Some(status) = end.as_ref().and_then(|e| e.status)
        && !status.success()
    {
        hint = Some(describe_exit(status));
    }
    let stderr = match client_error {
        kelson_client::Error::ServerStart { stderr_tail, .. } => stderr_tail.clone(),
        _ => end
            .and_then(|e| e.stderr)
            .and_then(|text| tail(&text, STDERR_TAIL)),
    };
    if hint.is_none() && stderr.is_none() {
        return error;
    }
    CliError::Explained {
        error: Box::new(error),
        hint,
        stderr,
    }
}

fn hint(error: &kelson_client::Error, common: &Common) -> Option<String> {
    let http = match error {
        kelson_client::Error::Http(http) => http,
        kelson_client::Error::ServerStart { .. } => return Some(stdio_hint(common)),
        kelson_client::Error::Protocol { method, error } => return protocol_hint(method, error),
        kelson_client::Error::ListTooLong { .. } => {
            return Some(
                "the server keeps answering with a new nextCursor: its pagination does not end \
                 (a fault of the server), or its list is larger than kelson accepts"
                    .to_owned(),
            );
        }
        kelson_client::Error::NotModern { .. } => {
            return Some(
                "it looks like a handshake-era (2025) server: leave out --era modern, or use \
                 --era legacy"
                    .to_owned(),
            );
        }
        _ => return None,
    };
    let url = common
        .url
        .as_deref()
        .and_then(|u| http::Uri::try_from(u).ok());
    match http {
        HttpError::Connect { .. } if http.is_not_tls() => {
            let plain = common
                .url
                .as_deref()
                .and_then(|u| {
                    u.get(..8)
                        .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
                        .map(|_| &u[8..])
                })
                .map_or_else(|| "http://...".to_owned(), |rest| format!("http://{rest}"));
            Some(format!("try --url {plain}"))
        }
        HttpError::Connect { reason, .. } if reason == "connection refused" => {
            Some("is the server running?".to_owned())
        }
        HttpError::Connect { reason, .. } if reason.starts_with("cannot resolve") => {
            Some("is the host name right?".to_owned())
        }
        HttpError::Status { status, .. } if *status == StatusCode::NOT_FOUND => {
            let path = url.as_ref().map_or("/", http::Uri::path);
            Some(if path == "/mcp" {
                "is this the server's MCP endpoint?".to_owned()
            } else {
                format!("nothing is served at {path}; is the path /mcp? (kelson serve's default)")
            })
        }
        HttpError::Status { status, body }
            if matches!(
                *status,
                StatusCode::FORBIDDEN | StatusCode::MISDIRECTED_REQUEST
            ) && body.contains("Host") =>
        {
            // The name the server saw: a Host header given with -H, else the URL's.
            let host = common
                .headers
                .iter()
                .filter_map(|h| h.split_once(':'))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
                .map(|(_, value)| value.trim().to_owned())
                .or_else(|| url.as_ref().and_then(|u| u.host()).map(str::to_owned))
                .unwrap_or_else(|| "NAME".to_owned());
            let host = host
                .rsplit_once(':')
                .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
                .map_or(host.as_str(), |(name, _)| name)
                .to_owned();
            Some(format!(
                "the server refused the host name {host:?} (a guard against DNS rebinding); \
                 if it is kelson serve, start it with --allowed-host {host}"
            ))
        }
        _ => None,
    }
}

/// For a command that never spoke MCP on stdio: whether it serves MCP on stdio at all, and for
/// `kelson serve`, which serves HTTP unless told otherwise, the flag that makes it.
fn stdio_hint(common: &Common) -> String {
    let words = common
        .stdio
        .as_deref()
        .and_then(|line| words::split(line).ok())
        .unwrap_or_default();
    let serve_without_stdio =
        words.iter().any(|w| w == "serve") && !words.iter().any(|w| w == "--stdio");
    if serve_without_stdio {
        "does it serve MCP on stdio? kelson serve does with --stdio (it serves HTTP without it)"
            .to_owned()
    } else {
        "does it serve MCP on stdio?".to_owned()
    }
}

/// "the server exited with status 101", "the server was killed by signal 11".
fn describe_exit(status: ExitStatus) -> String {
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("the server was killed by signal {signal}");
    }
    match status.code() {
        Some(code) => format!("the server exited with status {code}"),
        None => format!("the server ended ({status})"),
    }
}

/// The last `n` lines of `text` that are not blank; `None` if there are none.
fn tail(text: &str, n: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(n)..].join("\n");
    (!tail.is_empty()).then_some(tail)
}

/// For a JSON-RPC error with a usual cause: a capability of ours the server needs (-32021), or a
/// feature the server does not have (-32601 on its methods).
fn protocol_hint(method: &str, error: &ErrorObject) -> Option<String> {
    match error.code {
        code::MISSING_REQUIRED_CLIENT_CAPABILITY => {
            let required: Vec<String> = error
                .data
                .as_ref()
                .and_then(|d| d.get("requiredCapabilities"))
                .and_then(|c| c.as_object())
                .map(|c| c.keys().cloned().collect())
                .unwrap_or_default();
            if required.iter().any(|c| c == "roots") {
                Some("the server needs roots: offer them with --root DIR (repeatable)".to_owned())
            } else if required.iter().any(|c| c == "sampling") {
                Some("the server needs sampling, which kelson does not offer".to_owned())
            } else if required.is_empty() {
                None
            } else {
                Some(format!(
                    "the server needs client capabilities kelson did not declare: {}",
                    required.join(", ")
                ))
            }
        }
        // Only a modern-only server answers initialize with the versions it speaks.
        code::UNSUPPORTED_PROTOCOL_VERSION
            if matches!(Method::parse(method), Method::Initialize) =>
        {
            Some("the server speaks only the modern protocol: leave out --era legacy".to_owned())
        }
        code::METHOD_NOT_FOUND if method.starts_with("tasks/") => {
            Some("this server does not support tasks".to_owned())
        }
        code::METHOD_NOT_FOUND => {
            let feature = method
                .split('/')
                .next()
                .filter(|f| matches!(*f, "tools" | "prompts" | "resources" | "completion"))?;
            let feature = if feature == "completion" {
                "completions"
            } else {
                feature
            };
            Some(format!(
                "this server offers no {feature} (kelson discover shows what it offers)"
            ))
        }
        // spec SEP-2663: an unknown task, an expired one and another principal's look the same.
        code::INVALID_PARAMS if method.starts_with("tasks/") => Some(
            "no such task on this server: the id is wrong, the task expired, or another \
             principal created it (a server started with --stdio keeps its tasks only while it \
             runs, unless it shares a task store)"
                .to_owned(),
        ),
        _ => None,
    }
}
