//! Subscriptions: `subscriptions/listen`, its acknowledgement and its graceful end.
//!
//! spec 2026-07-28 basic/patterns/subscriptions: the first message of a listen stream MUST be
//! `notifications/subscriptions/acknowledged`, and every notification on the stream carries the
//! listen request's id in `_meta["io.modelcontextprotocol/subscriptionId"]`, verbatim.

use kelson_jsonrpc::Id;
use serde::{Deserialize, Serialize};

use crate::common::{Implementation, JsonObject, ResultType};
use crate::meta::{NotificationMeta, RequestMeta};

/// What a listener wants to hear about (`SubscriptionFilter`). Absent or false means not subscribed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs (and their sub-resources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// `notifications/tasks` for these tasks (the tasks extension, `io.modelcontextprotocol/tasks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
}

impl SubscriptionFilter {
    /// True when tool list changes are asked for.
    pub fn wants_tools_list_changed(&self) -> bool {
        self.tools_list_changed == Some(true)
    }

    /// True when prompt list changes are asked for.
    pub fn wants_prompts_list_changed(&self) -> bool {
        self.prompts_list_changed == Some(true)
    }

    /// True when resource list changes are asked for.
    pub fn wants_resources_list_changed(&self) -> bool {
        self.resources_list_changed == Some(true)
    }

    /// The subscribed resource URIs, empty when none.
    pub fn resource_uris(&self) -> &[String] {
        self.resource_subscriptions.as_deref().unwrap_or_default()
    }
}

/// The parameters of `subscriptions/listen` (`SubscriptionsListenRequestParams`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenRequestParams {
    /// The request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// What to listen for.
    pub notifications: SubscriptionFilter,
}

/// The final result of a listen stream that the server closes gracefully
/// (`SubscriptionsListenResult`).
///
/// spec 2026-07-28 basic/patterns/subscriptions: the server SHOULD send it before closing the stream;
/// a dropped transport ends the stream with no result at all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// The result kind.
    #[serde(default)]
    pub result_type: ResultType,
    /// Metadata naming the subscription that ended.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionsListenResultMeta,
}

impl SubscriptionsListenResult {
    /// The graceful end of the subscription opened by the listen request with this id.
    pub fn new(subscription_id: Id) -> Self {
        SubscriptionsListenResult {
            result_type: ResultType::Complete,
            meta: SubscriptionsListenResultMeta {
                subscription_id,
                server_info: None,
                extra: JsonObject::new(),
            },
        }
    }
}

/// The `_meta` of a [`SubscriptionsListenResult`] (`SubscriptionsListenResultMetaObject`), where the
/// subscription id is required.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenResultMeta {
    /// The id of the listen request.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: Id,
    /// The server's self-reported identity.
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// Every other member, kept verbatim. (This object ends a stream once, so the buffering of
    /// `flatten` costs nothing that matters.)
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The parameters of `notifications/subscriptions/acknowledged`
/// (`SubscriptionsAcknowledgedNotificationParams`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// Metadata with the subscription id.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// The subset of the requested filter the server will honour; unsupported kinds are left out.
    pub notifications: SubscriptionFilter,
}

impl SubscriptionsAcknowledgedNotificationParams {
    /// The acknowledgement of the listen request with this id.
    pub fn new(subscription_id: Id, honoured: SubscriptionFilter) -> Self {
        SubscriptionsAcknowledgedNotificationParams {
            meta: Some(NotificationMeta::subscription(subscription_id)),
            notifications: honoured,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn listen_result_requires_the_subscription_id() {
        let wire = json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 4, "x": 1}});
        let result: SubscriptionsListenResult = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(result.meta.subscription_id, Id::Int(4));
        assert_eq!(serde_json::to_value(&result).unwrap(), wire);
        assert!(
            serde_json::from_value::<SubscriptionsListenResult>(
                json!({"resultType": "complete", "_meta": {}})
            )
            .is_err()
        );
        assert_eq!(
            serde_json::to_value(SubscriptionsListenResult::new(Id::from("l"))).unwrap(),
            json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "l"}})
        );
    }

    #[test]
    fn filter_accessors() {
        let f: SubscriptionFilter =
            serde_json::from_value(json!({"toolsListChanged": true, "promptsListChanged": false}))
                .unwrap();
        assert!(f.wants_tools_list_changed() && !f.wants_prompts_list_changed());
        assert!(f.resource_uris().is_empty());
    }
}
