//! The OAuth scopes a tool, resource, resource template or prompt needs.
//!
//! spec 2026-07-28 [server/tools][tools] (and the resources and prompts pages): lists MAY vary
//! with the token's scopes; spec 2026-07-28 [basic/authorization][auth]: an operation beyond them
//! is answered with 403 `insufficient_scope` naming every scope it needs. A registration names its
//! scopes once ([`WithScopes::with_scopes`]); the router filters the lists and refuses calls with
//! them.
//!
//! Who is restricted: an authenticated [`Principal`] (one an auth layer put in the request) is
//! checked; [`Principal::anonymous`] is not. An anonymous request means that no auth layer is in
//! front of the server (stdio, or HTTP on loopback without auth), since a server behind an auth
//! layer never sees one: the layer answers 401 first. So whoever can reach an unauthenticated
//! server is trusted with everything on it, as before scopes existed.
//!
//! Scopes match exactly, as strings: `db:write` does not imply `db:read`. A token that should do
//! both carries both, and an item that either may serve names both as alternatives
//! ([`Scopes::any`]). The authorization server, which issues the scopes, is the place for
//! hierarchies; an implication rule here would make a 403's `scope` parameter depend on
//! server-side configuration that the client cannot see.
//!
//! [tools]: https://modelcontextprotocol.io/specification/2026-07-28/server/tools
//! [auth]: https://modelcontextprotocol.io/specification/2026-07-28/basic/authorization

use std::fmt;
use std::sync::Arc;

use kelson_jsonrpc::{ErrorObject, Id};
use serde_json::json;

use crate::router::{Outcome, ReplyMessage, error_reply};
use crate::{HandlerError, InsufficientScope, Principal};

/// What a registered item needs: nothing (the default), all of one set of scopes, or all of any
/// one of several sets.
///
/// ```
/// use kelson_server::Scopes;
///
/// let read = Scopes::all(["db:read"]);
/// let either = Scopes::any([Scopes::all(["db:read"]), Scopes::all(["db:admin"])]);
/// assert!(!read.is_unrestricted());
/// assert_eq!(either.needed(), ["db:read"]);
/// assert!(Scopes::none().is_unrestricted());
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Scopes {
    /// Each alternative is a sorted, deduplicated, non-empty set; no alternatives means
    /// unrestricted. Shared, so that registry generations copy a pointer.
    alternatives: Option<Arc<[Box<[String]>]>>,
}

impl Scopes {
    /// No scope needed: visible and callable by everyone.
    pub fn none() -> Self {
        Scopes::default()
    }

    /// Every one of `scopes` is needed. An empty list needs nothing.
    pub fn all<S: Into<String>>(scopes: impl IntoIterator<Item = S>) -> Self {
        let mut set: Vec<String> = scopes.into_iter().map(Into::into).collect();
        set.sort_unstable();
        set.dedup();
        if set.is_empty() {
            return Scopes::none();
        }
        Scopes {
            alternatives: Some(Arc::from([set.into_boxed_slice()])),
        }
    }

    /// Any one of `alternatives` is enough. If one of them needs nothing, neither does the whole.
    /// A refusal names the first alternative's scopes (see [`needed`](Self::needed)).
    pub fn any(alternatives: impl IntoIterator<Item = Scopes>) -> Self {
        let mut sets: Vec<Box<[String]>> = Vec::new();
        for alternative in alternatives {
            let Some(inner) = alternative.alternatives else {
                return Scopes::none();
            };
            for set in inner.iter() {
                if !sets.contains(set) {
                    sets.push(set.clone());
                }
            }
        }
        if sets.is_empty() {
            return Scopes::none();
        }
        Scopes {
            alternatives: Some(Arc::from(sets)),
        }
    }

    /// Whether nothing is needed.
    #[inline]
    pub fn is_unrestricted(&self) -> bool {
        self.alternatives.is_none()
    }

    /// Whether `principal` may see and use the item: it is anonymous (no auth layer), or it was
    /// granted every scope of at least one alternative.
    #[inline]
    pub fn allows(&self, principal: &Principal) -> bool {
        match &self.alternatives {
            None => true,
            Some(sets) => {
                principal.is_anonymous() || sets.iter().any(|set| granted(principal, set))
            }
        }
    }

    /// The scopes a refusal names: those of the first alternative (empty when unrestricted).
    /// spec 2026-07-28 basic/authorization: the challenge names every scope the operation needs,
    /// so that one step-up suffices; any alternative is a complete such set.
    pub fn needed(&self) -> &[String] {
        self.alternatives
            .as_deref()
            .and_then(|sets| sets.first())
            .map_or(&[], |set| &set[..])
    }

    /// Each alternative set of scopes.
    pub fn alternatives(&self) -> impl Iterator<Item = &[String]> {
        self.alternatives
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(|set| &set[..])
    }

    /// The first scope that is not a valid RFC 6749 §3.3 `scope-token` (printable ASCII without
    /// space, `"` or `\`), if any. Registration refuses such scopes: they could not be named in a
    /// `WWW-Authenticate` challenge.
    pub fn invalid(&self) -> Option<&str> {
        self.alternatives()
            .flatten()
            .map(String::as_str)
            .find(|s| !valid_scope_token(s))
    }
}

fn granted(principal: &Principal, set: &[String]) -> bool {
    let held = principal.scopes();
    set.iter().all(|needed| held.iter().any(|s| s == needed))
}

/// RFC 6749 §3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
fn valid_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.alternatives {
            None => f.write_str("Scopes(none)"),
            Some(sets) => f.debug_list().entries(sets.iter()).finish(),
        }
    }
}

impl<S: Into<String>, const N: usize> From<[S; N]> for Scopes {
    fn from(scopes: [S; N]) -> Self {
        Scopes::all(scopes)
    }
}

impl From<Vec<String>> for Scopes {
    fn from(scopes: Vec<String>) -> Self {
        Scopes::all(scopes)
    }
}

impl From<&str> for Scopes {
    fn from(scope: &str) -> Self {
        Scopes::all([scope])
    }
}

/// A definition (a `Tool`, `Resource`, `ResourceTemplate` or `Prompt`) with the scopes it needs,
/// as registration takes it. A bare definition converts into one that needs nothing, so
/// registrations without scopes read as before.
#[derive(Clone, Debug)]
pub struct Scoped<D> {
    pub(crate) def: D,
    pub(crate) scopes: Scopes,
}

impl<D> Scoped<D> {
    /// `def`, needing `scopes`.
    pub fn new(def: D, scopes: impl Into<Scopes>) -> Self {
        Scoped {
            def,
            scopes: scopes.into(),
        }
    }

    /// The definition.
    pub fn def(&self) -> &D {
        &self.def
    }

    /// The scopes it needs.
    pub fn scopes(&self) -> &Scopes {
        &self.scopes
    }
}

impl<D> From<D> for Scoped<D> {
    fn from(def: D) -> Self {
        Scoped {
            def,
            scopes: Scopes::none(),
        }
    }
}

/// Names the scopes a definition needs, where it is written:
///
/// ```
/// use kelson_server::WithScopes;
/// use kelson_types::Tool;
///
/// let execute = Tool::new("execute", Default::default()).with_scopes(["db:write"]);
/// assert_eq!(execute.scopes().needed(), ["db:write"]);
/// ```
pub trait WithScopes: Sized {
    /// This definition, needing `scopes`.
    fn with_scopes(self, scopes: impl Into<Scopes>) -> Scoped<Self> {
        Scoped::new(self, scopes)
    }
}

impl WithScopes for kelson_types::Tool {}
impl WithScopes for kelson_types::Resource {}
impl WithScopes for kelson_types::ResourceTemplate {}
impl WithScopes for kelson_types::Prompt {}

/// The JSON-RPC error code of a refusal for want of scopes.
///
/// spec 2026-07-28 basic/authorization: over HTTP the refusal is a 403 with an
/// `insufficient_scope` challenge, and the status is what clients act on; the body is this error
/// for the request's id, so that a client or log that reads it sees why. The spec names no code for
/// it and reserves -32000 to -32099 (spec 2026-07-28 basic/index: new codes SHOULD be allocated
/// outside -32768 to -32000), so it is one of ours, echoing the status.
pub const INSUFFICIENT_SCOPE: i64 = -31403;

impl InsufficientScope {
    /// The refusal of `operation` (for example `tools/call "execute"`) for want of `scopes`.
    pub fn new(operation: &str, scopes: &Scopes) -> Self {
        let needed = scopes.needed();
        let description = match needed {
            [one] => format!("{operation} needs the scope {one}"),
            many => format!("{operation} needs the scopes {}", many.join(" ")),
        };
        InsufficientScope {
            scopes: needed.to_vec(),
            description,
        }
    }

    /// The JSON-RPC error that carries this refusal: code [`INSUFFICIENT_SCOPE`], the description
    /// as its message, and `data: {"error": "insufficient_scope", "scopes": [...]}`.
    pub fn to_error(&self) -> ErrorObject {
        ErrorObject::new(INSUFFICIENT_SCOPE, self.description.clone()).with_data(json!({
            "error": "insufficient_scope",
            "scopes": self.scopes,
        }))
    }

    /// Reads the refusal back from its JSON-RPC error.
    pub fn from_error(error: &ErrorObject) -> Option<Self> {
        if error.code != INSUFFICIENT_SCOPE {
            return None;
        }
        let scopes = error
            .data
            .as_ref()?
            .get("scopes")?
            .as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?;
        Some(InsufficientScope {
            scopes,
            description: error.message.to_string(),
        })
    }
}

/// The reply refusing `what` (a phrase: "the tool execute") to a caller without `scopes`: the
/// router's check, made before the handler runs, so that over HTTP the refusal is a 403 even for a
/// request that would have been answered with a stream.
pub(crate) fn refusal(id: &Id, what: &str, scopes: &Scopes) -> ReplyMessage {
    error_reply(
        Some(id),
        &InsufficientScope::new(what, scopes).to_error(),
        true,
    )
}

impl From<InsufficientScope> for HandlerError {
    fn from(refusal: InsufficientScope) -> Self {
        HandlerError::Protocol(refusal.to_error())
    }
}

impl ReplyMessage {
    /// The refusal this reply carries, if it is one for want of scopes. Over HTTP it is answered
    /// with 403 and an `insufficient_scope` challenge.
    pub fn insufficient_scope(&self) -> Option<InsufficientScope> {
        if !matches!(
            self.outcome,
            Outcome::Error {
                code: INSUFFICIENT_SCOPE,
                ..
            }
        ) {
            return None;
        }
        #[derive(serde::Deserialize)]
        struct Envelope {
            error: ErrorObject,
        }
        let envelope: Envelope = serde_json::from_slice(&self.body).ok()?;
        InsufficientScope::from_error(&envelope.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(scopes: &[&str]) -> Principal {
        Principal::builder("alice")
            .scopes(scopes.iter().map(|s| (*s).to_owned()))
            .build()
    }

    #[test]
    fn all_needs_every_scope_and_any_needs_one_alternative() {
        let both = Scopes::all(["b", "a", "a"]);
        assert_eq!(both.needed(), ["a", "b"]);
        assert!(both.allows(&caller(&["a", "b", "c"])));
        assert!(!both.allows(&caller(&["a"])));
        assert!(!both.allows(&caller(&[])));

        let either = Scopes::any([Scopes::all(["x:read"]), Scopes::all(["y:read"])]);
        assert!(either.allows(&caller(&["y:read"])));
        assert!(!either.allows(&caller(&["z:read"])));
        assert_eq!(either.needed(), ["x:read"]);
        assert_eq!(either.alternatives().count(), 2);
    }

    #[test]
    fn anonymous_and_unrestricted_pass() {
        assert!(Scopes::all(["a"]).allows(&Principal::anonymous()));
        assert!(Scopes::none().allows(&caller(&[])));
        assert!(Scopes::all(Vec::<String>::new()).is_unrestricted());
        assert!(Scopes::any([Scopes::all(["a"]), Scopes::none()]).is_unrestricted());
        assert!(Scopes::any([]).is_unrestricted());
        assert!(Scopes::none().needed().is_empty());
    }

    #[test]
    fn scope_tokens_are_checked() {
        assert_eq!(Scopes::all(["ok:read"]).invalid(), None);
        assert_eq!(Scopes::all(["two words"]).invalid(), Some("two words"));
        assert_eq!(Scopes::all(["quo\"te"]).invalid(), Some("quo\"te"));
        assert_eq!(Scopes::all(["back\\slash"]).invalid(), Some("back\\slash"));
        assert_eq!(Scopes::all(["é"]).invalid(), Some("é"));
        assert_eq!(Scopes::all([""]).invalid(), Some(""));
    }
}

#[cfg(test)]
mod router_tests;
