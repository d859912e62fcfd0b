//! Transports: they move whole JSON-RPC messages and route what comes back.
//!
//! A request gets its response, and meanwhile its request-scoped notifications (progress, log) on an
//! event channel. A listen request gets a channel of stream notifications. What the messages mean
//! (eras, MRTR, caching) is the client's business, not the transport's.

pub(crate) mod http;
pub(crate) mod process;
pub(crate) mod stdio;

use std::sync::Arc;

use bytes::Bytes;
use kelson_jsonrpc::{ErrorObject, Id, RawValue};
use kelson_types::{
    LoggingMessageNotificationParams, ProgressNotificationParams, SubscriptionFilter, method_names,
};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::Error;
use crate::cache::Cache;

/// One request, encoded, with what the HTTP binding mirrors into headers.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) id: Id,
    pub(crate) method: &'static str,
    pub(crate) body: Bytes,
    /// The protocol revision, for `MCP-Protocol-Version` (absent on a legacy `initialize`).
    pub(crate) version: Option<&'static str>,
    /// Whether the peer is legacy (2025): no `Mcp-Method`, `Mcp-Name` or `Mcp-Param-*` headers,
    /// and the session header when there is one.
    pub(crate) legacy: bool,
    /// `params.name` or `params.uri`, for `Mcp-Name`.
    pub(crate) name: Option<String>,
    /// The `Mcp-Param-*` headers of a `tools/call`.
    pub(crate) param_headers: Vec<(::http::HeaderName, ::http::HeaderValue)>,
    /// Whether the request asked for log messages (stdio routes them by this).
    pub(crate) wants_log: bool,
    /// Whether dropping the request sends `notifications/cancelled` (stdio). The era probe does
    /// not: a legacy server may not expect anything before `initialize`.
    pub(crate) cancel_on_drop: bool,
}

/// A request-scoped notification.
#[derive(Debug)]
pub(crate) enum Event {
    Progress(ProgressNotificationParams),
    Log(LoggingMessageNotificationParams),
}

impl Event {
    /// Reads a progress or log notification; anything else is not request-scoped.
    pub(crate) fn parse(method: &str, params: Option<&RawValue>) -> Option<Event> {
        let params = params?.get();
        match method {
            method_names::NOTIFICATIONS_PROGRESS => {
                serde_json::from_str(params).ok().map(Event::Progress)
            }
            method_names::NOTIFICATIONS_MESSAGE => {
                serde_json::from_str(params).ok().map(Event::Log)
            }
            _ => None,
        }
    }
}

/// The response to a request: the raw result or the error, and the HTTP status it came with.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) outcome: Result<Box<RawValue>, ErrorObject>,
    pub(crate) status: Option<::http::StatusCode>,
}

/// What a listen stream delivers.
#[derive(Debug)]
pub(crate) enum ListenItem {
    /// A notification of the stream (the acknowledgement first).
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// The server ended the stream: its graceful result, or `notifications/cancelled`.
    End,
    /// The connection failed.
    Failed(Error),
}

/// Where a transport delivers the notifications of one listen stream. It applies cache
/// invalidations as soon as a notification arrives, before the application reads it.
#[derive(Clone, Debug)]
pub(crate) struct ListenSink {
    tx: mpsc::UnboundedSender<ListenItem>,
    cache: Option<Arc<Cache>>,
    /// For a legacy stream, built from untagged server notifications: what to let through.
    legacy_filter: Option<SubscriptionFilter>,
}

#[derive(Deserialize)]
struct UriParam {
    uri: Option<String>,
}

impl ListenSink {
    pub(crate) fn new(
        cache: Option<Arc<Cache>>,
        legacy_filter: Option<SubscriptionFilter>,
    ) -> (Self, mpsc::UnboundedReceiver<ListenItem>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            ListenSink {
                tx,
                cache,
                legacy_filter,
            },
            rx,
        )
    }

    /// Delivers one notification; false once the receiver is gone.
    pub(crate) fn notification(&self, method: &str, params: Option<Value>) -> bool {
        let uri = params
            .as_ref()
            .and_then(|p| UriParam::deserialize(p).ok())
            .and_then(|p| p.uri);
        if let Some(filter) = &self.legacy_filter
            && !legacy_wanted(filter, method, uri.as_deref())
        {
            return !self.tx.is_closed();
        }
        if let Some(cache) = &self.cache {
            cache.on_notification(method, uri.as_deref());
        }
        self.tx
            .send(ListenItem::Notification {
                method: method.to_owned(),
                params,
            })
            .is_ok()
    }

    /// The same sink without cache invalidation, for a transport that invalidates the cache for
    /// every notification itself (the legacy HTTP GET stream).
    pub(crate) fn without_cache(self) -> Self {
        ListenSink {
            cache: None,
            ..self
        }
    }

    pub(crate) fn end(&self) {
        let _ = self.tx.send(ListenItem::End);
    }

    pub(crate) fn fail(&self, error: Error) {
        let _ = self.tx.send(ListenItem::Failed(error));
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Whether an untagged legacy notification belongs to a stream with this (honoured) filter.
fn legacy_wanted(filter: &SubscriptionFilter, method: &str, uri: Option<&str>) -> bool {
    match method {
        method_names::NOTIFICATIONS_TOOLS_LIST_CHANGED => filter.wants_tools_list_changed(),
        method_names::NOTIFICATIONS_PROMPTS_LIST_CHANGED => filter.wants_prompts_list_changed(),
        method_names::NOTIFICATIONS_RESOURCES_LIST_CHANGED => filter.wants_resources_list_changed(),
        method_names::NOTIFICATIONS_RESOURCES_UPDATED => uri.is_some_and(|uri| {
            filter
                .resource_uris()
                .iter()
                .any(|s| uri == s || uri.starts_with(s.as_str()))
        }),
        _ => false,
    }
}

/// Keeps a listen stream open; dropping it ends the subscription.
pub(crate) enum ListenGuard {
    Stdio(#[expect(dead_code, reason = "held for its Drop")] stdio::ListenGuard),
    Http(#[expect(dead_code, reason = "held for its Drop")] http::ListenGuard),
}

impl std::fmt::Debug for ListenGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ListenGuard::Stdio(_) => "ListenGuard::Stdio",
            ListenGuard::Http(_) => "ListenGuard::Http",
        })
    }
}

/// The transport of one client.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "one per client, never moved after connecting"
)]
pub(crate) enum Transport {
    Stdio(stdio::StdioTransport),
    Http(http::HttpTransport),
}

impl Transport {
    /// Sends a request and waits for its response; request-scoped notifications go to `events`.
    /// Dropping the future cancels the request in the transport's way.
    pub(crate) async fn request(
        &self,
        out: Outgoing,
        events: mpsc::UnboundedSender<Event>,
    ) -> Result<Reply, Error> {
        match self {
            Transport::Stdio(t) => t.request(out, events).await,
            Transport::Http(t) => t.request(out, events).await,
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &'static str, body: Bytes) -> Result<(), Error> {
        match self {
            Transport::Stdio(t) => t.send(body),
            Transport::Http(t) => t.notify(method, body).await,
        }
    }

    /// Opens a modern listen stream: the request is sent, and every notification tagged with its
    /// id goes to `sink`.
    pub(crate) async fn listen(
        &self,
        out: Outgoing,
        sink: ListenSink,
    ) -> Result<ListenGuard, Error> {
        match self {
            Transport::Stdio(t) => t.listen(out, sink).map(ListenGuard::Stdio),
            Transport::Http(t) => t.listen(out, sink).await.map(ListenGuard::Http),
        }
    }

    /// Opens a legacy listen stream from the server's untagged notifications (on HTTP, those of
    /// the session's one GET stream, which all legacy listens share).
    pub(crate) async fn legacy_listen(&self, sink: ListenSink) -> Result<ListenGuard, Error> {
        match self {
            Transport::Stdio(t) => Ok(ListenGuard::Stdio(t.legacy_listen(sink))),
            Transport::Http(t) => t.legacy_listen(sink).map(ListenGuard::Http),
        }
    }
}

/// The id of a `notifications/cancelled` or of a notification's `progressToken`.
#[derive(Deserialize)]
pub(crate) struct RequestIdParam {
    #[serde(rename = "requestId")]
    pub(crate) request_id: Option<Id>,
}

#[derive(Deserialize)]
pub(crate) struct ProgressTokenParam {
    #[serde(rename = "progressToken")]
    pub(crate) progress_token: Option<Id>,
}

/// The `_meta.subscriptionId` of a notification, if any.
pub(crate) fn subscription_id(params: Option<&RawValue>) -> Option<Id> {
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
        subscription_id: Option<Id>,
    }
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
    }
    let params: Params = serde_json::from_str(params?.get()).ok()?;
    params.meta?.subscription_id
}

/// Encodes a `notifications/cancelled` for `id`.
pub(crate) fn cancelled_notification(id: &Id, reason: &str) -> Bytes {
    let mut out = Vec::with_capacity(96);
    kelson_jsonrpc::write_notification(
        &mut out,
        method_names::NOTIFICATIONS_CANCELLED,
        &serde_json::json!({"requestId": id, "reason": reason}),
    )
    .expect("a cancellation serializes");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subscription_ids_keep_their_kind() {
        let raw = serde_json::value::to_raw_value(
            &json!({"_meta": {"io.modelcontextprotocol/subscriptionId": "7"}}),
        )
        .unwrap();
        assert_eq!(subscription_id(Some(&raw)), Some(Id::from("7")));
        let raw = serde_json::value::to_raw_value(&json!({"progressToken": 7})).unwrap();
        assert_eq!(subscription_id(Some(&raw)), None);
        assert_eq!(subscription_id(None), None);
    }

    #[test]
    fn legacy_filters_pass_what_was_honoured() {
        let filter = SubscriptionFilter {
            tools_list_changed: Some(true),
            resource_subscriptions: Some(vec!["file:///a".into()]),
            ..SubscriptionFilter::default()
        };
        assert!(legacy_wanted(
            &filter,
            "notifications/tools/list_changed",
            None
        ));
        assert!(!legacy_wanted(
            &filter,
            "notifications/prompts/list_changed",
            None
        ));
        assert!(legacy_wanted(
            &filter,
            "notifications/resources/updated",
            Some("file:///a/b")
        ));
        assert!(!legacy_wanted(
            &filter,
            "notifications/resources/updated",
            Some("file:///z")
        ));
    }
}
