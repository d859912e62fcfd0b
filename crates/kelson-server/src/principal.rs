use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

/// Who is making a request, as established by the transport or an auth layer in front of it.
///
/// Handlers see a `Principal`, never a token (auth sits outside the protocol). Without an auth layer
/// every request is [`Principal::anonymous`]. Sealed `requestState` is bound to the principal's
/// [`id`](Principal::id), so a state issued to one caller is refused for another.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Principal {
    inner: Option<Arc<Authenticated>>,
}

#[derive(PartialEq, Eq)]
struct Authenticated {
    subject: String,
    issuer: Option<String>,
    client_id: Option<String>,
    scopes: Vec<String>,
    claims: Map<String, Value>,
}

impl Principal {
    /// The unauthenticated caller.
    pub fn anonymous() -> Self {
        Principal { inner: None }
    }

    /// An authenticated caller with a subject, an optional issuer, and the scopes it was granted.
    pub fn authenticated(
        subject: impl Into<String>,
        issuer: Option<String>,
        scopes: impl IntoIterator<Item = String>,
    ) -> Self {
        Principal::builder(subject)
            .issuer(issuer)
            .scopes(scopes)
            .build()
    }

    /// Starts an authenticated principal for `subject`; see [`PrincipalBuilder`].
    pub fn builder(subject: impl Into<String>) -> PrincipalBuilder {
        PrincipalBuilder {
            inner: Authenticated {
                subject: subject.into(),
                issuer: None,
                client_id: None,
                scopes: Vec::new(),
                claims: Map::new(),
            },
        }
    }

    /// Whether the caller is anonymous.
    pub fn is_anonymous(&self) -> bool {
        self.inner.is_none()
    }

    /// The subject, if authenticated.
    pub fn subject(&self) -> Option<&str> {
        self.inner.as_deref().map(|a| a.subject.as_str())
    }

    /// The issuer that vouched for the subject, if known.
    pub fn issuer(&self) -> Option<&str> {
        self.inner.as_deref().and_then(|a| a.issuer.as_deref())
    }

    /// The OAuth client the token was issued to (`client_id` or `azp`), if known.
    pub fn client_id(&self) -> Option<&str> {
        self.inner.as_deref().and_then(|a| a.client_id.as_deref())
    }

    /// The granted scopes (empty when anonymous).
    pub fn scopes(&self) -> &[String] {
        self.inner.as_deref().map_or(&[], |a| a.scopes.as_slice())
    }

    /// Whether the caller was granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes().iter().any(|s| s == scope)
    }

    /// A claim the auth layer chose to pass on (for example `email` or a tenant id).
    pub fn claim(&self, name: &str) -> Option<&Value> {
        self.inner.as_deref().and_then(|a| a.claims.get(name))
    }

    /// Every claim the auth layer passed on.
    pub fn claims(&self) -> Option<&Map<String, Value>> {
        self.inner.as_deref().map(|a| &a.claims)
    }

    /// A stable identifier for binding state to this caller: issuer and subject, or empty when anonymous.
    pub fn id(&self) -> String {
        match self.inner.as_deref() {
            None => String::new(),
            Some(a) => match &a.issuer {
                Some(iss) => format!("{iss}\u{0}{}", a.subject),
                None => a.subject.clone(),
            },
        }
    }
}

/// Builds an authenticated [`Principal`].
#[must_use]
pub struct PrincipalBuilder {
    inner: Authenticated,
}

impl PrincipalBuilder {
    /// The issuer that vouched for the subject.
    pub fn issuer(mut self, issuer: Option<String>) -> Self {
        self.inner.issuer = issuer;
        self
    }

    /// The OAuth client the token was issued to.
    pub fn client_id(mut self, client_id: Option<String>) -> Self {
        self.inner.client_id = client_id;
        self
    }

    /// The granted scopes.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = String>) -> Self {
        self.inner.scopes = scopes.into_iter().collect();
        self
    }

    /// A claim to pass on to handlers.
    pub fn claim(mut self, name: impl Into<String>, value: Value) -> Self {
        self.inner.claims.insert(name.into(), value);
        self
    }

    /// The principal.
    pub fn build(self) -> Principal {
        Principal {
            inner: Some(Arc::new(self.inner)),
        }
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner.as_deref() {
            None => f.write_str("Principal(anonymous)"),
            Some(a) => write!(f, "Principal({:?}, scopes {:?})", a.subject, a.scopes),
        }
    }
}

/// The scopes an operation needs and the caller lacks.
///
/// The HTTP transport answers such a request with 403 and
/// `WWW-Authenticate: Bearer error="insufficient_scope", scope="..."`, and puts this value in the
/// response's extensions so that an auth layer in front of it can complete the challenge (its
/// `resource_metadata` URL). `scopes` lists every scope the operation needs, not only the missing
/// ones (spec 2026-07-28 basic/authorization: one challenge names them all).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsufficientScope {
    /// Every scope the operation needs.
    pub scopes: Vec<String>,
    /// A sentence for `error_description`.
    pub description: String,
}
