//! The Streamable HTTP client transport (`client` feature).
//!
//! This module moves whole JSON-RPC messages over HTTP and knows the HTTP rules of both eras, but
//! nothing about MCP methods beyond the headers that mirror them:
//!
//! - one POST per message with `Content-Type: application/json` and
//!   `Accept: application/json, text/event-stream` ([`HttpClient::post`]);
//! - the standard headers `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*`
//!   headers, encoded with the shared codec ([`request_headers`]);
//! - both response kinds: a single JSON body, or an SSE stream read with [`SseParser`](crate::sse::SseParser) that yields one
//!   message per event and skips comment lines ([`EventStream`]);
//! - statuses: 413 and 431 become errors that name the limit that was hit; other non-2xx answers
//!   without a JSON body become [`HttpError::Status`]; a non-2xx answer with a JSON body is handed
//!   back, because it usually carries a JSON-RPC error the caller must surface;
//! - the legacy (2025) session: `Mcp-Session-Id` is a header like any other here,
//!   [`HttpClient::get_stream`] opens the legacy GET stream (any non-2xx answer is an error, a 405
//!   included, which says the server offers none), and [`HttpClient::delete`] ends the session.
//!
//! What a status or an error means for era detection, retries and caching is the caller's business
//! (`kelson-client`).

mod error;
mod reply;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

pub use error::HttpError;
pub use reply::{EventStream, HttpReply, ReplyBody, www_authenticate};

use crate::codec::encode_header_value;
use crate::headers::{MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION};

/// The default bound on a JSON response body, and on one SSE event: 64 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// What the client sends in `Accept` on every POST: both media types, as the spec requires.
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

/// The CA certificates of the PEM file `ca_file`, for a reqwest client that trusts them besides
/// the system's (`reqwest::ClientBuilder::tls_certs_merge`).
pub fn ca_certificates(ca_file: &std::path::Path) -> Result<Vec<reqwest::Certificate>, HttpError> {
    let ca_error = |reason: String| HttpError::CaFile {
        path: ca_file.to_owned(),
        reason,
    };
    let pem = std::fs::read(ca_file).map_err(|e| ca_error(e.to_string()))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| ca_error(format!("not PEM certificates ({e})")))?;
    if certs.is_empty() {
        return Err(ca_error("no PEM certificate in it".to_owned()));
    }
    Ok(certs)
}

/// The standard headers of one POST, plus the `Mcp-Param-*` headers of a `tools/call`.
///
/// `protocol_version` goes into `MCP-Protocol-Version`, `method` into `Mcp-Method`, and `name` (the
/// body's `params.name` or `params.uri`) into `Mcp-Name` with the base64 sentinel where needed. Pass
/// `None` to leave a header out: legacy peers get only `MCP-Protocol-Version`, and a legacy
/// `initialize` none of them.
pub fn request_headers(
    protocol_version: Option<&str>,
    method: Option<&str>,
    name: Option<&str>,
    params: impl IntoIterator<Item = (HeaderName, HeaderValue)>,
) -> Result<HeaderMap, http::header::InvalidHeaderValue> {
    let mut headers = HeaderMap::new();
    if let Some(version) = protocol_version {
        headers.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_str(version)?);
    }
    if let Some(method) = method {
        headers.insert(MCP_METHOD, HeaderValue::from_str(method)?);
    }
    if let Some(name) = name {
        headers.insert(MCP_NAME, encode_header_value(name));
    }
    headers.extend(params);
    Ok(headers)
}

/// A Streamable HTTP endpoint, reached with reqwest.
///
/// Cloning is cheap and shares the connection pool.
#[derive(Clone, Debug)]
pub struct HttpClient {
    http: reqwest::Client,
    url: reqwest::Url,
    max_message: usize,
}

impl HttpClient {
    /// A client for the endpoint at `url`, with a default reqwest client.
    pub fn new(url: &str) -> Result<Self, HttpError> {
        let http = reqwest::Client::builder()
            .build()
            .map_err(HttpError::Request)?;
        Self::with_client(http, url)
    }

    /// A client for the endpoint at `url` that trusts the CA certificates of the PEM file `ca_file`
    /// besides the system's, for a server whose certificate a private CA issued.
    pub fn with_ca_file(url: &str, ca_file: &std::path::Path) -> Result<Self, HttpError> {
        let http = reqwest::Client::builder()
            .tls_certs_merge(ca_certificates(ca_file)?)
            .build()
            .map_err(HttpError::Request)?;
        Self::with_client(http, url)
    }

    /// A client for the endpoint at `url` that sends through `http` (for proxies, TLS roots,
    /// timeouts of the connection itself).
    pub fn with_client(http: reqwest::Client, url: &str) -> Result<Self, HttpError> {
        // `127.0.0.1:8080/mcp` does not parse, and `localhost:8080/mcp` parses with the scheme
        // `localhost`: both are a URL written without its scheme.
        let invalid = |reason: String| HttpError::InvalidUrl {
            url: url.to_owned(),
            reason: if url.contains("://") || url.contains(char::is_whitespace) {
                reason
            } else {
                format!("it has no scheme; did you mean \"http://{url}\"?")
            },
        };
        let parsed = reqwest::Url::parse(url).map_err(|e| invalid(e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(invalid("the scheme must be http or https".to_owned()));
        }
        Ok(HttpClient {
            http,
            url: parsed,
            max_message: DEFAULT_MAX_MESSAGE,
        })
    }

    /// Bounds a JSON response body and each SSE event (default [`DEFAULT_MAX_MESSAGE`]).
    #[must_use]
    pub fn with_max_message(mut self, max_message: usize) -> Self {
        self.max_message = max_message;
        self
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The endpoint's origin (`scheme://host:port`), the unit a client caches its era decision for.
    pub fn origin(&self) -> String {
        self.url.origin().ascii_serialization()
    }

    /// POSTs one JSON-RPC message with `headers` (the standard ones from [`request_headers`], a
    /// session id, `Authorization`, ...); `Content-Type` and `Accept` are added here.
    ///
    /// Dropping the returned future, or the [`EventStream`] of its reply, closes the exchange, which
    /// the server takes as cancellation (spec 2026-07-28 basic/patterns/cancellation).
    pub async fn post(&self, body: Bytes, mut headers: HeaderMap) -> Result<HttpReply, HttpError> {
        headers.insert(CONTENT_TYPE, JSON);
        headers.insert(ACCEPT, ACCEPT_BOTH);
        let size = body.len();
        let header_size = header_bytes(&headers);
        let response = self
            .http
            .post(self.url.clone())
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| HttpError::sending(&self.url, e))?;
        reply::read(response, size, header_size, self.max_message).await
    }

    /// Opens the legacy (2025) GET stream of server messages, with `Accept: text/event-stream`.
    ///
    /// Only a 2xx `text/event-stream` answer opens it. Any other status is an [`HttpError::Status`]
    /// whatever the body (a GET has no JSON-RPC response to hand back): 405 means the server offers
    /// no such stream, 409 (TypeScript SDK v1) that the session already has one. A 2xx answer of
    /// another media type is [`HttpError::UnexpectedContentType`]. Dropping the stream closes it.
    pub async fn get_stream(&self, mut headers: HeaderMap) -> Result<EventStream, HttpError> {
        headers.insert(ACCEPT, EVENT_STREAM);
        let header_size = header_bytes(&headers);
        let response = self
            .http
            .get(self.url.clone())
            .headers(headers)
            .send()
            .await
            .map_err(|e| HttpError::sending(&self.url, e))?;
        reply::read_stream(response, header_size, self.max_message).await
    }

    /// Sends the legacy (2025) DELETE that ends a session; the status is returned as is.
    pub async fn delete(&self, headers: HeaderMap) -> Result<StatusCode, HttpError> {
        let response = self
            .http
            .delete(self.url.clone())
            .headers(headers)
            .send()
            .await
            .map_err(|e| HttpError::sending(&self.url, e))?;
        Ok(response.status())
    }
}

fn header_bytes(headers: &HeaderMap) -> usize {
    headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_headers_use_the_shared_codec() {
        let headers = request_headers(
            Some("2026-07-28"),
            Some("tools/call"),
            Some("grüße"),
            [(
                HeaderName::from_static("mcp-param-region"),
                HeaderValue::from_static("eu"),
            )],
        )
        .unwrap();
        assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
        assert_eq!(headers["mcp-method"], "tools/call");
        assert_eq!(headers["mcp-name"], "=?base64?Z3LDvMOfZQ==?=");
        assert_eq!(headers["mcp-param-region"], "eu");
        let bare = request_headers(None, None, None, []).unwrap();
        assert!(bare.is_empty());
    }

    #[test]
    fn urls_must_be_http() {
        assert!(matches!(
            HttpClient::new("ftp://example.com/mcp"),
            Err(HttpError::InvalidUrl { .. })
        ));
        assert!(HttpClient::new("not a url").is_err());
        // A URL without its scheme gets a suggestion, whether it parses or not.
        for url in ["127.0.0.1:8080/mcp", "localhost:8080/mcp"] {
            let e = HttpClient::new(url).unwrap_err().to_string();
            assert!(
                e.ends_with(&format!("did you mean \"http://{url}\"?")),
                "{e}"
            );
        }
        let c = HttpClient::new("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!(c.origin(), "http://127.0.0.1:8080");
    }
}
