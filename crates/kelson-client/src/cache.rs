//! The TTL cache for cacheable results.
//!
//! spec 2026-07-28 [server/utilities/caching][spec]: `server/discover`, the four lists and
//! `resources/read` carry `ttlMs` and `cacheScope`. A result is fresh while `now < received + ttlMs`;
//! an absent or negative `ttlMs` means 0, so such a result is never stored. `private` results are
//! keyed by the authorization context and never shared across contexts; `public` ones are shared.
//! The key is the method plus the result-affecting parameter (cursor or URI). A list-changed or
//! updated notification invalidates the matching entries at once. Results of MRTR retries are
//! never stored (the caller does not offer them).
//!
//! [spec]: https://modelcontextprotocol.io/specification/2026-07-28/server/utilities/caching

use std::any::Any;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use kelson_types::{
    CacheScope, DiscoverResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, Method, ReadResourceResult, method_names,
};

/// A result type that carries cache hints.
pub(crate) trait Cacheable: Clone + Send + Sync + 'static {
    fn hints(&self) -> (Option<i64>, Option<CacheScope>);
}

macro_rules! cacheable {
    ($($t:ty),*) => {$(
        impl Cacheable for $t {
            fn hints(&self) -> (Option<i64>, Option<CacheScope>) {
                (self.ttl_ms, self.cache_scope)
            }
        }
    )*};
}
cacheable!(
    DiscoverResult,
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    ReadResourceResult
);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    method: &'static str,
    /// The cursor or URI; `None` is distinct from `Some("")` (an empty cursor is a cursor).
    arg: Option<String>,
    /// `None` for public entries, the authorization context for private ones.
    scope: Option<String>,
}

struct Entry {
    value: Box<dyn Any + Send + Sync>,
    expires: Instant,
}

/// Cached results of one client.
#[derive(Default)]
pub(crate) struct Cache {
    entries: Mutex<HashMap<Key, Entry>>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.entries.lock().map(|e| e.len()).unwrap_or_default();
        f.debug_struct("Cache").field("entries", &len).finish()
    }
}

impl Cache {
    /// A fresh cached result for `method` and `arg`, visible from the authorization context
    /// `context`: a public entry, or a private entry of that same context.
    pub(crate) fn get<T: Cacheable>(
        &self,
        method: &'static str,
        arg: Option<&str>,
        context: &str,
    ) -> Option<T> {
        let now = Instant::now();
        let mut entries = self.entries.lock().expect("cache lock");
        for scope in [None, Some(context.to_owned())] {
            let key = Key {
                method,
                arg: arg.map(str::to_owned),
                scope,
            };
            match entries.get(&key) {
                Some(entry) if entry.expires > now => {
                    if let Some(value) = entry.value.downcast_ref::<T>() {
                        return Some(value.clone());
                    }
                }
                Some(_) => {
                    entries.remove(&key);
                }
                None => {}
            }
        }
        None
    }

    /// Stores `value` as its hints allow: not at all when `ttlMs` is absent, zero or negative.
    /// A result without `cacheScope` is stored as private, the safe reading.
    pub(crate) fn put<T: Cacheable>(
        &self,
        method: &'static str,
        arg: Option<&str>,
        context: &str,
        value: &T,
    ) {
        let (ttl, scope) = value.hints();
        let Some(ttl) = ttl.filter(|t| *t > 0) else {
            return;
        };
        let scope = match scope {
            Some(CacheScope::Public) => None,
            Some(CacheScope::Private) | None => Some(context.to_owned()),
        };
        let ttl_ms = u64::try_from(ttl).unwrap_or(0);
        let Some(expires) = Instant::now().checked_add(Duration::from_millis(ttl_ms)) else {
            return;
        };
        let key = Key {
            method,
            arg: arg.map(str::to_owned),
            scope,
        };
        self.entries.lock().expect("cache lock").insert(
            key,
            Entry {
                value: Box::new(value.clone()),
                expires,
            },
        );
    }

    /// Drops every entry of `method`, in every scope.
    pub(crate) fn invalidate_method(&self, method: &str) {
        self.entries
            .lock()
            .expect("cache lock")
            .retain(|key, _| key.method != method);
    }

    /// Drops the `resources/read` entries that `uri` touches: the resource itself, a resource it
    /// belongs to, and resources below it (spec: an updated URI may be a sub-resource of a
    /// subscribed one).
    pub(crate) fn invalidate_uri(&self, uri: &str) {
        self.entries.lock().expect("cache lock").retain(|key, _| {
            key.method != method_names::RESOURCES_READ
                || !key
                    .arg
                    .as_deref()
                    .is_some_and(|cached| cached.starts_with(uri) || uri.starts_with(cached))
        });
    }

    /// Applies one listen notification.
    pub(crate) fn on_notification(&self, method: &str, uri: Option<&str>) {
        match Method::parse(method) {
            Method::ToolListChanged => {
                self.invalidate_method(method_names::TOOLS_LIST);
            }
            Method::PromptListChanged => {
                self.invalidate_method(method_names::PROMPTS_LIST);
            }
            Method::ResourceListChanged => {
                self.invalidate_method(method_names::RESOURCES_LIST);
                self.invalidate_method(method_names::RESOURCES_TEMPLATES_LIST);
            }
            Method::ResourceUpdated => {
                if let Some(uri) = uri {
                    self.invalidate_uri(uri);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kelson_types::{ResourceContents, TextResourceContents, Tool};

    fn tools(ttl: Option<i64>, scope: Option<CacheScope>) -> ListToolsResult {
        ListToolsResult {
            ttl_ms: ttl,
            cache_scope: scope,
            ..ListToolsResult::new(vec![Tool::without_arguments("t")])
        }
    }

    #[test]
    fn ttl_zero_absent_or_negative_is_not_stored() {
        let cache = Cache::default();
        for ttl in [None, Some(0), Some(-5)] {
            cache.put(
                "tools/list",
                None,
                "",
                &tools(ttl, Some(CacheScope::Public)),
            );
            assert!(
                cache
                    .get::<ListToolsResult>("tools/list", None, "")
                    .is_none()
            );
        }
        cache.put("tools/list", None, "", &tools(Some(60_000), None));
        assert!(
            cache
                .get::<ListToolsResult>("tools/list", None, "")
                .is_some()
        );
    }

    #[test]
    fn private_entries_stay_in_their_context() {
        let cache = Cache::default();
        cache.put(
            "tools/list",
            None,
            "alice",
            &tools(Some(60_000), Some(CacheScope::Private)),
        );
        assert!(
            cache
                .get::<ListToolsResult>("tools/list", None, "alice")
                .is_some()
        );
        assert!(
            cache
                .get::<ListToolsResult>("tools/list", None, "bob")
                .is_none()
        );
        cache.put(
            "tools/list",
            None,
            "alice",
            &tools(Some(60_000), Some(CacheScope::Public)),
        );
        assert!(
            cache
                .get::<ListToolsResult>("tools/list", None, "bob")
                .is_some()
        );
    }

    #[test]
    fn empty_cursor_is_its_own_key_and_notifications_invalidate() {
        let cache = Cache::default();
        let page = tools(Some(60_000), Some(CacheScope::Public));
        cache.put("tools/list", Some(""), "", &page);
        assert!(
            cache
                .get::<ListToolsResult>("tools/list", None, "")
                .is_none()
        );
        assert!(
            cache
                .get::<ListToolsResult>("tools/list", Some(""), "")
                .is_some()
        );
        cache.on_notification("notifications/tools/list_changed", None);
        assert!(
            cache
                .get::<ListToolsResult>("tools/list", Some(""), "")
                .is_none()
        );

        let read = ReadResourceResult {
            ttl_ms: Some(60_000),
            cache_scope: Some(CacheScope::Public),
            ..ReadResourceResult::single(ResourceContents::Text(TextResourceContents::new(
                "file:///d",
                "x",
            )))
        };
        cache.put("resources/read", Some("file:///d"), "", &read);
        cache.put("resources/read", Some("file:///other"), "", &read);
        cache.on_notification("notifications/resources/updated", Some("file:///d/child"));
        assert!(
            cache
                .get::<ReadResourceResult>("resources/read", Some("file:///d"), "")
                .is_none()
        );
        assert!(
            cache
                .get::<ReadResourceResult>("resources/read", Some("file:///other"), "")
                .is_some()
        );
    }
}
