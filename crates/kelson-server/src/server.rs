//! The server handle, its builder and its configuration.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use kelson_types::{CacheScope, Implementation, Prompt, Resource, ResourceTemplate, Tool};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::BuildError;
use crate::defs::{PromptDef, ToolDef};
use crate::handler::extract::{StateMap, StateNeed};
use crate::handler::func::{PromptFn, ResourceFn, ToolFn};
use crate::handler::{CompletionHandler, PromptHandler, ResourceHandler, ToolHandler};
use crate::hub::HubEvent;
use crate::mrtr::StateSealer;
use crate::observe::{Fanout, Metrics, RequestObserver, RequestProbe, Transport};
use crate::registry::{PromptEntry, Registry, ResourceEntry, ToolEntry};
use crate::route::{Route, Toolbox};
use crate::scopes::Scoped;

/// Protocol revisions this server speaks, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &[kelson_types::LATEST_PROTOCOL_VERSION];

/// Tunables with defaults that suit most servers.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Items per page of `tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`.
    pub page_size: usize,
    /// `ttlMs` on `server/discover`.
    pub discover_ttl: Duration,
    /// `ttlMs` on list results.
    pub list_ttl: Duration,
    /// `ttlMs` on `resources/read` results.
    pub read_ttl: Duration,
    /// `cacheScope` on cacheable results: `private` whenever results depend on who asks.
    pub cache_scope: CacheScope,
    /// How long a sealed `requestState` stays valid.
    pub state_ttl: Duration,
    /// How many listen notifications may queue for a slow listener before it is told to re-list.
    pub listen_buffer: usize,
    /// Which protocol eras are served: both by default (handshake-era hosts start a session with
    /// `initialize`), or 2026-07-28 only.
    pub eras: crate::legacy::Eras,
    /// How long a handler (a tool, a resource read, a prompt, a completion) may run before it is
    /// stopped: its cancellation fires and its future is dropped. A tool call that runs past it
    /// gets a tool error saying so; other methods get -32603. `None` (the default): no limit.
    pub handler_timeout: Option<Duration>,
    /// The tasks extension: how long tasks are kept, how often clients poll, the limits.
    pub tasks: crate::tasks::TaskConfig,
    /// What handshake-era sessions may keep of what their clients sent.
    pub sessions: crate::legacy::SessionLimits,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            page_size: 100,
            discover_ttl: Duration::from_secs(3600),
            list_ttl: Duration::from_secs(60),
            read_ttl: Duration::from_secs(0),
            cache_scope: CacheScope::Public,
            state_ttl: Duration::from_secs(600),
            listen_buffer: 256,
            eras: crate::legacy::Eras::Both,
            handler_timeout: None,
            tasks: crate::tasks::TaskConfig::default(),
            sessions: crate::legacy::SessionLimits::default(),
        }
    }
}

pub(crate) struct Inner {
    pub(crate) info: Implementation,
    /// `,"_meta":{"io.modelcontextprotocol/serverInfo":INFO}`, encoded once, appended to results
    /// that carry no `_meta` of their own.
    pub(crate) meta_member: String,
    pub(crate) instructions: Option<String>,
    pub(crate) config: ServerConfig,
    pub(crate) registry: ArcSwap<Registry>,
    /// Serializes registry writers; readers never take it.
    write_lock: Mutex<()>,
    pub(crate) hub: broadcast::Sender<HubEvent>,
    /// Carries changes made here to the other instances ([`ServerBuilder::relay`]).
    relay: Option<Arc<dyn crate::relay::Relay>>,
    /// This instance's identity in relayed events.
    origin: Arc<str>,
    pub(crate) sealer: StateSealer,
    pub(crate) shutdown: CancellationToken,
    /// Every observer as one; `None` keeps probes empty.
    observer: Option<Arc<dyn RequestObserver>>,
    metrics: Option<Metrics>,
    /// Server-to-client requests of legacy sessions waiting for their answers.
    pub(crate) outbound: crate::legacy::Outbound,
    /// The bytes every handshake-era session keeps of what its client sent.
    pub(crate) kept: Arc<crate::legacy::Kept>,
    /// The application states handlers take as `State<S>`.
    pub(crate) states: StateMap,
    /// The tasks extension: the store and the tasks running here.
    pub(crate) tasks: crate::tasks::TaskRuntime,
}

impl Inner {
    /// Tells this instance's listeners of a change made here, and the other instances' through the
    /// relay, if there is one.
    pub(crate) fn emit(&self, event: HubEvent) {
        if let Some(relay) = &self.relay
            && !crate::relay::is_local()
            && let Some(encoded) = crate::relay::encode(&self.origin, &event)
        {
            relay.publish(encoded);
        }
        // No listeners is not an error.
        let _ = self.hub.send(event);
    }
}

/// A running MCP server: the shared registry plus everything a transport needs to serve requests.
///
/// Cloning is cheap and every clone is the same server. Transports (stdio here, Streamable HTTP in
/// `kelson-http`) feed it messages; handlers reach it through [`RequestContext::server`].
///
/// [`RequestContext::server`]: crate::RequestContext::server
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.inner.info.name)
            .field("version", &self.inner.info.version)
            .finish_non_exhaustive()
    }
}

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

    /// The server's identity, sent as `serverInfo` in every result's `_meta`.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The configuration the server was built with.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// The protocol versions this server accepts.
    pub fn supported_versions(&self) -> &'static [&'static str] {
        SUPPORTED_VERSIONS
    }

    /// The currently registered tools, in `tools/list` order.
    pub fn tools(&self) -> Vec<Tool> {
        self.inner
            .registry
            .load()
            .tools
            .values()
            .map(|t| t.def().clone())
            .collect()
    }

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
    /// [`ServerBuilder::tool_handler`]).
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

    /// The state of type `S` given to [`ServerBuilder::state`], if any: what [`State<S>`]
    /// extracts, for handlers written against the [`ToolHandler`] traits.
    ///
    /// [`State<S>`]: crate::State
    pub fn state<S: Send + Sync + 'static>(&self) -> Option<Arc<S>> {
        self.inner.states.get::<S>()
    }

    /// Removes a tool at run time; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.update(HubEvent::ToolsChanged, |r| {
            r.tools.remove(name).map(drop).ok_or(())
        })
        .is_ok()
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

    /// Tells listeners subscribed to `uri`, or to a resource containing it, that it changed.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.inner.emit(HubEvent::ResourceUpdated(Arc::from(uri)));
    }

    /// Tells listeners that anything under `uri` may have changed, when the source of changes
    /// lost track of which did (a file watcher whose events were dropped, say): a listener
    /// following the resource list gets `resources/list_changed`, and one subscribed to `uri`, to a
    /// resource under it or to one containing it gets `resources/updated` for each such
    /// subscription (for `uri` itself when the subscription contains it).
    pub fn notify_resources_changed_under(&self, uri: &str) {
        self.inner.emit(HubEvent::ResourcesUnder(Arc::from(uri)));
    }

    /// Where events relayed from the other instances enter this one: the relay given to
    /// [`ServerBuilder::relay`] feeds what it receives to [`RelayInlet::deliver`].
    ///
    /// [`RelayInlet::deliver`]: crate::relay::RelayInlet::deliver
    pub fn relay_inlet(&self) -> crate::relay::RelayInlet {
        crate::relay::RelayInlet::new(self.inner.hub.clone(), self.inner.origin.clone())
    }

    /// Ends every open `subscriptions/listen` stream with its graceful final result. Transports use
    /// this on shutdown; requests in flight are not affected.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// A token cancelled by [`shutdown`](Self::shutdown).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    /// A probe for one incoming message on `transport`, reporting to the server's observers; a
    /// disabled one (free) when there are none. See [`RequestProbe`] for how transports use it.
    #[inline]
    pub fn probe(&self, transport: Transport) -> RequestProbe {
        match &self.inner.observer {
            None => RequestProbe::disabled(),
            Some(observer) => RequestProbe::start(observer, transport),
        }
    }

    /// The metrics set with [`ServerBuilder::metrics`], for serving them.
    pub fn metrics(&self) -> Option<&Metrics> {
        self.inner.metrics.as_ref()
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
