//! Change events shared between instances of one server, so that a `subscriptions/listen` stream
//! held by one instance hears of a change made through another.
//!
//! The server encodes each change it makes (a tool registered at run time, a resource updated, a
//! task that moved on) and hands it to its [`Relay`], which carries it to the other instances (a
//! broker: `kelson-broker` has NATS and Redis). What arrives from them goes in through the
//! [`RelayInlet`] and reaches this instance's listeners as if the change were made here. An
//! instance hears its own events only once: they reach its listeners directly, and the inlet drops
//! them when the broker brings them back.
//!
//! Only what one instance alone sees is worth relaying. A change every instance sees for itself (a
//! file in a folder they all serve, seen by each one's watcher) is made inside [`locally`], or
//! every listener would hear of it once per instance.
//!
//! Events are hints, as the spec's notifications are: a listener that missed some (the broker was
//! unreachable) is told its lists may have changed ([`RelayInlet::resync`]) and re-reads them.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::hub::{HubEvent, TaskNotice};

thread_local! {
    static LOCAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with relaying off on this thread: the changes it makes (registrations, notifications)
/// reach this instance's listeners only. For sources of changes that every instance observes
/// itself, such as a watcher of a folder they all serve. `f` is synchronous: the flag does not
/// follow a task across `.await`.
pub fn locally<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            LOCAL.with(|l| l.set(self.0));
        }
    }
    let _reset = Reset(LOCAL.with(|l| l.replace(true)));
    f()
}

/// Whether this thread is inside [`locally`].
pub(crate) fn is_local() -> bool {
    LOCAL.with(std::cell::Cell::get)
}

/// Carries this instance's change events to the other instances of the same server.
pub trait Relay: Send + Sync + 'static {
    /// Sends one encoded event. It is called where the change is made, so it must not block:
    /// queue the event and return. Losing it (the broker is down) is the relay's to log and count;
    /// it should [`resync`](RelayInlet::resync) the listeners when it reconnects.
    fn publish(&self, event: Bytes);
}

/// Where events relayed from other instances enter this instance. Cloning is cheap.
#[derive(Clone)]
pub struct RelayInlet {
    hub: broadcast::Sender<HubEvent>,
    origin: Arc<str>,
}

impl std::fmt::Debug for RelayInlet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayInlet")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// A relayed event that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("a relayed event could not be read: {0}")]
pub struct RelayError(String);

/// What [`RelayInlet::deliver`] did with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivery {
    /// It reached this instance's listeners.
    Delivered,
    /// It was this instance's own, which its listeners have already heard.
    Own,
}

impl RelayInlet {
    pub(crate) fn new(hub: broadcast::Sender<HubEvent>, origin: Arc<str>) -> Self {
        RelayInlet { hub, origin }
    }

    /// Hands an event published by an instance (maybe this one) to this instance's listeners.
    pub fn deliver(&self, event: &[u8]) -> Result<Delivery, RelayError> {
        let wire: Wire = serde_json::from_slice(event).map_err(|e| RelayError(e.to_string()))?;
        if wire.v != 1 {
            return Err(RelayError(format!("unknown format version {}", wire.v)));
        }
        if *wire.origin == *self.origin {
            return Ok(Delivery::Own);
        }
        let event = wire.event.into_hub()?;
        // No listeners is not an error.
        let _ = self.hub.send(event);
        Ok(Delivery::Delivered)
    }

    /// Events may have been missed (the broker was unreachable): every listener is told that
    /// the lists it follows may have changed, and re-reads them.
    pub fn resync(&self) {
        let _ = self.hub.send(HubEvent::Resync);
    }

    /// The event that asks every other instance to [`resync`](Self::resync) its listeners: a
    /// relay publishes it when it reconnects, since what it published meanwhile was lost.
    pub fn resync_message(&self) -> Bytes {
        encode_wire(&self.origin, WireEvent::Resync)
    }

    /// This instance's identity in the events it publishes (random, per process).
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

/// A fresh random origin: 16 random bytes in hex.
pub(crate) fn new_origin() -> Arc<str> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    Arc::from(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Encodes a change made here for the relay; `None` for events that stay local.
pub(crate) fn encode(origin: &str, event: &HubEvent) -> Option<Bytes> {
    Some(encode_wire(origin, WireEvent::from_hub(event)?))
}

fn encode_wire(origin: &str, event: WireEvent) -> Bytes {
    let wire = Wire {
        v: 1,
        origin: origin.into(),
        event,
    };
    Bytes::from(serde_json::to_vec(&wire).expect("a relayed event serializes"))
}

#[derive(Serialize, Deserialize)]
struct Wire {
    v: u8,
    origin: Box<str>,
    #[serde(flatten)]
    event: WireEvent,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum WireEvent {
    ToolsChanged,
    PromptsChanged,
    ResourcesChanged,
    ResourceUpdated {
        uri: String,
    },
    ResourcesUnder {
        uri: String,
    },
    Task {
        id: String,
        owner: String,
        task: Box<kelson_types::DetailedTask>,
    },
    /// The sender lost events; every listener re-reads what it follows.
    Resync,
}

impl WireEvent {
    fn from_hub(event: &HubEvent) -> Option<WireEvent> {
        Some(match event {
            HubEvent::ToolsChanged => WireEvent::ToolsChanged,
            HubEvent::PromptsChanged => WireEvent::PromptsChanged,
            HubEvent::ResourcesChanged => WireEvent::ResourcesChanged,
            HubEvent::ResourceUpdated(uri) => WireEvent::ResourceUpdated {
                uri: uri.to_string(),
            },
            HubEvent::ResourcesUnder(uri) => WireEvent::ResourcesUnder {
                uri: uri.to_string(),
            },
            HubEvent::TaskChanged(notice) => WireEvent::Task {
                id: notice.id.clone(),
                owner: notice.owner.clone(),
                task: Box::new(notice.task.clone()),
            },
            // A local resync stays local; a relay sends its own on reconnection.
            HubEvent::Resync => return None,
        })
    }

    fn into_hub(self) -> Result<HubEvent, RelayError> {
        Ok(match self {
            WireEvent::ToolsChanged => HubEvent::ToolsChanged,
            WireEvent::PromptsChanged => HubEvent::PromptsChanged,
            WireEvent::ResourcesChanged => HubEvent::ResourcesChanged,
            WireEvent::ResourceUpdated { uri } => HubEvent::ResourceUpdated(Arc::from(uri)),
            WireEvent::ResourcesUnder { uri } => HubEvent::ResourcesUnder(Arc::from(uri)),
            WireEvent::Task { id, owner, task } => HubEvent::TaskChanged(Arc::new(TaskNotice {
                id,
                owner,
                task: *task,
            })),
            WireEvent::Resync => HubEvent::Resync,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_cross_between_instances_and_an_instance_skips_its_own() {
        let (a_hub, _) = broadcast::channel(16);
        let (b_hub, mut b_rx) = broadcast::channel(16);
        let a = RelayInlet::new(a_hub, new_origin());
        let b = RelayInlet::new(b_hub, new_origin());
        assert_ne!(a.origin(), b.origin());
        assert_eq!(a.origin().len(), 32);

        let events = [
            HubEvent::ToolsChanged,
            HubEvent::PromptsChanged,
            HubEvent::ResourcesChanged,
            HubEvent::ResourceUpdated(Arc::from("sql://main/public/t")),
            HubEvent::ResourcesUnder(Arc::from("file:///r/")),
        ];
        for event in &events {
            let bytes = encode(a.origin(), event).expect("relayed");
            assert_eq!(a.deliver(&bytes).unwrap(), Delivery::Own);
            assert_eq!(b.deliver(&bytes).unwrap(), Delivery::Delivered);
            let heard = b_rx.try_recv().unwrap();
            assert_eq!(format!("{heard:?}"), format!("{event:?}"));
        }
        // A task's change crosses with its owner and every detail.
        let task: kelson_types::DetailedTask = serde_json::from_value(serde_json::json!({
            "taskId": "0123456789abcdef0123456789abcdef",
            "status": "completed",
            "createdAt": "2026-12-04T19:00:00Z",
            "lastUpdatedAt": "2026-12-04T19:00:01Z",
            "ttlMs": 60000,
            "result": {"content": [{"type": "text", "text": "done"}]},
        }))
        .unwrap();
        let notice = HubEvent::TaskChanged(Arc::new(TaskNotice {
            id: "0123456789abcdef0123456789abcdef".into(),
            owner: "alice".into(),
            task: task.clone(),
        }));
        assert_eq!(
            b.deliver(&encode(a.origin(), &notice).unwrap()).unwrap(),
            Delivery::Delivered
        );
        let HubEvent::TaskChanged(heard) = b_rx.try_recv().unwrap() else {
            panic!("expected a task notice")
        };
        assert_eq!(heard.id, "0123456789abcdef0123456789abcdef");
        assert_eq!(heard.owner, "alice");
        assert_eq!(heard.task, task);

        // A local resync stays local; the one a relay sends on reconnection reaches the others.
        assert!(encode(a.origin(), &HubEvent::Resync).is_none());
        b.resync();
        assert!(matches!(b_rx.try_recv().unwrap(), HubEvent::Resync));
        assert_eq!(b.deliver(&a.resync_message()).unwrap(), Delivery::Delivered);
        assert!(matches!(b_rx.try_recv().unwrap(), HubEvent::Resync));
        assert_eq!(a.deliver(&a.resync_message()).unwrap(), Delivery::Own);
    }

    #[test]
    fn junk_and_unknown_versions_are_errors_not_events() {
        let (hub, mut rx) = broadcast::channel(16);
        let inlet = RelayInlet::new(hub, new_origin());
        for junk in [
            &b"not json"[..],
            br#"{"v":1,"origin":"x"}"#,
            br#"{"v":1,"origin":"x","kind":"nuked"}"#,
            br#"{"v":2,"origin":"x","kind":"tools_changed"}"#,
            br#"{"v":1,"origin":"x","kind":"resource_updated"}"#,
        ] {
            assert!(
                inlet.deliver(junk).is_err(),
                "{}",
                String::from_utf8_lossy(junk)
            );
        }
        assert!(rx.try_recv().is_err());
    }
}
