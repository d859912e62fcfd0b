//! Finding the authorization server's endpoints from its issuer identifier.

use serde::Deserialize;
use url::Url;

use crate::config::AuthConfig;
use crate::error::Error;
use crate::fetch::Fetcher;

/// The parts of RFC 8414 / OpenID Connect Discovery metadata a resource server uses.
#[derive(Debug, Deserialize)]
pub(crate) struct AsMetadata {
    pub(crate) issuer: String,
    pub(crate) jwks_uri: Option<String>,
    pub(crate) introspection_endpoint: Option<String>,
}

/// The metadata URLs of `issuer`, in the order clients try them.
///
/// spec 2026-07-28 basic/authorization/authorization-server-discovery: for an issuer with a path,
/// the RFC 8414 path-inserted form, then OpenID Connect's path-inserted form, then OpenID Connect's
/// appended form; without a path, the two root forms.
pub(crate) fn metadata_urls(issuer: &Url) -> Vec<String> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Fetches the issuer's metadata: the configured URL, or the discovery order.
pub(crate) async fn discover(config: &AuthConfig, fetch: &Fetcher) -> Result<AsMetadata, Error> {
    let urls = match &config.metadata_url {
        Some(url) => vec![url.clone()],
        None => {
            let issuer = Url::parse(&config.issuer).map_err(|source| Error::UrlSyntax {
                field: "issuer",
                value: config.issuer.clone(),
                source,
            })?;
            metadata_urls(&issuer)
        }
    };
    let mut last = None;
    for url in &urls {
        match fetch.get_json::<AsMetadata>(url).await {
            // RFC 8414 §3.3: the issuer in the document must be identical to the one the URL was
            // built from; otherwise the document is not used.
            Ok(meta) if meta.issuer == config.issuer => return Ok(meta),
            Ok(meta) => {
                last = Some(Error::IssuerMismatch {
                    url: url.clone(),
                    expected: config.issuer.clone(),
                    found: meta.issuer,
                });
            }
            Err(source) => {
                last = Some(Error::Fetch {
                    url: url.clone(),
                    source,
                });
            }
        }
    }
    Err(Error::Discovery {
        issuer: config.issuer.clone(),
        tried: urls,
        last: Box::new(last.expect("at least one URL is tried")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuers_with_a_path_try_three_forms_in_order() {
        let issuer = Url::parse("https://as.example.com/tenant1").unwrap();
        assert_eq!(
            metadata_urls(&issuer),
            [
                "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://as.example.com/.well-known/openid-configuration/tenant1",
                "https://as.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn issuers_without_a_path_try_the_two_root_forms() {
        for issuer in ["http://127.0.0.1:4000", "http://127.0.0.1:4000/"] {
            let issuer = Url::parse(issuer).unwrap();
            assert_eq!(
                metadata_urls(&issuer),
                [
                    "http://127.0.0.1:4000/.well-known/oauth-authorization-server",
                    "http://127.0.0.1:4000/.well-known/openid-configuration",
                ]
            );
        }
    }
}
