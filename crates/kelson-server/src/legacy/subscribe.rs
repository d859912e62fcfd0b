//! `resources/subscribe` and `resources/unsubscribe` of a handshake-era session.
//!
//! A subscription is kept for the session's life, so it is checked as what it is: memory the
//! client chose. The URI must name a resource or match a template of the registry, or lie above
//! one (a collection whose members' updates it hears of): what is not served has no updates. The
//! caller must hold the scopes a read of it needs (those below are checked at each update), and each
//! session holds a bounded number of URIs of bounded length ([`SessionLimits`]), all sessions
//! together within the server's budget.
//!
//! [`SessionLimits`]: super::SessionLimits

use kelson_jsonrpc::{ErrorObject, Id};
use serde_json::json;

use super::LegacySession;
use crate::router::{Outcome, ReplyMessage, error_reply};
use crate::{Principal, Server};

impl Server {
    /// Subscribes `session` to `uri` for `principal`, or says why not.
    pub(super) fn subscribe(
        &self,
        session: &LegacySession,
        id: &Id,
        uri: String,
        principal: &Principal,
    ) -> ReplyMessage {
        let limits = &self.inner.config.sessions;
        if uri.len() > limits.uri {
            let e = ErrorObject::invalid_params(format_args!(
                "the URI is {} bytes; a subscription's URI may have at most {}",
                uri.len(),
                limits.uri
            ));
            return error_reply(Some(id), &e, false);
        }
        // As for listen streams: updates are for callers who may read the resource. A URI that
        // names nothing served, and nothing served lies below, can have no updates.
        let registry = self.inner.registry.load();
        match registry.find_resource(&uri) {
            Some(found) if !found.scopes.allows(principal) => {
                let what = format!("the resource {uri}");
                return crate::scopes::refusal(id, &what, &found.scopes);
            }
            Some(_) => {}
            None if registry.serves_below(&uri) => {}
            None => {
                // spec 2026-07-28 server/resources: a resource that does not exist is -32602 with
                // the URI in `data` (the handshake era's -32002 is retired).
                let e = ErrorObject::invalid_params(format_args!(
                    "no resource or resource template of this server matches {uri}"
                ))
                .with_data(json!({ "uri": uri }));
                return error_reply(Some(id), &e, false);
            }
        }
        drop(registry);
        let mut subs = session.inner.subscriptions.lock().expect("subscriptions");
        if !subs.contains(&uri) {
            if subs.len() >= limits.subscriptions {
                let e = ErrorObject::invalid_params(format_args!(
                    "this session is subscribed to {} resources, the most it may be; unsubscribe from one first",
                    subs.len()
                ));
                return error_reply(Some(id), &e, false);
            }
            let held: usize = subs.iter().map(String::len).sum();
            if held + uri.len() > limits.subscription_bytes {
                let e = ErrorObject::invalid_params(format_args!(
                    "this session's subscriptions hold {held} bytes of URIs; at most {} are kept",
                    limits.subscription_bytes
                ));
                return error_reply(Some(id), &e, false);
            }
            if let Some(charge) = &session.inner.charge
                && !charge.add(super::limits::uri_charge(&uri), limits.memory)
            {
                let e = ErrorObject::internal_error(
                    "this server's sessions keep as much as they may; try again later",
                );
                return error_reply(Some(id), &e, false);
            }
            subs.insert(uri);
        }
        drop(subs);
        *session.inner.subscriber.lock().expect("subscriber") = principal.clone();
        self.result_reply(id, &json!({}), Outcome::Success)
    }

    /// Whether the handshake-era sessions of this server keep more than
    /// [`SessionLimits::memory`](super::SessionLimits::memory) of what their clients sent: a
    /// transport that keeps sessions refuses new ones then (HTTP answers 503), as it does beyond
    /// its count of sessions.
    pub fn legacy_sessions_full(&self) -> bool {
        self.inner.kept.get() > self.inner.config.sessions.memory
    }
}

impl LegacySession {
    /// Ends the subscription to `uri`, if there is one, and gives back what it kept.
    pub(super) fn unsubscribe(&self, uri: &str) {
        let removed = self
            .inner
            .subscriptions
            .lock()
            .expect("subscriptions")
            .remove(uri);
        if removed && let Some(charge) = &self.inner.charge {
            charge.sub(super::limits::uri_charge(uri));
        }
    }
}
