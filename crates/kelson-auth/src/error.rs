//! The crate's one error type: what can go wrong while setting up the resource server.
//!
//! Per-request outcomes (a missing or invalid token) are not errors of this kind: they are
//! answered on the wire by the layer (see `reject.rs`).

/// Why the resource server could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A configured URL does not parse or is not usable for its purpose.
    #[error("{field} {value:?} is not a usable URL: {reason}")]
    Url {
        /// The configuration field.
        field: &'static str,
        /// The value given.
        value: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A configured URL does not parse.
    #[error("{field} {value:?} is not a URL")]
    UrlSyntax {
        /// The configuration field.
        field: &'static str,
        /// The value given.
        value: String,
        /// The parser's complaint.
        #[source]
        source: url::ParseError,
    },
    /// The HTTP client for the authorization server could not be built.
    #[error("building the HTTP client for the authorization server")]
    Client(#[source] reqwest::Error),
    /// A document of the authorization server could not be fetched or read.
    #[error("fetching {url}")]
    Fetch {
        /// What was fetched.
        url: String,
        /// What went wrong.
        #[source]
        source: FetchError,
    },
    /// No metadata document of the issuer could be used.
    #[error(
        "no authorization server metadata for issuer {issuer} (tried {}): {last}",
        tried.join(", ")
    )]
    Discovery {
        /// The configured issuer.
        issuer: String,
        /// The URLs tried, in order.
        tried: Vec<String>,
        /// The last failure.
        #[source]
        last: Box<Error>,
    },
    /// A metadata document names another issuer (RFC 8414 §3.3: it must be discarded).
    #[error("the metadata at {url} names issuer {found:?}, not the configured {expected:?}")]
    IssuerMismatch {
        /// The document's URL.
        url: String,
        /// The configured issuer.
        expected: String,
        /// The document's `issuer`.
        found: String,
    },
    /// The metadata lacks an endpoint the configuration needs.
    #[error("the authorization server metadata has no {0}, and none is configured")]
    MissingEndpoint(&'static str),
}

/// Why fetching a document from the authorization server failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The connection or the request failed (including its timeouts).
    #[error("the request failed")]
    Http(#[source] reqwest::Error),
    /// The server answered with a status other than 200.
    #[error("the server answered {0}")]
    Status(u16),
    /// The body was larger than the configured cap.
    #[error("the body is larger than {0} bytes")]
    TooLarge(usize),
    /// The body is not the JSON document expected.
    #[error("the body is not the expected JSON document")]
    Json(#[source] serde_json::Error),
}

/// An error and its sources on one line, for logs.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        out.push_str(": ");
        out.push_str(&s.to_string());
        next = s.source();
    }
    out
}
