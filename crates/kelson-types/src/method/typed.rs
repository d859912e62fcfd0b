//! The traits that tie a method to its parameter and result types, and one unit struct per method.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::completion::{CompleteRequestParams, CompleteResult};
use crate::discover::DiscoverResult;
use crate::meta::{NotificationParams, PaginatedRequestParams, RequestParams};
use crate::mrtr::ResultOrInputRequired;
use crate::notifications::{
    CancelledNotificationParams, LoggingMessageNotificationParams, ProgressNotificationParams,
    ResourceUpdatedNotificationParams,
};
use crate::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use crate::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
};
use crate::subscriptions::{
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
};
use crate::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};

use super::method_names;

/// A client-to-server request method: its name, its parameters and its result.
///
/// A router decodes the envelope, matches `method` against [`RequestMethod::NAME`], then decodes the
/// params as [`RequestMethod::Params`]; a client does the reverse. The method as a value, parsed
/// from a message, is a [`Method`](super::Method).
pub trait RequestMethod {
    /// The method string.
    const NAME: &'static str;
    /// The `params` type.
    type Params: Serialize + DeserializeOwned;
    /// The `result` type. For the three methods that allow multi round-trip requests it is
    /// [`ResultOrInputRequired`].
    type Result: Serialize + DeserializeOwned;
}

/// A notification method: its name and its parameters.
pub trait NotificationMethod {
    /// The method string.
    const NAME: &'static str;
    /// The `params` type.
    type Params: Serialize + DeserializeOwned;
}

/// Declares unit structs implementing [`RequestMethod`].
macro_rules! methods {
    ($( $(#[$attr:meta])* $name:ident = $method:path, $params:ty => $result:ty; )*) => {
        $(
            $(#[$attr])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct $name;

            impl RequestMethod for $name {
                const NAME: &'static str = $method;
                type Params = $params;
                type Result = $result;
            }
        )*
    };
}

/// Declares unit structs implementing [`NotificationMethod`].
macro_rules! notification_methods {
    ($( $(#[$attr:meta])* $name:ident = $method:path, $params:ty; )*) => {
        $(
            $(#[$attr])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct $name;

            impl NotificationMethod for $name {
                const NAME: &'static str = $method;
                type Params = $params;
            }
        )*
    };
}

/// One unit struct per method, implementing [`RequestMethod`] or [`NotificationMethod`].
pub mod methods {
    use super::*;

    methods! {
        /// `server/discover`.
        Discover = method_names::SERVER_DISCOVER, RequestParams => DiscoverResult;
        /// `tools/list`.
        ListTools = method_names::TOOLS_LIST, PaginatedRequestParams => ListToolsResult;
        /// `tools/call`, which may ask for input first.
        CallTool = method_names::TOOLS_CALL, CallToolRequestParams => ResultOrInputRequired<CallToolResult>;
        /// `resources/list`.
        ListResources = method_names::RESOURCES_LIST, PaginatedRequestParams => ListResourcesResult;
        /// `resources/templates/list`.
        ListResourceTemplates = method_names::RESOURCES_TEMPLATES_LIST, PaginatedRequestParams => ListResourceTemplatesResult;
        /// `resources/read`, which may ask for input first.
        ReadResource = method_names::RESOURCES_READ, ReadResourceRequestParams => ResultOrInputRequired<ReadResourceResult>;
        /// `prompts/list`.
        ListPrompts = method_names::PROMPTS_LIST, PaginatedRequestParams => ListPromptsResult;
        /// `prompts/get`, which may ask for input first.
        GetPrompt = method_names::PROMPTS_GET, GetPromptRequestParams => ResultOrInputRequired<GetPromptResult>;
        /// `completion/complete`.
        Complete = method_names::COMPLETION_COMPLETE, CompleteRequestParams => CompleteResult;
        /// `subscriptions/listen`; its result arrives only when the server closes the stream gracefully.
        SubscriptionsListen = method_names::SUBSCRIPTIONS_LISTEN, SubscriptionsListenRequestParams => SubscriptionsListenResult;
    }

    notification_methods! {
        /// `notifications/progress`.
        Progress = method_names::NOTIFICATIONS_PROGRESS, ProgressNotificationParams;
        /// `notifications/message` (deprecated).
        LoggingMessage = method_names::NOTIFICATIONS_MESSAGE, LoggingMessageNotificationParams;
        /// `notifications/cancelled`.
        Cancelled = method_names::NOTIFICATIONS_CANCELLED, CancelledNotificationParams;
        /// `notifications/subscriptions/acknowledged`.
        SubscriptionsAcknowledged = method_names::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED, SubscriptionsAcknowledgedNotificationParams;
        /// `notifications/tools/list_changed`.
        ToolListChanged = method_names::NOTIFICATIONS_TOOLS_LIST_CHANGED, NotificationParams;
        /// `notifications/prompts/list_changed`.
        PromptListChanged = method_names::NOTIFICATIONS_PROMPTS_LIST_CHANGED, NotificationParams;
        /// `notifications/resources/list_changed`.
        ResourceListChanged = method_names::NOTIFICATIONS_RESOURCES_LIST_CHANGED, NotificationParams;
        /// `notifications/resources/updated`.
        ResourceUpdated = method_names::NOTIFICATIONS_RESOURCES_UPDATED, ResourceUpdatedNotificationParams;
    }
}

#[cfg(test)]
mod tests {
    use super::methods::*;
    use super::*;

    fn name<M: RequestMethod>() -> &'static str {
        M::NAME
    }

    #[test]
    fn names_match_the_catalogue() {
        let names = [
            name::<Discover>(),
            name::<ListTools>(),
            name::<CallTool>(),
            name::<ListResources>(),
            name::<ListResourceTemplates>(),
            name::<ReadResource>(),
            name::<ListPrompts>(),
            name::<GetPrompt>(),
            name::<Complete>(),
            name::<SubscriptionsListen>(),
        ];
        assert_eq!(names, method_names::REQUESTS);
        assert_eq!(Progress::NAME, "notifications/progress");
        assert_eq!(ToolListChanged::NAME, "notifications/tools/list_changed");
    }
}
