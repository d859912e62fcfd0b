//! Configuration and errors.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use kelson_server::Scopes;

/// One directory to expose.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RootConfig {
    /// The directory. It is canonicalised at start (symlinks resolved), and the canonical path is
    /// what appears in URIs.
    pub path: PathBuf,
    /// The root resource's name; the directory's own name when absent.
    pub name: Option<String>,
    /// The scopes an authenticated caller needs to list and read anything under the root. None
    /// by default (see [`kelson_server::Scopes`]: anonymous callers, served without an auth layer,
    /// are never restricted).
    pub scopes: Scopes,
}

impl RootConfig {
    /// A root with the directory's own name.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        RootConfig {
            path: path.into(),
            name: None,
            scopes: Scopes::none(),
        }
    }

    /// Sets the scopes a caller needs for the root.
    #[must_use]
    pub fn with_scopes(mut self, scopes: impl Into<Scopes>) -> Self {
        self.scopes = scopes.into();
        self
    }

    /// Sets the name the root is listed under.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// Bounds on what the adapter reads and lists.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FsLimits {
    /// The largest file `resources/read` returns, in bytes. A larger file is an error (-32602,
    /// "Resource too large"), never a truncated read.
    pub max_file_bytes: u64,
    /// The most entries a directory listing shows; a longer listing is cut and flagged.
    pub max_dir_entries: usize,
    /// The most entries of each root's top level that `resources/list` shows (0: only the roots).
    pub max_listed_entries: usize,
    /// How long the watcher waits for a burst of changes to settle before it notifies.
    pub debounce: Duration,
}

impl Default for FsLimits {
    fn default() -> Self {
        FsLimits {
            max_file_bytes: 8 * 1024 * 1024,
            max_dir_entries: 1000,
            max_listed_entries: 100,
            debounce: Duration::from_millis(100),
        }
    }
}

/// Why the adapter could not start.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// A root could not be resolved.
    #[error("root {path:?}: {source}")]
    Root {
        /// The path as configured.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
    /// A root is not a directory.
    #[error("root {path:?} is not a directory")]
    NotADirectory {
        /// The path as configured.
        path: PathBuf,
    },
    /// A root's canonical path cannot be written as a `file://` URI (it is not UTF-8 or has a
    /// backslash in a name).
    #[error("root {path:?} has a name that cannot be written in a file:// URI")]
    Unrepresentable {
        /// The canonical path.
        path: PathBuf,
    },
    /// Two roots resolve to the same directory.
    #[error("root {path:?} is given twice")]
    DuplicateRoot {
        /// The canonical path.
        path: PathBuf,
    },
    /// The change watcher could not start or watch a root.
    #[error("cannot watch {path:?}: {source}")]
    Watch {
        /// The root.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: notify::Error,
    },
    /// The watcher's thread could not start.
    #[error("cannot start the watcher thread: {0}")]
    Thread(#[source] io::Error),
}
