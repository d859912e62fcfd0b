//! Method names, and the traits that tie a method to its parameter and result types.

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

/// Every method string of MCP 2026-07-28, plus the removed ones a server must still recognise to
/// refuse them properly.
pub mod method_names {
    /// Client request: what the server supports. Every server MUST implement it.
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// Client request: list tools.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Client request: call a tool.
    pub const TOOLS_CALL: &str = "tools/call";
    /// Client request: list resources.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// Client request: list resource templates.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Client request: read a resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// Client request: list prompts.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Client request: get a prompt.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// Client request: complete an argument.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// Client request: open a notification stream.
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

    /// Embedded input request: ask the user.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// Embedded input request: ask the client's model (deprecated).
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Embedded input request: ask for the client's roots (deprecated).
    pub const ROOTS_LIST: &str = "roots/list";

    /// Notification: progress of a request.
    pub const NOTIFICATIONS_PROGRESS: &str = "notifications/progress";
    /// Notification: a log message (deprecated).
    pub const NOTIFICATIONS_MESSAGE: &str = "notifications/message";
    /// Notification: cancel a request, or end a listen stream.
    pub const NOTIFICATIONS_CANCELLED: &str = "notifications/cancelled";
    /// Notification: the first message of a listen stream.
    pub const NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
        "notifications/subscriptions/acknowledged";
    /// Notification: the tool list changed.
    pub const NOTIFICATIONS_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// Notification: the prompt list changed.
    pub const NOTIFICATIONS_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// Notification: the resource list changed.
    pub const NOTIFICATIONS_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// Notification: a subscribed resource changed.
    pub const NOTIFICATIONS_RESOURCES_UPDATED: &str = "notifications/resources/updated";

    /// Removed: the 2025-11-25 handshake request.
    pub const INITIALIZE: &str = "initialize";
    /// Removed: liveness check.
    pub const PING: &str = "ping";
    /// Removed: session log level (now `_meta["io.modelcontextprotocol/logLevel"]` per request).
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// Removed: resource subscription (now `subscriptions/listen`).
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// Removed: resource unsubscription (now closing the listen stream).
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// Removed: the 2025-11-25 handshake notification.
    pub const NOTIFICATIONS_INITIALIZED: &str = "notifications/initialized";
    /// Removed: roots list changes.
    pub const NOTIFICATIONS_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// Removed: URL elicitation completion.
    pub const NOTIFICATIONS_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

    /// Every request a 2026-07-28 client may send (`ClientRequest`).
    pub const REQUESTS: &[&str] = &[
        SERVER_DISCOVER,
        TOOLS_LIST,
        TOOLS_CALL,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        RESOURCES_READ,
        PROMPTS_LIST,
        PROMPTS_GET,
        COMPLETION_COMPLETE,
        SUBSCRIPTIONS_LISTEN,
    ];

    /// Requests removed in 2026-07-28. spec 2026-07-28 (changelog): a modern-only server answers them
    /// with -32601 Method not found.
    pub const REMOVED_REQUESTS: &[&str] = &[
        INITIALIZE,
        PING,
        LOGGING_SET_LEVEL,
        RESOURCES_SUBSCRIBE,
        RESOURCES_UNSUBSCRIBE,
    ];

    /// The methods that may answer with an `InputRequiredResult`.
    pub const INPUT_REQUIRED_ALLOWED: &[&str] = &[TOOLS_CALL, RESOURCES_READ, PROMPTS_GET];
}

/// A client-to-server request method: its name, its parameters and its result.
///
/// A router decodes the envelope, matches `method` against [`Method::NAME`], then decodes the params
/// as [`Method::Params`]; a client does the reverse.
pub trait Method {
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

/// Declares unit structs implementing [`Method`].
macro_rules! methods {
    ($( $(#[$attr:meta])* $name:ident = $method:path, $params:ty => $result:ty; )*) => {
        $(
            $(#[$attr])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct $name;

            impl Method for $name {
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

/// One unit struct per method, implementing [`Method`] or [`NotificationMethod`].
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

    fn name<M: Method>() -> &'static str {
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
