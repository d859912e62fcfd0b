//! Looking at the upstreams without serving: what `kelson gateway check` prints and what
//! `kelson gateway pin` compares with the pins and accepts.

use kelson_types::Tool;

use crate::GatewayConfig;
use crate::config::{ConfigError, check_upstreams};
use crate::pins::{self, Pin, PinError, PinFile, Verdict};
use crate::policy::{Hidden, Policy};
use crate::upstream::Upstream;

/// One upstream as found.
#[derive(Debug)]
pub struct Survey {
    /// The upstream's name.
    pub name: String,
    /// Its URL or command line.
    pub location: String,
    /// The protocol version it speaks and its tools, or why it could not be reached.
    pub found: Result<(String, Vec<SurveyedTool>), String>,
}

/// One upstream tool as found.
#[derive(Debug)]
pub struct SurveyedTool {
    /// The definition the upstream serves now.
    pub tool: Tool,
    /// The name the gateway exposes it under.
    pub exposed: String,
    /// Why the policy hides it, if it does.
    pub hidden: Option<&'static str>,
    /// How it compares with its pin (exposed tools only are pinned).
    pub pin: PinStatus,
}

/// How a tool compares with its pin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PinStatus {
    /// Not pinned yet: recorded on first sight.
    New,
    /// As pinned.
    Same,
    /// Different from the pin: the changed fields, `-` pinned and `+` now.
    Changed(Vec<String>),
    /// Not exposed, so not pinned.
    NotExposed,
}

/// Connects to every upstream at once, lists its tools and closes it, and compares each tool with
/// the policy and the pins (without writing them).
pub async fn survey(config: &GatewayConfig) -> Result<Vec<Survey>, ConfigError> {
    check_upstreams(&config.upstreams)?;
    let policy = Policy::new(config.policy.clone());
    let pins = PinFile::load(&config.pins_path()).unwrap_or_default();
    let looks = config.upstreams.iter().map(|u| {
        let upstream = Upstream::new(u.clone(), &config.base);
        async move {
            let found = match upstream.connect().await {
                Err(e) => Err(e),
                Ok(connection) => {
                    let version = connection.client.era().version().to_owned();
                    let listed = connection.client.list_all_tools().fresh().await;
                    let _ = connection.client.close().await;
                    drop(connection);
                    listed.map(|t| (version, t)).map_err(|e| e.to_string())
                }
            };
            (upstream, found)
        }
    });
    let found = futures_util::future::join_all(looks).await;
    Ok(found
        .into_iter()
        .map(|(upstream, found)| {
            let prefix = upstream.config.prefix();
            let name = upstream.name().to_owned();
            Survey {
                location: upstream.config.location(),
                found: found.map(|(version, tools)| {
                    let tools = tools
                        .into_iter()
                        .map(|tool| {
                            let exposed = format!("{prefix}{}", tool.name);
                            let hidden = policy.exposes(&exposed, &tool).err().map(|h| match h {
                                Hidden::Denied => "denied by policy.deny",
                                Hidden::NotAllowed => "not in policy.allow",
                                Hidden::NotReadOnly => "not annotated read-only (policy.read_only)",
                            });
                            let pin = match (hidden, pins.verdict(&name, &tool)) {
                                (Some(_), _) => PinStatus::NotExposed,
                                (None, Verdict::New) => PinStatus::New,
                                (None, Verdict::Same) => PinStatus::Same,
                                (None, Verdict::Changed(pin)) => PinStatus::Changed(pins::diff(
                                    &pin.definition,
                                    &pins::canonical(&tool),
                                )),
                            };
                            SurveyedTool {
                                tool,
                                exposed,
                                hidden,
                                pin,
                            }
                        })
                        .collect();
                    (version, tools)
                }),
                name,
            }
        })
        .collect())
}

/// The exposed tools whose pins differ from what their upstream serves (or that were never
/// pinned), as `(upstream, exposed name, status)`.
pub fn pin_status(surveys: &[Survey]) -> Vec<(&str, &SurveyedTool)> {
    found_tools(surveys)
        .filter(|(_, t)| matches!(t.pin, PinStatus::New | PinStatus::Changed(_)))
        .collect()
}

/// Every tool of the upstreams that were reached, with its upstream's name.
fn found_tools(surveys: &[Survey]) -> impl Iterator<Item = (&str, &SurveyedTool)> {
    surveys
        .iter()
        .filter_map(|s| s.found.as_ref().ok().map(|(_, tools)| (s, tools)))
        .flat_map(|(s, tools)| tools.iter().map(move |t| (s.name.as_str(), t)))
}

/// Records what the upstreams serve now as the pins of the tools named in `only` (exposed names,
/// or `upstream/tool`), or of every exposed tool when `only` is empty. Returns the exposed names
/// whose pins were written; a name in `only` that matches no exposed tool is an error, so that a
/// typo does not pass for an acceptance.
pub fn accept(
    config: &GatewayConfig,
    surveys: &[Survey],
    only: &[String],
) -> Result<Vec<String>, AcceptError> {
    let path = config.pins_path();
    let mut file = PinFile::load(&path)?;
    let mut matched = vec![false; only.len()];
    let mut accepted = Vec::new();
    for (upstream, tool) in found_tools(surveys) {
        if tool.hidden.is_some() {
            continue;
        }
        let key = pins::key(upstream, &tool.tool.name);
        let wanted = only.is_empty()
            || only.iter().enumerate().any(|(i, n)| {
                let hit = *n == tool.exposed || *n == key;
                if hit {
                    matched[i] = true;
                }
                hit
            });
        if wanted && tool.pin != PinStatus::Same {
            file.tools.insert(key, Pin::of(&tool.tool));
            accepted.push(tool.exposed.clone());
        }
    }
    if let Some(i) = matched.iter().position(|m| !m) {
        return Err(AcceptError::Unknown(only[i].clone()));
    }
    if !accepted.is_empty() {
        file.save(&path)?;
    }
    Ok(accepted)
}

/// Why an acceptance failed.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// A named tool is not exposed by any reachable upstream.
    #[error("no exposed tool is named {0:?} (give the exposed name, or upstream/tool)")]
    Unknown(String),
    /// The pin file.
    #[error(transparent)]
    Pins(#[from] PinError),
}
