//! `server/discover` and the four paginated lists.

use kelson_jsonrpc::{ErrorObject, RawValue};
use kelson_types::{
    CacheScope, DiscoverResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PromptsCapability, ResourcesCapability, ResultType,
    ServerCapabilities, ToolsCapability,
};
use serde::Serialize;

use super::resources::millis;
use crate::registry::{ListKind, Registry, decode_cursor, encode_cursor, view_of};
use crate::router::{Outcome, Prepared, ReplyMessage, error_reply};
use crate::{Principal, Scopes, Server};

/// The params of a list request as the router needs them: `_meta` was decoded by `prepare`.
#[derive(serde::Deserialize)]
struct CursorParams<'a> {
    #[serde(borrow, default)]
    cursor: Option<std::borrow::Cow<'a, str>>,
}

fn raw<T: Serialize>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).expect("list results serialize")
}

impl Server {
    pub(crate) fn capabilities(&self, registry: &Registry) -> ServerCapabilities {
        ServerCapabilities {
            tools: registry.has_tools().then(|| ToolsCapability {
                list_changed: Some(true),
                ..Default::default()
            }),
            resources: registry.has_resources().then(|| ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
                ..Default::default()
            }),
            prompts: registry.has_prompts().then(|| PromptsCapability {
                list_changed: Some(true),
                ..Default::default()
            }),
            completions: registry.has_completions().then(Default::default),
            // Deprecated in 2026-07-28 but still specified: per-request logLevel is honoured.
            logging: Some(Default::default()),
            // The tasks extension takes no settings.
            extensions: registry.has_tasks().then(|| {
                [(kelson_types::TASKS_EXTENSION.to_owned(), Default::default())]
                    .into_iter()
                    .collect()
            }),
            ..Default::default()
        }
    }

    pub(crate) fn discover(&self, req: &Prepared<'_>, registry: &Registry) -> ReplyMessage {
        let encoded = registry.cache.discover.get_or_init(|| {
            raw(&DiscoverResult {
                result_type: ResultType::Complete,
                supported_versions: self
                    .supported_versions()
                    .iter()
                    .map(|v| (*v).to_owned())
                    .collect(),
                capabilities: self.capabilities(registry),
                instructions: self.inner.instructions.clone(),
                ttl_ms: Some(millis(self.inner.config.discover_ttl)),
                cache_scope: Some(self.inner.config.cache_scope),
                meta: Some(self.result_meta()),
            })
        });
        raw_reply(req, encoded)
    }

    /// One page of a list. A list none of whose items needs a scope is the same for every caller,
    /// and so is the whole list that every anonymous caller sees (anonymous means no auth layer,
    /// see [`Scopes`]): each page is encoded once per registry generation and written from the
    /// stored bytes. For an authenticated caller, a list with scoped items is filtered, encoded for
    /// this request only (never stored, so no caller is served another's page), marked
    /// `cacheScope: "private"`, and paged with cursors bound to the caller's view of it.
    #[allow(clippy::too_many_arguments)]
    fn page<'r, T: Clone + 'r, I>(
        &self,
        req: &Prepared<'_>,
        registry: &'r Registry,
        kind: ListKind,
        principal: &Principal,
        entries: impl Fn() -> I,
        len: usize,
        build: impl Fn(Vec<T>, Option<String>, CacheScope) -> Box<RawValue>,
    ) -> ReplyMessage
    where
        I: Iterator<Item = (&'r Scopes, &'r T)>,
    {
        let params: CursorParams<'_> = match super::params(req) {
            Ok(p) => p,
            Err(e) => return error_reply(Some(&req.id), &e, false),
        };
        let page_size = self.inner.config.page_size.max(1);
        let invalid = || {
            error_reply(
                Some(&req.id),
                &ErrorObject::invalid_params("Invalid cursor"),
                false,
            )
        };
        if principal.is_anonymous() || !registry.restricted(kind) {
            let Ok(offset) = decode_cursor(kind, params.cursor.as_deref(), len, page_size, None)
            else {
                return invalid();
            };
            let encoded = registry.cache.page(kind, len, page_size, offset, || {
                let all: Vec<T> = entries().map(|(_, def)| def.clone()).collect();
                let end = (offset + page_size).min(all.len());
                let next = (end < all.len()).then(|| encode_cursor(kind, end, None));
                build(
                    all[offset.min(end)..end].to_vec(),
                    next,
                    self.inner.config.cache_scope,
                )
            });
            return raw_reply(req, &encoded);
        }
        // spec 2026-07-28 server/tools, server/resources and server/prompts: lists MAY vary with
        // the token's scopes; and (spec 2026-07-28 server/utilities/caching) a result that depends
        // on the caller is private, which keeps it out of caches shared across authorization
        // contexts.
        let visible: Vec<(usize, &T)> = entries()
            .enumerate()
            .filter(|(_, (scopes, _))| scopes.allows(principal))
            .map(|(i, (_, def))| (i, def))
            .collect();
        let view = view_of(len, visible.iter().map(|(i, _)| *i));
        let Ok(offset) = decode_cursor(
            kind,
            params.cursor.as_deref(),
            visible.len(),
            page_size,
            Some(view),
        ) else {
            return invalid();
        };
        let end = (offset + page_size).min(visible.len());
        let next = (end < visible.len()).then(|| encode_cursor(kind, end, Some(view)));
        let items = visible[offset.min(end)..end]
            .iter()
            .map(|(_, def)| (*def).clone())
            .collect();
        raw_reply(req, &build(items, next, CacheScope::Private))
    }

    pub(crate) fn list_tools(
        &self,
        req: &Prepared<'_>,
        registry: &Registry,
        principal: &Principal,
    ) -> ReplyMessage {
        self.page(
            req,
            registry,
            ListKind::Tools,
            principal,
            || registry.tools.values().map(|t| (&t.scopes, t.def())),
            registry.tools.len(),
            |tools, next_cursor, cache_scope| {
                raw(&ListToolsResult {
                    result_type: ResultType::Complete,
                    tools,
                    next_cursor,
                    ttl_ms: Some(millis(self.inner.config.list_ttl)),
                    cache_scope: Some(cache_scope),
                    meta: Some(self.result_meta()),
                })
            },
        )
    }

    pub(crate) fn list_resources(
        &self,
        req: &Prepared<'_>,
        registry: &Registry,
        principal: &Principal,
    ) -> ReplyMessage {
        self.page(
            req,
            registry,
            ListKind::Resources,
            principal,
            || registry.resources.values().map(|r| (&r.scopes, &r.def)),
            registry.resources.len(),
            |resources, next_cursor, cache_scope| {
                raw(&ListResourcesResult {
                    result_type: ResultType::Complete,
                    resources,
                    next_cursor,
                    ttl_ms: Some(millis(self.inner.config.list_ttl)),
                    cache_scope: Some(cache_scope),
                    meta: Some(self.result_meta()),
                })
            },
        )
    }

    pub(crate) fn list_templates(
        &self,
        req: &Prepared<'_>,
        registry: &Registry,
        principal: &Principal,
    ) -> ReplyMessage {
        self.page(
            req,
            registry,
            ListKind::Templates,
            principal,
            || registry.templates.iter().map(|t| (&t.scopes, &t.def)),
            registry.templates.len(),
            |resource_templates, next_cursor, cache_scope| {
                raw(&ListResourceTemplatesResult {
                    result_type: ResultType::Complete,
                    resource_templates,
                    next_cursor,
                    ttl_ms: Some(millis(self.inner.config.list_ttl)),
                    cache_scope: Some(cache_scope),
                    meta: Some(self.result_meta()),
                })
            },
        )
    }

    pub(crate) fn list_prompts(
        &self,
        req: &Prepared<'_>,
        registry: &Registry,
        principal: &Principal,
    ) -> ReplyMessage {
        self.page(
            req,
            registry,
            ListKind::Prompts,
            principal,
            || registry.prompts.values().map(|p| (&p.scopes, &p.def)),
            registry.prompts.len(),
            |prompts, next_cursor, cache_scope| {
                raw(&ListPromptsResult {
                    result_type: ResultType::Complete,
                    prompts,
                    next_cursor,
                    ttl_ms: Some(millis(self.inner.config.list_ttl)),
                    cache_scope: Some(cache_scope),
                    meta: Some(self.result_meta()),
                })
            },
        )
    }
}

fn raw_reply(req: &Prepared<'_>, encoded: &RawValue) -> ReplyMessage {
    let mut body = Vec::with_capacity(encoded.get().len() + 48);
    kelson_jsonrpc::write_result_raw(&mut body, &req.id, encoded);
    ReplyMessage {
        body,
        outcome: Outcome::Success,
    }
}
