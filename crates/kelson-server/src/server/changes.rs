//! Run-time changes to the registry: tools, resources, templates and prompts added and removed
//! while the server serves, each announced to listeners.

use std::sync::Arc;

use kelson_types::{Prompt, Resource, ResourceTemplate};

use super::Server;
use crate::BuildError;
use crate::defs::{PromptDef, ToolDef};
use crate::handler::func::{PromptFn, ResourceFn, ToolFn};
use crate::handler::{PromptHandler, ResourceHandler, ToolHandler};
use crate::hub::HubEvent;
use crate::registry::{PromptEntry, Registry, ResourceEntry, ToolEntry};
use crate::route::Route;
use crate::scopes::Scoped;

impl Server {
    /// Registers a tool at run time and tells listeners that the tool list changed. Like every
    /// registration it takes a bare definition or one with the scopes it needs
    /// ([`WithScopes::with_scopes`](crate::WithScopes::with_scopes)).
    pub fn add_tool<F: ToolFn<M>, M: 'static>(
        &self,
        tool: impl Into<ToolDef>,
        handler: F,
    ) -> Result<(), BuildError> {
        self.add_route(Route::tool(tool, handler))
    }

    /// Registers a tool served by a [`ToolHandler`] at run time (see
    /// [`ServerBuilder::tool_handler`](crate::ServerBuilder::tool_handler)).
    pub fn add_tool_handler(
        &self,
        tool: impl Into<ToolDef>,
        handler: impl ToolHandler,
    ) -> Result<(), BuildError> {
        let entry = ToolEntry::from_def(tool.into(), Arc::new(handler))?;
        self.update(HubEvent::ToolsChanged, |r| r.add_tool(entry))
    }

    /// Registers a tool, resource, template or prompt at run time and tells listeners that its
    /// list changed. The states its handler reads must have been given to the builder.
    pub fn add_route(&self, route: Route) -> Result<(), BuildError> {
        if let Some(missing) = route.missing_state(&self.inner.states) {
            return Err(missing);
        }
        let event = route.event();
        self.update(event, |r| route.apply(r))
    }

    /// Removes a tool at run time; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.update(HubEvent::ToolsChanged, |r| {
            r.tools.remove(name).map(drop).ok_or(())
        })
        .is_ok()
    }

    /// Replaces a set of tools in one change: the tools named in `remove` go, those in `add` come
    /// (a name in both is replaced), and listeners are told once. This is how a server that mirrors
    /// another (a gateway refreshing an upstream's list) swaps one list for the next without a
    /// notification per tool or a moment where half of it is served.
    ///
    /// A definition that does not build (a schema that does not compile, say), or that takes a
    /// name another tool kept has, is left out and returned with its error; the rest apply.
    /// Nothing is announced when nothing changed.
    pub fn change_tools(
        &self,
        remove: &[String],
        add: Vec<(ToolDef, Arc<dyn ToolHandler>)>,
    ) -> Vec<(String, BuildError)> {
        let mut refused = Vec::new();
        let mut entries = Vec::with_capacity(add.len());
        for (def, handler) in add {
            let name = def.name().to_owned();
            match ToolEntry::from_def(def, handler) {
                Ok(entry) => entries.push(entry),
                Err(e) => refused.push((name, e)),
            }
        }
        if remove.is_empty() && entries.is_empty() {
            return refused;
        }
        let _ = self.update(HubEvent::ToolsChanged, |r| {
            for name in remove {
                r.tools.remove(name);
            }
            for entry in entries {
                let name = entry.def().name.clone();
                if let Err(e) = r.add_tool(entry) {
                    refused.push((name, e));
                }
            }
            Ok::<(), ()>(())
        });
        refused
    }

    /// Registers a resource at run time and tells listeners that the resource list changed.
    pub fn add_resource<F: ResourceFn<M>, M: 'static>(
        &self,
        resource: impl Into<Scoped<Resource>>,
        handler: F,
    ) -> Result<(), BuildError> {
        self.add_route(Route::resource(resource, handler))
    }

    /// Registers a resource served by a [`ResourceHandler`] at run time.
    pub fn add_resource_handler(
        &self,
        resource: impl Into<Scoped<Resource>>,
        handler: impl ResourceHandler,
    ) -> Result<(), BuildError> {
        let entry = ResourceEntry::new(resource.into(), Arc::new(handler));
        self.update(HubEvent::ResourcesChanged, |r| r.add_resource(entry))
    }

    /// Removes a resource at run time; returns whether it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.update(HubEvent::ResourcesChanged, |r| {
            r.resources.remove(uri).map(drop).ok_or(())
        })
        .is_ok()
    }

    /// Registers a resource template at run time.
    pub fn add_resource_template<F: ResourceFn<M>, M: 'static>(
        &self,
        template: impl Into<Scoped<ResourceTemplate>>,
        handler: F,
    ) -> Result<(), BuildError> {
        self.add_route(Route::resource_template(template, handler))
    }

    /// Registers a resource template served by a [`ResourceHandler`] at run time.
    pub fn add_template_handler(
        &self,
        template: impl Into<Scoped<ResourceTemplate>>,
        handler: impl ResourceHandler,
    ) -> Result<(), BuildError> {
        let handler: Arc<dyn ResourceHandler> = Arc::new(handler);
        let template = template.into();
        self.update(HubEvent::ResourcesChanged, |r| {
            r.add_template(template, handler)
        })
    }

    /// Registers a prompt at run time and tells listeners that the prompt list changed.
    pub fn add_prompt<F: PromptFn<M>, M: 'static>(
        &self,
        prompt: impl Into<PromptDef>,
        handler: F,
    ) -> Result<(), BuildError> {
        self.add_route(Route::prompt(prompt, handler))
    }

    /// Registers a prompt served by a [`PromptHandler`] at run time.
    pub fn add_prompt_handler(
        &self,
        prompt: impl Into<Scoped<Prompt>>,
        handler: impl PromptHandler,
    ) -> Result<(), BuildError> {
        let entry = PromptEntry::new(prompt.into(), Arc::new(handler));
        self.update(HubEvent::PromptsChanged, |r| r.add_prompt(entry))
    }

    /// Removes a prompt at run time; returns whether it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.update(HubEvent::PromptsChanged, |r| {
            r.prompts.remove(name).map(drop).ok_or(())
        })
        .is_ok()
    }

    fn update<E>(
        &self,
        event: HubEvent,
        change: impl FnOnce(&mut Registry) -> Result<(), E>,
    ) -> Result<(), E> {
        {
            let _guard = self.inner.write_lock.lock().expect("registry write lock");
            let mut next = Registry::clone(&self.inner.registry.load());
            change(&mut next)?;
            self.inner.registry.store(Arc::new(next));
        }
        self.inner.emit(event);
        Ok(())
    }
}
