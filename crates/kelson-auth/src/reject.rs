//! The answers of the layer itself: challenges (RFC 6750 §3), metadata, and outages.

use std::borrow::Cow;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderValue, Response, StatusCode};

/// Why a request is not let through.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// No bearer credentials at all: 401 with a challenge and no error code (RFC 6750 §3.1).
    Missing,
    /// A malformed request (two Authorization headers, a token elsewhere than the header): 400
    /// `invalid_request`.
    InvalidRequest(&'static str),
    /// A token was given and is not acceptable: 401 `invalid_token`.
    InvalidToken(Cow<'static, str>),
    /// The token lacks scopes the request needs: 403 `insufficient_scope` naming all of them.
    InsufficientScope {
        scopes: String,
        description: Cow<'static, str>,
    },
    /// The authorization server could not be asked: 503 with `Retry-After`.
    Unavailable {
        retry_after: Duration,
        description: &'static str,
    },
}

/// The quoted-string contents allowed in `error_description` (RFC 6750 §3: %x20-21 / %x23-5B /
/// %x5D-7E), with anything else replaced, so no value can break the header.
pub(crate) fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

/// A `WWW-Authenticate: Bearer ...` value.
pub(crate) fn challenge(
    error: Option<(&str, &str)>,
    scope: Option<&str>,
    resource_metadata: &str,
    scope_first: bool,
) -> HeaderValue {
    let mut parts: Vec<String> = Vec::with_capacity(4);
    let scope = scope.map(|s| format!("scope=\"{}\"", sanitize(s)));
    let metadata = format!("resource_metadata=\"{}\"", sanitize(resource_metadata));
    if let Some((code, _)) = error {
        parts.push(format!("error=\"{code}\""));
    }
    if scope_first {
        parts.extend(scope.clone());
        parts.push(metadata);
    } else {
        parts.push(metadata);
        parts.extend(scope);
    }
    if let Some((_, description)) = error {
        parts.push(format!("error_description=\"{}\"", sanitize(description)));
    }
    HeaderValue::from_str(&format!("Bearer {}", parts.join(", "))).expect("sanitized ASCII")
}

fn json_error(status: StatusCode, code: &str, description: &str) -> Response<Bytes> {
    let body = serde_json::json!({ "error": code, "error_description": description });
    let mut response = Response::new(Bytes::from(body.to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

impl Rejection {
    /// The response, with the challenge pointing at `resource_metadata`.
    pub(crate) fn response(&self, resource_metadata: &str, scope: Option<&str>) -> Response<Bytes> {
        match self {
            Rejection::Missing => {
                let mut r = json_error(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "this resource needs a bearer token",
                );
                r.headers_mut().insert(
                    WWW_AUTHENTICATE,
                    challenge(None, scope, resource_metadata, false),
                );
                r
            }
            Rejection::InvalidRequest(description) => {
                let mut r = json_error(StatusCode::BAD_REQUEST, "invalid_request", description);
                r.headers_mut().insert(
                    WWW_AUTHENTICATE,
                    challenge(
                        Some(("invalid_request", description)),
                        scope,
                        resource_metadata,
                        false,
                    ),
                );
                r
            }
            Rejection::InvalidToken(description) => {
                let mut r = json_error(StatusCode::UNAUTHORIZED, "invalid_token", description);
                r.headers_mut().insert(
                    WWW_AUTHENTICATE,
                    challenge(
                        Some(("invalid_token", description)),
                        scope,
                        resource_metadata,
                        false,
                    ),
                );
                r
            }
            Rejection::InsufficientScope {
                scopes,
                description,
            } => {
                let mut r = json_error(StatusCode::FORBIDDEN, "insufficient_scope", description);
                r.headers_mut().insert(
                    WWW_AUTHENTICATE,
                    challenge(
                        Some(("insufficient_scope", description)),
                        Some(scopes),
                        resource_metadata,
                        true,
                    ),
                );
                r
            }
            Rejection::Unavailable {
                retry_after,
                description,
            } => {
                let mut r = json_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "temporarily_unavailable",
                    description,
                );
                let secs = retry_after.as_secs().max(1);
                r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
                r
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_have_the_documented_shape() {
        let url = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
        assert_eq!(
            challenge(None, Some("a b"), url, false),
            format!("Bearer resource_metadata=\"{url}\", scope=\"a b\"")
        );
        assert_eq!(
            challenge(Some(("invalid_token", "bad \"x\"\n")), None, url, false),
            format!(
                "Bearer error=\"invalid_token\", resource_metadata=\"{url}\", error_description=\"bad 'x'?\""
            )
        );
        assert_eq!(
            challenge(Some(("insufficient_scope", "more")), Some("a"), url, true),
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"a\", resource_metadata=\"{url}\", error_description=\"more\""
            )
        );
    }
}
