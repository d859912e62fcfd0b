//! The `_meta` objects: the per-request envelope of the stateless protocol, result and notification
//! metadata, and the base parameter shapes that carry them.

use std::sync::Arc;

use kelson_jsonrpc::Id;
use serde::{Deserialize, Serialize};

use crate::capabilities::ClientCapabilities;
use crate::common::{Implementation, LoggingLevel};
use crate::wire::open_object;

/// The protocol revision this crate implements.
pub const LATEST_PROTOCOL_VERSION: &str = "2026-07-28";

/// A progress token: a string or an integer chosen by the client, echoed verbatim.
pub type ProgressToken = Id;

/// The reserved `_meta` keys of MCP 2026-07-28.
pub mod meta_keys {
    /// Request `_meta`: the protocol revision of this request (required).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// Request `_meta`: the client's capabilities for this request (required).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Request `_meta`: the client's self-reported identity (optional).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// Request `_meta`: the lowest log level the client wants for this request (optional, deprecated).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Result `_meta`: the server's self-reported identity.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// Notification `_meta`: the id of the `subscriptions/listen` request a notification belongs to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// Request `_meta`: opts the request in to `notifications/progress` (unprefixed for history).
    pub const PROGRESS_TOKEN: &str = "progressToken";
}

open_object! {
    /// The `_meta` of every client request (`RequestMetaObject`): the stateless envelope.
    ///
    /// spec 2026-07-28 basic/index (request metadata): `protocolVersion` and `clientCapabilities` are
    /// required, and a request without them MUST get -32602 Invalid params. Both are `Option` here so
    /// that decoding succeeds and the server can name the missing key (see [`RequestMeta::missing_key`])
    /// instead of reporting a serde error. W3C trace keys (`traceparent`, `tracestate`, `baggage`) and
    /// vendor keys land in `extra`.
    pub struct RequestMeta {
        /// The protocol revision the client speaks on this request.
        pub protocol_version: Option<String> = meta_keys::PROTOCOL_VERSION,
        /// The capabilities the client declares for this request only; servers MUST NOT remember
        /// them across requests. Shared (`Arc`), so that a client sending the same capabilities on
        /// every request, or a handshake-era session standing in for them, clones nothing.
        pub client_capabilities: Option<Arc<ClientCapabilities>> = meta_keys::CLIENT_CAPABILITIES,
        /// The client's self-reported identity; a server MUST NOT reject a request without it.
        pub client_info: Option<Arc<Implementation>> = meta_keys::CLIENT_INFO,
        /// The lowest log level the client wants; without it the server MUST NOT send
        /// `notifications/message` for this request.
        pub log_level: Option<LoggingLevel> = meta_keys::LOG_LEVEL,
        /// Opts the request in to progress notifications.
        pub progress_token: Option<ProgressToken> = meta_keys::PROGRESS_TOKEN,
    }
}

impl RequestMeta {
    /// A request envelope with the two required keys set.
    pub fn new(
        protocol_version: impl Into<String>,
        client_capabilities: impl Into<Arc<ClientCapabilities>>,
    ) -> Self {
        RequestMeta {
            protocol_version: Some(protocol_version.into()),
            client_capabilities: Some(client_capabilities.into()),
            ..RequestMeta::default()
        }
    }

    /// A request envelope for [`LATEST_PROTOCOL_VERSION`] with the given capabilities.
    pub fn latest(client_capabilities: impl Into<Arc<ClientCapabilities>>) -> Self {
        Self::new(LATEST_PROTOCOL_VERSION, client_capabilities)
    }

    /// The first required key that is absent, if any: the key to name in the -32602 answer.
    pub fn missing_key(&self) -> Option<&'static str> {
        if self.protocol_version.is_none() {
            Some(meta_keys::PROTOCOL_VERSION)
        } else if self.client_capabilities.is_none() {
            Some(meta_keys::CLIENT_CAPABILITIES)
        } else {
            None
        }
    }

    /// Sets the client identity.
    #[must_use]
    pub fn with_client_info(mut self, client_info: impl Into<Arc<Implementation>>) -> Self {
        self.client_info = Some(client_info.into());
        self
    }

    /// Sets the requested log level.
    #[must_use]
    pub fn with_log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Sets the progress token.
    #[must_use]
    pub fn with_progress_token(mut self, token: impl Into<ProgressToken>) -> Self {
        self.progress_token = Some(token.into());
        self
    }
}

open_object! {
    /// The `_meta` of a result (`ResultMetaObject`).
    ///
    /// spec 2026-07-28 basic/index: servers SHOULD identify themselves in `serverInfo` on every result;
    /// clients MUST NOT change behaviour or make security decisions based on it.
    pub struct ResultMeta {
        /// The server's self-reported identity.
        pub server_info: Option<Implementation> = meta_keys::SERVER_INFO,
    }
}

impl ResultMeta {
    /// Result metadata that names the server.
    pub fn server_info(server_info: Implementation) -> Self {
        ResultMeta {
            server_info: Some(server_info),
            extra: Default::default(),
        }
    }
}

open_object! {
    /// The `_meta` of a notification (`NotificationMetaObject`).
    ///
    /// spec 2026-07-28 basic/patterns/subscriptions: every notification delivered on a
    /// `subscriptions/listen` stream MUST carry the listen request's id, verbatim; other notifications
    /// (progress, log messages) carry none.
    pub struct NotificationMeta {
        /// The id of the `subscriptions/listen` request this notification belongs to.
        pub subscription_id: Option<Id> = meta_keys::SUBSCRIPTION_ID,
    }
}

impl NotificationMeta {
    /// Notification metadata that ties the notification to a listen request.
    pub fn subscription(subscription_id: Id) -> Self {
        NotificationMeta {
            subscription_id: Some(subscription_id),
            extra: Default::default(),
        }
    }
}

/// The parameters of a request that takes nothing but `_meta` (`RequestParams`), such as
/// `server/discover`.
///
/// spec 2026-07-28 basic/index: `params` and its `_meta` are required on every request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestParams {
    /// The request envelope. A missing `_meta` decodes as an empty one, so that the server reports
    /// the missing key rather than a decoding error.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
}

impl RequestParams {
    /// Parameters carrying only the given envelope.
    pub fn new(meta: RequestMeta) -> Self {
        RequestParams { meta }
    }
}

/// The parameters of a paginated list request (`PaginatedRequestParams`): `tools/list`,
/// `resources/list`, `resources/templates/list` and `prompts/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// The request envelope.
    #[serde(rename = "_meta", default)]
    pub meta: RequestMeta,
    /// The opaque cursor from a previous page's `nextCursor`; absent for the first page.
    ///
    /// spec 2026-07-28 server/utilities/pagination: an empty string is a valid cursor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl PaginatedRequestParams {
    /// Parameters for the first page.
    pub fn new(meta: RequestMeta) -> Self {
        PaginatedRequestParams { meta, cursor: None }
    }

    /// Sets the cursor of the page to fetch.
    #[must_use]
    pub fn with_cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }
}

/// The parameters of a notification that carries nothing but `_meta` (`NotificationParams`), such as
/// the list-changed notifications.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
}

impl NotificationParams {
    /// Parameters tying the notification to a listen request.
    pub fn subscription(subscription_id: Id) -> Self {
        NotificationParams {
            meta: Some(NotificationMeta::subscription(subscription_id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_required_keys_decode_as_none() {
        let meta: RequestMeta = serde_json::from_value(json!({})).unwrap();
        assert_eq!(meta, RequestMeta::default());
        assert_eq!(meta.missing_key(), Some(meta_keys::PROTOCOL_VERSION));

        let meta: RequestMeta = serde_json::from_value(
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
        )
        .unwrap();
        assert_eq!(meta.missing_key(), Some(meta_keys::CLIENT_CAPABILITIES));

        let params: RequestParams = serde_json::from_value(json!({})).unwrap();
        assert_eq!(params.meta.missing_key(), Some(meta_keys::PROTOCOL_VERSION));
    }

    #[test]
    fn unknown_request_meta_keys_survive() {
        let wire = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "com.example/x": 1},
            "io.modelcontextprotocol/logLevel": "warning",
            "progressToken": 7,
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "com.example/tenant": {"id": "t1"},
        });
        let meta: RequestMeta = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(meta.missing_key(), None);
        assert_eq!(meta.progress_token, Some(Id::Int(7)));
        assert_eq!(meta.log_level, Some(LoggingLevel::Warning));
        assert_eq!(meta.extra.len(), 2);
        assert!(meta.extra.contains_key("traceparent"));
        let caps = meta.client_capabilities.as_ref().unwrap();
        assert!(caps.extra.contains_key("com.example/x"));
        assert_eq!(serde_json::to_value(&meta).unwrap(), wire);
    }

    #[test]
    fn duplicate_and_mistyped_keys_are_refused() {
        let text = r#"{"progressToken": 1, "progressToken": 2}"#;
        assert!(serde_json::from_str::<RequestMeta>(text).is_err());
        let bad = json!({"io.modelcontextprotocol/logLevel": "loud"});
        assert!(serde_json::from_value::<RequestMeta>(bad).is_err());
    }

    #[test]
    fn notification_meta_keeps_the_id_kind() {
        for id in [json!("listen-1"), json!(1)] {
            let wire = json!({"io.modelcontextprotocol/subscriptionId": id, "x": true});
            let meta: NotificationMeta = serde_json::from_value(wire.clone()).unwrap();
            assert_eq!(meta.subscription_id.as_ref().unwrap().to_value(), id);
            assert_eq!(serde_json::to_value(&meta).unwrap(), wire);
        }
    }

    #[test]
    fn result_meta_round_trips() {
        let wire = json!({
            "io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"},
            "com.example/cost": 3,
        });
        let meta: ResultMeta = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(meta.server_info.as_ref().unwrap().name, "s");
        assert_eq!(serde_json::to_value(&meta).unwrap(), wire);
    }
}
