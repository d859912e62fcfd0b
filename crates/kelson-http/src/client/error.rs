//! Why an HTTP exchange failed, in words a person can act on: a refused connection names the
//! address and the reason rather than the chain of library errors, and an HTML error page (a proxy's
//! or a web server's) is summarised by its title rather than dumped.

use std::error::Error as _;

use http::StatusCode;

use crate::sse::SseError;

/// Why an HTTP exchange failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The server URL cannot be used.
    #[error("invalid server URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// No connection could be made: refused, unreachable, a name that does not resolve, a TLS
    /// handshake that failed.
    #[error("cannot connect to {addr}: {reason}")]
    Connect {
        /// `host:port` of the server URL.
        addr: String,
        /// What went wrong, in a few words ("connection refused", "timed out", ...).
        reason: String,
        /// The underlying error.
        #[source]
        source: reqwest::Error,
    },
    /// A file of trusted CA certificates could not be read or holds no PEM certificate.
    #[error("CA certificates {}: {reason}", path.display())]
    CaFile {
        /// The file as given.
        path: std::path::PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// The request could not be sent or its response could not be read once connected (reset,
    /// ...).
    #[error("HTTP request failed: {0}")]
    Request(#[source] reqwest::Error),
    /// HTTP 413: the server's request body size limit was hit.
    #[error(
        "HTTP 413 Payload Too Large: the request body ({size} bytes) exceeds the server's request body size limit"
    )]
    PayloadTooLarge {
        /// The size of the body that was refused.
        size: usize,
    },
    /// HTTP 431: the server's request header size limit was hit.
    #[error(
        "HTTP 431 Request Header Fields Too Large: the request headers ({size} bytes, including Authorization, Mcp-Name and Mcp-Param-*) exceed the server's header size limit"
    )]
    HeadersTooLarge {
        /// The total size of the header names and values sent.
        size: usize,
    },
    /// A non-2xx status without a JSON body.
    #[error("HTTP {status}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Status {
        /// The status.
        status: StatusCode,
        /// The start of the body, or the summary of an HTML page, for the error message.
        body: String,
    },
    /// HTTP 401, or 403 with a `WWW-Authenticate` challenge, without a JSON-RPC body: the server
    /// wants credentials, or other ones (RFC 6750 §3). The challenges say where to get them.
    #[error("HTTP {status}{}: {}", if body.is_empty() { String::new() } else { format!(" ({body})") }, describe_challenge(www_authenticate))]
    Unauthorized {
        /// 401 or 403.
        status: StatusCode,
        /// The `WWW-Authenticate` values, as sent.
        www_authenticate: Vec<String>,
        /// The start of the body, for the message.
        body: String,
    },
    /// A 2xx answer that is neither JSON nor an event stream.
    #[error(
        "the server answered with Content-Type {0:?}; expected application/json or text/event-stream"
    )]
    UnexpectedContentType(String),
    /// A JSON body or an event larger than the configured bound.
    #[error("a response message exceeds the limit of {limit} bytes")]
    MessageTooLarge {
        /// The bound.
        limit: usize,
    },
    /// The event stream could not be parsed further.
    #[error(transparent)]
    Sse(#[from] SseError),
}

/// What a refusal for authorization says, in words.
fn describe_challenge(values: &[String]) -> String {
    let all = values.join(", ");
    if all.is_empty() {
        "the server requires authorization".to_owned()
    } else if all.contains("insufficient_scope") {
        format!("the token lacks a scope the server requires ({all})")
    } else {
        format!("the server requires authorization ({all})")
    }
}

/// How much of a plain body an error message keeps.
const KEEP: usize = 512;
/// How much of an HTML page is searched for its title or first text.
const HTML_SCAN: usize = 64 * 1024;
/// The longest summary of an HTML page.
const SUMMARY: usize = 160;

impl HttpError {
    /// A [`HttpError::Status`] for `status`, keeping the start of `body` for the message; an HTML
    /// page is summarised by its `<title>`, or its first text when it has none.
    pub fn status(status: StatusCode, body: &[u8]) -> Self {
        let scanned = String::from_utf8_lossy(&body[..body.len().min(HTML_SCAN)]);
        let body = match html_summary(&scanned) {
            Some(summary) if summary.is_empty() => "an HTML page".to_owned(),
            Some(summary) => format!("an HTML page: {summary:?}"),
            None => {
                let text = String::from_utf8_lossy(&body[..body.len().min(KEEP)]);
                text.trim().to_owned()
            }
        };
        HttpError::Status { status, body }
    }

    /// True when no connection could be made to an `https://` URL because the server answered
    /// the TLS handshake in plain text: an `http://` server, most likely.
    pub fn is_not_tls(&self) -> bool {
        matches!(self, HttpError::Connect { reason, .. } if reason == NOT_TLS)
    }

    /// The error for a request that reqwest could not send: [`HttpError::Connect`] when no
    /// connection was made to `url`, else [`HttpError::Request`].
    pub(crate) fn sending(url: &reqwest::Url, source: reqwest::Error) -> Self {
        if !source.is_connect() {
            return HttpError::Request(source);
        }
        let host = url.host_str().unwrap_or_default();
        let addr = match url.port_or_known_default() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        HttpError::Connect {
            addr,
            reason: connect_reason(&source),
            source,
        }
    }
}

/// The reason a connection failed, in a few words: the kind of the I/O error at the bottom of the
/// chain when it is a common one, else the innermost message, marked when name resolution failed.
fn connect_reason(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "timed out".to_owned();
    }
    let mut resolving = false;
    let mut innermost = None;
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(reason) = tls_reason(cause) {
            return reason.to_owned();
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            let known = match io.kind() {
                std::io::ErrorKind::ConnectionRefused => Some("connection refused"),
                std::io::ErrorKind::TimedOut => Some("timed out"),
                std::io::ErrorKind::ConnectionReset => Some("connection reset"),
                std::io::ErrorKind::HostUnreachable => Some("host unreachable"),
                std::io::ErrorKind::NetworkUnreachable => Some("network unreachable"),
                _ => None,
            };
            if let Some(known) = known {
                return known.to_owned();
            }
        }
        // hyper-util says "dns error" for a name that does not resolve.
        if cause.to_string().starts_with("dns error") {
            resolving = true;
        }
        innermost = Some(cause);
        source = cause.source();
    }
    let text = innermost.map_or_else(|| error.to_string(), ToString::to_string);
    if resolving {
        format!("cannot resolve the host name ({text})")
    } else {
        text
    }
}

/// What a TLS failure at the start of a connection says about the server, when it says
/// something a person can act on.
///
/// A server that speaks plain HTTP answers the ClientHello with an HTTP response (or an error
/// page); rustls reads its first byte (`H` of `HTTP/1.1`) as a record's content type, which no
/// TLS record has, and reports "received corrupt message of type InvalidContentType".
fn tls_reason(cause: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    // tokio-rustls wraps rustls's error in an io::Error, and reqwest that in another; the
    // `source` of an io::Error skips the error it holds, so the wrappers are opened here.
    let mut error: &(dyn std::error::Error + 'static) = cause;
    while let Some(io) = error.downcast_ref::<std::io::Error>() {
        error = io.get_ref()?;
    }
    match error.downcast_ref::<rustls::Error>()? {
        rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => Some(NOT_TLS),
        _ => None,
    }
}

/// The reason of a [`HttpError::Connect`] to an `https://` URL whose server answered in plain
/// HTTP.
const NOT_TLS: &str = "the server does not speak TLS: it answered the handshake in plain text, as an http:// server does";

/// The title of an HTML page, else its first text, whitespace collapsed and cut to [`SUMMARY`]
/// characters; `None` when `text` does not look like HTML. Error pages of proxies and web servers
/// are HTML, and their markup says nothing to a person reading a terminal.
fn html_summary(text: &str) -> Option<String> {
    // ASCII lowercasing keeps byte offsets, so positions in `lower` are positions in `text`.
    let lower = text.to_ascii_lowercase();
    let start = lower.trim_start();
    if !(start.starts_with("<!doctype html") || start.starts_with("<html")) {
        return None;
    }
    if let Some(open) = lower.find("<title")
        && let Some(close) = lower[open..].find('>')
    {
        let from = open + close + 1;
        let to = lower[from..]
            .find("</title")
            .map_or(lower.len(), |end| from + end);
        let title = collapse(&decode_entities(&text[from..to]));
        if !title.is_empty() {
            return Some(title);
        }
    }
    let body = lower.find("<body").map_or(0, |i| i);
    Some(collapse(&decode_entities(&visible_text(&text[body..]))))
}

/// The text outside tags, without the content of `script` and `style` elements.
fn visible_text(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        out.push(' ');
        let tag = &rest[open..];
        let lower = tag.get(..7).unwrap_or(tag).to_ascii_lowercase();
        let skip_to = ["script", "style"]
            .into_iter()
            .find(|name| lower[1..].starts_with(name))
            .and_then(|name| {
                let closing = format!("</{name}");
                tag.to_ascii_lowercase().find(&closing)
            });
        let tag = match skip_to {
            Some(end) => &tag[end..],
            None => tag,
        };
        match tag.find('>') {
            Some(close) => rest = &tag[close + 1..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

fn decode_entities(text: &str) -> String {
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Whitespace runs become one space; the result is cut to [`SUMMARY`] characters with an ellipsis.
fn collapse(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ");
    if joined.chars().count() <= SUMMARY {
        return joined;
    }
    let mut cut: String = joined.chars().take(SUMMARY - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_errors_name_the_limit() {
        let e = HttpError::PayloadTooLarge { size: 10 };
        assert!(e.to_string().contains("body size limit"));
        let e = HttpError::HeadersTooLarge { size: 10 };
        assert!(e.to_string().contains("header size limit"));
        let e = HttpError::status(StatusCode::BAD_GATEWAY, b"  upstream down \n");
        assert_eq!(e.to_string(), "HTTP 502 Bad Gateway: upstream down");
    }

    #[test]
    fn html_pages_are_summarised_by_title_or_first_text() {
        let page = b"<!DOCTYPE html>\n<html><head><style>body { color: red }</style>\n\
            <TITLE>502  Bad\n Gateway &amp; more</TITLE></head>\
            <body><h1>502 Bad Gateway</h1><hr><center>nginx</center></body></html>";
        let e = HttpError::status(StatusCode::BAD_GATEWAY, page);
        assert_eq!(
            e.to_string(),
            "HTTP 502 Bad Gateway: an HTML page: \"502 Bad Gateway & more\""
        );

        let page = b"<html><head><script>var x = '<b>';</script></head>\
            <body>\n  <h1>Not   here</h1> <p>Try &lt;elsewhere&gt;</p></body></html>";
        let e = HttpError::status(StatusCode::NOT_FOUND, page);
        assert_eq!(
            e.to_string(),
            "HTTP 404 Not Found: an HTML page: \"Not here Try <elsewhere>\""
        );

        // A long page is cut, on a character boundary.
        let long = format!("<html><body>{}</body></html>", "é".repeat(1000));
        let HttpError::Status { body, .. } =
            HttpError::status(StatusCode::NOT_FOUND, long.as_bytes())
        else {
            unreachable!()
        };
        assert!(body.ends_with("…\""), "{body}");
        assert!(body.chars().count() < 200, "{body}");

        // Not HTML: kept as it came.
        let e = HttpError::status(StatusCode::NOT_FOUND, b"<not html>");
        assert_eq!(e.to_string(), "HTTP 404 Not Found: <not html>");
        let e = HttpError::status(StatusCode::NOT_FOUND, b"<html></html>");
        assert_eq!(e.to_string(), "HTTP 404 Not Found: an HTML page");
    }
}
