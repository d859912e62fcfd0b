//! The adapter: roots, their resources and templates, and reads.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use kelson_server::{
    BoxFuture, HandlerError, InsufficientScope, Principal, Scoped, Scopes, Server, ServerBuilder,
    Uri, WithScopes,
};
use kelson_types::{
    ErrorObject, Resource, ResourceContents, ResourceTemplate, TextResourceContents,
};
use serde_json::json;

use crate::config::{FsError, FsLimits, RootConfig};
use crate::mime;
use crate::resolve::{self, EntryKind, Opened, ReadError};
use crate::uri::{entry_ref, parse_relative, path_uri, valid_name};
use crate::watch::FsWatcher;

/// How many entries a directory scan looks at before it gives up and flags the listing truncated.
/// Entries are sorted before they are cut to `max_dir_entries`, so every name up to this bound is
/// held in memory.
const SCAN_CAP: usize = 100_000;

/// An exposed directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsRoot {
    name: String,
    path: PathBuf,
    uri: String,
    scopes: Scopes,
}

impl FsRoot {
    /// The name it is listed under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its canonical path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The scopes a caller needs for it.
    pub fn scopes(&self) -> &Scopes {
        &self.scopes
    }

    /// Its URI, `file://` + the canonical path + `/`; every resource under it starts with this.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The root's URI template, `<uri>{+path}`.
    pub fn uri_template(&self) -> String {
        format!("{}{{+path}}", self.uri)
    }

    fn resource(&self) -> Scoped<Resource> {
        Resource::new(&self.uri, &self.name)
            .with_description(format!(
                "The directory {}. Reading it lists its entries, one relative URI per line \
                 (directories end in '/'); every file and directory under it can be read.",
                self.path.display()
            ))
            .with_mime_type(mime::DIRECTORY)
            .with_scopes(self.scopes.clone())
    }

    fn template(&self) -> Scoped<ResourceTemplate> {
        ResourceTemplate::new(self.uri_template(), &self.name)
            .with_description(format!(
                "Any file or directory under {}: a file reads as text or a base64 blob by its type, \
                 a directory as an inode/directory listing.",
                self.path.display()
            ))
            .with_scopes(self.scopes.clone())
    }
}

pub(crate) struct Inner {
    pub(crate) roots: Vec<FsRoot>,
    pub(crate) limits: FsLimits,
    /// Per root, the URIs of the top-level entries registered as resources.
    listed: Mutex<Vec<BTreeSet<String>>>,
}

/// Directories ("roots") exposed as MCP resources.
///
/// See the [crate documentation](crate) for URIs, listings, containment and change notifications.
#[derive(Clone)]
pub struct FsAdapter {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for FsAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FsAdapter")
            .field("roots", &self.inner.roots)
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

impl FsAdapter {
    /// Resolves the roots. Each must exist and be a directory; two roots may not resolve to the
    /// same directory (one may contain another).
    pub fn new(roots: Vec<RootConfig>, limits: FsLimits) -> Result<Self, FsError> {
        let mut resolved: Vec<FsRoot> = Vec::with_capacity(roots.len());
        for config in roots {
            let path = fs::canonicalize(&config.path).map_err(|source| FsError::Root {
                path: config.path.clone(),
                source,
            })?;
            let meta = fs::metadata(&path).map_err(|source| FsError::Root {
                path: config.path.clone(),
                source,
            })?;
            if !meta.is_dir() {
                return Err(FsError::NotADirectory { path: config.path });
            }
            let uri = path_uri(&path, true)
                .ok_or_else(|| FsError::Unrepresentable { path: path.clone() })?;
            if resolved.iter().any(|r| r.path == path) {
                return Err(FsError::DuplicateRoot { path });
            }
            let name = config.name.unwrap_or_else(|| {
                path.file_name()
                    .map_or_else(|| "/".to_owned(), |n| n.to_string_lossy().into_owned())
            });
            resolved.push(FsRoot {
                name,
                path,
                uri,
                scopes: config.scopes,
            });
        }
        let listed = Mutex::new(vec![BTreeSet::new(); resolved.len()]);
        Ok(FsAdapter {
            inner: Arc::new(Inner {
                roots: resolved,
                limits,
                listed,
            }),
        })
    }

    /// The roots, in the order given.
    pub fn roots(&self) -> &[FsRoot] {
        &self.inner.roots
    }

    /// The limits in force.
    pub fn limits(&self) -> &FsLimits {
        &self.inner.limits
    }

    /// The URI of an existing path under a root (after resolving symlinks), or `None`.
    pub fn uri_of(&self, path: &Path) -> Option<String> {
        let canonical = fs::canonicalize(path).ok()?;
        if !self
            .inner
            .roots
            .iter()
            .any(|r| canonical.starts_with(&r.path))
        {
            return None;
        }
        path_uri(&canonical, canonical.is_dir())
    }

    /// A paragraph for the server's instructions that tells the model how to use the roots.
    pub fn instructions(&self) -> String {
        let roots: Vec<&str> = self.inner.roots.iter().map(|r| r.uri.as_str()).collect();
        format!(
            "Files under {} are resources. Read a directory URI (ending in '/') for its entries, \
             one relative URI per line, directories ending in '/'; read a file URI for its \
             contents (files over {} bytes are refused).",
            roots.join(", "),
            self.inner.limits.max_file_bytes
        )
    }

    /// Registers every root on `builder`: the root directory as a resource, a resource template
    /// `<root uri>{+path}` for everything under it, and up to `max_listed_entries` of its top-level
    /// entries as resources. Register on one builder only: the adapter remembers what it listed so
    /// that [`watch`](Self::watch) can keep `resources/list` current.
    pub fn register(&self, mut builder: ServerBuilder) -> ServerBuilder {
        let mut listed = self.inner.lock_listed();
        // The runtime serves a URI by the first template that matches it, so a root nested in
        // another is registered first: its files are served under its own scopes and cache hints.
        // Roots that nest in none keep their given order.
        let roots = &self.inner.roots;
        let depth = |i: usize| {
            roots
                .iter()
                .filter(|r| r.uri != roots[i].uri && roots[i].uri.starts_with(&r.uri))
                .count()
        };
        let mut order: Vec<usize> = (0..roots.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(depth(i)));
        for i in order {
            let root = &self.inner.roots[i];
            builder = builder
                .resource(root.resource(), self.inner.reader())
                .resource_template(root.template(), self.inner.reader());
            let mut uris = BTreeSet::new();
            for resource in self.inner.top_level(i) {
                uris.insert(resource.uri.clone());
                let resource = resource.with_scopes(root.scopes.clone());
                builder = builder.resource(resource, self.inner.reader());
            }
            listed[i] = uris;
        }
        builder
    }

    /// Starts watching the roots (recursively) for changes: `resources/updated` for each changed
    /// file or directory, and `resources/list_changed` when a root's top level changes what
    /// `resources/list` shows. Watching stops when the returned guard is dropped or the server
    /// shuts down. Needs no async runtime: the watcher runs on its own threads.
    pub fn watch(&self, server: &Server) -> Result<FsWatcher, FsError> {
        FsWatcher::start(self.inner.clone(), server.clone())
    }
}

impl Inner {
    fn lock_listed(&self) -> std::sync::MutexGuard<'_, Vec<BTreeSet<String>>> {
        self.listed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The handler of every registration: reads a URI under the innermost root that holds it.
    /// (The runtime variables are percent-decoded, which loses the difference between `/` and
    /// `%2F`, so the handler takes the raw URI and parses it itself.)
    fn reader(
        self: &Arc<Self>,
    ) -> impl Fn(Principal, Uri) -> BoxFuture<Result<Vec<ResourceContents>, HandlerError>>
    + Send
    + Sync
    + 'static {
        let inner = self.clone();
        move |principal: Principal, Uri(uri): Uri| {
            let inner = inner.clone();
            Box::pin(async move { inner.read_as(&principal, uri).await })
        }
    }

    /// Serves `resources/read` for `uri` to `principal`.
    async fn read_as(
        self: Arc<Self>,
        principal: &Principal,
        uri: String,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        // Roots may nest, and the runtime serves a URI by the first template that matches it: a
        // file of a nested root may arrive through the template of the root around it. It needs
        // the scopes of every root that contains it, not only of the one that matched.
        if let Some(other) = self
            .roots
            .iter()
            .find(|r| uri.starts_with(&r.uri) && !r.scopes.allows(principal))
        {
            return Err(
                InsufficientScope::new(&format!("the resource {uri}"), &other.scopes).into(),
            );
        }
        // The innermost root that holds the URI is the one whose template the runtime matched
        // (nested roots are registered first).
        let Some(root) = self
            .roots
            .iter()
            .enumerate()
            .filter(|(_, r)| uri.starts_with(&r.uri))
            .max_by_key(|(_, r)| r.uri.len())
            .map(|(i, _)| i)
        else {
            return Err(HandlerError::resource_not_found(&uri));
        };
        tokio::task::spawn_blocking(move || self.read(root, &uri))
            .await
            .unwrap_or_else(|e| Err(HandlerError::failed(format!("read task failed: {e}"))))
    }

    /// Serves `resources/read` for `uri` under root `root`.
    pub(crate) fn read(
        &self,
        root: usize,
        uri: &str,
    ) -> Result<Vec<ResourceContents>, HandlerError> {
        let root = &self.roots[root];
        // Every refusal looks the same as a missing file, so nothing is learned about what exists
        // outside a root (or why a name was refused).
        let not_found = || HandlerError::resource_not_found(uri);
        let rel = parse_relative(&root.uri, uri).ok_or_else(not_found)?;
        match resolve::open_beneath(&root.path, &rel.segments).ok_or_else(not_found)? {
            Opened::File { .. } if rel.trailing_slash => Err(not_found()),
            Opened::File { file, len } => {
                let max = self.limits.max_file_bytes;
                let bytes = resolve::read_capped(file, len, max).map_err(|e| match e {
                    ReadError::TooLarge(size) => too_large(uri, size, max),
                    ReadError::Io(e) => {
                        tracing::debug!(uri, error = %e, "file read failed");
                        HandlerError::failed(format!("could not read {uri}"))
                    }
                })?;
                let name = rel.segments.last().map_or("", String::as_str);
                Ok(vec![mime::contents(uri.to_owned(), name, bytes)])
            }
            Opened::Dir { file, path } => {
                let (entries, truncated) = self
                    .entries(root, &file, &path, self.limits.max_dir_entries)
                    .ok_or_else(|| HandlerError::failed(format!("could not list {uri}")))?;
                let mut text = String::new();
                for (name, kind) in entries {
                    text.push_str(&entry_ref(&name, kind == EntryKind::Dir));
                    text.push('\n');
                }
                // The listing's lines are references relative to the directory, so its URI must
                // end in '/' for them to resolve below it.
                let dir_uri = if uri.ends_with('/') {
                    uri.to_owned()
                } else {
                    format!("{uri}/")
                };
                let mut contents =
                    TextResourceContents::new(dir_uri, text).with_mime_type(mime::DIRECTORY);
                if truncated {
                    let mut meta = kelson_types::JsonObject::new();
                    meta.insert("truncated".to_owned(), json!(true));
                    contents.meta = Some(meta);
                }
                Ok(vec![contents.into()])
            }
        }
    }

    /// The servable entries of an opened directory, sorted by name, at most `max`, and whether
    /// some were left out; `None` if it cannot be listed.
    fn entries(
        &self,
        root: &FsRoot,
        file: &fs::File,
        dir: &Path,
        max: usize,
    ) -> Option<(Vec<(String, EntryKind)>, bool)> {
        let iter = fs::read_dir(resolve::listing_path(file, dir)).ok()?;
        let mut truncated = false;
        let mut names = Vec::new();
        for (scanned, entry) in iter.enumerate() {
            if scanned == SCAN_CAP {
                truncated = true;
                break;
            }
            let Ok(entry) = entry else { continue };
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if !valid_name(&name) {
                continue;
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            names.push((name, file_type));
        }
        names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::new();
        for (name, file_type) in names {
            if out.len() == max {
                truncated = true;
                break;
            }
            if let Some(kind) = resolve::classify(&root.path, dir, &name, file_type) {
                out.push((name, kind));
            }
        }
        Some((out, truncated))
    }

    /// The top-level entries of root `i` that `resources/list` shows.
    fn top_level(&self, i: usize) -> Vec<Resource> {
        let root = &self.roots[i];
        let max = self.limits.max_listed_entries;
        if max == 0 {
            return Vec::new();
        }
        let Some(Opened::Dir { file, path }) = resolve::open_beneath(&root.path, &[]) else {
            return Vec::new();
        };
        let Some((entries, _)) = self.entries(root, &file, &path, max) else {
            return Vec::new();
        };
        entries
            .into_iter()
            .filter_map(|(name, kind)| {
                let dir = kind == EntryKind::Dir;
                let uri = format!("{}{}", root.uri, entry_ref(&name, dir));
                // A root nested in another is listed once, as a root.
                if self.roots.iter().any(|r| r.uri == uri) {
                    return None;
                }
                let mime = if dir {
                    Some(mime::DIRECTORY)
                } else {
                    mime::guess(&name).map(|(m, _)| m)
                };
                let resource = Resource::new(uri, name);
                Some(match mime {
                    Some(m) => resource.with_mime_type(m),
                    None => resource,
                })
            })
            .collect()
    }

    /// Brings root `i`'s top-level resources in line with the directory. Each addition or removal
    /// tells listeners that the resource list changed.
    pub(crate) fn resync(self: &Arc<Self>, server: &Server, i: usize) {
        let want = self.top_level(i);
        let want_uris: BTreeSet<String> = want.iter().map(|r| r.uri.clone()).collect();
        let mut listed = self.lock_listed();
        for gone in listed[i].difference(&want_uris) {
            server.remove_resource(gone);
        }
        for resource in want {
            if listed[i].contains(&resource.uri) {
                continue;
            }
            let uri = resource.uri.clone();
            let resource = resource.with_scopes(self.roots[i].scopes.clone());
            if let Err(e) = server.add_resource(resource, self.reader()) {
                tracing::warn!(uri, error = %e, "cannot list a new file");
            }
        }
        listed[i] = want_uris;
    }
}

/// -32602 for a file over the size cap. The file is inside a root, so saying how big it is tells
/// nothing that a listing would not.
fn too_large(uri: &str, size: u64, max: u64) -> HandlerError {
    HandlerError::Protocol(
        ErrorObject::new(kelson_jsonrpc::code::INVALID_PARAMS, "Resource too large")
            .with_data(json!({ "uri": uri, "size": size, "maxBytes": max })),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// URIs the runtime's template matcher already refuses never reach the handler; the handler
    /// must refuse them on its own all the same, in case a broader template routes them here.
    #[test]
    fn the_handler_refuses_what_the_router_would() {
        let base = std::env::temp_dir().join(format!("mcp-fs-unit-adapter-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(base.join("root")).unwrap();
        fs::write(base.join("root/a.txt"), "a").unwrap();
        fs::write(base.join("secret.txt"), "secret").unwrap();
        let adapter = FsAdapter::new(
            vec![RootConfig::new(base.join("root"))],
            FsLimits::default(),
        )
        .unwrap();
        let root = adapter.roots()[0].uri().to_owned();
        let path = root.strip_prefix("file://").unwrap();
        let read = |uri: &str| adapter.inner.read(0, uri);

        assert!(read(&format!("{root}a.txt")).is_ok());
        for uri in [
            format!("FILE://{path}a.txt"),
            format!("file://localhost{path}a.txt"),
            format!("{root}..\\secret.txt"),
            format!("{root}a .txt"),
            format!("{root}\u{FF0E}\u{FF0E}/secret.txt"),
            format!("{root}a.txt\0"),
            format!("{root}../secret.txt"),
            format!("{}secret.txt", root.trim_end_matches("root/")),
        ] {
            match read(&uri) {
                Err(HandlerError::Protocol(e)) => {
                    assert_eq!(
                        (e.code, &*e.message),
                        (-32602, "Resource not found"),
                        "{uri}"
                    );
                }
                other => panic!("{uri}: {other:?}"),
            }
        }
        let _ = fs::remove_dir_all(&base);
    }
}
