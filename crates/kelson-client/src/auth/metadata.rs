//! The documents an OAuth client reads before it can ask for a token: the protected resource
//! metadata of the MCP server (RFC 9728) and its authorization server's metadata (RFC 8414, or
//! OpenID Connect Discovery), with the discovery orders of spec 2026-07-28
//! basic/authorization/authorization-server-discovery.

use serde::Deserialize;
use url::Url;

use super::AuthError;

/// What an MCP server says of itself as an OAuth protected resource (RFC 9728 §2).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceMetadata {
    /// The resource identifier: the URL tokens must be issued for.
    pub resource: String,
    /// The issuers of the authorization servers that issue tokens for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes it understands.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// What an authorization server says of itself (RFC 8414 §2; the OpenID Connect Discovery
/// document has the same names).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerMetadata {
    /// Its issuer identifier, which must be the one the metadata was looked up for.
    pub issuer: String,
    /// Where the user authorizes (authorization code grant).
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where tokens are issued.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// The grant types it supports.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// How clients may authenticate at the token endpoint; RFC 8414: `client_secret_basic` when
    /// absent.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// The PKCE methods it supports; absent means the client must not proceed.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client ID Metadata Documents: an https URL may serve as the client id.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
}

impl ServerMetadata {
    /// Whether the server lists `scope` among its scopes.
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }

    /// Whether clients may authenticate with `method` at its token endpoint.
    pub fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => methods.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }
}

/// The canonical URI of an MCP server (spec basic/authorization, RFC 8707): the URL without
/// fragment, scheme and host lowercased (the `url` crate does both), no trailing slash after a
/// path.
pub fn canonical_resource(server_url: &str) -> Result<Url, AuthError> {
    let mut url = Url::parse(server_url).map_err(|e| {
        AuthError::discovery(format!("the server URL {server_url:?} is not a URL: {e}"))
    })?;
    url.set_fragment(None);
    if url.path().len() > 1 && url.path().ends_with('/') {
        let path = url.path().trim_end_matches('/').to_owned();
        url.set_path(&path);
    }
    Ok(url)
}

/// Whether the protected resource metadata's `resource` may stand for the server at `server`:
/// the same origin, and a path that is the server's or a whole-segment prefix of it (a resource
/// may cover several endpoints below it). Anything else is metadata for another resource, whose
/// tokens must not be sent here (RFC 9728 §3.3).
pub fn resource_covers(resource: &str, server: &Url) -> bool {
    let Ok(resource) = canonical_resource(resource) else {
        return false;
    };
    if resource.origin() != server.origin() || resource.query().is_some() {
        return false;
    }
    let (prefix, path) = (resource.path(), server.path());
    prefix == "/"
        || path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Where to look for the protected resource metadata of `server` when no challenge named it:
/// the path-inserted well-known URI, then the root one (RFC 9728 §3.1).
pub fn resource_metadata_urls(server: &Url) -> Vec<Url> {
    let mut urls = Vec::new();
    let path = server.path().trim_end_matches('/');
    let mut at = server.clone();
    at.set_query(None);
    if !path.is_empty() {
        at.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
        urls.push(at.clone());
    }
    at.set_path("/.well-known/oauth-protected-resource");
    urls.push(at);
    urls
}

/// Where to look for an authorization server's metadata, in the order the spec gives: for an
/// issuer with a path `/t1`, RFC 8414's path-inserted URI, then OpenID Connect's path-inserted and
/// path-appended ones; for one without, the two root documents.
pub fn server_metadata_urls(issuer: &str) -> Result<Vec<Url>, AuthError> {
    let base = Url::parse(issuer).map_err(|e| {
        AuthError::discovery(format!(
            "the authorization server {issuer:?} is not a URL: {e}"
        ))
    })?;
    let path = base.path().trim_end_matches('/').to_owned();
    let at = |p: String| {
        let mut url = base.clone();
        url.set_query(None);
        url.set_fragment(None);
        url.set_path(&p);
        url
    };
    Ok(if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".to_owned()),
            at("/.well-known/openid-configuration".to_owned()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(list: Vec<Url>) -> Vec<String> {
        list.into_iter().map(String::from).collect()
    }

    #[test]
    fn canonical_uris_lose_the_fragment_and_a_trailing_slash_and_lowercase_scheme_and_host() {
        let url = canonical_resource("HTTPS://MCP.Example.com:8443/Path/mcp/#frag").unwrap();
        assert_eq!(url.as_str(), "https://mcp.example.com:8443/Path/mcp");
        assert_eq!(
            canonical_resource("https://mcp.example.com")
                .unwrap()
                .as_str(),
            "https://mcp.example.com/"
        );
        assert!(canonical_resource("not a url").is_err());
    }

    #[test]
    fn a_resource_covers_its_own_url_and_the_urls_below_it_only() {
        let server = canonical_resource("https://rs.example/api/mcp").unwrap();
        for ok in [
            "https://rs.example/api/mcp",
            "https://rs.example/api/mcp/",
            "https://RS.example/api",
            "https://rs.example/",
            "https://rs.example",
        ] {
            assert!(resource_covers(ok, &server), "{ok}");
        }
        for other in [
            "https://rs.example/api/mc",
            "https://rs.example/other",
            "https://evil.example/api/mcp",
            "http://rs.example/api/mcp",
            "https://rs.example:444/api/mcp",
            "https://rs.example/api/mcp?x=1",
            "nonsense",
        ] {
            assert!(!resource_covers(other, &server), "{other}");
        }
    }

    #[test]
    fn discovery_orders() {
        let server = canonical_resource("https://rs.example/public/mcp?x=1").unwrap();
        assert_eq!(
            urls(resource_metadata_urls(&server)),
            [
                "https://rs.example/.well-known/oauth-protected-resource/public/mcp",
                "https://rs.example/.well-known/oauth-protected-resource",
            ]
        );
        let root = canonical_resource("https://rs.example/").unwrap();
        assert_eq!(
            urls(resource_metadata_urls(&root)),
            ["https://rs.example/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            urls(server_metadata_urls("https://as.example/tenant1").unwrap()),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            urls(server_metadata_urls("https://as.example").unwrap()),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ]
        );
    }
}
