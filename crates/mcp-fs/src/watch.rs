//! Change notifications: a recursive `notify` watcher on the roots, debounced, turned into
//! `resources/updated` and, when a root's top level changes, `resources/list_changed`.
//!
//! The watcher does not follow symlinks, so it only reports changes to names inside the roots.
//! A change to a file reached through a symlink is reported under the file's own URI, not the
//! link's.

use std::collections::BTreeSet;
use std::fs;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use mcp_server::Server;
use notify::event::{CreateKind, ModifyKind, RemoveKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::adapter::Inner;
use crate::config::FsError;
use crate::uri::path_uri;

/// How often an idle watcher thread checks whether the server shut down.
const IDLE_POLL: Duration = Duration::from_millis(500);

/// Beyond this many changed paths in one burst, the burst is treated like a lost-events rescan.
const MAX_BATCH: usize = 10_000;

/// Watches the roots while it lives. Drop it to stop watching.
pub struct FsWatcher {
    _watcher: RecommendedWatcher,
}

impl std::fmt::Debug for FsWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FsWatcher").finish_non_exhaustive()
    }
}

impl FsWatcher {
    pub(crate) fn start(inner: Arc<Inner>, server: Server) -> Result<FsWatcher, FsError> {
        let (tx, rx) = mpsc::channel::<notify::Result<Event>>();
        let config = notify::Config::default().with_follow_symlinks(false);
        let first = inner
            .roots
            .first()
            .map(|r| r.path().to_path_buf())
            .unwrap_or_default();
        let mut watcher = RecommendedWatcher::new(tx, config).map_err(|source| FsError::Watch {
            path: first,
            source,
        })?;
        for root in &inner.roots {
            // A root inside another is already covered by the outer root's recursive watch.
            let nested = inner
                .roots
                .iter()
                .any(|r| r.path() != root.path() && root.path().starts_with(r.path()));
            if nested {
                continue;
            }
            watcher
                .watch(root.path(), RecursiveMode::Recursive)
                .map_err(|source| FsError::Watch {
                    path: root.path().to_path_buf(),
                    source,
                })?;
        }
        // Catch up with whatever changed between registration and now.
        for i in 0..inner.roots.len() {
            inner.resync(&server, i);
        }
        std::thread::Builder::new()
            .name("mcp-fs-watch".to_owned())
            .spawn(move || run(&inner, &server, &rx))
            .map_err(FsError::Thread)?;
        Ok(FsWatcher { _watcher: watcher })
    }
}

/// Collects bursts of events and flushes each once it has been quiet for `debounce` (or has lasted
/// ten times that). Ends when the watcher is dropped or the server shuts down.
fn run(inner: &Arc<Inner>, server: &Server, rx: &Receiver<notify::Result<Event>>) {
    let shutdown = server.shutdown_token();
    let debounce = inner.limits.debounce;
    let longest = debounce.saturating_mul(10);
    loop {
        let first = match rx.recv_timeout(IDLE_POLL) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) if shutdown.is_cancelled() => return,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut batch = Batch::default();
        batch.add(inner, first);
        let started = Instant::now();
        let mut open = true;
        loop {
            let wait = debounce.min(longest.saturating_sub(started.elapsed()));
            if wait.is_zero() {
                break;
            }
            match rx.recv_timeout(wait) {
                Ok(event) => batch.add(inner, event),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        if shutdown.is_cancelled() {
            return;
        }
        batch.flush(inner, server);
        if !open {
            return;
        }
    }
}

/// What one burst of events changed.
#[derive(Default)]
struct Batch {
    /// URIs to announce with `resources/updated`.
    updated: BTreeSet<String>,
    /// Roots whose top level may have changed.
    resync: BTreeSet<usize>,
    /// Events were lost: resynchronise every root.
    rescan: bool,
}

impl Batch {
    fn add(&mut self, inner: &Inner, event: notify::Result<Event>) {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(error = %e, "file watcher error");
                return;
            }
        };
        if event.need_rescan() || self.updated.len() >= MAX_BATCH {
            self.rescan = true;
            return;
        }
        let dir_hint = match event.kind {
            EventKind::Access(_) => return,
            EventKind::Create(CreateKind::Folder) | EventKind::Remove(RemoveKind::Folder) => {
                Some(true)
            }
            EventKind::Create(CreateKind::File) | EventKind::Remove(RemoveKind::File) => {
                Some(false)
            }
            _ => None,
        };
        let names_changed = matches!(
            event.kind,
            EventKind::Create(_)
                | EventKind::Remove(_)
                | EventKind::Modify(ModifyKind::Name(_) | ModifyKind::Any)
                | EventKind::Any
                | EventKind::Other
        );
        for path in &event.paths {
            for (i, root) in inner.roots.iter().enumerate() {
                let Ok(rel) = path.strip_prefix(root.path()) else {
                    continue;
                };
                let depth = rel.components().count();
                if depth == 0 {
                    self.updated.insert(root.uri().to_owned());
                    self.resync.insert(i);
                    continue;
                }
                let dir = dir_hint
                    .unwrap_or_else(|| fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()));
                // Names that no URI can carry are not announced; they cannot be read either.
                if let Some(uri) = path_uri(path, dir) {
                    self.updated.insert(uri);
                }
                if depth == 1 && names_changed {
                    self.resync.insert(i);
                }
            }
        }
    }

    fn flush(self, inner: &Arc<Inner>, server: &Server) {
        if self.rescan {
            // What changed is unknown. Subscribers to a root hear about the root; see the crate
            // docs for what the runtime would need to tell everyone else.
            for (i, root) in inner.roots.iter().enumerate() {
                inner.resync(server, i);
                server.notify_resource_updated(root.uri());
            }
            return;
        }
        for uri in &self.updated {
            server.notify_resource_updated(uri);
        }
        for i in self.resync {
            inner.resync(server, i);
        }
    }
}
