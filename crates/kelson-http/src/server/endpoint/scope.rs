//! A refusal for want of scopes as HTTP says it: 403 with an `insufficient_scope` challenge.
//!
//! spec 2026-07-28 [basic/authorization][spec]: runtime insufficient scope SHOULD be
//! answered with 403 and `WWW-Authenticate: Bearer error="insufficient_scope", scope="<all scopes
//! needed>", resource_metadata="...", error_description="..."`. This service knows the scopes but
//! not the Protected Resource Metadata URL, which is the auth layer's: it writes the challenge
//! without it and puts the [`InsufficientScope`] in the response extensions, from which a layer in
//! front completes the challenge ([`insufficient_scope_challenge`] with its URL).
//!
//! [spec]: https://modelcontextprotocol.io/specification/2026-07-28/basic/authorization

use http::header::WWW_AUTHENTICATE;
use http::{HeaderValue, Response};
use kelson_server::InsufficientScope;

use super::McpBody;

/// The `WWW-Authenticate` value refusing a request for want of `refusal.scopes`, naming the
/// Protected Resource Metadata when given. The description is reduced to the characters RFC 6750
/// §3 allows in `error_description` (printable ASCII without `"` and `\`).
pub fn insufficient_scope_challenge(
    refusal: &InsufficientScope,
    resource_metadata: Option<&str>,
) -> HeaderValue {
    let mut value = String::with_capacity(96 + refusal.description.len());
    value.push_str("Bearer error=\"insufficient_scope\", scope=\"");
    // Registration admits only RFC 6749 scope tokens, which need no escaping.
    value.push_str(&refusal.scopes.join(" "));
    value.push('"');
    if let Some(url) = resource_metadata {
        value.push_str(", resource_metadata=\"");
        value.extend(url.chars().map(quotable));
        value.push('"');
    }
    value.push_str(", error_description=\"");
    value.extend(refusal.description.chars().map(quotable));
    value.push('"');
    HeaderValue::from_str(&value).expect("only printable ASCII is written")
}

/// A character as it may stand inside the quoted parameters of the challenge.
fn quotable(c: char) -> char {
    match c {
        '"' | '\\' => '\'',
        ' '..='~' => c,
        _ => '?',
    }
}

/// Makes `response` the 403 of `refusal`: the status, the challenge, and the refusal in the
/// extensions for an auth layer in front.
pub(super) fn forbid(response: &mut Response<McpBody>, refusal: InsufficientScope) {
    *response.status_mut() = http::StatusCode::FORBIDDEN;
    response.headers_mut().insert(
        WWW_AUTHENTICATE,
        insufficient_scope_challenge(&refusal, None),
    );
    response.extensions_mut().insert(refusal);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_names_every_scope_and_quotes_safely() {
        let refusal = InsufficientScope {
            scopes: vec!["db:read".to_owned(), "db:write".to_owned()],
            description: "the resource \"x\\y\" needs é".to_owned(),
        };
        assert_eq!(
            insufficient_scope_challenge(&refusal, None),
            "Bearer error=\"insufficient_scope\", scope=\"db:read db:write\", \
             error_description=\"the resource 'x'y' needs ?\""
        );
        assert_eq!(
            insufficient_scope_challenge(
                &refusal,
                Some("https://h/.well-known/oauth-protected-resource/mcp")
            ),
            "Bearer error=\"insufficient_scope\", scope=\"db:read db:write\", \
             resource_metadata=\"https://h/.well-known/oauth-protected-resource/mcp\", \
             error_description=\"the resource 'x'y' needs ?\""
        );
    }
}
