//! `server/discover` and the four paginated lists.

use mcp_jsonrpc::{ErrorObject, RawValue};
use mcp_types::{
    DiscoverResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PromptsCapability, ResourcesCapability, ResultType, ServerCapabilities,
    ToolsCapability,
};
use serde::Serialize;

use super::resources::millis;
use crate::Server;
use crate::registry::{ListKind, Registry, decode_cursor};
use crate::router::{Outcome, Prepared, ReplyMessage, error_reply};

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

    fn page<T: Clone>(
        &self,
        req: &Prepared<'_>,
        registry: &Registry,
        kind: ListKind,
        items: impl Fn() -> Vec<T>,
        len: usize,
        build: impl Fn(Vec<T>, Option<String>) -> Box<RawValue>,
    ) -> ReplyMessage {
        let params: CursorParams<'_> = match super::params(req) {
            Ok(p) => p,
            Err(e) => return error_reply(Some(&req.id), &e, false),
        };
        let page_size = self.inner.config.page_size.max(1);
        let Ok(offset) = decode_cursor(kind, params.cursor.as_deref(), len, page_size) else {
            return error_reply(
                Some(&req.id),
                &ErrorObject::invalid_params("Invalid cursor"),
                false,
            );
        };
        let encoded = registry.cache.page(kind, len, page_size, offset, || {
            let all = items();
            let end = (offset + page_size).min(all.len());
            let next = (end < all.len()).then(|| crate::registry::encode_cursor(kind, end));
            build(all[offset.min(end)..end].to_vec(), next)
        });
        raw_reply(req, &encoded)
    }

    pub(crate) fn list_tools(&self, req: &Prepared<'_>, registry: &Registry) -> ReplyMessage {
        self.page(
            req,
            registry,
            ListKind::Tools,
            || registry.tools.values().map(|t| t.def().clone()).collect(),
            registry.tools.len(),
            |tools, next_cursor| {
                raw(&ListToolsResult {
                    result_type: ResultType::Complete,
                    tools,
                    next_cursor,
                    ttl_ms: Some(millis(self.inner.config.list_ttl)),
                    cache_scope: Some(self.inner.config.cache_scope),
                    meta: Some(self.result_meta()),
                })
            },
        )
    }

    pub(crate) fn list_resources(&self, req: &Prepared<'_>, registry: &Registry) -> ReplyMessage {
        self.page(
            req,
            registry,
            ListKind::Resources,
            || registry.resources.values().map(|r| r.def.clone()).collect(),
            registry.resources.len(),
            |resources, next_cursor| {
                raw(&ListResourcesResult {
                    result_type: ResultType::Complete,
                    resources,
                    next_cursor,
                    ttl_ms: Some(millis(self.inner.config.list_ttl)),
                    cache_scope: Some(self.inner.config.cache_scope),
                    meta: Some(self.result_meta()),
                })
            },
        )
    }

    pub(crate) fn list_templates(&self, req: &Prepared<'_>, registry: &Registry) -> ReplyMessage {
        self.page(
            req,
            registry,
            ListKind::Templates,
            || registry.templates.iter().map(|t| t.def.clone()).collect(),
            registry.templates.len(),
            |resource_templates, next_cursor| {
                raw(&ListResourceTemplatesResult {
                    result_type: ResultType::Complete,
                    resource_templates,
                    next_cursor,
                    ttl_ms: Some(millis(self.inner.config.list_ttl)),
                    cache_scope: Some(self.inner.config.cache_scope),
                    meta: Some(self.result_meta()),
                })
            },
        )
    }

    pub(crate) fn list_prompts(&self, req: &Prepared<'_>, registry: &Registry) -> ReplyMessage {
        self.page(
            req,
            registry,
            ListKind::Prompts,
            || registry.prompts.values().map(|p| p.def.clone()).collect(),
            registry.prompts.len(),
            |prompts, next_cursor| {
                raw(&ListPromptsResult {
                    result_type: ResultType::Complete,
                    prompts,
                    next_cursor,
                    ttl_ms: Some(millis(self.inner.config.list_ttl)),
                    cache_scope: Some(self.inner.config.cache_scope),
                    meta: Some(self.result_meta()),
                })
            },
        )
    }
}

fn raw_reply(req: &Prepared<'_>, encoded: &RawValue) -> ReplyMessage {
    let mut body = Vec::with_capacity(encoded.get().len() + 48);
    mcp_jsonrpc::write_result_raw(&mut body, &req.id, encoded);
    ReplyMessage {
        body,
        outcome: Outcome::Success,
    }
}
