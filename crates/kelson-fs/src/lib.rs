//! A filesystem adapter for MCP servers: directories ("roots") exposed as `file://` resources,
//! with nothing outside a root ever readable, size caps, and change notifications.
//!
//! ```
//! use kelson_fs::{FsAdapter, FsLimits, RootConfig};
//! use kelson_server::Server;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("mcp-fs-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let adapter = FsAdapter::new(vec![RootConfig::new(&dir).with_name("docs")], FsLimits::default())?;
//! let server = adapter.register(Server::builder("files", "1.0.0")).build()?;
//! // Keep the guard alive while serving: files that change reach listeners.
//! let _watcher = adapter.watch(&server)?;
//! // Serve it: `kelson_server::stdio::serve_stdio(server, Default::default()).await`.
//! # drop(_watcher);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```
//!
//! # URIs
//!
//! Every root is canonicalised at start (symlinks in its own path resolved). A path under it is
//! named `file://` + its absolute path, each name percent-encoded (every byte outside RFC 3986
//! `unreserved` as `%XX`, uppercase), with an empty authority (RFC 8089), and a trailing `/` for a
//! directory: the root `/srv/my docs` is `file:///srv/my%20docs/`, a file in it
//! `file:///srv/my%20docs/notes%20v2.md`. Only this form is accepted back (sub-delimiters such as
//! `+` may also be sent unencoded, and hex digits in either case); `FILE://`, `file://localhost/`,
//! `.`/`..` segments and the other forms listed under *Containment* are "not found". Names that
//! are not UTF-8, or contain a backslash, cannot be named, and are left out of listings.
//!
//! # Resources
//!
//! For each root, [`FsAdapter::register`] adds (nothing at all when there are no roots, so the
//! `resources` capability is not advertised for the adapter's sake):
//! - the root directory as a resource (`mimeType: inode/directory`, named after the directory or
//!   [`RootConfig::name`]);
//! - a resource template `<root uri>{+path}` serving every file and directory under it;
//! - up to [`FsLimits::max_listed_entries`] (default 100) of the root's top-level entries as
//!   resources, sorted by name (files with the MIME type of their extension, when known;
//!   directories as `inode/directory`). Deeper entries are reached through directory listings.
//!   `size` is not listed, since it would go stale between list-changed notifications.
//!
//! # Reading
//!
//! - A **file** reads as one `TextResourceContents` (UTF-8 `text`) or `BlobResourceContents`
//!   (base64 `blob`), by a built-in table of extensions; a text type whose bytes are not UTF-8 is
//!   sent as a blob of that type; an unknown extension is `text/plain` if it is UTF-8 without NUL
//!   bytes, else `application/octet-stream`. A file over [`FsLimits::max_file_bytes`] (default
//!   8 MiB) is an error, -32602 `"Resource too large"` with `data: {uri, size, maxBytes}`, never a
//!   truncated read.
//! - A **directory** (with or without the trailing `/`) reads as one `TextResourceContents` with
//!   `mimeType: "inode/directory"` whose `uri` is the directory's URI with the trailing `/`, and
//!   whose `text` has one line per entry, sorted by name: the entry's reference relative to the
//!   directory (its encoded name, plus `/` for a directory), so that resolving a line against the
//!   `uri` gives the entry's URI. Only entries that can be read are listed: regular files,
//!   directories, and symlinks that lead to one inside the root. At most
//!   [`FsLimits::max_dir_entries`] (default 1000) lines; a cut listing has
//!   `_meta: {"truncated": true}`.
//! - Anything else is -32602 `"Resource not found"` with `data.uri`, the same answer whatever the
//!   reason, so nothing is learned about paths outside a root.
//!
//! `ttlMs` and `cacheScope` come from the server's configuration (`ServerConfig::read_ttl`).
//!
//! # Containment
//!
//! A URI is first parsed strictly (module `uri`): the prefix must be the root's URI byte for
//! byte; each segment is percent-decoded on its own and refused if it is empty (`//`), `.` or
//! `..`, contains `/`, `\` or NUL once decoded (`%2F`, `%2f`, `%5C`, `%00`), holds a raw
//! character RFC 3986 does not allow (backslash, space, non-ASCII), is not UTF-8, or is longer
//! than `NAME_MAX`; the path may not exceed `PATH_MAX`. No Unicode normalisation is applied, so a
//! look-alike such as `U+2025` is an ordinary name. Then the path is resolved and opened (module
//! `resolve`): canonicalised and checked to lie under the root (and every symlink on the way must
//! itself lead inside, so a path that leaves and comes back is refused), `lstat`ed (only regular
//! files and directories; devices, FIFOs and sockets are refused before being opened), opened with
//! `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`, and the opened descriptor verified: same inode as
//! checked, and its real path (`/proc/self/fd/N` on Linux) still under the root. Contents are read
//! from that descriptor only. Hard links into a root are not detected.
//!
//! # Change notifications
//!
//! [`FsAdapter::watch`] starts a recursive `notify` watcher (not following symlinks) on the roots.
//! Bursts of events are collected until quiet for [`FsLimits::debounce`] (default 100 ms, at most
//! ten times that), then each changed path's URI is passed to `Server::notify_resource_updated`,
//! which reaches every `subscriptions/listen` stream subscribed to that URI or to a directory
//! containing it. A file created, removed or renamed at a root's top level updates the listed
//! resources, and each addition or removal sends `resources/list_changed`.
//!
//! Memory and CPU stay flat under any rate of events (a writer renaming files in a loop makes
//! tens of thousands a second): notify's thread merges each event into a set of changed paths
//! that holds at most 4096, so a storm on a few names costs nothing more, and the watcher's own
//! thread handles each distinct path once per burst. When a burst changes more paths than the set
//! holds, or the kernel drops events (inotify queue overflow), which paths changed is unknown: the
//! adapter re-lists the roots and calls `Server::notify_resources_changed_under` for each root, so
//! every listener following the resource list or anything under the root hears that it may have
//! changed.
//!
//! One gap in the runtime shows here: each run-time registry change emits its own
//! `list_changed`, so a burst that adds five top-level files sends five (a batched
//! `Server::update_resources` would send one).
//!
//! # Platforms
//!
//! Unix only (the containment relies on `O_NOFOLLOW` and inode checks); the strongest form, with
//! `/proc/self/fd`, is Linux.

mod adapter;
mod config;
mod mime;
mod resolve;
mod uri;
mod watch;

pub use adapter::{FsAdapter, FsRoot};
pub use config::{FsError, FsLimits, RootConfig};
pub use watch::FsWatcher;

/// For the fuzz targets (`fuzz/` at the repository root), not part of the API.
#[doc(hidden)]
pub mod __fuzz {
    /// The names a `file://` URI names below the root whose URI is `root_uri`, and whether it
    /// ended in `/`; `None` when the strict parser refuses it.
    pub fn parse_relative(root_uri: &str, uri: &str) -> Option<(Vec<String>, bool)> {
        crate::uri::parse_relative(root_uri, uri).map(|r| (r.segments, r.trailing_slash))
    }

    /// The canonical URI of an absolute, normalised path (`dir` adds the trailing `/`).
    pub fn path_uri(path: &std::path::Path, dir: bool) -> Option<String> {
        crate::uri::path_uri(path, dir)
    }
}
