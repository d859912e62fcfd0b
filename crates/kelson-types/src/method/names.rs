//! Every method string, as constants.

/// Every method string of MCP 2026-07-28 and its tasks extension, plus the handshake era's (removed
/// in 2026-07-28), which a server must still recognise to serve or refuse them properly. The same
/// names as values: [`Method`](crate::Method).
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

    /// Tasks extension request: a task's status and, once it ended, its result.
    pub const TASKS_GET: &str = "tasks/get";
    /// Tasks extension request: answers to a task's input requests.
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// Tasks extension request: stop a task.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// Tasks extension notification: a task changed.
    pub const NOTIFICATIONS_TASKS: &str = "notifications/tasks";

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
    /// Removed (2025-11-25 core tasks): a task's result, waiting for it.
    pub const TASKS_RESULT: &str = "tasks/result";
    /// Removed (2025-11-25 core tasks): the tasks of the requester.
    pub const TASKS_LIST: &str = "tasks/list";
    /// Removed (2025-11-25 core tasks): a task's status changed.
    pub const NOTIFICATIONS_TASKS_STATUS: &str = "notifications/tasks/status";

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
