//! The registry: every tool, resource, template, prompt and completion handler, built once and
//! shared. A run-time change builds a new registry and swaps it in whole (see `Server::add_tool`), so
//! a request always sees one consistent registry and never takes a lock.

mod pages;
mod template;

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_types::{Prompt, Resource, ResourceTemplate, Tool};

pub use template::{TemplateError, UriTemplate};

pub(crate) use pages::{ListKind, PageCache, decode_cursor, encode_cursor};

use crate::BuildError;
use crate::handler::{CompletionHandler, PromptHandler, ResourceHandler, ToolHandler};
use crate::schema::{self, CompiledSchema};

/// A registered tool with its compiled schemas.
pub(crate) struct ToolEntry {
    pub(crate) def: Tool,
    pub(crate) input: CompiledSchema,
    pub(crate) output: Option<CompiledSchema>,
    pub(crate) param_headers: Vec<mcp_types::ParamHeader>,
    pub(crate) handler: Arc<dyn ToolHandler>,
}

impl ToolEntry {
    pub(crate) fn new(def: Tool, handler: Arc<dyn ToolHandler>) -> Result<Self, BuildError> {
        if !valid_tool_name(&def.name) {
            return Err(BuildError::ToolName(def.name));
        }
        let input =
            schema::compile_input(&def.input_schema).map_err(|source| BuildError::Schema {
                tool: def.name.clone(),
                which: "inputSchema",
                source,
            })?;
        let output = match &def.output_schema {
            None => None,
            Some(s) => Some(
                schema::compile(&serde_json::Value::Object(s.clone())).map_err(|source| {
                    BuildError::Schema {
                        tool: def.name.clone(),
                        which: "outputSchema",
                        source,
                    }
                })?,
            ),
        };
        // spec 2026-07-28 basic/transports (x-mcp-header): an invalid declaration makes the whole
        // tool definition invalid, so it is refused here rather than dropped by clients later.
        let param_headers =
            mcp_types::param_headers(&def.input_schema).map_err(|e| BuildError::ParamHeader {
                tool: def.name.clone(),
                reason: e.to_string(),
            })?;
        Ok(ToolEntry {
            def,
            input,
            output,
            param_headers,
            handler,
        })
    }

    /// The tool's definition as listed by `tools/list`.
    pub(crate) fn def(&self) -> &Tool {
        &self.def
    }
}

/// spec 2026-07-28 server/tools: names SHOULD be 1-128 characters of `A-Z a-z 0-9 _ - .`.
fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

pub(crate) struct ResourceEntry {
    pub(crate) def: Resource,
    pub(crate) handler: Arc<dyn ResourceHandler>,
}

pub(crate) struct TemplateEntry {
    pub(crate) def: ResourceTemplate,
    pub(crate) template: UriTemplate,
    pub(crate) handler: Arc<dyn ResourceHandler>,
}

pub(crate) struct PromptEntry {
    pub(crate) def: Prompt,
    pub(crate) handler: Arc<dyn PromptHandler>,
}

/// Which capabilities are advertised even when nothing of their kind is registered yet, so that
/// registering the first one at run time does not change what `server/discover` says.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Enabled {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

/// One immutable generation of the registry.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: BTreeMap<String, Arc<ToolEntry>>,
    pub(crate) resources: BTreeMap<String, Arc<ResourceEntry>>,
    pub(crate) templates: Vec<Arc<TemplateEntry>>,
    pub(crate) prompts: BTreeMap<String, Arc<PromptEntry>>,
    pub(crate) completion: Option<Arc<dyn CompletionHandler>>,
    pub(crate) enabled: Enabled,
    /// Encoded list pages and the encoded discover result, filled on first use.
    pub(crate) cache: PageCache,
}

impl Clone for Registry {
    /// Copies the registrations (cheap: entries are shared) but not the encoded caches, which
    /// belong to one generation.
    fn clone(&self) -> Self {
        Registry {
            tools: self.tools.clone(),
            resources: self.resources.clone(),
            templates: self.templates.clone(),
            prompts: self.prompts.clone(),
            completion: self.completion.clone(),
            enabled: self.enabled,
            cache: PageCache::default(),
        }
    }
}

impl Registry {
    pub(crate) fn has_tools(&self) -> bool {
        self.enabled.tools || !self.tools.is_empty()
    }

    pub(crate) fn has_resources(&self) -> bool {
        self.enabled.resources || !self.resources.is_empty() || !self.templates.is_empty()
    }

    pub(crate) fn has_prompts(&self) -> bool {
        self.enabled.prompts || !self.prompts.is_empty()
    }

    pub(crate) fn has_completions(&self) -> bool {
        self.completion.is_some()
    }

    pub(crate) fn add_tool(&mut self, entry: ToolEntry) -> Result<(), BuildError> {
        let name = entry.def.name.clone();
        if self.tools.contains_key(&name) {
            return Err(BuildError::Duplicate { kind: "tool", name });
        }
        // x-mcp-header names are per tool, so no cross-tool check is needed.
        self.tools.insert(name, Arc::new(entry));
        Ok(())
    }

    pub(crate) fn add_resource(&mut self, entry: ResourceEntry) -> Result<(), BuildError> {
        let uri = entry.def.uri.clone();
        if self.resources.contains_key(&uri) {
            return Err(BuildError::Duplicate {
                kind: "resource",
                name: uri,
            });
        }
        self.resources.insert(uri, Arc::new(entry));
        Ok(())
    }

    pub(crate) fn add_template(
        &mut self,
        def: ResourceTemplate,
        handler: Arc<dyn ResourceHandler>,
    ) -> Result<(), BuildError> {
        if self
            .templates
            .iter()
            .any(|t| t.def.uri_template == def.uri_template)
        {
            return Err(BuildError::Duplicate {
                kind: "resource template",
                name: def.uri_template,
            });
        }
        let template = UriTemplate::parse(&def.uri_template)?;
        self.templates.push(Arc::new(TemplateEntry {
            def,
            template,
            handler,
        }));
        Ok(())
    }

    pub(crate) fn add_prompt(&mut self, entry: PromptEntry) -> Result<(), BuildError> {
        let name = entry.def.name.clone();
        if self.prompts.contains_key(&name) {
            return Err(BuildError::Duplicate {
                kind: "prompt",
                name,
            });
        }
        self.prompts.insert(name, Arc::new(entry));
        Ok(())
    }

    /// Finds the handler for a URI: an exact resource first, then the first template that matches.
    pub(crate) fn find_resource(
        &self,
        uri: &str,
    ) -> Option<(Arc<dyn ResourceHandler>, crate::handler::TemplateVars)> {
        if let Some(entry) = self.resources.get(uri) {
            return Some((entry.handler.clone(), BTreeMap::new()));
        }
        self.templates.iter().find_map(|t| {
            t.template
                .match_uri(uri)
                .map(|vars| (t.handler.clone(), vars))
        })
    }
}
