//! A registration made before there is a builder or a server to make it on: what the `#[tool]`,
//! `#[prompt]` and `#[resource]` macros generate, and what a module can hand to its caller.

use std::sync::Arc;

use kelson_types::{Prompt, Resource, ResourceTemplate, Tool};

use crate::BuildError;
use crate::defs::{PromptDef, ToolDef};
use crate::handler::func::{FnPrompt, FnResource, FnTool, PromptFn, ResourceFn, ToolFn};
use crate::handler::shape::{StateMap, StateNeed};
use crate::handler::{PromptHandler, ResourceHandler, ToolHandler};
use crate::hub::HubEvent;
use crate::registry::{PromptEntry, Registry, ResourceEntry, ToolEntry, UriTemplate};
use crate::scopes::Scoped;

/// One tool, resource, resource template or prompt with its handler, ready to register with
/// [`ServerBuilder::route`](crate::ServerBuilder::route) or
/// [`Server::add_route`](crate::Server::add_route).
///
/// ```
/// use kelson_server::{Route, Server};
///
/// async fn ping() -> &'static str {
///     "pong"
/// }
///
/// # fn main() -> Result<(), kelson_server::BuildError> {
/// let routes = vec![Route::tool("ping", ping)];
/// let server = Server::builder("pinger", "1.0.0").routes(routes).build()?;
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
#[must_use]
pub struct Route {
    kind: Kind,
    pub(crate) states: Vec<StateNeed>,
}

enum Kind {
    Tool(
        Result<Scoped<Tool>, BuildError>,
        crate::tasks::TaskPolicy,
        Arc<dyn ToolHandler>,
    ),
    Resource(Scoped<Resource>, Arc<dyn ResourceHandler>),
    Template(
        Result<Scoped<ResourceTemplate>, BuildError>,
        Arc<dyn ResourceHandler>,
    ),
    Prompt(Scoped<Prompt>, Arc<dyn PromptHandler>),
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("item", &self.item())
            .finish_non_exhaustive()
    }
}

impl Route {
    /// A tool served by a handler function (see [`ToolFn`]).
    pub fn tool<F: ToolFn<M>, M: 'static>(def: impl Into<ToolDef>, handler: F) -> Self {
        let shape = F::shape();
        let def = def.into();
        let tasks = def.task_policy();
        Route {
            kind: Kind::Tool(
                def.finish(&shape),
                tasks,
                Arc::new(FnTool::new(handler, shape.wrap_output)),
            ),
            states: shape.states,
        }
    }

    /// A fixed resource served by a handler function (see [`ResourceFn`]).
    pub fn resource<F: ResourceFn<M>, M: 'static>(
        resource: impl Into<Scoped<Resource>>,
        handler: F,
    ) -> Self {
        let shape = F::shape();
        let resource = resource.into();
        let handler = FnResource::new(handler, shape.arguments, resource.def.mime_type.as_deref());
        Route {
            kind: Kind::Resource(resource, Arc::new(handler)),
            states: shape.states,
        }
    }

    /// A resource template served by a handler function, whose arguments type (if it takes one)
    /// holds the template's variables: every required property must be a variable of the
    /// template, and properties typed as numbers or booleans are decoded from the URI as such.
    pub fn resource_template<F: ResourceFn<M>, M: 'static>(
        template: impl Into<Scoped<ResourceTemplate>>,
        handler: F,
    ) -> Self {
        let shape = F::shape();
        let template = template.into();
        let checked = check_variables(template.def(), shape.arguments.as_ref()).map(|()| template);
        let mime_type = checked.as_ref().ok().and_then(|t| t.def.mime_type.clone());
        let handler = FnResource::new(handler, shape.arguments, mime_type.as_deref());
        Route {
            kind: Kind::Template(checked, Arc::new(handler)),
            states: shape.states,
        }
    }

    /// A prompt served by a handler function (see [`PromptFn`]).
    pub fn prompt<F: PromptFn<M>, M: 'static>(def: impl Into<PromptDef>, handler: F) -> Self {
        let shape = F::shape();
        let prompt = def.into().finish(&shape);
        Route {
            kind: Kind::Prompt(prompt, Arc::new(FnPrompt::new(handler, shape.arguments))),
            states: shape.states,
        }
    }

    /// What is registered: `tool "echo"`, `resource "file:///a"` and so on.
    pub fn item(&self) -> String {
        match &self.kind {
            Kind::Tool(Ok(t), ..) => format!("tool {:?}", t.def.name),
            Kind::Tool(Err(_), ..) => "tool".to_owned(),
            Kind::Resource(r, _) => format!("resource {:?}", r.def.uri),
            Kind::Template(Ok(t), _) => format!("resource template {:?}", t.def.uri_template),
            Kind::Template(Err(_), _) => "resource template".to_owned(),
            Kind::Prompt(p, _) => format!("prompt {:?}", p.def.name),
        }
    }

    /// The first state the handler reads that `states` lacks.
    pub(crate) fn missing_state(&self, states: &StateMap) -> Option<BuildError> {
        let need = self.states.iter().find(|need| !states.has(need))?;
        Some(BuildError::MissingState {
            item: self.item(),
            type_name: need.type_name,
        })
    }

    /// What listeners are told when the route is added at run time.
    pub(crate) fn event(&self) -> HubEvent {
        match self.kind {
            Kind::Tool(..) => HubEvent::ToolsChanged,
            Kind::Resource(..) | Kind::Template(..) => HubEvent::ResourcesChanged,
            Kind::Prompt(..) => HubEvent::PromptsChanged,
        }
    }

    /// Adds the registration to `registry`.
    pub(crate) fn apply(self, registry: &mut Registry) -> Result<(), BuildError> {
        match self.kind {
            Kind::Tool(def, tasks, handler) => {
                registry.add_tool(ToolEntry::new(def?, tasks, handler)?)
            }
            Kind::Resource(def, handler) => registry.add_resource(ResourceEntry::new(def, handler)),
            Kind::Template(def, handler) => registry.add_template(def?, handler),
            Kind::Prompt(def, handler) => registry.add_prompt(PromptEntry::new(def, handler)),
        }
    }
}

/// A template handler's required arguments must all be variables of the template.
fn check_variables(
    template: &ResourceTemplate,
    arguments: Option<&kelson_types::JsonObject>,
) -> Result<(), BuildError> {
    let Some(required) = arguments
        .and_then(|s| s.get("required"))
        .and_then(serde_json::Value::as_array)
    else {
        return Ok(());
    };
    let parsed = UriTemplate::parse(&template.uri_template)?;
    let variables: Vec<&str> = parsed.variables().collect();
    match required
        .iter()
        .filter_map(serde_json::Value::as_str)
        .find(|name| !variables.contains(name))
    {
        None => Ok(()),
        Some(variable) => Err(BuildError::TemplateVariable {
            template: template.uri_template.clone(),
            variable: variable.to_owned(),
        }),
    }
}

/// A set of handlers registered together, with the state they share: what `#[tools]` implements
/// for an `impl` block, whose `&self` methods read the value given to
/// [`ServerBuilder::toolbox`](crate::ServerBuilder::toolbox) as their state.
pub trait Toolbox: Send + Sync + Sized + 'static {
    /// Every registration of the set.
    fn routes() -> Vec<Route>;
}
