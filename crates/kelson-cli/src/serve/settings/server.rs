//! The server's settings: the flags over `[server]` for its identity, the `requestState` keys,
//! the broker, the shared approval ledger and the shared task store.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{BrokerSetting, DEFAULT_BROKER_CHANNEL, KeyFile, check_positive};
use crate::flags::DurationOrOff;
use crate::serve::ServeArgs;
use crate::serve::file::{FileConfig, SecondsOrOff};

const DEFAULT_NAME: &str = "kelson";
/// How long an instance may go without a heartbeat before its tasks are failed, by default, and at
/// least (the heartbeat comes every two seconds).
const DEFAULT_TASK_RUNNER_TIMEOUT: Duration = Duration::from_secs(30);
const MIN_TASK_RUNNER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a SQL call runs before it becomes a task, by default.
const DEFAULT_TASK_AFTER: Duration = Duration::from_secs(5);

/// The server's identity, keys, broker, approval ledger and task store, resolved and checked.
#[derive(Debug)]
pub(crate) struct Server {
    pub name: String,
    pub state_key: Option<KeyFile>,
    /// Keys that sealed before `state_key`, still accepted to open what they sealed.
    pub previous_state_keys: Vec<KeyFile>,
    /// The broker's URL and channel, and the flag or key that gave the URL.
    pub broker: Option<BrokerSetting>,
    /// The shared approval ledger's URL, and the flag or key that gave it.
    pub approval_ledger: Option<(String, &'static str)>,
    /// The shared task store's URL, and the flag or key that gave it.
    pub task_store: Option<(String, &'static str)>,
    /// How long an instance of the shared task store may go without a heartbeat.
    pub task_runner_timeout: Duration,
    /// How long a SQL call may run before it becomes a task; `None`: never.
    pub task_after: Option<Duration>,
}

/// The flags over `[server]` (whose relative paths `in_file` resolves) over the defaults.
pub(super) fn resolve(
    args: &ServeArgs,
    file: &FileConfig,
    in_file: &dyn Fn(&Path) -> PathBuf,
) -> Result<Server, String> {
    // Identity and the state key.
    let name = file.server.name.clone().unwrap_or_else(|| {
        if args.gateway {
            "kelson-gateway".to_owned()
        } else {
            DEFAULT_NAME.to_owned()
        }
    });
    if name.trim().is_empty() {
        return Err("server.name: must not be empty".to_owned());
    }
    let state_key = match (&args.state_key_file, &file.server.state_key_file) {
        (Some(path), _) => Some(KeyFile {
            path: path.clone(),
            key: "--state-key-file",
        }),
        (None, Some(path)) => Some(KeyFile {
            path: in_file(path),
            key: "server.state_key_file",
        }),
        (None, None) => None,
    };
    let previous_state_keys: Vec<KeyFile> = if args.previous_state_key_file.is_empty() {
        file.server
            .previous_state_key_files
            .iter()
            .map(|path| KeyFile {
                path: in_file(path),
                key: "server.previous_state_key_files",
            })
            .collect()
    } else {
        args.previous_state_key_file
            .iter()
            .map(|path| KeyFile {
                path: path.clone(),
                key: "--previous-state-key-file",
            })
            .collect()
    };
    if state_key.is_none()
        && let Some(first) = previous_state_keys.first()
    {
        return Err(format!(
            "{}: only with a current key (--state-key-file or server.state_key_file)",
            first.key
        ));
    }
    let broker = match (&args.broker, &file.server.broker) {
        (Some(url), _) => Some((url.clone(), "--broker")),
        (None, Some(url)) => Some((url.clone(), "server.broker")),
        (None, None) => None,
    };
    let broker = match broker {
        Some((url, key)) => {
            let (channel, channel_key) = match (&args.broker_channel, &file.server.broker_channel) {
                (Some(c), _) => (c.clone(), "--broker-channel"),
                (None, Some(c)) => (c.clone(), "server.broker_channel"),
                (None, None) => (DEFAULT_BROKER_CHANNEL.to_owned(), "--broker-channel"),
            };
            // Checked now, so that a bad URL stops the start with the flag's name.
            if let Err(e) = kelson_broker::Broker::check(&url, &channel) {
                let which = match e {
                    kelson_broker::BrokerError::Channel(_) => channel_key,
                    _ => key,
                };
                return Err(format!("{which}: {e}"));
            }
            Some(BrokerSetting { url, channel, key })
        }
        None if file.server.broker_channel.is_some() => {
            return Err("server.broker_channel: only with a broker (server.broker)".to_owned());
        }
        None => None,
    };
    let approval_ledger = match (&args.approval_ledger, &file.server.approval_ledger) {
        (Some(url), _) => Some((url.clone(), "--approval-ledger")),
        (None, Some(url)) => Some((url.clone(), "server.approval_ledger")),
        (None, None) => None,
    };
    if let Some((url, key)) = &approval_ledger
        && !(url.starts_with("postgres://") || url.starts_with("postgresql://"))
    {
        return Err(format!("{key}: expected a postgres:// URL"));
    }

    let task_store = match (&args.task_store, &file.server.task_store) {
        (Some(url), _) => Some((url.clone(), "--task-store")),
        (None, Some(url)) => Some((url.clone(), "server.task_store")),
        (None, None) => None,
    };
    if let Some((url, key)) = &task_store
        && !(url.starts_with("postgres://") || url.starts_with("postgresql://"))
    {
        return Err(format!("{key}: expected a postgres:// URL"));
    }
    let task_runner_timeout = match (args.task_runner_timeout, &file.server.task_runner_timeout) {
        (Some(d), _) => Some((d, "--task-runner-timeout")),
        (None, Some(s)) => Some((s.0, "server.task_runner_timeout")),
        (None, None) => None,
    };
    let task_runner_timeout = match task_runner_timeout {
        Some((_, key)) if task_store.is_none() => {
            return Err(format!(
                "{key}: only with a shared task store (--task-store or server.task_store)"
            ));
        }
        Some((d, key)) if d < MIN_TASK_RUNNER_TIMEOUT => {
            return Err(format!(
                "{key}: must be at least {}s, several heartbeats (one every 2s)",
                MIN_TASK_RUNNER_TIMEOUT.as_secs()
            ));
        }
        Some((d, _)) => d,
        None => DEFAULT_TASK_RUNNER_TIMEOUT,
    };
    let task_after = match (args.task_after, &file.server.task_after) {
        (Some(DurationOrOff(Some(d))), _) => Some(check_positive(d, "--task-after")?),
        (Some(DurationOrOff(None)), _) => None,
        (None, Some(SecondsOrOff(Some(d)))) => Some(check_positive(*d, "server.task_after")?),
        (None, Some(SecondsOrOff(None))) => None,
        (None, None) => Some(DEFAULT_TASK_AFTER),
    };
    Ok(Server {
        name,
        state_key,
        previous_state_keys,
        broker,
        approval_ledger,
        task_store,
        task_runner_timeout,
        task_after,
    })
}
