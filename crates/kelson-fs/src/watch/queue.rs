//! The hand-over from notify's thread to ours: changed paths, deduplicated as they arrive, in a
//! set of bounded size.
//!
//! notify calls its event handler on its own thread for every event, as fast as the kernel
//! reports them (tens of thousands a second while a writer renames files in a loop). The handler
//! does the least it can: it merges the event's paths into the set under a lock. A path already
//! there costs a hash lookup and no allocation, so a storm that keeps touching the same names
//! costs no memory; a storm touching more distinct names than the set holds marks the burst as
//! lost instead, which empties the set. Our thread takes the whole set once the burst has settled,
//! so its work is bounded by the number of distinct names, never by the number of events.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use notify::event::{CreateKind, ModifyKind, RemoveKind};
use notify::{Event, EventKind};

/// What the events of one burst said about one path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Change {
    /// Whether the path is a directory, when an event said so.
    pub(super) dir: Option<bool>,
    /// Whether a name was created, removed or renamed (the parent's listing changed).
    pub(super) names_changed: bool,
}

impl Change {
    /// What an event says, or `None` for an event that changes nothing (an access).
    fn of(kind: &EventKind) -> Option<Change> {
        let dir = match kind {
            EventKind::Access(_) => return None,
            EventKind::Create(CreateKind::Folder) | EventKind::Remove(RemoveKind::Folder) => {
                Some(true)
            }
            EventKind::Create(CreateKind::File) | EventKind::Remove(RemoveKind::File) => {
                Some(false)
            }
            _ => None,
        };
        let names_changed = matches!(
            kind,
            EventKind::Create(_)
                | EventKind::Remove(_)
                | EventKind::Modify(ModifyKind::Name(_) | ModifyKind::Any)
                | EventKind::Any
                | EventKind::Other
        );
        Some(Change { dir, names_changed })
    }

    fn merge(&mut self, later: Change) {
        self.dir = later.dir.or(self.dir);
        self.names_changed |= later.names_changed;
    }
}

/// One burst of changes, as our thread takes it.
#[derive(Debug, Default)]
pub(super) struct Burst {
    /// The paths that changed; empty when `lost` is set.
    pub(super) paths: HashMap<PathBuf, Change>,
    /// Events were lost (the kernel's queue overflowed, or more distinct paths changed than the
    /// set holds): anything may have changed.
    pub(super) lost: bool,
    /// Errors the watcher reported, and the last one.
    pub(super) errors: u64,
    pub(super) last_error: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    burst: Burst,
    /// When the burst's first and latest events arrived; `None` while idle.
    first: Option<Instant>,
    last: Option<Instant>,
    /// notify's watcher (and with it the handler) is gone.
    closed: bool,
}

/// Shared by the handler (notify's thread) and the consumer (ours).
#[derive(Debug)]
pub(super) struct Queue {
    state: Mutex<State>,
    wake: Condvar,
    /// The most distinct paths one burst keeps.
    capacity: usize,
}

impl Queue {
    pub(super) fn new(capacity: usize) -> Arc<Queue> {
        Arc::new(Queue {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            capacity: capacity.max(1),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records one of notify's events.
    pub(super) fn push(&self, event: notify::Result<Event>) {
        let now = Instant::now();
        let mut state = match event {
            Err(e) => {
                let mut state = self.lock();
                state.burst.errors += 1;
                state.burst.last_error = Some(e.to_string());
                state
            }
            Ok(event) => {
                let Some(change) = Change::of(&event.kind) else {
                    return;
                };
                let mut state = self.lock();
                if event.need_rescan() {
                    state.lose();
                } else if !state.burst.lost {
                    for path in event.paths {
                        if let Some(known) = state.burst.paths.get_mut(&path) {
                            known.merge(change);
                        } else if state.burst.paths.len() < self.capacity {
                            state.burst.paths.insert(path, change);
                        } else {
                            state.lose();
                            break;
                        }
                    }
                }
                state
            }
        };
        state.last = Some(now);
        if state.first.is_none() {
            state.first = Some(now);
            // Only an idle consumer needs waking: a busy one is timing the burst already.
            self.wake.notify_one();
        }
    }

    /// Marks the end of the events: the consumer returns once it has taken what is left.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
    }

    /// Waits for a burst and takes it once no event came for `quiet`, or `longest` after it began,
    /// whichever is first. `None` once the queue is closed and empty, or when `stop` says so (it
    /// is asked every `poll` while idle).
    pub(super) fn next_burst(
        &self,
        quiet: Duration,
        longest: Duration,
        poll: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Option<Burst> {
        let mut state = self.lock();
        let first = loop {
            if let Some(first) = state.first {
                break first;
            }
            if state.closed || stop() {
                return None;
            }
            state = self
                .wake
                .wait_timeout(state, poll)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        loop {
            let last = state.last.unwrap_or(first);
            let due = (last + quiet).min(first + longest);
            let now = Instant::now();
            if now >= due || state.closed {
                break;
            }
            state = self
                .wake
                .wait_timeout(state, due - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        state.first = None;
        state.last = None;
        // Taken whole, so the set's memory goes with it and the next burst starts small.
        Some(std::mem::take(&mut state.burst))
    }
}

impl State {
    fn lose(&mut self) {
        self.burst.lost = true;
        self.burst.paths = HashMap::new();
    }
}

/// notify's event handler: hands every event to the queue, and closes it when notify drops it
/// (the watcher was dropped).
pub(super) struct Handler(pub(super) Arc<Queue>);

impl notify::EventHandler for Handler {
    fn handle_event(&mut self, event: notify::Result<Event>) {
        self.0.push(event);
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use notify::event::{Flag, RenameMode};

    use super::*;

    fn event(kind: EventKind, path: &str) -> notify::Result<Event> {
        Ok(Event::new(kind).add_path(PathBuf::from(path)))
    }

    const NOW: Duration = Duration::ZERO;
    const QUIET: Duration = Duration::from_millis(30);

    fn take(queue: &Queue) -> Burst {
        queue
            .next_burst(NOW, Duration::from_secs(5), QUIET, &|| true)
            .expect("a burst")
    }

    #[test]
    fn a_storm_on_few_names_keeps_one_entry_per_name() {
        let queue = Queue::new(100);
        let rename = |m| EventKind::Modify(ModifyKind::Name(m));
        for _ in 0..100_000 {
            queue.push(event(rename(RenameMode::From), "/r/file"));
            queue.push(event(rename(RenameMode::To), "/r/link"));
            queue.push(event(EventKind::Create(CreateKind::Folder), "/r/d"));
        }
        queue.push(event(
            EventKind::Access(notify::event::AccessKind::Any),
            "/r/read",
        ));
        queue.push(Err(notify::Error::generic("first")));
        queue.push(Err(notify::Error::generic("second")));
        let burst = take(&queue);
        assert!(!burst.lost);
        assert_eq!(burst.paths.len(), 3, "{:?}", burst.paths.keys());
        assert_eq!(
            burst.paths[&PathBuf::from("/r/d")],
            Change {
                dir: Some(true),
                names_changed: true
            }
        );
        assert_eq!(
            (burst.errors, burst.last_error.as_deref()),
            (2, Some("second"))
        );
        // Taken: the next burst starts empty, and an idle queue has none.
        assert!(
            queue
                .next_burst(NOW, Duration::from_secs(5), QUIET, &|| true)
                .is_none()
        );
    }

    #[test]
    fn more_names_than_the_set_holds_lose_the_burst() {
        let queue = Queue::new(10);
        for i in 0..1000 {
            queue.push(event(
                EventKind::Modify(ModifyKind::Any),
                &format!("/r/{i}"),
            ));
        }
        let burst = take(&queue);
        assert!(burst.lost && burst.paths.is_empty());

        let kernel_overflow = Event::new(EventKind::Other).set_flag(Flag::Rescan);
        queue.push(Ok(kernel_overflow));
        assert!(take(&queue).lost);
    }

    #[test]
    fn a_burst_is_taken_once_quiet_or_when_it_lasted_too_long() {
        let queue = Queue::new(10);
        let quiet = Duration::from_millis(50);
        queue.push(event(EventKind::Modify(ModifyKind::Any), "/r/a"));
        let started = Instant::now();
        queue.next_burst(quiet, Duration::from_secs(5), quiet, &|| false);
        assert!(started.elapsed() >= quiet);

        // A writer that never stops: taken after `longest` all the same.
        let queue = Queue::new(10);
        let writer = {
            let queue = queue.clone();
            std::thread::spawn(move || {
                let until = Instant::now() + Duration::from_millis(600);
                while Instant::now() < until {
                    queue.push(event(EventKind::Modify(ModifyKind::Any), "/r/a"));
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        let started = Instant::now();
        let burst = queue.next_burst(quiet, Duration::from_millis(200), quiet, &|| false);
        assert!(burst.is_some());
        assert!(
            started.elapsed() < Duration::from_millis(450),
            "{:?}",
            started.elapsed()
        );
        writer.join().unwrap();

        // Closing ends the wait of an idle consumer.
        let queue = Queue::new(10);
        let closer = {
            let queue = queue.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                drop(Handler(queue));
            })
        };
        assert!(
            queue
                .next_burst(quiet, quiet, Duration::from_secs(60), &|| false)
                .is_none()
        );
        closer.join().unwrap();
    }
}
