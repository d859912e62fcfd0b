//! The stdio load: one server process, a fixed number of requests in flight on its stdin. With
//! `--era auto` the process is probed first; a legacy one gets the handshake once, on the same
//! process, before the load.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::Clock;
use super::era::{self, Failure, Found};
use super::stats::{Stats, check_response};
use super::tools::{self, Listed, Unlisted};
use super::workload::{self, Workload};

/// How long one answer may take before the run is declared stuck.
const STALL: Duration = Duration::from_secs(30);

/// How long the era probe waits: a server silent that long is taken for a legacy one (spec
/// 2026-07-28 basic/transports/stdio).
const PROBE_WAIT: Duration = Duration::from_secs(10);

/// The server process and its pipes.
pub(crate) struct Server {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl Server {
    /// Starts `command`; its stderr is shown or discarded.
    pub(crate) fn start(command: &str, show_stderr: bool) -> anyhow::Result<Server> {
        // The rule of the client verbs' --stdio: shell words, no shell.
        let words = crate::client::words::split(command).map_err(|e| anyhow!("--stdio: {e}"))?;
        let mut child = Command::new(&words[0])
            .args(&words[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if show_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => anyhow!("command not found: {}", words[0]),
                _ => anyhow!(e).context(format!("starting {command:?}")),
            })?;
        let stdin = BufWriter::new(child.stdin.take().context("no stdin")?);
        let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        Ok(Server {
            child,
            stdin,
            stdout,
            line: Vec::with_capacity(4096),
        })
    }

    async fn send(&mut self, message: &[u8]) -> std::io::Result<()> {
        self.stdin.write_all(message).await?;
        self.stdin.write_all(b"\n").await?;
        self.stdin.flush().await
    }

    /// Reads the next line into `self.line`; `Ok(false)` at the end of the server's output.
    async fn read_line(&mut self) -> std::io::Result<bool> {
        self.line.clear();
        Ok(self.stdout.read_until(b'\n', &mut self.line).await? > 0)
    }

    /// Asks the server's era once with a modern `server/discover`. Lines that do not answer it
    /// (notifications, text) are passed over; silence until the wait is over means legacy.
    pub(crate) async fn probe(&mut self) -> anyhow::Result<Found> {
        let body = workload::discover()?.body(era::PROBE_ID);
        self.send(&body).await.context("writing to the server")?;
        let deadline = tokio::time::Instant::now() + PROBE_WAIT;
        loop {
            match tokio::time::timeout_at(deadline, self.read_line()).await {
                Err(_) => return Ok(Found::Legacy),
                Ok(read) => {
                    if !read.context("reading from the server")? {
                        anyhow::bail!(
                            "the server closed its stdout before answering server/discover"
                        );
                    }
                    if let Some(found) = era::classify_stdio(trim(&self.line)) {
                        return Ok(found);
                    }
                }
            }
        }
    }

    /// The legacy handshake: `initialize`, its answer, then `notifications/initialized`.
    pub(crate) async fn handshake(&mut self) -> Result<String, Failure> {
        let transport = |e: &dyn std::fmt::Display| Failure::Transport(format!("initialize: {e}"));
        let body = workload::initialize()
            .map_err(|e| transport(&e))?
            .body(era::INITIALIZE_ID);
        self.send(&body).await.map_err(|e| transport(&e))?;
        let version = loop {
            let read = tokio::time::timeout(STALL, self.read_line())
                .await
                .map_err(|_| transport(&"no answer within 30 s"))?
                .map_err(|e| transport(&e))?;
            if !read {
                return Err(transport(&"the server closed its stdout"));
            }
            let line = trim(&self.line);
            if response_id(line) == Some(era::INITIALIZE_ID) {
                break era::initialized(line)?;
            }
        };
        self.send(workload::INITIALIZED)
            .await
            .map_err(|e| transport(&e))?;
        Ok(version)
    }

    /// The tools the server lists (every page, up to [`tools::MAX_PAGES`]), before the load.
    pub(crate) async fn tools(&mut self, legacy: bool) -> Result<Listed, Unlisted> {
        let other = |e: &dyn std::fmt::Display| Unlisted::Other(format!("tools/list: {e}"));
        let mut listed = Listed::default();
        let mut cursor: Option<String> = None;
        for page in 0..tools::MAX_PAGES {
            let body = tools::request(page, cursor.as_deref(), legacy);
            self.send(&body).await.map_err(|e| other(&e))?;
            let id = tools::page_id(page);
            loop {
                let read = tokio::time::timeout(STALL, self.read_line())
                    .await
                    .map_err(|_| other(&"no answer within 30 s"))?
                    .map_err(|e| other(&e))?;
                if !read {
                    return Err(other(&"the server closed its stdout"));
                }
                if response_id(trim(&self.line)) == Some(id) {
                    break;
                }
            }
            match listed.add(trim(&self.line))? {
                Some(next) => cursor = Some(next),
                None => {
                    listed.complete = true;
                    break;
                }
            }
        }
        Ok(listed)
    }

    /// Keeps `in_flight` requests going until the clock says stop.
    pub(crate) async fn load(
        mut self,
        in_flight: usize,
        workload: Arc<Workload>,
        clock: Arc<Clock>,
        legacy: bool,
    ) -> anyhow::Result<Stats> {
        let mut stats = Stats::new();
        let mut pending: HashMap<u64, (Instant, bool)> = HashMap::with_capacity(in_flight * 2);
        loop {
            while pending.len() < in_flight.max(1) {
                let Some(ticket) = clock.next() else { break };
                let id = ticket.n + 1;
                let start = Instant::now();
                self.stdin
                    .write_all(&workload.pick(ticket.n).body(id))
                    .await?;
                self.stdin.write_all(b"\n").await?;
                pending.insert(id, (start, ticket.measured));
            }
            self.stdin.flush().await?;
            if pending.is_empty() {
                break;
            }
            let read = tokio::time::timeout(STALL, self.read_line())
                .await
                .context("the server stopped answering")??;
            if !read {
                anyhow::bail!(
                    "the server closed its stdout with {} requests unanswered",
                    pending.len()
                );
            }
            let line = trim(&self.line);
            let Some(id) = response_id(line) else {
                // A notification (progress or a log message), or a request of the server.
                continue;
            };
            let Some((start, measured)) = pending.remove(&id) else {
                continue;
            };
            if measured {
                stats.record(start.elapsed(), check_response(line, id, legacy), line);
            }
            clock.done(measured);
        }
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        Ok(stats)
    }
}

fn trim(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

/// The id of a response; `None` for anything else, including a request of the server, which
/// has an id too.
fn response_id(line: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Probe {
        id: Option<u64>,
        method: Option<serde::de::IgnoredAny>,
    }
    let probe = serde_json::from_slice::<Probe>(line).ok()?;
    if probe.method.is_some() {
        return None;
    }
    probe.id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_responses_have_a_response_id() {
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Some(3)
        );
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","id":3,"method":"roots/list"}"#),
            None
        );
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#),
            None
        );
        assert_eq!(response_id(b"text"), None);
    }
}
