//! What the cacheable results share: the cache hints (`ttlMs`, `cacheScope`) and, for the four
//! paginated lists, the whole shape of a page. One definition each, so that the lists cannot drift
//! apart.

/// `with_cache` for a result with `ttl_ms` and `cache_scope` fields.
macro_rules! cache_hints {
    ($result:ty) => {
        impl $result {
            /// Sets the cache hints: how long the client may cache the result, in milliseconds,
            /// and who may share the cached copy.
            #[must_use]
            pub fn with_cache(mut self, ttl_ms: i64, scope: $crate::common::CacheScope) -> Self {
                self.ttl_ms = Some(ttl_ms);
                self.cache_scope = Some(scope);
                self
            }
        }
    };
}

/// A paginated, cacheable list result: its struct, `new`, `with_cache` and `with_next_cursor`.
macro_rules! list_result {
    (
        $(#[$doc:meta])*
        $name:ident { $(#[$items_doc:meta])* $items:ident: $item:ty }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// The result kind.
            #[serde(default)]
            pub result_type: $crate::common::ResultType,
            $(#[$items_doc])*
            pub $items: Vec<$item>,
            /// The cursor of the next page; absent on the last page.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub next_cursor: Option<String>,
            /// How long the client may cache this page, in milliseconds. Required from 2026-07-28
            /// servers; a client treats an absent or negative value as 0.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub ttl_ms: Option<i64>,
            /// Who may share the cached page; all pages of one list use the same scope. Required
            /// from 2026-07-28 servers.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub cache_scope: Option<$crate::common::CacheScope>,
            /// Result metadata.
            #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
            pub meta: Option<$crate::meta::ResultMeta>,
        }

        impl $name {
            /// A last page holding these items, without cache hints.
            pub fn new($items: Vec<$item>) -> Self {
                $name {
                    $items,
                    ..Self::default()
                }
            }

            /// Sets the next cursor.
            #[must_use]
            pub fn with_next_cursor(mut self, cursor: impl Into<String>) -> Self {
                self.next_cursor = Some(cursor.into());
                self
            }
        }

        cache_hints!($name);
    };
}
