//! The bounded `method` labels of the metrics: a request's or notification's [`Method`] mapped to
//! a fixed index, never to the string a client sent.

use kelson_types::{Method, method_names};

use super::CLIENT_REQUESTS;

/// The request methods with a `method` label of their own: 2026-07-28's client requests, in label
/// order. Every other method, the handshake era's own and the tasks extension's included, counts
/// as `other`: metrics never label a request with the method string a client sent, so the label
/// set stays bounded whatever clients send.
const LABELED_METHODS: [Method<'static>; 10] = CLIENT_REQUESTS;
pub(super) const METHODS: usize = LABELED_METHODS.len() + 1;

/// The client notifications with a label of their own: the only one the spec defines for clients
/// is `notifications/cancelled` (spec 2026-07-28 basic/patterns/cancellation); anything else is
/// `other`.
pub(super) const NOTIFICATIONS: [&str; 2] = [method_names::NOTIFICATIONS_CANCELLED, "other"];

pub(super) fn notification_index(method: &Method<'_>) -> usize {
    match method {
        Method::Cancelled => 0,
        _ => 1,
    }
}

/// The index of a request's method among the `method` labels; `None` (no method read, or one
/// outside the spec's whose name was not kept) is `other`.
pub(super) fn method_index(method: Option<&Method<'_>>) -> usize {
    match method {
        Some(Method::Discover) => 0,
        Some(Method::ListTools) => 1,
        Some(Method::CallTool) => 2,
        Some(Method::ListResources) => 3,
        Some(Method::ListResourceTemplates) => 4,
        Some(Method::ReadResource) => 5,
        Some(Method::ListPrompts) => 6,
        Some(Method::GetPrompt) => 7,
        Some(Method::Complete) => 8,
        Some(Method::SubscriptionsListen) => 9,
        _ => METHODS - 1,
    }
}

/// The `method` label at `index`: the method's name, or `other`.
pub(super) fn method_label(index: usize) -> &'static str {
    LABELED_METHODS
        .get(index)
        .and_then(Method::known_name)
        .unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's request methods in order, every other method `other`.
    #[test]
    fn method_labels_round_trip_and_bound_the_rest() {
        for (i, method) in LABELED_METHODS.iter().enumerate() {
            assert_eq!(method_index(Some(method)), i);
            assert_eq!(method_label(i), method.as_str());
        }
        assert_eq!(method_label(METHODS - 1), "other");
        assert_eq!(method_index(None), METHODS - 1);
        for name in [
            "initialize",
            "ping",
            "tools/calls",
            "",
            "other",
            "TOOLS/CALL",
            "tasks/get",
        ] {
            assert_eq!(
                method_index(Some(&Method::parse(name))),
                METHODS - 1,
                "{name}"
            );
        }
        assert_eq!(notification_index(&Method::Cancelled), 0);
        assert_eq!(
            NOTIFICATIONS[notification_index(&Method::parse("x"))],
            "other"
        );
    }
}
