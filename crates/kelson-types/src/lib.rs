//! Every message type of the Model Context Protocol, revision 2026-07-28 (the stateless revision).
//!
//! Type names are the JSON Schema's `$defs` names (`CallToolRequestParams`, `ListToolsResult`, ...);
//! fields are snake_case versions of the wire names. Optional members are `Option`s that are written
//! only when present, so an explicit `"isError": false` or `"mode": "form"` survives a round trip.
//! `_meta` is a real field everywhere, and the open objects (`_meta`, capabilities) keep the members
//! this crate does not model in an `extra` map.
//!
//! What needs care on the wire is decided here, once:
//! - [`ResultType`] is carried on every result; [`ResultOrInputRequired`] decodes the three methods
//!   that may answer `input_required` by peeking at it, and refuses values it does not know.
//! - [`RequestMeta`] decodes even when a required key is missing, so a server can answer -32602 naming
//!   it ([`RequestMeta::missing_key`]).
//! - Embedded input requests ([`InputRequest`]) and their answers ([`InputResponse`]) are told apart
//!   by method or by keys, never by trial and error.
//! - A message's method is a [`Method`], parsed once from its name and matched on; the
//!   [`RequestMethod`] and [`NotificationMethod`] traits tie each method to its types.
//!
//! ```
//! use kelson_types::{
//!     CallToolRequest, CallToolResult, CallToolResultResponse, ContentBlock, ResultOrInputRequired,
//!     Tool, methods,
//! };
//! use serde_json::json;
//!
//! // A server describes a tool ...
//! let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
//! let tool = Tool::new("get_weather", schema.as_object().cloned().unwrap())
//!     .with_description("Current weather for a city");
//! assert_eq!(tool.display_name(), "get_weather");
//!
//! // ... decodes a call ...
//! let request: CallToolRequest = serde_json::from_value(json!({
//!     "jsonrpc": "2.0", "id": 1, "method": "tools/call",
//!     "params": {
//!         "_meta": {
//!             "io.modelcontextprotocol/protocolVersion": "2026-07-28",
//!             "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
//!         },
//!         "name": "get_weather",
//!         "arguments": {"city": "Paris"}
//!     }
//! }))?;
//! assert!(request.is::<methods::CallTool>());
//! assert_eq!(request.params.meta.missing_key(), None);
//! let caps = request.params.meta.client_capabilities.as_ref().unwrap();
//! assert!(caps.supports_elicitation_form() && !caps.supports_elicitation_url());
//!
//! // ... and answers it.
//! let result = CallToolResult::structured(json!({"temperature": 18}));
//! let response = CallToolResultResponse::new(request.id, result.into());
//! let wire = serde_json::to_value(&response)?;
//! assert_eq!(wire["result"]["resultType"], "complete");
//! assert_eq!(wire["result"]["structuredContent"]["temperature"], 18);
//!
//! // A client decodes the answer, which could also have been `input_required`.
//! let back: CallToolResultResponse = serde_json::from_value(wire)?;
//! match back.result {
//!     ResultOrInputRequired::Complete(result) => {
//!         assert!(matches!(&result.content[0], ContentBlock::Text(_)));
//!     }
//!     ResultOrInputRequired::InputRequired(interim) => panic!("unexpected: {interim:?}"),
//! }
//! # Ok::<(), serde_json::Error>(())
//! ```

mod wire;

#[macro_use]
mod list;
mod capabilities;
mod common;
mod completion;
mod content;
mod discover;
mod elicitation;
mod envelope;
mod meta;
mod method;
mod mrtr;
mod notifications;
mod param_headers;
mod prompts;
mod resources;
mod roots;
mod sampling;
mod subscriptions;
mod tasks;
mod tools;

pub use kelson_jsonrpc::{ErrorObject, Id};

pub use capabilities::{
    ClientCapabilities, ElicitationCapability, PromptsCapability, ResourcesCapability,
    SamplingCapability, ServerCapabilities, ToolsCapability,
};
pub use common::{
    Annotations, CacheScope, ExtensionMap, Icon, IconTheme, Implementation, JsonObject,
    LoggingLevel, ResultType, Role,
};
pub use completion::{
    CompleteArgument, CompleteContext, CompleteRequestParams, CompleteResult, Completion,
    CompletionReference, MAX_COMPLETION_VALUES, PromptReference, ResourceTemplateReference,
};
pub use content::{
    AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, ImageContent,
    ResourceContents, ResourceLink, TextContent, TextResourceContents,
};
pub use discover::DiscoverResult;
pub use elicitation::{
    ArrayType, BooleanSchema, BooleanType, ElicitAction, ElicitRequestFormParams,
    ElicitRequestParams, ElicitRequestURLParams, ElicitResult, ElicitValue, EnumOption, FormMode,
    LegacyTitledEnumSchema, NumberSchema, NumberType, ObjectType, PrimitiveSchemaDefinition,
    RequestedSchema, StringFormat, StringSchema, StringType, TitledEnumItems,
    TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, UntitledEnumItems,
    UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema, UrlMode,
};
pub use envelope::{
    CallToolRequest, CallToolResultResponse, CancelledNotification, CompleteRequest,
    CompleteResultResponse, DiscoverRequest, DiscoverResultResponse, GetPromptRequest,
    GetPromptResultResponse, HeaderMismatchError, InternalError, InvalidParamsError,
    InvalidRequestError, JsonRpcErrorResponse, JsonRpcNotification, JsonRpcRequest,
    JsonRpcResultResponse, JsonRpcVersion, ListPromptsRequest, ListPromptsResultResponse,
    ListResourceTemplatesRequest, ListResourceTemplatesResultResponse, ListResourcesRequest,
    ListResourcesResultResponse, ListToolsRequest, ListToolsResultResponse,
    LoggingMessageNotification, MethodNotFoundError, MissingRequiredClientCapabilityError,
    PaginatedRequest, ParseError, ProgressNotification, PromptListChangedNotification,
    ReadResourceRequest, ReadResourceResultResponse, ResourceListChangedNotification,
    ResourceUpdatedNotification, SubscriptionsAcknowledgedNotification, SubscriptionsListenRequest,
    SubscriptionsListenResultResponse, ToolListChangedNotification,
    UnsupportedProtocolVersionError,
};
pub use meta::{
    LATEST_PROTOCOL_VERSION, NotificationMeta, NotificationParams, PaginatedRequestParams,
    ProgressToken, RequestMeta, RequestParams, ResultMeta, meta_keys,
};
pub use method::{Method, NotificationMethod, RequestMethod, method_names, methods};
pub use mrtr::{
    CreateMessageRequest, ElicitRequest, InputRequest, InputRequests, InputRequiredResult,
    InputResponse, InputResponses, ListRootsRequest, ResultOrInputRequired,
};
pub use notifications::{
    CancelledNotificationParams, LoggingMessageNotificationParams, ProgressNotificationParams,
    ResourceUpdatedNotificationParams,
};
pub use param_headers::{DeclarationError, ParamHeader, ParamKind, param_headers};
pub use prompts::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage,
};
pub use resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate,
};
pub use roots::{ListRootsRequestParams, ListRootsResult, Root};
pub use sampling::{
    CreateMessageRequestParams, CreateMessageResult, IncludeContext, ModelHint, ModelPreferences,
    SamplingContent, SamplingMessage, SamplingMessageContentBlock, StopReason, ToolChoice,
    ToolChoiceMode, ToolResultContent, ToolUseContent,
};
pub use subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, SubscriptionsListenResult, SubscriptionsListenResultMeta,
};
pub use tasks::{
    CreateTaskResult, DetailedTask, GetTaskResult, TASKS_EXTENSION, Task, TaskIdParams, TaskStatus,
    UpdateTaskParams,
};
pub use tools::{CallToolRequestParams, CallToolResult, ListToolsResult, Tool, ToolAnnotations};
