//! `subscriptions/listen` as an async stream of notifications.
//!
//! spec 2026-07-28 [basic/patterns/subscriptions][spec]: the first message is the
//! acknowledgement, whose filter is the honoured subset of the request; every later notification
//! carries the listen request's id. The client ends the subscription by closing the stream (HTTP)
//! or with `notifications/cancelled` (stdio); here, by dropping the [`Subscription`]. On a legacy
//! server the stream is built from its untagged notifications plus `resources/subscribe` for the
//! requested URIs where the server offers it. On HTTP those notifications come from the session's
//! one GET stream, opened at connect time and shared by every legacy listen; a server without one
//! (405) cannot be listened to.
//!
//! [spec]: https://modelcontextprotocol.io/specification/2026-07-28/basic/patterns/subscriptions

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;
use kelson_jsonrpc::Id;
use kelson_types::{
    JsonObject, Method, SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    method_names,
};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::client::Hints;
use crate::request::Options;
use crate::transport::{ListenGuard, ListenItem, ListenSink};
use crate::{Client, Error, Violation};

/// A notification delivered on a listen stream.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ListenEvent {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`: the resource, or one below a subscribed URI, changed.
    ResourceUpdated {
        /// The URI that changed.
        uri: String,
    },
    /// Any other notification, as sent.
    Other {
        /// The method.
        method: String,
        /// The params.
        params: Option<Value>,
    },
}

impl ListenEvent {
    fn from_message(method: String, params: Option<Value>) -> Self {
        match Method::parse(&method) {
            Method::ToolListChanged => ListenEvent::ToolsListChanged,
            Method::PromptListChanged => ListenEvent::PromptsListChanged,
            Method::ResourceListChanged => ListenEvent::ResourcesListChanged,
            Method::ResourceUpdated => {
                match params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str)
                {
                    Some(uri) => ListenEvent::ResourceUpdated {
                        uri: uri.to_owned(),
                    },
                    None => ListenEvent::Other { method, params },
                }
            }
            _ => ListenEvent::Other { method, params },
        }
    }
}

/// An open `subscriptions/listen` stream. It yields notifications until the server ends it (then
/// `None`) or the connection fails (one `Err`, then `None`). Dropping it unsubscribes.
pub struct Subscription {
    id: Option<Id>,
    honoured: SubscriptionFilter,
    rx: mpsc::UnboundedReceiver<ListenItem>,
    _guard: ListenGuard,
    /// Legacy resource subscriptions to undo on drop.
    unsubscribe: Option<(Client, Vec<String>)>,
    done: bool,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("honoured", &self.honoured)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// What the server agreed to send: the acknowledged filter (a legacy server: what its
    /// capabilities offer of the request).
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.honoured
    }

    /// The id of the listen request, which tags every notification (`None` on a legacy server).
    pub fn id(&self) -> Option<&Id> {
        self.id.as_ref()
    }
}

impl Stream for Subscription {
    type Item = Result<ListenEvent, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(ListenItem::Notification { method, params })) => {
                Poll::Ready(Some(Ok(ListenEvent::from_message(method, params))))
            }
            Poll::Ready(Some(ListenItem::Failed(e))) => {
                self.done = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(Some(ListenItem::End) | None) => {
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some((client, uris)) = self.unsubscribe.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                for uri in uris {
                    client.legacy_unsubscribe(uri).await;
                }
            });
        }
    }
}

/// The part of `honoured` that was not requested, if any.
fn unrequested(requested: &SubscriptionFilter, honoured: &SubscriptionFilter) -> Option<String> {
    if honoured.wants_tools_list_changed() && !requested.wants_tools_list_changed() {
        return Some("toolsListChanged".into());
    }
    if honoured.wants_prompts_list_changed() && !requested.wants_prompts_list_changed() {
        return Some("promptsListChanged".into());
    }
    if honoured.wants_resources_list_changed() && !requested.wants_resources_list_changed() {
        return Some("resourcesListChanged".into());
    }
    honoured
        .resource_uris()
        .iter()
        .find(|uri| !requested.resource_uris().contains(uri))
        .map(|uri| format!("resourceSubscriptions {uri:?}"))
}

impl Client {
    /// Opens a `subscriptions/listen` stream for `filter` and checks its acknowledgement against the
    /// request; [`Subscription::acknowledged`] reports what the server honours.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, Error> {
        if self.era().is_legacy() {
            return self.legacy_listen(filter).await;
        }
        let method = method_names::SUBSCRIPTIONS_LISTEN;
        let mut params = JsonObject::new();
        params.insert(
            "notifications".into(),
            serde_json::to_value(&filter).expect("a filter serializes"),
        );
        let options = Options::default();
        let out = self
            .inner
            .outgoing(method, params, Hints::default(), &options);
        let id = out.id.clone();
        let (sink, mut rx) = ListenSink::new(self.inner.cache.clone(), None);
        let wait = self.inner.config.timeout;
        let opened = tokio::time::timeout(wait, async {
            let guard = self.inner.transport.listen(out, sink).await?;
            Ok::<_, Error>((guard, rx.recv().await))
        })
        .await;
        let timeout = || Error::Timeout {
            method: method.to_owned(),
            after: wait,
            hard: false,
        };
        let (guard, first) = opened.map_err(|_| timeout())??;
        let honoured = match first {
            Some(ListenItem::Notification { method: m, params })
                if m == method_names::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED =>
            {
                let ack: SubscriptionsAcknowledgedNotificationParams =
                    serde_json::from_value(params.unwrap_or(Value::Null))
                        .map_err(|e| Error::malformed(&m, e))?;
                if let Some(extra) = unrequested(&filter, &ack.notifications) {
                    return Err(Violation::AckMismatch { extra }.into());
                }
                ack.notifications
            }
            Some(ListenItem::Notification { method: m, .. }) => {
                return Err(Violation::NotAcknowledged { first: m }.into());
            }
            Some(ListenItem::Failed(e)) => return Err(e),
            Some(ListenItem::End) | None => {
                return Err(Violation::NotAcknowledged {
                    first: "the end of the stream".into(),
                }
                .into());
            }
        };
        Ok(Subscription {
            id: Some(id),
            honoured,
            rx,
            _guard: guard,
            unsubscribe: None,
            done: false,
        })
    }

    async fn legacy_listen(&self, filter: SubscriptionFilter) -> Result<Subscription, Error> {
        let caps = self
            .inner
            .discovered
            .lock()
            .expect("discover lock")
            .as_ref()
            .map(|d| d.capabilities.clone())
            .unwrap_or_default();
        let tools = caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true);
        let prompts = caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true);
        let resources = caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true);
        let subscribe = caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
        let honoured = SubscriptionFilter {
            tools_list_changed: (filter.wants_tools_list_changed() && tools).then_some(true),
            prompts_list_changed: (filter.wants_prompts_list_changed() && prompts).then_some(true),
            resources_list_changed: (filter.wants_resources_list_changed() && resources)
                .then_some(true),
            resource_subscriptions: filter
                .resource_subscriptions
                .clone()
                .filter(|uris| subscribe && !uris.is_empty()),
            // The handshake era has no tasks.
            task_ids: None,
        };
        if honoured == SubscriptionFilter::default() {
            return Err(Error::Unsupported(
                "the legacy server offers none of the requested notifications",
            ));
        }
        let (sink, rx) = ListenSink::new(self.inner.cache.clone(), Some(honoured.clone()));
        let guard = self.inner.transport.legacy_listen(sink).await?;
        let uris = honoured.resource_uris().to_vec();
        let mut subscription = Subscription {
            id: None,
            honoured,
            rx,
            _guard: guard,
            unsubscribe: None,
            done: false,
        };
        let mut subscribed = Vec::new();
        for uri in uris {
            self.legacy_subscribe(&uri).await?;
            subscribed.push(uri);
            subscription.unsubscribe = Some((self.clone(), subscribed.clone()));
        }
        Ok(subscription)
    }

    /// `resources/subscribe` for a legacy listen, counted per URI: the server keeps one
    /// subscription per URI and session, so only the first listen that wants a URI subscribes.
    async fn legacy_subscribe(&self, uri: &str) -> Result<(), Error> {
        let mut counts = self.inner.legacy_subscriptions.lock().await;
        if let Some(count) = counts.get_mut(uri) {
            *count += 1;
            return Ok(());
        }
        // The lock is held across the request, so a subscribe and an unsubscribe of one URI never
        // cross on the wire.
        self.inner
            .send(
                method_names::RESOURCES_SUBSCRIBE,
                uri_params(uri),
                Hints::default(),
                &Options::default(),
            )
            .await?;
        counts.insert(uri.to_owned(), 1);
        Ok(())
    }

    /// Undoes one [`legacy_subscribe`](Self::legacy_subscribe): the last listen that wanted the URI
    /// sends `resources/unsubscribe`.
    async fn legacy_unsubscribe(&self, uri: String) {
        let mut counts = self.inner.legacy_subscriptions.lock().await;
        match counts.get_mut(&uri) {
            Some(count) if *count > 1 => *count -= 1,
            Some(_) => {
                counts.remove(&uri);
                // Best effort: the server may be gone.
                let _ = self
                    .inner
                    .send(
                        method_names::RESOURCES_UNSUBSCRIBE,
                        uri_params(&uri),
                        Hints::default(),
                        &Options::default(),
                    )
                    .await;
            }
            None => {}
        }
    }
}

fn uri_params(uri: &str) -> JsonObject {
    let mut params = JsonObject::new();
    params.insert("uri".into(), Value::from(uri));
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgements_may_only_narrow() {
        let requested = SubscriptionFilter {
            tools_list_changed: Some(true),
            resource_subscriptions: Some(vec!["a://x".into()]),
            ..Default::default()
        };
        assert_eq!(
            unrequested(&requested, &SubscriptionFilter::default()),
            None
        );
        assert_eq!(unrequested(&requested, &requested), None);
        let more = SubscriptionFilter {
            prompts_list_changed: Some(true),
            ..Default::default()
        };
        assert_eq!(
            unrequested(&requested, &more).as_deref(),
            Some("promptsListChanged")
        );
        let other_uri = SubscriptionFilter {
            resource_subscriptions: Some(vec!["a://y".into()]),
            ..Default::default()
        };
        assert!(
            unrequested(&requested, &other_uri)
                .unwrap()
                .contains("a://y")
        );
    }

    #[test]
    fn events_are_typed() {
        assert_eq!(
            ListenEvent::from_message("notifications/tools/list_changed".into(), None),
            ListenEvent::ToolsListChanged
        );
        assert_eq!(
            ListenEvent::from_message(
                "notifications/resources/updated".into(),
                Some(serde_json::json!({"uri": "a://x"}))
            ),
            ListenEvent::ResourceUpdated {
                uri: "a://x".into()
            }
        );
    }
}
