//! A legacy session's change notifications: the registry's list changes, and updates of the
//! resources the session subscribed to, as the handshake era sends them (no `subscriptionId`).

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;
use futures_util::stream::BoxStream;
use kelson_types::Method;
use serde_json::json;
use tokio::sync::broadcast;

use super::LegacySession;
use crate::Server;
use crate::hub::HubEvent;

/// The notifications of one legacy session, until it ends or the server shuts down. Each item is
/// one complete JSON-RPC notification, compact, without a trailing newline.
pub struct LegacyNotifications {
    inner: BoxStream<'static, Vec<u8>>,
}

impl std::fmt::Debug for LegacyNotifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacyNotifications")
            .finish_non_exhaustive()
    }
}

impl Stream for LegacyNotifications {
    type Item = Vec<u8>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Vec<u8>>> {
        self.inner.as_mut().poll_next(cx)
    }
}

fn notification(method: &Method<'_>, params: serde_json::Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    kelson_jsonrpc::write_notification(&mut out, method.as_str(), &params)
        .expect("notification serializes");
    out
}

impl LegacySession {
    /// The notifications that make a client re-list everything it follows, for a stream that may
    /// have missed some (a resumption from an event the server no longer remembers): a
    /// `list_changed` for each kind of item the server has. Resource updates cannot be replayed,
    /// so `resources/list_changed` stands in for them, as after a lag.
    pub fn resync(&self, server: &Server) -> Vec<Vec<u8>> {
        let registry = server.inner.registry.load();
        let mut out = Vec::with_capacity(3);
        if registry.has_tools() {
            out.push(notification(&Method::ToolListChanged, json!({})));
        }
        if registry.has_prompts() {
            out.push(notification(&Method::PromptListChanged, json!({})));
        }
        if registry.has_resources() {
            out.push(notification(&Method::ResourceListChanged, json!({})));
        }
        out
    }

    /// The session's change notifications, from now on. On stdio there is one such stream per
    /// session; on HTTP, the GET stream carries it.
    pub fn notifications(&self, server: &Server) -> LegacyNotifications {
        struct State {
            session: LegacySession,
            server: Server,
            events: broadcast::Receiver<HubEvent>,
        }
        let state = State {
            session: self.clone(),
            server: server.clone(),
            events: server.inner.hub.subscribe(),
        };
        let inner = futures_util::stream::unfold(state, |mut st| async move {
            loop {
                let event = tokio::select! {
                    biased;
                    () = st.session.inner.closed.cancelled() => return None,
                    () = st.server.inner.shutdown.cancelled() => return None,
                    event = st.events.recv() => event,
                };
                let registry = st.server.inner.registry.load();
                let message = match event {
                    Ok(HubEvent::ToolsChanged) if registry.has_tools() => {
                        notification(&Method::ToolListChanged, json!({}))
                    }
                    Ok(HubEvent::PromptsChanged) if registry.has_prompts() => {
                        notification(&Method::PromptListChanged, json!({}))
                    }
                    Ok(HubEvent::ResourcesChanged) if registry.has_resources() => {
                        notification(&Method::ResourceListChanged, json!({}))
                    }
                    Ok(HubEvent::ResourceUpdated(uri))
                        if st.session.subscribed_to(&uri)
                            && st.session.may_read(&registry, &uri) =>
                    {
                        notification(&Method::ResourceUpdated, json!({ "uri": &*uri }))
                    }
                    // Notifications were lost: the client re-lists what it follows.
                    Err(broadcast::error::RecvError::Lagged(_)) | Ok(HubEvent::Resync)
                        if registry.has_resources() =>
                    {
                        notification(&Method::ResourceListChanged, json!({}))
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                    _ => continue,
                };
                return Some((message, st));
            }
        });
        LegacyNotifications {
            inner: Box::pin(inner),
        }
    }
}
