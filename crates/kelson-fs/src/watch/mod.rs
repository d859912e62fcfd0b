//! Change notifications: a recursive `notify` watcher on the roots, debounced, turned into
//! `resources/updated` and, when a root's top level changes, `resources/list_changed`.
//!
//! The watcher does not follow symlinks, so it only reports changes to names inside the roots.
//! A change to a file reached through a symlink is reported under the file's own URI, not the
//! link's.
//!
//! Memory and CPU stay flat under any event rate (queue.rs): notify's thread merges each event
//! into a bounded set of changed paths, and this module's thread takes the set once a burst has
//! settled, so its work follows the number of distinct paths, not of events. When more paths
//! change at once than the set holds, or the kernel drops events, the burst is lost, and every
//! listener that follows anything under a root is told it may have changed (batch.rs).

mod batch;
mod queue;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kelson_server::Server;
use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::adapter::Inner;
use crate::config::FsError;
use batch::Batch;
use queue::{Burst, Handler, Queue};

/// How often an idle watcher thread checks whether the server shut down.
const IDLE_POLL: Duration = Duration::from_millis(500);

/// The most distinct changed paths one burst keeps; past it the burst counts as lost.
const MAX_PATHS: usize = 4096;

/// At most one log line per kind of trouble in this time (the rest are counted in the next).
const LOG_EVERY: Duration = Duration::from_secs(60);

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
        let queue = Queue::new(MAX_PATHS);
        let config = notify::Config::default().with_follow_symlinks(false);
        let first = inner
            .roots
            .first()
            .map(|r| r.path().to_path_buf())
            .unwrap_or_default();
        let mut watcher =
            RecommendedWatcher::new(Handler(queue.clone()), config).map_err(|source| {
                FsError::Watch {
                    path: first,
                    source,
                }
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
        kelson_server::relay::locally(|| {
            for i in 0..inner.roots.len() {
                inner.resync(&server, i);
            }
        });
        std::thread::Builder::new()
            .name("mcp-fs-watch".to_owned())
            .spawn(move || run(&inner, &server, &queue))
            .map_err(FsError::Thread)?;
        Ok(FsWatcher { _watcher: watcher })
    }
}

/// Takes each burst once it has been quiet for `debounce` (or has lasted ten times that) and
/// notifies. Ends when the watcher is dropped or the server shuts down.
fn run(inner: &Arc<Inner>, server: &Server, queue: &Queue) {
    let shutdown = server.shutdown_token();
    let debounce = inner.limits.debounce;
    let longest = debounce.saturating_mul(10);
    let stop = || shutdown.is_cancelled();
    let mut errors = Throttle::default();
    let mut losses = Throttle::default();
    while let Some(burst) = queue.next_burst(debounce, longest, IDLE_POLL, &stop) {
        if stop() {
            return;
        }
        let Burst {
            paths,
            lost,
            errors: error_count,
            last_error,
        } = burst;
        if let Some(error) = last_error
            && let Some(more) = errors.allow(error_count)
        {
            tracing::warn!(error, others_since_last_line = more, "file watcher error");
        }
        if lost && let Some(more) = losses.allow(1) {
            tracing::warn!(
                others_since_last_line = more,
                "file watcher: too many changes at once, events were dropped; listeners were \
                 told that anything under the roots may have changed"
            );
        }
        let batch = if lost {
            Batch::lost()
        } else {
            Batch::of(inner, paths)
        };
        batch.flush(inner, server);
    }
}

/// Lets one log line through per [`LOG_EVERY`], counting the occurrences held back.
#[derive(Default)]
struct Throttle {
    last: Option<Instant>,
    held: u64,
}

impl Throttle {
    /// Records `n` occurrences; `Some(held back before)` when a line may be written now.
    fn allow(&mut self, n: u64) -> Option<u64> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < LOG_EVERY)
        {
            self.held += n;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held) + n.saturating_sub(1))
    }
}
