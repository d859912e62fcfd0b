//! One upstream server: how it is reached, and its connection's state.
//!
//! A `command` upstream is started by the gateway itself rather than by the client library, so
//! that its environment is clean (only what any program needs to run, and its configured `env`:
//! never the gateway's own secrets), its stderr goes to the gateway's log under its name, and the
//! gateway sees it exit. A `url` upstream is a Streamable HTTP client with the configured headers
//! (its credentials); the caller's own credentials are never among them. Either is spoken to in
//! the era it answers (or the one configured), through `kelson-client`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kelson_client::{Client, EraChoice, HeaderName, HeaderValue};
use kelson_http::client::HttpClient;
use kelson_types::Implementation;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

use crate::config::{EraSetting, UpstreamConfig};

/// The variables of the gateway's environment a `command` upstream gets, because programs need
/// them to run at all (to find other programs, their home, their locale, a temporary folder).
const PASSED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "SYSTEMROOT",
];

/// The default wait for an upstream's answer, restarted by each progress notification.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// What the gateway knows of an upstream's connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Not connected yet.
    Connecting,
    /// Connected, speaking this protocol version.
    Ready {
        /// The protocol version in use.
        version: String,
    },
    /// The last attempt failed; another follows.
    Down {
        /// Why.
        reason: String,
    },
}

/// A connected upstream: the client, and the process behind it for a `command` upstream.
pub(crate) struct Connection {
    pub client: Arc<Client>,
    pub child: Option<Child>,
}

/// One upstream.
pub struct Upstream {
    pub(crate) config: UpstreamConfig,
    /// The folder the configuration's relative paths start from.
    base: PathBuf,
    client: Mutex<Option<Arc<Client>>>,
    state: Mutex<State>,
    /// Raised by a call that saw the connection fail, so that the supervisor reconnects.
    pub(crate) broken: tokio::sync::Notify,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.config.name)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl Upstream {
    pub(crate) fn new(config: UpstreamConfig, base: &Path) -> Upstream {
        Upstream {
            config,
            base: base.to_path_buf(),
            client: Mutex::new(None),
            state: Mutex::new(State::Connecting),
            broken: tokio::sync::Notify::new(),
        }
    }

    /// The upstream's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Its connection's state.
    pub fn state(&self) -> State {
        self.state.lock().expect("state lock").clone()
    }

    pub(crate) fn set_state(&self, state: State) {
        *self.state.lock().expect("state lock") = state;
    }

    /// The client, while connected.
    pub(crate) fn client(&self) -> Option<Arc<Client>> {
        self.client.lock().expect("client lock").clone()
    }

    pub(crate) fn set_client(&self, client: Option<Arc<Client>>) {
        *self.client.lock().expect("client lock") = client;
    }

    /// The per-call wait.
    pub(crate) fn timeout(&self) -> Duration {
        self.config.timeout.unwrap_or(DEFAULT_TIMEOUT)
    }

    /// Connects: starts the program or reaches the URL, and detects (or forces) the era.
    pub(crate) async fn connect(&self) -> Result<Connection, String> {
        let mut builder = Client::builder()
            .client_info(Implementation::new(
                "kelson-gateway",
                env!("CARGO_PKG_VERSION"),
            ))
            .timeout(self.timeout())
            .era(match self.config.era {
                EraSetting::Auto => EraChoice::Auto,
                EraSetting::Legacy => EraChoice::Legacy,
                EraSetting::Modern => EraChoice::Modern,
            });
        if let Some(url) = &self.config.url {
            for (name, value) in &self.config.headers {
                let value = value
                    .resolve(&self.base)
                    .map_err(|e| format!("headers.{name}: {e}"))?;
                let name = HeaderName::try_from(name.as_str())
                    .map_err(|e| format!("headers.{name}: {e}"))?;
                let mut value = HeaderValue::try_from(value)
                    .map_err(|_| format!("headers.{name}: not a valid header value"))?;
                // Credentials: kept out of debug output.
                value.set_sensitive(true);
                builder = builder.header(name, value);
            }
            let client = match &self.config.ca_cert {
                Some(ca) => {
                    let http = HttpClient::with_ca_file(url, &self.base.join(ca))
                        .map_err(|e| format!("ca_cert: {e}"))?;
                    builder.connect_http_client(http).await
                }
                None => builder.connect_http(url).await,
            }
            .map_err(|e| format!("{e}"))?;
            return Ok(Connection {
                client: Arc::new(client),
                child: None,
            });
        }
        let Some(command) = &self.config.command else {
            return Err("no url and no command".into());
        };
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..]);
        cmd.env_clear();
        for name in PASSED_ENV {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        for (name, value) in &self.config.env {
            let value = value
                .resolve(&self.base)
                .map_err(|e| format!("env.{name}: {e}"))?;
            cmd.env(name, value);
        }
        if let Some(cwd) = &self.config.cwd {
            cmd.current_dir(self.base.join(cwd));
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("starting {}: {e}", command[0]))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take().expect("piped stdin");
        if let Some(stderr) = child.stderr.take() {
            let name = self.config.name.clone();
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::info!(target: "kelson::upstream", upstream = %name, "{line}");
                }
            });
        }
        match builder.connect_stream(stdout, stdin).await {
            Ok(client) => Ok(Connection {
                client: Arc::new(client),
                child: Some(child),
            }),
            Err(e) => {
                // Whatever the program said before failing is in the log already; say how it
                // ended if it did.
                let status = match child.try_wait() {
                    Ok(Some(status)) => format!(" ({status})"),
                    _ => String::new(),
                };
                let _ = child.start_kill();
                Err(format!("{e}{status}"))
            }
        }
    }
}
