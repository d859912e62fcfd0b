//! Whole JSON-RPC messages with typed parameters and results, and the schema's names for them.
//!
//! A server on the hot path decodes with `kelson_jsonrpc::decode` (two-phase: envelope first, then the
//! params as the method's type) and writes with its writers; these types serve clients, tests, and
//! anything that wants one typed value per message.

use kelson_jsonrpc::{ErrorObject, Id};
use serde::{Deserialize, Serialize};

use crate::completion::{CompleteRequestParams, CompleteResult};
use crate::discover::DiscoverResult;
use crate::meta::{NotificationParams, PaginatedRequestParams, RequestParams};
use crate::method::{NotificationMethod, RequestMethod};
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
use crate::wire::string_const;

string_const! {
    /// The constant `"2.0"` of the `jsonrpc` member; any other value is refused on input.
    JsonRpcVersion = "2.0"
}

/// A JSON-RPC request with typed parameters (`JSONRPCRequest`).
///
/// spec 2026-07-28 basic/index: the id is a string or an integer, never null; every MCP request has
/// `params`, because `params._meta` is required.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest<P> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The request id.
    pub id: Id,
    /// The method name.
    pub method: String,
    /// The parameters.
    pub params: P,
}

impl<P> JsonRpcRequest<P> {
    /// A request for any method name.
    pub fn new(id: impl Into<Id>, method: impl Into<String>, params: P) -> Self {
        JsonRpcRequest {
            jsonrpc: JsonRpcVersion,
            id: id.into(),
            method: method.into(),
            params,
        }
    }

    /// A request for the method `M`, whose name is filled in.
    pub fn for_method<M: RequestMethod<Params = P>>(id: impl Into<Id>, params: P) -> Self {
        Self::new(id, M::NAME, params)
    }

    /// True when this request calls the method `M`.
    pub fn is<M: RequestMethod>(&self) -> bool {
        self.method == M::NAME
    }
}

/// A JSON-RPC notification with typed parameters (`JSONRPCNotification`); it has no id and gets no
/// answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcNotification<P> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The method name.
    pub method: String,
    /// The parameters; optional for the notifications that carry only `_meta`. (No
    /// `#[serde(default)]`: serde already reads a missing `Option` as `None`, and `default` would
    /// demand `P: Default`.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> JsonRpcNotification<P> {
    /// A notification for any method name.
    pub fn new(method: impl Into<String>, params: P) -> Self {
        JsonRpcNotification {
            jsonrpc: JsonRpcVersion,
            method: method.into(),
            params: Some(params),
        }
    }

    /// A notification for the method `N`, whose name is filled in.
    pub fn for_method<N: NotificationMethod<Params = P>>(params: P) -> Self {
        Self::new(N::NAME, params)
    }

    /// True when this notification is of the method `N`.
    pub fn is<N: NotificationMethod>(&self) -> bool {
        self.method == N::NAME
    }
}

/// A successful JSON-RPC response with a typed result (`JSONRPCResultResponse`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResultResponse<R> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request answered.
    pub id: Id,
    /// The result; 2026-07-28 results always carry `resultType`.
    pub result: R,
}

impl<R> JsonRpcResultResponse<R> {
    /// A response to the request with this id.
    pub fn new(id: impl Into<Id>, result: R) -> Self {
        JsonRpcResultResponse {
            jsonrpc: JsonRpcVersion,
            id: id.into(),
            result,
        }
    }
}

/// A JSON-RPC error response (`JSONRPCErrorResponse`).
///
/// spec 2026-07-28 basic/index: the id is echoed whenever it could be read, and omitted only when the request
/// was too malformed to read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcErrorResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request answered, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Id>,
    /// The error.
    pub error: ErrorObject,
}

impl JsonRpcErrorResponse {
    /// An error response, with the request's id when it is known.
    pub fn new(id: Option<Id>, error: ErrorObject) -> Self {
        JsonRpcErrorResponse {
            jsonrpc: JsonRpcVersion,
            id,
            error,
        }
    }
}

/// `server/discover` request.
pub type DiscoverRequest = JsonRpcRequest<RequestParams>;
/// A paginated list request of any list method.
pub type PaginatedRequest = JsonRpcRequest<PaginatedRequestParams>;
/// `tools/list` request.
pub type ListToolsRequest = JsonRpcRequest<PaginatedRequestParams>;
/// `tools/call` request.
pub type CallToolRequest = JsonRpcRequest<CallToolRequestParams>;
/// `resources/list` request.
pub type ListResourcesRequest = JsonRpcRequest<PaginatedRequestParams>;
/// `resources/templates/list` request.
pub type ListResourceTemplatesRequest = JsonRpcRequest<PaginatedRequestParams>;
/// `resources/read` request.
pub type ReadResourceRequest = JsonRpcRequest<ReadResourceRequestParams>;
/// `prompts/list` request.
pub type ListPromptsRequest = JsonRpcRequest<PaginatedRequestParams>;
/// `prompts/get` request.
pub type GetPromptRequest = JsonRpcRequest<GetPromptRequestParams>;
/// `completion/complete` request.
pub type CompleteRequest = JsonRpcRequest<CompleteRequestParams>;
/// `subscriptions/listen` request.
pub type SubscriptionsListenRequest = JsonRpcRequest<SubscriptionsListenRequestParams>;

/// Response to `server/discover`.
pub type DiscoverResultResponse = JsonRpcResultResponse<DiscoverResult>;
/// Response to `tools/list`.
pub type ListToolsResultResponse = JsonRpcResultResponse<ListToolsResult>;
/// Response to `tools/call`: a final or an interim result.
pub type CallToolResultResponse = JsonRpcResultResponse<ResultOrInputRequired<CallToolResult>>;
/// Response to `resources/list`.
pub type ListResourcesResultResponse = JsonRpcResultResponse<ListResourcesResult>;
/// Response to `resources/templates/list`.
pub type ListResourceTemplatesResultResponse = JsonRpcResultResponse<ListResourceTemplatesResult>;
/// Response to `resources/read`: a final or an interim result.
pub type ReadResourceResultResponse =
    JsonRpcResultResponse<ResultOrInputRequired<ReadResourceResult>>;
/// Response to `prompts/list`.
pub type ListPromptsResultResponse = JsonRpcResultResponse<ListPromptsResult>;
/// Response to `prompts/get`: a final or an interim result.
pub type GetPromptResultResponse = JsonRpcResultResponse<ResultOrInputRequired<GetPromptResult>>;
/// Response to `completion/complete`.
pub type CompleteResultResponse = JsonRpcResultResponse<CompleteResult>;
/// The graceful end of `subscriptions/listen`.
pub type SubscriptionsListenResultResponse = JsonRpcResultResponse<SubscriptionsListenResult>;

/// `notifications/progress`.
pub type ProgressNotification = JsonRpcNotification<ProgressNotificationParams>;
/// `notifications/message` (deprecated).
pub type LoggingMessageNotification = JsonRpcNotification<LoggingMessageNotificationParams>;
/// `notifications/cancelled`.
pub type CancelledNotification = JsonRpcNotification<CancelledNotificationParams>;
/// `notifications/subscriptions/acknowledged`.
pub type SubscriptionsAcknowledgedNotification =
    JsonRpcNotification<SubscriptionsAcknowledgedNotificationParams>;
/// `notifications/tools/list_changed`.
pub type ToolListChangedNotification = JsonRpcNotification<NotificationParams>;
/// `notifications/prompts/list_changed`.
pub type PromptListChangedNotification = JsonRpcNotification<NotificationParams>;
/// `notifications/resources/list_changed`.
pub type ResourceListChangedNotification = JsonRpcNotification<NotificationParams>;
/// `notifications/resources/updated`.
pub type ResourceUpdatedNotification = JsonRpcNotification<ResourceUpdatedNotificationParams>;

/// A whole error response with code -32020 (`HeaderMismatchError`).
pub type HeaderMismatchError = JsonRpcErrorResponse;
/// A whole error response with code -32021 (`MissingRequiredClientCapabilityError`).
pub type MissingRequiredClientCapabilityError = JsonRpcErrorResponse;
/// A whole error response with code -32022 (`UnsupportedProtocolVersionError`).
pub type UnsupportedProtocolVersionError = JsonRpcErrorResponse;

/// The error object of a -32700 error (`ParseError`). Unlike the three aliases above, the schema's
/// standard-code errors name only the `error` member, not the whole response.
pub type ParseError = ErrorObject;
/// The error object of a -32600 error (`InvalidRequestError`).
pub type InvalidRequestError = ErrorObject;
/// The error object of a -32601 error (`MethodNotFoundError`).
pub type MethodNotFoundError = ErrorObject;
/// The error object of a -32602 error (`InvalidParamsError`).
pub type InvalidParamsError = ErrorObject;
/// The error object of a -32603 error (`InternalError`).
pub type InternalError = ErrorObject;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::RequestMeta;
    use crate::method::methods;
    use serde_json::json;

    #[test]
    fn version_must_be_2_0() {
        let bad = json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list", "params": {}});
        assert!(serde_json::from_value::<ListToolsRequest>(bad).is_err());
        let missing = json!({"id": 1, "method": "tools/list", "params": {}});
        assert!(serde_json::from_value::<ListToolsRequest>(missing).is_err());
    }

    #[test]
    fn typed_constructors_fill_the_method() {
        let request = ListToolsRequest::for_method::<methods::ListTools>(
            "a",
            PaginatedRequestParams::new(RequestMeta::default()),
        );
        assert!(request.is::<methods::ListTools>());
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": {"_meta": {}}})
        );
        let n = ToolListChangedNotification::for_method::<methods::ToolListChanged>(
            NotificationParams::subscription(Id::from(9)),
        );
        assert_eq!(
            serde_json::to_value(&n).unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                   "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 9}}})
        );
        let bare: ToolListChangedNotification = serde_json::from_value(
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        )
        .unwrap();
        assert_eq!(bare.params, None);
    }

    #[test]
    fn error_response_id_is_optional() {
        let e = JsonRpcErrorResponse::new(None, ErrorObject::parse_error("eof"));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error: eof"}})
        );
    }
}
