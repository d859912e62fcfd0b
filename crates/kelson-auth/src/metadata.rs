//! This resource's own metadata (RFC 9728) and the parts of its challenges derived from it.

use bytes::Bytes;
use serde_json::{Map, Value, json};
use url::Url;

use crate::config::AuthConfig;
use crate::error::Error;

/// The well-known prefix of protected-resource metadata (RFC 9728 §3).
pub(crate) const PRM_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// What the layer serves and says about this resource, computed once.
pub(crate) struct ResourceMeta {
    /// The PRM document.
    pub(crate) document: Bytes,
    /// The request paths the document is served at: the path-inserted form, then the root form.
    pub(crate) paths: Vec<String>,
    /// The document's URL, for `resource_metadata` in challenges.
    pub(crate) url: String,
    /// The `scope` of a 401 challenge, if any.
    pub(crate) challenge_scope: Option<String>,
}

impl ResourceMeta {
    pub(crate) fn new(config: &AuthConfig) -> Result<Self, Error> {
        let resource = Url::parse(&config.resource).map_err(|source| Error::UrlSyntax {
            field: "resource",
            value: config.resource.clone(),
            source,
        })?;
        let refuse = |reason| Error::Url {
            field: "resource",
            value: config.resource.clone(),
            reason,
        };
        if !matches!(resource.scheme(), "http" | "https") {
            return Err(refuse("it must be an http or https URL"));
        }
        // RFC 8707 §2 / RFC 9728 §1.2: a resource identifier has no fragment.
        if resource.fragment().is_some() {
            return Err(refuse("a resource identifier has no fragment"));
        }
        if resource.query().is_some() {
            return Err(refuse("the metadata URL cannot carry the resource's query"));
        }
        let origin = resource.origin().ascii_serialization();
        let path = resource.path().trim_end_matches('/');
        let url = format!("{origin}{PRM_PREFIX}{path}");
        let mut paths = Vec::with_capacity(2);
        if !path.is_empty() {
            paths.push(format!("{PRM_PREFIX}{path}"));
        }
        paths.push(PRM_PREFIX.to_owned());

        // spec 2026-07-28 basic/authorization: offline_access is never advertised or challenged.
        let advertised: Vec<&String> = if config.scopes_supported.is_empty() {
            &config.required_scopes
        } else {
            &config.scopes_supported
        }
        .iter()
        .filter(|s| *s != "offline_access")
        .collect();

        let mut doc = Map::new();
        doc.insert("resource".into(), json!(config.resource));
        doc.insert("authorization_servers".into(), json!([config.issuer]));
        if !advertised.is_empty() {
            doc.insert("scopes_supported".into(), json!(advertised));
        }
        // RFC 6750 §2.1 only: tokens in a query string or a form body are refused.
        doc.insert("bearer_methods_supported".into(), json!(["header"]));
        if let Some(name) = &config.resource_name {
            doc.insert("resource_name".into(), json!(name));
        }
        if let Some(docs) = &config.resource_documentation {
            doc.insert("resource_documentation".into(), json!(docs));
        }
        let document = Bytes::from(serde_json::to_vec(&Value::Object(doc)).expect("JSON"));

        let challenged: Vec<&str> = if config.required_scopes.is_empty() {
            advertised.iter().map(|s| s.as_str()).collect()
        } else {
            config
                .required_scopes
                .iter()
                .map(String::as_str)
                .filter(|s| *s != "offline_access")
                .collect()
        };
        let challenge_scope = (!challenged.is_empty()).then(|| challenged.join(" "));
        Ok(ResourceMeta {
            document,
            paths,
            url,
            challenge_scope,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_sits_at_the_path_inserted_and_the_root_form() {
        let mut config = AuthConfig::new("https://as.example.com", "https://mcp.example.com/mcp");
        config.scopes_supported = vec!["mcp:read".into(), "offline_access".into()];
        let meta = ResourceMeta::new(&config).unwrap();
        assert_eq!(
            meta.url,
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            meta.paths,
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        let doc: Value = serde_json::from_slice(&meta.document).unwrap();
        assert_eq!(
            doc,
            json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://as.example.com"],
                "scopes_supported": ["mcp:read"],
                "bearer_methods_supported": ["header"],
            })
        );
        assert_eq!(meta.challenge_scope.as_deref(), Some("mcp:read"));
    }

    #[test]
    fn fragments_and_other_schemes_are_refused() {
        for bad in ["https://mcp.example.com/mcp#x", "ftp://mcp.example.com/"] {
            let config = AuthConfig::new("https://as.example.com", bad);
            assert!(matches!(ResourceMeta::new(&config), Err(Error::Url { .. })));
        }
    }
}
