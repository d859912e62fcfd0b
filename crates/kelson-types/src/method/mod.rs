//! Methods: [`Method`], the method of a message as a value; the names as constants
//! ([`method_names`]); and the traits that tie a method to its parameter and result types
//! ([`RequestMethod`], [`NotificationMethod`], one unit struct each in [`methods`]).

mod names;
mod typed;

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};

pub use names::method_names;
pub use typed::{NotificationMethod, RequestMethod, methods};

use method_names as n;

/// Which protocol eras a method belongs to, and whether it is a request or a notification.
#[derive(Clone, Copy)]
struct Traits {
    modern: bool,
    legacy: bool,
    notification: bool,
}

const fn modern(notification: bool) -> Traits {
    Traits {
        modern: true,
        legacy: false,
        notification,
    }
}

const fn legacy(notification: bool) -> Traits {
    Traits {
        modern: false,
        legacy: true,
        notification,
    }
}

const fn both(notification: bool) -> Traits {
    Traits {
        modern: true,
        legacy: true,
        notification,
    }
}

const REQUEST: bool = false;
const NOTIFICATION: bool = true;

/// Declares [`Method`]'s known variants with their names and traits, and the functions that
/// read them, from one table.
macro_rules! methods_table {
    ($( $(#[$doc:meta])* $variant:ident = $name:path, $traits:expr; )*) => {
        /// The method of a JSON-RPC request or notification: every method of MCP 2026-07-28 (with
        /// its tasks extension) and of the handshake era (2025-03-26 to 2025-11-25), named as the
        /// schema names its request or notification (`CallToolRequest` is [`Method::CallTool`]),
        /// and [`Method::Other`] for any other name, which it keeps.
        ///
        /// Parsed once from the message ([`Method::parse`], a `match` that allocates nothing) and
        /// matched on from then on; [`as_str`](Method::as_str) gives the name back.
        ///
        /// ```
        /// use kelson_types::Method;
        ///
        /// let method = Method::parse("tools/call");
        /// assert_eq!(method, Method::CallTool);
        /// assert_eq!(method.as_str(), "tools/call");
        /// assert!(method.in_modern() && method.in_legacy() && method.is_request());
        ///
        /// assert!(Method::parse("initialize").in_legacy());
        /// assert!(!Method::parse("initialize").in_modern());
        ///
        /// let other = Method::parse("x/made-up");
        /// assert_eq!(other, Method::Other("x/made-up".into()));
        /// assert!(!other.is_known());
        /// ```
        #[derive(Clone, Debug)]
        #[non_exhaustive]
        pub enum Method<'a> {
            $( $(#[$doc])* $variant, )*
            /// A method this crate does not know (or no spec defines), with its name as sent.
            /// [`Method::parse`] never makes one that names a known method; one made by hand still
            /// compares equal to the known variant of its name.
            Other(Cow<'a, str>),
        }

        impl Method<'static> {
            /// Every known method (every variant but [`Other`](Method::Other)), in the order
            /// they are declared: 2026-07-28's client requests first.
            pub const ALL: &'static [Method<'static>] = &[ $( Method::$variant, )* ];
        }

        impl<'a> Method<'a> {
            /// The method `name` names; [`Other`](Method::Other) borrows it when no method of that
            /// name is known. Exact and case-sensitive, as JSON-RPC method names are.
            pub fn parse(name: &'a str) -> Self {
                match name {
                    $( $name => Method::$variant, )*
                    _ => Method::Other(Cow::Borrowed(name)),
                }
            }

            /// [`parse`](Self::parse) for a name that may be owned (a decoded name with escapes):
            /// an unknown one is kept as it is, without a copy.
            #[inline]
            pub fn from_name(name: Cow<'a, str>) -> Self {
                match name {
                    Cow::Borrowed(name) => Method::parse(name),
                    Cow::Owned(name) => match Method::parse(&name) {
                        Method::Other(_) => Method::Other(Cow::Owned(name)),
                        known => known.into_owned(),
                    },
                }
            }

            /// The spec's name of a known method, `None` for [`Other`](Method::Other).
            pub const fn known_name(&self) -> Option<&'static str> {
                match self {
                    $( Method::$variant => Some($name), )*
                    Method::Other(_) => None,
                }
            }

            /// The same method, owning its name: it can outlive the message it was read from.
            pub fn into_owned(self) -> Method<'static> {
                match self {
                    $( Method::$variant => Method::$variant, )*
                    Method::Other(name) => Method::Other(Cow::Owned(name.into_owned())),
                }
            }

            const fn traits(&self) -> Option<Traits> {
                match self {
                    $( Method::$variant => Some($traits), )*
                    Method::Other(_) => None,
                }
            }
        }
    };
}

methods_table! {
    /// `server/discover` (`DiscoverRequest`): what the server supports. 2026-07-28.
    Discover = n::SERVER_DISCOVER, modern(REQUEST);
    /// `tools/list` (`ListToolsRequest`).
    ListTools = n::TOOLS_LIST, both(REQUEST);
    /// `tools/call` (`CallToolRequest`).
    CallTool = n::TOOLS_CALL, both(REQUEST);
    /// `resources/list` (`ListResourcesRequest`).
    ListResources = n::RESOURCES_LIST, both(REQUEST);
    /// `resources/templates/list` (`ListResourceTemplatesRequest`).
    ListResourceTemplates = n::RESOURCES_TEMPLATES_LIST, both(REQUEST);
    /// `resources/read` (`ReadResourceRequest`).
    ReadResource = n::RESOURCES_READ, both(REQUEST);
    /// `prompts/list` (`ListPromptsRequest`).
    ListPrompts = n::PROMPTS_LIST, both(REQUEST);
    /// `prompts/get` (`GetPromptRequest`).
    GetPrompt = n::PROMPTS_GET, both(REQUEST);
    /// `completion/complete` (`CompleteRequest`).
    Complete = n::COMPLETION_COMPLETE, both(REQUEST);
    /// `subscriptions/listen` (`SubscriptionsListenRequest`): a stream of notifications.
    /// 2026-07-28.
    SubscriptionsListen = n::SUBSCRIPTIONS_LISTEN, modern(REQUEST);

    /// `tasks/get` (`GetTaskRequest`): the tasks extension's (2026-07-28), and the handshake
    /// era's core tasks (2025-11-25).
    GetTask = n::TASKS_GET, both(REQUEST);
    /// `tasks/update`: input for a task (the tasks extension, 2026-07-28).
    UpdateTask = n::TASKS_UPDATE, modern(REQUEST);
    /// `tasks/cancel` (`CancelTaskRequest`): the tasks extension's (2026-07-28), and the
    /// handshake era's core tasks (2025-11-25).
    CancelTask = n::TASKS_CANCEL, both(REQUEST);

    /// `elicitation/create` (`ElicitRequest`): an input request, embedded in an
    /// `input_required` result in 2026-07-28, sent by the server in the handshake era.
    Elicit = n::ELICITATION_CREATE, both(REQUEST);
    /// `sampling/createMessage` (`CreateMessageRequest`): an input request, as
    /// [`Elicit`](Method::Elicit).
    CreateMessage = n::SAMPLING_CREATE_MESSAGE, both(REQUEST);
    /// `roots/list` (`ListRootsRequest`): an input request, as [`Elicit`](Method::Elicit).
    ListRoots = n::ROOTS_LIST, both(REQUEST);

    /// `initialize` (`InitializeRequest`): the handshake. Handshake era only.
    Initialize = n::INITIALIZE, legacy(REQUEST);
    /// `ping` (`PingRequest`). Handshake era only.
    Ping = n::PING, legacy(REQUEST);
    /// `logging/setLevel` (`SetLevelRequest`). Handshake era only.
    SetLevel = n::LOGGING_SET_LEVEL, legacy(REQUEST);
    /// `resources/subscribe` (`SubscribeRequest`). Handshake era only.
    Subscribe = n::RESOURCES_SUBSCRIBE, legacy(REQUEST);
    /// `resources/unsubscribe` (`UnsubscribeRequest`). Handshake era only.
    Unsubscribe = n::RESOURCES_UNSUBSCRIBE, legacy(REQUEST);
    /// `tasks/result` (`GetTaskPayloadRequest`). Handshake era only (2025-11-25).
    GetTaskPayload = n::TASKS_RESULT, legacy(REQUEST);
    /// `tasks/list` (`ListTasksRequest`). Handshake era only (2025-11-25).
    ListTasks = n::TASKS_LIST, legacy(REQUEST);

    /// `notifications/cancelled` (`CancelledNotification`).
    Cancelled = n::NOTIFICATIONS_CANCELLED, both(NOTIFICATION);
    /// `notifications/progress` (`ProgressNotification`).
    Progress = n::NOTIFICATIONS_PROGRESS, both(NOTIFICATION);
    /// `notifications/message` (`LoggingMessageNotification`).
    LoggingMessage = n::NOTIFICATIONS_MESSAGE, both(NOTIFICATION);
    /// `notifications/subscriptions/acknowledged` (`SubscriptionsAcknowledgedNotification`).
    /// 2026-07-28.
    SubscriptionsAcknowledged = n::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED, modern(NOTIFICATION);
    /// `notifications/tools/list_changed` (`ToolListChangedNotification`).
    ToolListChanged = n::NOTIFICATIONS_TOOLS_LIST_CHANGED, both(NOTIFICATION);
    /// `notifications/prompts/list_changed` (`PromptListChangedNotification`).
    PromptListChanged = n::NOTIFICATIONS_PROMPTS_LIST_CHANGED, both(NOTIFICATION);
    /// `notifications/resources/list_changed` (`ResourceListChangedNotification`).
    ResourceListChanged = n::NOTIFICATIONS_RESOURCES_LIST_CHANGED, both(NOTIFICATION);
    /// `notifications/resources/updated` (`ResourceUpdatedNotification`).
    ResourceUpdated = n::NOTIFICATIONS_RESOURCES_UPDATED, both(NOTIFICATION);
    /// `notifications/tasks`: a task changed (the tasks extension, 2026-07-28).
    TaskChanged = n::NOTIFICATIONS_TASKS, modern(NOTIFICATION);
    /// `notifications/initialized` (`InitializedNotification`). Handshake era only.
    Initialized = n::NOTIFICATIONS_INITIALIZED, legacy(NOTIFICATION);
    /// `notifications/roots/list_changed` (`RootsListChangedNotification`). Handshake era only.
    RootsListChanged = n::NOTIFICATIONS_ROOTS_LIST_CHANGED, legacy(NOTIFICATION);
    /// `notifications/elicitation/complete` (`ElicitationCompleteNotification`). Handshake era
    /// only.
    ElicitationComplete = n::NOTIFICATIONS_ELICITATION_COMPLETE, legacy(NOTIFICATION);
    /// `notifications/tasks/status` (`TaskStatusNotification`). Handshake era only (2025-11-25).
    TaskStatus = n::NOTIFICATIONS_TASKS_STATUS, legacy(NOTIFICATION);
}

impl<'a> Method<'a> {
    /// The method name: the spec's for a known method, the name as sent for
    /// [`Other`](Method::Other).
    pub fn as_str(&self) -> &str {
        match self {
            Method::Other(name) => name,
            known => known.known_name().unwrap_or_default(),
        }
    }

    /// Whether this is a method of the spec (any variant but [`Other`](Method::Other)).
    pub const fn is_known(&self) -> bool {
        !matches!(self, Method::Other(_))
    }

    /// Whether the method belongs to 2026-07-28 (with its tasks extension). `false` for
    /// [`Other`](Method::Other).
    pub const fn in_modern(&self) -> bool {
        matches!(self.traits(), Some(Traits { modern: true, .. }))
    }

    /// Whether the method belongs to the handshake era (some revision from 2025-03-26 to
    /// 2025-11-25). `false` for [`Other`](Method::Other).
    pub const fn in_legacy(&self) -> bool {
        matches!(self.traits(), Some(Traits { legacy: true, .. }))
    }

    /// Whether the method is a notification's: a known notification, or another name under
    /// `notifications/`, the spec's namespace for them.
    pub fn is_notification(&self) -> bool {
        match (self.traits(), self) {
            (Some(traits), _) => traits.notification,
            (None, Method::Other(name)) => name.starts_with("notifications/"),
            (None, _) => false,
        }
    }

    /// Whether the method is a request's: not a [notification](Self::is_notification).
    pub fn is_request(&self) -> bool {
        !self.is_notification()
    }

    /// Whether the method may answer with an `input_required` result (spec 2026-07-28
    /// basic/patterns/mrtr): `tools/call`, `prompts/get` and `resources/read`.
    pub const fn allows_input_required(&self) -> bool {
        matches!(
            self,
            Method::CallTool | Method::GetPrompt | Method::ReadResource
        )
    }

    /// The member of the params that names what the request acts on: `name` (`tools/call`,
    /// `prompts/get`), `uri` (`resources/read`) or `taskId` (`tasks/get`, `tasks/update`,
    /// `tasks/cancel`). spec 2026-07-28 basic/transports/streamable-http: its value is the
    /// `Mcp-Name` header.
    pub const fn name_param(&self) -> Option<&'static str> {
        match self {
            Method::CallTool | Method::GetPrompt => Some("name"),
            Method::ReadResource => Some("uri"),
            Method::GetTask | Method::UpdateTask | Method::CancelTask => Some("taskId"),
            _ => None,
        }
    }

    /// The same method, borrowing its name from `self` when it is an [`Other`](Method::Other).
    pub fn reborrow(&self) -> Method<'_> {
        match self {
            Method::Other(name) => Method::Other(Cow::Borrowed(name)),
            known => known.clone(),
        }
    }
}

impl PartialEq for Method<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Method::Other(a), Method::Other(b)) => a == b,
            (Method::Other(_), _) | (_, Method::Other(_)) => self.as_str() == other.as_str(),
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

impl Eq for Method<'_> {}

impl Hash for Method<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // By name, as equality is: an `Other` made by hand with a known name hashes alike.
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for Method<'_> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Method<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Method<'_>> for str {
    fn eq(&self, other: &Method<'_>) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Method<'_>> for &str {
    fn eq(&self, other: &Method<'_>) -> bool {
        *self == other.as_str()
    }
}

impl fmt::Display for Method<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for Method<'_> {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl<'a> From<&'a str> for Method<'a> {
    fn from(name: &'a str) -> Self {
        Method::parse(name)
    }
}

impl<'a> From<Cow<'a, str>> for Method<'a> {
    fn from(name: Cow<'a, str>) -> Self {
        Method::from_name(name)
    }
}

impl From<String> for Method<'static> {
    fn from(name: String) -> Self {
        Method::from_name(Cow::Owned(name))
    }
}

impl serde::Serialize for Method<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Method<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;

        impl<'de> serde::de::Visitor<'de> for Name {
            type Value = Method<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a method name")
            }

            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                name: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(Method::parse(name))
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Self::Value, E> {
                Ok(Method::parse(name).into_owned())
            }

            fn visit_string<E: serde::de::Error>(self, name: String) -> Result<Self::Value, E> {
                Ok(Method::from(name))
            }
        }

        deserializer.deserialize_str(Name)
    }
}

#[cfg(test)]
mod tests;
