//! `kelson gateway`: many MCP servers behind one endpoint (the `kelson-gateway` crate), served
//! with everything `kelson serve` has at its front door (HTTPS, OAuth, Host/Origin checks,
//! limits, metrics, logs, several instances), since it is `kelson serve` with the upstreams of its
//! configuration file in place of databases and roots.
//!
//! `kelson gateway check` looks at each upstream and prints what the gateway would serve;
//! `kelson gateway pin` lists and accepts changed tool definitions.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::anyhow;
use clap::{Args, Subcommand};
use kelson_gateway::{GatewayConfig, PinStatus, Survey};

use crate::serve::{Failure, ServeArgs};

#[derive(Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "The configuration file (--config, required) names the upstreams, one \
[[upstream]] table each (name, and url or command), the [policy] and the [audit] log, beside the \
sections of kelson serve's file ([server], [http], [auth], [observability]). docs/gateway.md \
describes every key. Tools are exposed as PREFIX + the upstream's name for them (the prefix \
defaults to the upstream's name and _). Tool definitions are pinned on first sight in \
pins.json in the data folder; a changed one is not served until `kelson gateway pin --accept`."
)]
pub(crate) struct GatewayArgs {
    #[command(subcommand)]
    action: Option<Action>,

    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand, Debug)]
enum Action {
    /// Check the configuration and connect to each upstream, printing its era and the tools it
    /// would expose; nothing is served and no file is written.
    Check(Target),
    /// List the tools whose definitions changed upstream since they were pinned (or were never
    /// pinned), or accept what the upstreams serve now.
    Pin(PinArgs),
}

#[derive(Args, Debug)]
struct Target {
    /// The gateway's configuration file.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,

    /// The data folder, where pins.json is [default: as kelson serve's].
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct PinArgs {
    #[command(flatten)]
    target: Target,

    /// Show the pending changes as a diff (the default).
    #[arg(long, conflicts_with = "accept")]
    list: bool,

    /// Record what the upstreams serve now as the approved definitions: of the tools named, or of
    /// every exposed tool.
    #[arg(long)]
    accept: bool,

    /// With --accept: the tools to accept, by exposed name (db_query) or as upstream/tool.
    #[arg(value_name = "TOOL", requires = "accept")]
    tools: Vec<String>,
}

pub(crate) async fn run(args: GatewayArgs) -> Result<(), Failure> {
    match args.action {
        None => {
            let mut serve = args.serve;
            if serve.config_path().is_none() {
                return Err(Failure::Usage(anyhow!(
                    "--config: kelson gateway needs its configuration file, which names the upstreams"
                )));
            }
            serve.gateway = true;
            crate::serve::run(serve).await
        }
        Some(Action::Check(target)) => {
            let mut serve = ServeArgs::for_check(target.config, target.data_dir);
            serve.gateway = true;
            crate::serve::run(serve).await
        }
        Some(Action::Pin(pin)) => {
            crate::logging::init("warn", crate::logging::LogFormat::Text);
            let config = load(&pin.target)?;
            let surveys = kelson_gateway::survey(&config)
                .await
                .map_err(|e| Failure::Usage(anyhow!("{}: {e}", pin.target.config.display())))?;
            for s in &surveys {
                if let Err(e) = &s.found {
                    eprintln!("warning: upstream {}: cannot connect: {e}", s.name);
                }
            }
            if pin.accept {
                let accepted = kelson_gateway::accept(&config, &surveys, &pin.tools)
                    .map_err(|e| Failure::Usage(anyhow!("{e}")))?;
                if accepted.is_empty() {
                    println!("nothing to accept: every exposed tool is as pinned");
                } else {
                    println!(
                        "accepted {} definition(s) in {}: {}",
                        accepted.len(),
                        config.pins_path().display(),
                        accepted.join(", ")
                    );
                }
            } else {
                print!("{}", pending(&surveys));
            }
            if surveys.iter().any(|s| s.found.is_err()) {
                return Err(Failure::Unavailable(anyhow!(
                    "some upstreams could not be reached; their tools were not compared"
                )));
            }
            Ok(())
        }
    }
}

/// The gateway's part of the configuration, read as `kelson gateway` would.
fn load(target: &Target) -> Result<GatewayConfig, Failure> {
    let mut serve = ServeArgs::for_check(target.config.clone(), target.data_dir.clone());
    serve.gateway = true;
    crate::serve::gateway_config(&serve)
}

/// The changes `pin --list` shows.
fn pending(surveys: &[Survey]) -> String {
    let mut out = String::new();
    let pending = kelson_gateway::pin_status(surveys);
    if pending.is_empty() {
        let _ = writeln!(out, "no pending change: every exposed tool is as pinned");
        return out;
    }
    for (upstream, tool) in pending {
        match &tool.pin {
            PinStatus::New => {
                let _ = writeln!(
                    out,
                    "{} (upstream {upstream}): not pinned yet; pinned when the gateway first serves it",
                    tool.exposed
                );
            }
            PinStatus::Changed(lines) => {
                let _ = writeln!(
                    out,
                    "{} (upstream {upstream}): changed since it was pinned; refused until accepted",
                    tool.exposed
                );
                for line in lines {
                    let _ = writeln!(out, "  {line}");
                }
            }
            _ => {}
        }
    }
    out
}

/// What `kelson gateway check` prints about the upstreams, and how many could not be reached.
pub(crate) async fn report(config: &GatewayConfig) -> Result<(String, usize), String> {
    let surveys = kelson_gateway::survey(config)
        .await
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    let mut unreachable = 0;
    let _ = writeln!(out, "pins:      {}", config.pins_path().display());
    match config.audit_target() {
        Some(kelson_gateway::AuditTarget::File(p)) => {
            let _ = writeln!(out, "audit:     {}", p.display());
        }
        Some(kelson_gateway::AuditTarget::Stderr) => {
            let _ = writeln!(out, "audit:     stderr");
        }
        None => {
            let _ = writeln!(out, "audit:     off");
        }
    }
    for s in &surveys {
        match &s.found {
            Err(e) => {
                unreachable += 1;
                let _ = writeln!(
                    out,
                    "upstream {}: {}: cannot connect: {e}",
                    s.name, s.location
                );
            }
            Ok((version, tools)) => {
                let exposed: Vec<&str> = tools
                    .iter()
                    .filter(|t| t.hidden.is_none())
                    .map(|t| t.exposed.as_str())
                    .collect();
                let _ = writeln!(
                    out,
                    "upstream {}: {} ({version}), {} of {} tools exposed: {}",
                    s.name,
                    s.location,
                    exposed.len(),
                    tools.len(),
                    exposed.join(", ")
                );
                for t in tools {
                    if let Some(why) = t.hidden {
                        let _ = writeln!(out, "  {} hidden: {why}", t.exposed);
                    } else if let PinStatus::Changed(_) = t.pin {
                        let _ = writeln!(
                            out,
                            "  {} changed since it was pinned: refused until `kelson gateway pin --accept {}`",
                            t.exposed, t.exposed
                        );
                    }
                }
            }
        }
    }
    Ok((out, unreachable))
}
