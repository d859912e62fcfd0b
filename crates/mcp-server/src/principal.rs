use std::fmt;
use std::sync::Arc;

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
    scopes: Vec<String>,
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
        Principal {
            inner: Some(Arc::new(Authenticated {
                subject: subject.into(),
                issuer,
                scopes: scopes.into_iter().collect(),
            })),
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

    /// The granted scopes (empty when anonymous).
    pub fn scopes(&self) -> &[String] {
        self.inner.as_deref().map_or(&[], |a| a.scopes.as_slice())
    }

    /// Whether the caller was granted `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes().iter().any(|s| s == scope)
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

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner.as_deref() {
            None => f.write_str("Principal(anonymous)"),
            Some(a) => write!(f, "Principal({:?}, scopes {:?})", a.subject, a.scopes),
        }
    }
}
