//! The server handle and its configuration; its builder (builder.rs) and run-time changes to its
//! registry (changes.rs) are beside it.

mod builder;
mod changes;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use kelson_types::{CacheScope, Implementation, Tool};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use builder::ServerBuilder;

use crate::handler::shape::StateMap;
use crate::hub::HubEvent;
use crate::mrtr::StateSealer;
use crate::observe::{Metrics, RequestObserver, RequestProbe, Transport};
use crate::registry::Registry;

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

    /// The state of type `S` given to [`ServerBuilder::state`], if any: what [`State<S>`]
    /// extracts, for handlers written against the [`ToolHandler`](crate::ToolHandler) traits.
    ///
    /// [`State<S>`]: crate::State
    pub fn state<S: Send + Sync + 'static>(&self) -> Option<Arc<S>> {
        self.inner.states.get::<S>()
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
}
