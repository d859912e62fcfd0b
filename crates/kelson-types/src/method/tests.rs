use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::BuildHasher as _;

use super::*;

/// The method names of a schema's `$defs`: every `method` constant of a request or notification.
fn schema_methods(schema: &str) -> HashSet<String> {
    let schema: serde_json::Value = serde_json::from_str(schema).expect("the schema is JSON");
    schema["$defs"]
        .as_object()
        .expect("$defs")
        .values()
        .filter_map(|def| def["properties"]["method"]["const"].as_str())
        .map(str::to_owned)
        .collect()
}

/// The `method` constants of the handshake era's schema (spec/legacy-2025-11-25/schema.json).
const LEGACY_SCHEMA_METHODS: &[&str] = &[
    "completion/complete",
    "elicitation/create",
    "initialize",
    "logging/setLevel",
    "notifications/cancelled",
    "notifications/elicitation/complete",
    "notifications/initialized",
    "notifications/message",
    "notifications/progress",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "notifications/tasks/status",
    "notifications/tools/list_changed",
    "ping",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/templates/list",
    "resources/unsubscribe",
    "roots/list",
    "sampling/createMessage",
    "tasks/cancel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tools/call",
    "tools/list",
];

#[test]
fn every_known_method_round_trips_by_name() {
    let mut names = HashSet::new();
    for method in Method::ALL {
        let name = method.as_str();
        assert!(names.insert(name), "{name} twice");
        assert_eq!(Method::parse(name), *method);
        assert!(matches!(Method::parse(name), m if m.is_known()));
        assert_eq!(method.known_name(), Some(name));
        assert_eq!(Method::from_name(Cow::Owned(name.to_owned())), *method);
        assert!(method.in_modern() || method.in_legacy(), "{name} in no era");
        assert_eq!(method.is_notification(), name.starts_with("notifications/"));
    }
}

#[test]
fn every_method_of_both_schemas_is_known_in_its_era() {
    let modern = include_str!("../../tests/spec/schema.json");
    let modern = schema_methods(modern);
    assert_eq!(modern.len(), 21, "{modern:?}");
    for name in modern {
        let method = Method::parse(&name);
        assert!(method.is_known() && method.in_modern(), "{name}");
    }
    for name in LEGACY_SCHEMA_METHODS {
        let method = Method::parse(name);
        assert!(method.is_known() && method.in_legacy(), "{name}");
    }
    // And nothing is marked in an era whose schema lacks it, but for the tasks extension's.
    let extension = [
        Method::GetTask,
        Method::UpdateTask,
        Method::CancelTask,
        Method::TaskChanged,
    ];
    for method in Method::ALL {
        if method.in_legacy() {
            assert!(LEGACY_SCHEMA_METHODS.contains(&method.as_str()), "{method}");
        }
        if method.in_modern() && !extension.contains(method) {
            let modern = schema_methods(include_str!("../../tests/spec/schema.json"));
            assert!(modern.contains(method.as_str()), "{method}");
        }
    }
}

#[test]
fn the_catalogue_of_requests_matches() {
    // 2026-07-28's client requests come first.
    let requests: Vec<&str> = Method::ALL[..method_names::REQUESTS.len()]
        .iter()
        .map(Method::as_str)
        .collect();
    assert_eq!(requests, method_names::REQUESTS);
    for name in method_names::REMOVED_REQUESTS {
        let method = Method::parse(name);
        assert!(method.in_legacy() && !method.in_modern(), "{name}");
    }
    for name in method_names::INPUT_REQUIRED_ALLOWED {
        assert!(Method::parse(name).allows_input_required(), "{name}");
    }
    assert_eq!(
        Method::ALL
            .iter()
            .filter(|m| m.allows_input_required())
            .count(),
        method_names::INPUT_REQUIRED_ALLOWED.len()
    );
}

#[test]
fn other_names_are_kept_and_compared_by_name() {
    for name in ["", "TOOLS/CALL", "tools/call ", "x/y", "notifications/x"] {
        let method = Method::parse(name);
        assert_eq!(method, Method::Other(Cow::Borrowed(name)));
        assert_eq!(method.as_str(), name);
        assert!(!method.is_known() && !method.in_modern() && !method.in_legacy());
        assert_eq!(method.known_name(), None);
        assert_eq!(method.into_owned().as_str(), name);
    }
    assert!(Method::parse("notifications/x").is_notification());
    assert!(Method::parse("x/y").is_request());
    // Made by hand with a known name, it is that method.
    let by_hand = Method::Other(Cow::Borrowed("tools/call"));
    assert_eq!(by_hand, Method::CallTool);
    let state = std::collections::hash_map::RandomState::new();
    assert_eq!(state.hash_one(&by_hand), state.hash_one(Method::CallTool));
    // An owned unknown name is kept without a copy.
    let owned = Method::from_name(Cow::Owned("x/owned".to_owned()));
    assert!(matches!(owned, Method::Other(Cow::Owned(_))));
}

#[test]
fn comparisons_with_strings_and_serde() {
    assert!(Method::CallTool == "tools/call");
    assert!("prompts/get" == Method::GetPrompt);
    assert_eq!(
        Method::ListResourceTemplates.to_string(),
        "resources/templates/list"
    );
    assert_eq!(Method::Discover.name_param(), None);
    assert_eq!(Method::ReadResource.name_param(), Some("uri"));
    assert_eq!(Method::UpdateTask.name_param(), Some("taskId"));

    let json = serde_json::to_string(&Method::SubscriptionsListen).unwrap();
    assert_eq!(json, r#""subscriptions/listen""#);
    let back: Method<'_> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, Method::SubscriptionsListen);
    let text = r#""x/borrowed""#;
    let other: Method<'_> = serde_json::from_str(text).unwrap();
    assert!(matches!(other, Method::Other(Cow::Borrowed("x/borrowed"))));
    // With an escape the name cannot be borrowed; it is still read.
    let escaped: Method<'static> = serde_json::from_str(r#""tools\/call""#).unwrap();
    assert_eq!(escaped, Method::CallTool);
}
