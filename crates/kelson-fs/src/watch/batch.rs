//! What one burst changed, in URIs, and the notifications it sends.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use kelson_server::Server;

use super::queue::Change;
use crate::adapter::Inner;
use crate::uri::path_uri;

/// What one burst changed.
#[derive(Default)]
pub(super) struct Batch {
    /// URIs to announce with `resources/updated`.
    updated: BTreeSet<String>,
    /// Roots whose top level may have changed.
    resync: BTreeSet<usize>,
    /// Events were lost: anything under every root may have changed.
    lost: bool,
}

impl Batch {
    pub(super) fn lost() -> Batch {
        Batch {
            lost: true,
            ..Batch::default()
        }
    }

    /// The URIs of the changed paths (at most one `symlink_metadata` per path whose kind no event
    /// told), and the roots whose top level changed.
    pub(super) fn of(inner: &Inner, paths: HashMap<PathBuf, Change>) -> Batch {
        let mut batch = Batch::default();
        for (path, change) in paths {
            for (i, root) in inner.roots.iter().enumerate() {
                let Ok(rel) = path.strip_prefix(root.path()) else {
                    continue;
                };
                let depth = rel.components().count();
                if depth == 0 {
                    batch.updated.insert(root.uri().to_owned());
                    batch.resync.insert(i);
                    continue;
                }
                let dir = change
                    .dir
                    .unwrap_or_else(|| fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()));
                // Names that no URI can carry are not announced; they cannot be read either.
                if let Some(uri) = path_uri(&path, dir) {
                    batch.updated.insert(uri);
                }
                if depth == 1 && change.names_changed {
                    batch.resync.insert(i);
                }
            }
        }
        batch
    }

    pub(super) fn flush(self, inner: &Arc<Inner>, server: &Server) {
        // Every instance serving the folder watches it itself: its changes are not relayed to
        // the other instances (kelson_server::relay), or their listeners would hear each one twice.
        kelson_server::relay::locally(|| self.flush_here(inner, server));
    }

    fn flush_here(self, inner: &Arc<Inner>, server: &Server) {
        if self.lost {
            // What changed is unknown: re-list every root, and tell every listener that follows
            // anything under one (the list, the root, a file or directory in it) to look again.
            for (i, root) in inner.roots.iter().enumerate() {
                inner.resync(server, i);
                server.notify_resources_changed_under(root.uri());
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
