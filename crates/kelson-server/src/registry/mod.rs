//! The registry: every tool, resource, template, prompt and completion handler, built once and
//! shared. A run-time change builds a new registry and swaps it in whole (see `Server::add_tool`), so
//! a request always sees one consistent registry and never takes a lock.

mod pages;
mod template;

use std::collections::BTreeMap;
use std::sync::Arc;

use kelson_types::{Prompt, Resource, ResourceTemplate, Tool};

use crate::handler::TemplateVars;
use crate::scopes::{Scoped, Scopes};

pub use template::{TemplateError, UriTemplate};

pub(crate) use pages::{ListKind, PageCache, decode_cursor, encode_cursor, view_of};

use crate::BuildError;
use crate::handler::{CompletionHandler, PromptHandler, ResourceHandler, ToolHandler};
use crate::schema::{self, CompiledSchema};

/// A registered tool with its compiled schemas.
pub(crate) struct ToolEntry {
    pub(crate) def: Tool,
    pub(crate) input: CompiledSchema,
    pub(crate) output: Option<CompiledSchema>,
    pub(crate) param_headers: Vec<kelson_types::ParamHeader>,
    pub(crate) handler: Arc<dyn ToolHandler>,
    /// What a caller needs to see and call the tool.
    pub(crate) scopes: Scopes,
    /// Whether and when its calls run as tasks.
    pub(crate) tasks: crate::tasks::TaskPolicy,
}

impl ToolEntry {
    pub(crate) fn new(
        scoped: Scoped<Tool>,
        tasks: crate::tasks::TaskPolicy,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<Self, BuildError> {
        let Scoped { def, scopes } = scoped;
        check_scopes("tool", &def.name, &scopes)?;
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
                schema::compile_object(s).map_err(|source| BuildError::Schema {
                    tool: def.name.clone(),
                    which: "outputSchema",
                    source,
                })?,
            ),
        };
        // spec 2026-07-28 basic/transports (x-mcp-header): an invalid declaration makes the whole
        // tool definition invalid, so it is refused here rather than dropped by clients later.
        let param_headers = kelson_types::param_headers(&def.input_schema).map_err(|e| {
            BuildError::ParamHeader {
                tool: def.name.clone(),
                reason: e.to_string(),
            }
        })?;
        Ok(ToolEntry {
            def,
            input,
            output,
            param_headers,
            handler,
            scopes,
            tasks,
        })
    }

    /// A tool served by a handler of its own (no function signature to learn schemas from).
    pub(crate) fn from_def(
        def: crate::ToolDef,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<Self, BuildError> {
        let tasks = def.task_policy();
        let scoped = def.finish(&crate::handler::shape::Shape::default())?;
        ToolEntry::new(scoped, tasks, handler)
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

/// Refuses scopes that a `WWW-Authenticate` challenge could not name.
fn check_scopes(kind: &'static str, name: &str, scopes: &Scopes) -> Result<(), BuildError> {
    match scopes.invalid() {
        None => Ok(()),
        Some(scope) => Err(BuildError::Scope {
            kind,
            name: name.to_owned(),
            scope: scope.to_owned(),
        }),
    }
}

pub(crate) struct ResourceEntry {
    pub(crate) def: Resource,
    pub(crate) handler: Arc<dyn ResourceHandler>,
    pub(crate) scopes: Scopes,
}

impl ResourceEntry {
    pub(crate) fn new(scoped: Scoped<Resource>, handler: Arc<dyn ResourceHandler>) -> Self {
        ResourceEntry {
            def: scoped.def,
            handler,
            scopes: scoped.scopes,
        }
    }
}

pub(crate) struct TemplateEntry {
    pub(crate) def: ResourceTemplate,
    pub(crate) template: UriTemplate,
    pub(crate) handler: Arc<dyn ResourceHandler>,
    pub(crate) scopes: Scopes,
}

pub(crate) struct PromptEntry {
    pub(crate) def: Prompt,
    pub(crate) handler: Arc<dyn PromptHandler>,
    pub(crate) scopes: Scopes,
}

impl PromptEntry {
    pub(crate) fn new(scoped: Scoped<Prompt>, handler: Arc<dyn PromptHandler>) -> Self {
        PromptEntry {
            def: scoped.def,
            handler,
            scopes: scoped.scopes,
        }
    }
}

/// What `resources/read` found for a URI.
pub(crate) struct FoundResource {
    pub(crate) handler: Arc<dyn ResourceHandler>,
    pub(crate) vars: TemplateVars,
    pub(crate) scopes: Scopes,
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

impl crate::observe::Named for ToolEntry {
    fn name(&self) -> &str {
        &self.def.name
    }
}

impl crate::observe::Named for PromptEntry {
    fn name(&self) -> &str {
        &self.def.name
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

    /// Whether some tool may run as a task (the tasks extension is advertised).
    pub(crate) fn has_tasks(&self) -> bool {
        self.tools
            .values()
            .any(|t| t.tasks.support != crate::tasks::TaskSupport::Never)
    }

    pub(crate) fn has_completions(&self) -> bool {
        self.completion.is_some()
    }

    /// Whether some item of this list needs a scope, so that the list depends on who asks.
    /// Computed once per generation.
    pub(crate) fn restricted(&self, kind: ListKind) -> bool {
        self.cache.restricted.get_or_init(|| {
            [
                self.tools.values().any(|t| !t.scopes.is_unrestricted()),
                self.resources.values().any(|r| !r.scopes.is_unrestricted()),
                self.templates.iter().any(|t| !t.scopes.is_unrestricted()),
                self.prompts.values().any(|p| !p.scopes.is_unrestricted()),
            ]
        })[kind as usize]
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
        check_scopes("resource", &entry.def.uri, &entry.scopes)?;
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
        scoped: Scoped<ResourceTemplate>,
        handler: Arc<dyn ResourceHandler>,
    ) -> Result<(), BuildError> {
        let Scoped { def, scopes } = scoped;
        check_scopes("resource template", &def.uri_template, &scopes)?;
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
            scopes,
        }));
        Ok(())
    }

    pub(crate) fn add_prompt(&mut self, entry: PromptEntry) -> Result<(), BuildError> {
        check_scopes("prompt", &entry.def.name, &entry.scopes)?;
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
    /// Whether `principal` may read `uri`: anyone may read what needs no scopes, or what is not
    /// registered (a read would fail anyway, telling nothing).
    pub(crate) fn may_read(&self, uri: &str, principal: &crate::Principal) -> bool {
        if principal.is_anonymous() {
            return true;
        }
        if let Some(entry) = self.resources.get(uri) {
            return entry.scopes.allows(principal);
        }
        self.templates
            .iter()
            .find(|t| t.template.match_uri(uri).is_some())
            .is_none_or(|t| t.scopes.allows(principal))
    }

    /// Whether `uri` is above something this server serves: a registered resource, or the fixed
    /// start of a template, lies below it (a subscription to a collection hears of its members).
    pub(crate) fn serves_below(&self, uri: &str) -> bool {
        let below = |other: &str| {
            other.len() > uri.len()
                && other.starts_with(uri)
                && (uri.ends_with('/') || other[uri.len()..].starts_with('/'))
        };
        self.resources.keys().any(|r| below(r))
            || self.templates.iter().any(|t| {
                let fixed = t.template.as_str();
                below(&fixed[..fixed.find('{').unwrap_or(fixed.len())])
            })
    }

    pub(crate) fn find_resource(&self, uri: &str) -> Option<FoundResource> {
        if let Some(entry) = self.resources.get(uri) {
            return Some(FoundResource {
                handler: entry.handler.clone(),
                vars: BTreeMap::new(),
                scopes: entry.scopes.clone(),
            });
        }
        self.templates.iter().find_map(|t| {
            t.template.match_uri(uri).map(|vars| FoundResource {
                handler: t.handler.clone(),
                vars,
                scopes: t.scopes.clone(),
            })
        })
    }
}
