//! From a token's claims to a [`Principal`].

use kelson_server::Principal;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The claims of an access token (RFC 9068) or an introspection answer (RFC 7662 §2.2) that a
/// principal is made of; the rest are kept for the configured pass-through list.
#[derive(Debug, Deserialize)]
pub(crate) struct Claims {
    pub(crate) sub: Option<String>,
    pub(crate) iss: Option<String>,
    pub(crate) client_id: Option<String>,
    pub(crate) azp: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) scp: Option<Scp>,
    pub(crate) exp: Option<u64>,
    #[serde(flatten)]
    pub(crate) rest: Map<String, Value>,
}

/// `scp` as a list (the common form) or a space-separated string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Scp {
    List(Vec<String>),
    Text(String),
}

/// An `aud` claim: one string or an array (RFC 7519 §4.1.3).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    pub(crate) fn contains(&self, resource: &str) -> bool {
        match self {
            Audience::One(a) => a == resource,
            Audience::Many(list) => list.iter().any(|a| a == resource),
        }
    }
}

impl Claims {
    /// The scopes: `scope` (space-separated, RFC 8693 §4.2), else `scp`.
    pub(crate) fn scopes(&self) -> Vec<String> {
        let split = |s: &str| s.split_ascii_whitespace().map(str::to_owned).collect();
        match (&self.scope, &self.scp) {
            (Some(scope), _) => split(scope),
            (None, Some(Scp::List(list))) => list.clone(),
            (None, Some(Scp::Text(text))) => split(text),
            (None, None) => Vec::new(),
        }
    }

    /// The principal, or `None` when the token names neither a subject nor a client.
    ///
    /// A client-credentials token often has no `sub` of a user; the client is then the subject.
    pub(crate) fn principal(self, issuer: &str, pass_on: &[String]) -> Option<Principal> {
        let scopes = self.scopes();
        let client_id = self.client_id.or(self.azp);
        let subject = self.sub.or_else(|| client_id.clone())?;
        let mut builder = Principal::builder(subject)
            .issuer(Some(self.iss.unwrap_or_else(|| issuer.to_owned())))
            .client_id(client_id)
            .scopes(scopes);
        let mut rest = self.rest;
        for name in pass_on {
            if let Some(value) = rest.remove(name) {
                builder = builder.claim(name.clone(), value);
            }
        }
        Some(builder.build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(v: Value) -> Claims {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let c = claims(serde_json::json!({"scope": "a  b"}));
        assert_eq!(c.scopes(), ["a", "b"]);
        let c = claims(serde_json::json!({"scp": ["x", "y"]}));
        assert_eq!(c.scopes(), ["x", "y"]);
        let c = claims(serde_json::json!({"scp": "x y"}));
        assert_eq!(c.scopes(), ["x", "y"]);
        let c = claims(serde_json::json!({}));
        assert!(c.scopes().is_empty());
    }

    #[test]
    fn the_client_stands_in_for_a_missing_subject() {
        let p = claims(serde_json::json!({"azp": "app", "email": "a@b", "tenant": 7}))
            .principal("https://as", &["tenant".to_owned()])
            .unwrap();
        assert_eq!(p.subject(), Some("app"));
        assert_eq!(p.client_id(), Some("app"));
        assert_eq!(p.issuer(), Some("https://as"));
        assert_eq!(p.claim("tenant"), Some(&serde_json::json!(7)));
        assert_eq!(
            p.claim("email"),
            None,
            "only the listed claims are passed on"
        );
        assert!(claims(serde_json::json!({})).principal("i", &[]).is_none());
    }
}
