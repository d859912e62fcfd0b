//! An MCP gateway: many MCP servers ("upstreams") of either protocol era behind one endpoint.
//!
//! The gateway is a [`kelson_server::Server`] whose tools are the upstreams' tools, each under a
//! prefix (`db_query` for the tool `query` of the upstream `db`), and whose handlers forward each
//! call to its upstream through [`kelson_client`]. Because the server answers both eras and the
//! client speaks both, a handshake-era host reaches a 2026-07-28 upstream and the reverse: the
//! revision is bridged at the gateway rather than mirrored through it.
//!
//! What the gateway adds to forwarding:
//! - **Policy** ([`PolicyConfig`]): `allow`/`deny` globs decide which tools exist at all (a denied
//!   tool is never registered, so it is neither listed nor callable by any name), `read_only`
//!   keeps the tools annotated read-only, `approve` makes a call wait for the person's approval
//!   (elicitation), and limits bound arguments, results and the calls per principal and tool.
//! - **Pinned definitions** ([`pins`]): the first definition seen of each tool is recorded, and a
//!   different one later is not served (the recorded one is listed, its calls are refused) until
//!   an operator accepts it.
//! - **An audit log** ([`audit`]): one JSON line per call.
//! - **Isolation**: the caller's token never goes upstream; each upstream has its own time limit
//!   and its own connection, restarted with backoff when it fails, so one upstream's trouble stays
//!   its own.
//!
//! ```no_run
//! # async fn demo(upstreams: Vec<kelson_gateway::UpstreamConfig>) -> Result<(), Box<dyn std::error::Error>> {
//! use kelson_gateway::{Gateway, GatewayConfig};
//! use kelson_server::Server;
//!
//! let gateway = Gateway::new(GatewayConfig::new(upstreams, "/var/lib/kelson".into()))?;
//! let server = gateway.prepare(Server::builder("gateway", "1.0.0")).build()?;
//! gateway.start(&server).await;
//! // Serve `server` over Streamable HTTP or stdio, as any kelson server.
//! # Ok(()) }
//! ```

pub mod audit;
mod catalog;
pub mod config;
mod forward;
mod glob;
pub mod pins;
mod policy;
mod survey;
mod upstream;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kelson_server::{Server, ServerBuilder};
use tokio_util::sync::CancellationToken;

pub use audit::{AuditLog, AuditTarget};
pub use config::{
    AuditConfig, ConfigError, EraSetting, Kind, PolicyConfig, RateLimit, Secret, UpstreamConfig,
};
pub use glob::Glob;
pub use pins::{PINS_FILE, PinFile, PinStore};
pub use policy::Policy;
pub use survey::{AcceptError, PinStatus, Survey, SurveyedTool, accept, pin_status, survey};
pub use upstream::{State, Upstream};

/// The name of the audit log in the data folder, unless configured.
pub const AUDIT_FILE: &str = "audit.jsonl";

/// How often an upstream's list is read again when it does not say it changed.
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(300);

/// Everything a gateway is made of.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// The upstreams, in order.
    pub upstreams: Vec<UpstreamConfig>,
    /// The policy.
    pub policy: PolicyConfig,
    /// The audit log.
    pub audit: AuditConfig,
    /// The folder the configuration's relative paths start from.
    pub base: PathBuf,
    /// The data folder: pins and, by default, the audit log.
    pub data_dir: PathBuf,
    /// How often each upstream's list is read again without a change notification.
    pub refresh: Duration,
}

impl GatewayConfig {
    /// A configuration of `upstreams` with the default policy, the audit log in `data_dir`, and
    /// relative paths from the current folder.
    pub fn new(upstreams: Vec<UpstreamConfig>, data_dir: PathBuf) -> GatewayConfig {
        GatewayConfig {
            upstreams,
            policy: PolicyConfig::default(),
            audit: AuditConfig::default(),
            base: PathBuf::from("."),
            data_dir,
            refresh: DEFAULT_REFRESH,
        }
    }

    /// Where the audit log goes, if anywhere.
    pub fn audit_target(&self) -> Option<AuditTarget> {
        if self.audit.off {
            return None;
        }
        Some(match &self.audit.path {
            Some(p) if p.as_os_str() == "-" => AuditTarget::Stderr,
            Some(p) => AuditTarget::File(self.base.join(p)),
            None => AuditTarget::File(self.data_dir.join(AUDIT_FILE)),
        })
    }

    /// The pin file.
    pub fn pins_path(&self) -> PathBuf {
        self.data_dir.join(PINS_FILE)
    }
}

/// Why a gateway could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The configuration is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The pin file cannot be read.
    #[error(transparent)]
    Pins(#[from] pins::PinError),
    /// The audit log cannot be opened.
    #[error("the audit log {path}: {source}")]
    Audit {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What the handlers and the supervisors share.
pub(crate) struct Shared {
    pub upstreams: Vec<Arc<Upstream>>,
    pub policy: Policy,
    pub pins: PinStore,
    pub audit: AuditLog,
    pub refresh: Duration,
    pub approvals: forward::Approvals,
    /// The tools registered, by exposed name.
    pub catalog: Mutex<BTreeMap<String, catalog::Exposed>>,
}

/// A gateway: its upstreams, policy, pins and audit log, serving through a [`Server`].
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("upstreams", &self.shared.upstreams)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Checks the configuration, opens the pin file and the audit log. Nothing is connected yet.
    pub fn new(config: GatewayConfig) -> Result<Gateway, GatewayError> {
        config::check_upstreams(&config.upstreams)?;
        let pins = PinStore::open(config.pins_path())?;
        let audit = match config.audit_target() {
            None => AuditLog::off(),
            Some(target) => {
                let path = match &target {
                    AuditTarget::File(p) => p.display().to_string(),
                    AuditTarget::Stderr => "stderr".to_owned(),
                };
                AuditLog::start(target, config.audit.arguments)
                    .map_err(|source| GatewayError::Audit { path, source })?
            }
        };
        let upstreams = config
            .upstreams
            .into_iter()
            .map(|u| Arc::new(Upstream::new(u, &config.base)))
            .collect();
        Ok(Gateway {
            shared: Arc::new(Shared {
                upstreams,
                policy: Policy::new(config.policy),
                pins,
                audit,
                refresh: config.refresh,
                approvals: forward::Approvals::default(),
                catalog: Mutex::new(BTreeMap::new()),
            }),
            stop: CancellationToken::new(),
        })
    }

    /// Declares what a gateway serves on the builder of its server: tools, before any upstream
    /// has answered.
    pub fn prepare(&self, builder: ServerBuilder) -> ServerBuilder {
        builder.enable_tools()
    }

    /// Starts a supervisor per upstream and waits until each has connected and registered its
    /// tools or failed its first attempt (it goes on retrying), so that the first callers see
    /// every reachable upstream's tools.
    pub async fn start(&self, server: &Server) {
        let mut firsts = Vec::new();
        for index in 0..self.shared.upstreams.len() {
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(catalog::supervise(
                self.shared.clone(),
                server.clone(),
                index,
                self.stop.clone(),
                tx,
            ));
            firsts.push(rx);
        }
        for first in firsts {
            let _ = first.await;
        }
        tokio::spawn(catalog::watch_pins(
            self.shared.clone(),
            server.clone(),
            self.stop.clone(),
        ));
    }

    /// Reads the pin file again and judges every connected upstream's tools by it now, as the
    /// gateway does by itself within seconds of the file changing.
    pub async fn refresh_pins(&self, server: &Server) {
        if let Err(e) = self.shared.pins.reload_if_changed() {
            tracing::error!("{e}");
        }
        catalog::refresh_all(&self.shared, server).await;
    }

    /// Each upstream and its connection's state.
    pub fn upstreams(&self) -> Vec<(String, State)> {
        self.shared
            .upstreams
            .iter()
            .map(|u| (u.name().to_owned(), u.state()))
            .collect()
    }

    /// The exposed tool names, with their upstream's name.
    pub fn tools(&self) -> Vec<(String, String)> {
        let catalog = self.shared.catalog.lock().expect("catalog lock");
        catalog
            .iter()
            .map(|(name, e)| {
                (
                    name.clone(),
                    self.shared.upstreams[e.upstream].name().to_owned(),
                )
            })
            .collect()
    }

    /// Stops the supervisors, which close their upstreams (ending the programs they started).
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

/// `n` random bytes in hex.
pub(crate) fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    pins::hex(&bytes)
}
