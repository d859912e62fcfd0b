//! The stdio load: one server process, a fixed number of requests in flight on its stdin.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::Command;

use super::Clock;
use super::stats::{Stats, check_response};
use super::workload::Workload;

/// How long one answer may take before the run is declared stuck.
const STALL: Duration = Duration::from_secs(30);

pub(crate) async fn run(
    command: &str,
    in_flight: usize,
    workload: Arc<Workload>,
    clock: Arc<Clock>,
    show_stderr: bool,
) -> anyhow::Result<Stats> {
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
    let mut stdin = BufWriter::new(child.stdin.take().context("no stdin")?);
    let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);

    let mut stats = Stats::new();
    let mut pending: HashMap<u64, (Instant, bool)> = HashMap::with_capacity(in_flight * 2);
    let mut line = Vec::with_capacity(4096);
    loop {
        while pending.len() < in_flight.max(1) {
            let Some(ticket) = clock.next() else { break };
            let id = ticket.n + 1;
            let start = Instant::now();
            stdin.write_all(&workload.pick(ticket.n).body(id)).await?;
            stdin.write_all(b"\n").await?;
            pending.insert(id, (start, ticket.measured));
        }
        stdin.flush().await?;
        if pending.is_empty() {
            break;
        }
        line.clear();
        let read = tokio::time::timeout(STALL, stdout.read_until(b'\n', &mut line))
            .await
            .context("the server stopped answering")??;
        if read == 0 {
            anyhow::bail!(
                "the server closed its stdout with {} requests unanswered",
                pending.len()
            );
        }
        let Some(id) = response_id(&line) else {
            // A notification: progress or log for some request.
            continue;
        };
        let Some((start, measured)) = pending.remove(&id) else {
            continue;
        };
        if measured {
            let answer = trim(&line);
            stats.record(start.elapsed(), check_response(answer, id), answer);
        }
        clock.done(measured);
    }
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    Ok(stats)
}

fn trim(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

fn response_id(line: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Probe {
        id: Option<u64>,
    }
    serde_json::from_slice::<Probe>(trim(line)).ok()?.id
}
