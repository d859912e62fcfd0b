//! [`ServerBuilder`]: a server's registrations, state and settings, built once into a [`Server`].

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use kelson_types::{Implementation, Prompt, Resource, ResourceTemplate};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::{Inner, Server, ServerConfig};
use crate::BuildError;
use crate::defs::{PromptDef, ToolDef};
use crate::handler::func::{PromptFn, ResourceFn, ToolFn};
use crate::handler::shape::{StateMap, StateNeed};
use crate::handler::{CompletionHandler, PromptHandler, ResourceHandler, ToolHandler};
use crate::mrtr::StateSealer;
use crate::observe::{Fanout, Metrics, RequestObserver};
use crate::registry::{PromptEntry, Registry, ResourceEntry, ToolEntry};
use crate::route::{Route, Toolbox};
use crate::scopes::Scoped;

impl Server {
    /// Starts building a server that identifies itself as `name` `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            config: ServerConfig::default(),
            registry: Registry::default(),
            state_key: None,
            previous_state_keys: Vec::new(),
            relay: None,
            error: None,
            observers: Vec::new(),
            metrics: None,
            states: StateMap::default(),
            needs: Vec::new(),
            task_store: None,
        }
    }
}

/// Builds a [`Server`]. Registration errors are kept and reported by [`build`](Self::build), so
/// registrations chain.
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    config: ServerConfig,
    registry: Registry,
    state_key: Option<Vec<u8>>,
    previous_state_keys: Vec<Vec<u8>>,
    relay: Option<Arc<dyn crate::relay::Relay>>,
    error: Option<BuildError>,
    observers: Vec<Arc<dyn RequestObserver>>,
    metrics: Option<Metrics>,
    states: StateMap,
    /// The states each registration reads, checked by `build` (a state may be given after the
    /// registration that reads it).
    needs: Vec<(String, Vec<StateNeed>)>,
    task_store: Option<Arc<dyn crate::tasks::TaskStore>>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    fn record(mut self, result: Result<(), BuildError>) -> Self {
        if let Err(e) = result
            && self.error.is_none()
        {
            self.error = Some(e);
        }
        self
    }

    /// Replaces the whole `serverInfo` (title, description, icons, website).
    #[must_use]
    pub fn info(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Instructions for the model, returned by `server/discover`.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Replaces the configuration.
    #[must_use]
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// The key that seals `requestState` (at least 32 bytes). Instances behind one load balancer must
    /// share it; without one, each process uses a random key.
    #[must_use]
    pub fn state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.state_key = Some(key.into());
        self
    }

    /// A key that sealed `requestState` before [`state_key`](Self::state_key) replaced it: states
    /// it sealed still open, new ones are sealed with the current key. Keep it for one state
    /// lifetime ([`ServerConfig::state_ttl`]) after every instance seals with the new key; may be
    /// given more than once. Ignored without a current key.
    #[must_use]
    pub fn previous_state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.previous_state_keys.push(key.into());
        self
    }

    /// Shares this instance's change events with the other instances of the same server through
    /// `relay` (a broker), so that a listener on any instance hears of a change made through any
    /// other. Feed what the relay receives to [`Server::relay_inlet`].
    #[must_use]
    pub fn relay(mut self, relay: Arc<dyn crate::relay::Relay>) -> Self {
        self.relay = Some(relay);
        self
    }

    /// Advertises the `tools` capability even while no tool is registered.
    #[must_use]
    pub fn enable_tools(mut self) -> Self {
        self.registry.enabled.tools = true;
        self
    }

    /// Advertises the `resources` capability even while no resource is registered.
    #[must_use]
    pub fn enable_resources(mut self) -> Self {
        self.registry.enabled.resources = true;
        self
    }

    /// Advertises the `prompts` capability even while no prompt is registered.
    #[must_use]
    pub fn enable_prompts(mut self) -> Self {
        self.registry.enabled.prompts = true;
        self
    }

    /// Registers a tool served by an async function (see [`ToolFn`]): its parameters are
    /// extracted from the call (the arguments, [`State<S>`](crate::State), the
    /// [`RequestContext`](crate::RequestContext), ... in any order), its return value becomes the
    /// result. The input schema is generated from the arguments type, the output schema from a
    /// [`Json<T>`](crate::Json) return type; [`ToolDef`] sets the rest (a `&str` is a name).
    /// Schemas are checked and compiled now.
    ///
    /// ```
    /// use kelson_server::{Server, ToolDef};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// /// Adds two numbers.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Add {
    ///     a: f64,
    ///     b: f64,
    /// }
    ///
    /// async fn add(Add { a, b }: Add) -> String {
    ///     (a + b).to_string()
    /// }
    ///
    /// # fn main() -> Result<(), kelson_server::BuildError> {
    /// let server = Server::builder("calc", "1.0.0")
    ///     .tool(ToolDef::new("add").read_only(true), add)
    ///     .build()?;
    /// assert_eq!(server.tools()[0].description.as_deref(), Some("Adds two numbers."));
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn tool<F: ToolFn<M>, M: 'static>(self, tool: impl Into<ToolDef>, handler: F) -> Self {
        self.route(Route::tool(tool, handler))
    }

    /// Registers a tool with a hand-written definition and a [`ToolHandler`] (a closure taking
    /// the context and the raw arguments, or a type of your own). Its schemas are checked and
    /// compiled now.
    ///
    /// `tool` is a bare definition, or one with the scopes a caller needs to see and call it
    /// ([`WithScopes::with_scopes`](crate::WithScopes::with_scopes); see [`Scopes`](crate::Scopes)
    /// for who is checked). Every registration takes scopes the same way.
    #[must_use]
    pub fn tool_handler(mut self, tool: impl Into<ToolDef>, handler: impl ToolHandler) -> Self {
        let result = ToolEntry::from_def(tool.into(), Arc::new(handler))
            .and_then(|e| self.registry.add_tool(e));
        self.record(result)
    }

    /// Registers a fixed resource served by an async function (see [`ResourceFn`]); a `String`
    /// it returns is text of the resource's MIME type, a `Vec<u8>` a blob, `None` "not found".
    #[must_use]
    pub fn resource<F: ResourceFn<M>, M: 'static>(
        self,
        resource: impl Into<Scoped<Resource>>,
        handler: F,
    ) -> Self {
        self.route(Route::resource(resource, handler))
    }

    /// Registers a fixed resource served by a [`ResourceHandler`].
    #[must_use]
    pub fn resource_handler(
        mut self,
        resource: impl Into<Scoped<Resource>>,
        handler: impl ResourceHandler,
    ) -> Self {
        let result = self
            .registry
            .add_resource(ResourceEntry::new(resource.into(), Arc::new(handler)));
        self.record(result)
    }

    /// Registers a resource template served by an async function (see
    /// [`Route::resource_template`]); it serves every URI the template matches, and its arguments
    /// type holds the template's variables.
    #[must_use]
    pub fn resource_template<F: ResourceFn<M>, M: 'static>(
        self,
        template: impl Into<Scoped<ResourceTemplate>>,
        handler: F,
    ) -> Self {
        self.route(Route::resource_template(template, handler))
    }

    /// Registers a resource template served by a [`ResourceHandler`].
    #[must_use]
    pub fn template_handler(
        mut self,
        template: impl Into<Scoped<ResourceTemplate>>,
        handler: impl ResourceHandler,
    ) -> Self {
        let result = self
            .registry
            .add_template(template.into(), Arc::new(handler));
        self.record(result)
    }

    /// Registers a prompt served by an async function (see [`PromptFn`]); its arguments are
    /// declared by the function's arguments type. Completions for its arguments need the same
    /// scopes.
    #[must_use]
    pub fn prompt<F: PromptFn<M>, M: 'static>(
        self,
        prompt: impl Into<PromptDef>,
        handler: F,
    ) -> Self {
        self.route(Route::prompt(prompt, handler))
    }

    /// Registers a prompt served by a [`PromptHandler`] (its arguments as a string map).
    #[must_use]
    pub fn prompt_handler(
        mut self,
        prompt: impl Into<Scoped<Prompt>>,
        handler: impl PromptHandler,
    ) -> Self {
        let result = self
            .registry
            .add_prompt(PromptEntry::new(prompt.into(), Arc::new(handler)));
        self.record(result)
    }

    /// Registers a [`Route`].
    #[must_use]
    pub fn route(mut self, route: Route) -> Self {
        if !route.states.is_empty() {
            self.needs.push((route.item(), route.states.clone()));
        }
        let result = route.apply(&mut self.registry);
        self.record(result)
    }

    /// Registers every route of `routes`.
    #[must_use]
    pub fn routes(self, routes: impl IntoIterator<Item = Route>) -> Self {
        routes.into_iter().fold(self, Self::route)
    }

    /// Gives handlers a state of type `S`, which they take as [`State<S>`](crate::State). One
    /// state per type; a second replaces the first.
    #[must_use]
    pub fn state<S: Send + Sync + 'static>(self, state: S) -> Self {
        self.shared_state(Arc::new(state))
    }

    /// [`state`](Self::state) with a value already shared.
    #[must_use]
    pub fn shared_state<S: Send + Sync + 'static>(mut self, state: Arc<S>) -> Self {
        self.states.insert(state);
        self
    }

    /// Registers every handler of a [`Toolbox`] (an `impl` block marked `#[tools]`) with `toolbox`
    /// as the state its `&self` methods read.
    #[must_use]
    pub fn toolbox<T: Toolbox>(self, toolbox: T) -> Self {
        self.state(toolbox).routes(T::routes())
    }

    /// Serves `completion/complete` and advertises the `completions` capability.
    #[must_use]
    pub fn completion(mut self, handler: impl CompletionHandler) -> Self {
        self.registry.completion = Some(Arc::new(handler));
        self
    }

    /// Adds an observer that sees every request, client notification and listen stream on every
    /// transport (see [`observe`](crate::observe)); [`RequestLog`](crate::RequestLog) logs them.
    /// Observers are called in the order they were added.
    #[must_use]
    pub fn observer(mut self, observer: impl RequestObserver) -> Self {
        self.observers.push(Arc::new(observer));
        self
    }

    /// Counts requests into `metrics` (an observer) and makes them available to transports through
    /// [`Server::metrics`], so `kelson-http` can serve `GET /metrics`.
    #[must_use]
    pub fn metrics(mut self, metrics: Metrics) -> Self {
        // The registry itself is the observer: one indirection less on every request.
        self.observers.push(metrics.inner.clone());
        self.metrics = Some(metrics);
        self
    }

    /// Keeps tasks (the tasks extension) in `store` instead of this process's memory: a store
    /// shared by several instances lets any of them answer for a task another one runs.
    #[must_use]
    pub fn task_store(mut self, store: impl crate::tasks::TaskStore) -> Self {
        self.task_store = Some(Arc::new(store));
        self
    }

    /// Builds the server, or reports the first registration error.
    pub fn build(self) -> Result<Server, BuildError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        for (item, needs) in &self.needs {
            if let Some(need) = needs.iter().find(|need| !self.states.has(need)) {
                return Err(BuildError::MissingState {
                    item: item.clone(),
                    type_name: need.type_name,
                });
            }
        }
        let sealer = match &self.state_key {
            Some(key) => {
                let mut sealer = StateSealer::with_key(key, self.config.state_ttl)?;
                for previous in &self.previous_state_keys {
                    sealer = sealer.with_previous(previous)?;
                }
                sealer
            }
            None => StateSealer::random(self.config.state_ttl),
        };
        let (hub, _) = broadcast::channel(self.config.listen_buffer.max(1));
        let mut observers = self.observers;
        let observer: Option<Arc<dyn RequestObserver>> = match observers.len() {
            0 => None,
            1 => observers.pop(),
            _ => Some(Arc::new(Fanout(observers.into_boxed_slice()))),
        };
        Ok(Server {
            inner: Arc::new(Inner {
                meta_member: format!(
                    ",\"_meta\":{{\"{}\":{}}}",
                    kelson_types::meta_keys::SERVER_INFO,
                    serde_json::to_string(&self.info).expect("an Implementation serializes"),
                ),
                info: self.info,
                instructions: self.instructions,
                config: self.config,
                registry: ArcSwap::from_pointee(self.registry),
                write_lock: Mutex::new(()),
                hub,
                relay: self.relay,
                origin: crate::relay::new_origin(),
                sealer,
                shutdown: CancellationToken::new(),
                observer,
                metrics: self.metrics,
                outbound: crate::legacy::Outbound::default(),
                kept: Arc::default(),
                states: self.states,
                tasks: crate::tasks::TaskRuntime::new(
                    self.task_store
                        .unwrap_or_else(|| Arc::new(crate::tasks::MemoryTaskStore::default())),
                ),
            }),
        })
    }
}
