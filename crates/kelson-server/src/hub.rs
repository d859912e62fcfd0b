//! The subscription hub and `subscriptions/listen` streams.
//!
//! spec 2026-07-28 basic/patterns/subscriptions: the first message of a stream is
//! `notifications/subscriptions/acknowledged` with the honoured filter; every notification carries the
//! listen request's id verbatim as `io.modelcontextprotocol/subscriptionId`; on a graceful close the
//! server sends the listen request's result `{resultType: "complete", _meta: {subscriptionId}}`.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use futures_util::stream::BoxStream;
use kelson_jsonrpc::Id;
use kelson_types::{Implementation, Method, SubscriptionFilter};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::observe::ListenWatch;

/// Whether the listener may read a resource: updates of a resource are for callers who may read
/// it, and the resources below a subscribed URI may need scopes the subscribed one did not.
/// Asked at each update, so a registration changed since the subscription counts.
pub(crate) type ReadGate = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// A change listeners may want to hear about.
#[derive(Clone, Debug)]
pub(crate) enum HubEvent {
    ToolsChanged,
    PromptsChanged,
    ResourcesChanged,
    ResourceUpdated(Arc<str>),
    /// Anything under this URI may have changed (a source lost track of what did).
    ResourcesUnder(Arc<str>),
    /// A task changed.
    TaskChanged(Arc<TaskNotice>),
    /// Events may have been lost (a relay lost its broker): listeners re-read what they follow.
    /// Never relayed.
    Resync,
}

/// A task as it is after a change, for the listeners following it.
#[derive(Debug)]
pub(crate) struct TaskNotice {
    pub(crate) id: String,
    /// Only listeners of the same principal hear of it.
    pub(crate) owner: String,
    pub(crate) task: kelson_types::DetailedTask,
}

/// The messages of one `subscriptions/listen` request: the acknowledgement, then notifications as
/// they happen, then, on a graceful close, the final result. Dropping it unsubscribes.
///
/// Each item is one complete JSON-RPC message, compact, without a trailing newline.
pub struct ListenStream {
    id: Id,
    inner: BoxStream<'static, Vec<u8>>,
    /// Tells the observers when the stream closes (it is dropped).
    _watch: Option<ListenWatch>,
}

impl std::fmt::Debug for ListenStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenStream")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ListenStream {
    /// The id of the listen request, which is also the subscription id.
    pub fn id(&self) -> &Id {
        &self.id
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "each is one independent part of the stream, given once by two callers"
    )]
    pub(crate) fn new(
        id: Id,
        filter: SubscriptionFilter,
        events: broadcast::Receiver<HubEvent>,
        close: CancellationToken,
        server_info: Implementation,
        watch: Option<ListenWatch>,
        gate: Option<ReadGate>,
        owner: String,
    ) -> Self {
        let subscription_id = id.to_value();
        let mut ack = Vec::with_capacity(160);
        let ack_params = json!({
            "_meta": { kelson_types::meta_keys::SUBSCRIPTION_ID: subscription_id },
            "notifications": filter,
        });
        kelson_jsonrpc::write_notification(
            &mut ack,
            Method::SubscriptionsAcknowledged.as_str(),
            &ack_params,
        )
        .expect("acknowledgement serializes");

        let state = State {
            id: id.clone(),
            filter,
            events,
            close,
            server_info,
            ack: Some(ack),
            gate,
            owner,
            queue: VecDeque::new(),
            done: false,
        };
        let inner = futures_util::stream::unfold(state, |mut st| async move {
            if let Some(ack) = st.ack.take() {
                return Some((ack, st));
            }
            if st.done {
                return None;
            }
            loop {
                if let Some(msg) = st.queue.pop_front() {
                    return Some((msg, st));
                }
                tokio::select! {
                    biased;
                    () = st.close.cancelled() => {
                        st.done = true;
                        let last = st.final_result();
                        return Some((last, st));
                    }
                    event = st.events.recv() => match event {
                        Ok(HubEvent::ResourcesUnder(prefix)) => st.render_under(&prefix),
                        // Notifications were lost: the listener re-reads everything it follows.
                        Ok(HubEvent::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => {
                            st.render_resync();
                        }
                        Ok(event) => {
                            if let Some(msg) = st.render(&event) {
                                return Some((msg, st));
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => {
                            st.done = true;
                            let last = st.final_result();
                            return Some((last, st));
                        }
                    }
                }
            }
        });
        ListenStream {
            id,
            inner: Box::pin(inner),
            _watch: watch,
        }
    }
}

impl Stream for ListenStream {
    type Item = Vec<u8>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Vec<u8>>> {
        self.inner.as_mut().poll_next(cx)
    }
}

struct State {
    id: Id,
    filter: SubscriptionFilter,
    events: broadcast::Receiver<HubEvent>,
    close: CancellationToken,
    server_info: Implementation,
    ack: Option<Vec<u8>>,
    /// Which resources' updates the listener may hear of; all when `None`.
    gate: Option<ReadGate>,
    /// The listener's principal ([`Principal::id`](crate::Principal::id)): it hears only of its
    /// own tasks.
    owner: String,
    /// Messages rendered from one event that yields several, sent before the next event is read.
    queue: VecDeque<Vec<u8>>,
    done: bool,
}

impl State {
    fn notification(&self, method: &Method<'_>, mut params: Map<String, Value>) -> Vec<u8> {
        params.insert(
            "_meta".to_owned(),
            json!({ kelson_types::meta_keys::SUBSCRIPTION_ID: self.id.to_value() }),
        );
        let mut out = Vec::with_capacity(128);
        kelson_jsonrpc::write_notification(&mut out, method.as_str(), &params)
            .expect("notification serializes");
        out
    }

    fn render(&self, event: &HubEvent) -> Option<Vec<u8>> {
        let f = &self.filter;
        match event {
            HubEvent::ToolsChanged if f.tools_list_changed == Some(true) => {
                Some(self.notification(&Method::ToolListChanged, Map::new()))
            }
            HubEvent::PromptsChanged if f.prompts_list_changed == Some(true) => {
                Some(self.notification(&Method::PromptListChanged, Map::new()))
            }
            HubEvent::ResourcesChanged if f.resources_list_changed == Some(true) => {
                Some(self.notification(&Method::ResourceListChanged, Map::new()))
            }
            HubEvent::ResourceUpdated(uri) if self.subscribed_to(uri) && self.may_read(uri) => {
                let mut params = Map::new();
                params.insert("uri".to_owned(), Value::from(&**uri));
                Some(self.notification(&Method::ResourceUpdated, params))
            }
            HubEvent::TaskChanged(notice)
                if notice.owner == self.owner
                    && f.task_ids
                        .as_ref()
                        .is_some_and(|ids| ids.contains(&notice.id)) =>
            {
                let Ok(Value::Object(params)) = serde_json::to_value(&notice.task) else {
                    return None;
                };
                Some(self.notification(&Method::TaskChanged, params))
            }
            _ => None,
        }
    }

    /// Anything under `prefix` may have changed: the resource list, if followed, and every
    /// subscription at or under `prefix` (named as subscribed), or `prefix` itself for a
    /// subscription that contains it. Queued, since one event may yield several messages.
    fn render_under(&mut self, prefix: &str) {
        if self.filter.resources_list_changed == Some(true) {
            let msg = self.notification(&Method::ResourceListChanged, Map::new());
            self.queue.push_back(msg);
        }
        let mut uris: Vec<&str> = Vec::new();
        for s in self.filter.resource_subscriptions.iter().flatten() {
            let uri = if contains(prefix, s) {
                s.as_str()
            } else if contains(s, prefix) {
                prefix
            } else {
                continue;
            };
            if !uris.contains(&uri) && self.may_read(uri) {
                uris.push(uri);
            }
        }
        let messages: Vec<Vec<u8>> = uris
            .into_iter()
            .map(|uri| {
                let mut params = Map::new();
                params.insert("uri".to_owned(), Value::from(uri));
                self.notification(&Method::ResourceUpdated, params)
            })
            .collect();
        self.queue.extend(messages);
    }

    /// After lost events, the best that can be said honestly is "what you follow may have
    /// changed": each list the listener follows, and each resource it subscribed to. Queued.
    /// (Tasks it follows are not re-sent: `tasks/get` reads them, and their next change reaches
    /// the listener anyway.)
    fn render_resync(&mut self) {
        let f = &self.filter;
        let lists = [
            (f.tools_list_changed, HubEvent::ToolsChanged),
            (f.resources_list_changed, HubEvent::ResourcesChanged),
            (f.prompts_list_changed, HubEvent::PromptsChanged),
        ];
        let mut messages: Vec<Vec<u8>> = lists
            .iter()
            .filter(|(followed, _)| *followed == Some(true))
            .filter_map(|(_, event)| self.render(event))
            .collect();
        for uri in self.filter.resource_subscriptions.iter().flatten() {
            if self.may_read(uri) {
                let mut params = Map::new();
                params.insert("uri".to_owned(), Value::from(uri.as_str()));
                messages.push(self.notification(&Method::ResourceUpdated, params));
            }
        }
        self.queue.extend(messages);
    }

    fn may_read(&self, uri: &str) -> bool {
        self.gate.as_ref().is_none_or(|gate| gate(uri))
    }

    /// spec 2026-07-28 subscriptions: an update may name a sub-resource of a subscribed URI.
    fn subscribed_to(&self, uri: &str) -> bool {
        self.filter
            .resource_subscriptions
            .as_ref()
            .is_some_and(|subs| subs.iter().any(|s| contains(s, uri)))
    }

    fn final_result(&self) -> Vec<u8> {
        let result = json!({
            "resultType": "complete",
            "_meta": {
                kelson_types::meta_keys::SUBSCRIPTION_ID: self.id.to_value(),
                kelson_types::meta_keys::SERVER_INFO: &self.server_info,
            }
        });
        let mut out = Vec::with_capacity(160);
        kelson_jsonrpc::write_result(&mut out, &self.id, &result).expect("result serializes");
        out
    }
}

/// Whether the resource `outer` is `uri` or contains it: `uri` continues `outer` after a `/`.
fn contains(outer: &str, uri: &str) -> bool {
    uri == outer
        || (uri.starts_with(outer) && (outer.ends_with('/') || uri[outer.len()..].starts_with('/')))
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt as _;

    use super::*;

    /// The messages a listener with `filter` gets for `events`, after its acknowledgement. A
    /// tool list change sent last marks the end (the filter is made to follow it).
    async fn heard(mut filter: SubscriptionFilter, events: &[HubEvent]) -> Vec<Value> {
        filter.tools_list_changed = Some(true);
        let (tx, rx) = broadcast::channel(16);
        let mut stream = ListenStream::new(
            Id::from(1),
            filter,
            rx,
            CancellationToken::new(),
            Implementation::new("t", "0"),
            None,
            None,
            String::new(),
        );
        stream.next().await.expect("the acknowledgement");
        for event in events.iter().chain([&HubEvent::ToolsChanged]) {
            tx.send(event.clone()).unwrap();
        }
        let mut out = Vec::new();
        loop {
            let msg = stream.next().await.expect("a message");
            let msg: Value = serde_json::from_slice(&msg).unwrap();
            if msg["method"] == "notifications/tools/list_changed" {
                return out;
            }
            out.push(msg);
        }
    }

    fn described(messages: &[Value]) -> Vec<String> {
        messages
            .iter()
            .map(|m| {
                let method = m["method"].as_str().unwrap().rsplit('/').next().unwrap();
                match m["params"]["uri"].as_str() {
                    Some(uri) => format!("{method} {uri}"),
                    None => method.to_owned(),
                }
            })
            .collect()
    }

    #[tokio::test]
    async fn changes_under_a_uri_reach_every_subscription_they_may_touch() {
        let filter = SubscriptionFilter {
            resources_list_changed: Some(true),
            resource_subscriptions: Some(vec![
                "file:///r/a.txt".into(),
                "file:///r/sub/".into(),
                "file:///".into(),
                "file:///other/b.txt".into(),
                "file:///rx.txt".into(),
            ]),
            ..SubscriptionFilter::default()
        };
        let events = [
            HubEvent::ResourcesUnder(Arc::from("file:///r/")),
            HubEvent::ResourceUpdated(Arc::from("file:///r/a.txt")),
        ];
        assert_eq!(
            described(&heard(filter, &events).await),
            [
                "list_changed",
                "updated file:///r/a.txt",
                "updated file:///r/sub/",
                // Subscribed to a directory that contains the root: told about the root.
                "updated file:///r/",
                // The ordinary update after it.
                "updated file:///r/a.txt",
            ]
        );

        // A listener that follows nothing under the URI hears nothing of it.
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec!["file:///elsewhere/".into()]),
            ..SubscriptionFilter::default()
        };
        let events = [HubEvent::ResourcesUnder(Arc::from("file:///r/"))];
        assert!(heard(filter, &events).await.is_empty());
    }
}
