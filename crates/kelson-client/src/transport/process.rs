//! The server as a child process: spawning it, its stderr, and shutting it down.
//!
//! spec 2026-07-28 basic/transports (stdio): the client MUST NOT treat stderr output as an error; on
//! shutdown it closes the server's stdin, waits, sends SIGTERM, waits, then SIGKILL.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::Error;

/// The most captured stderr kept, from the end: older output is dropped first.
const MAX_CAPTURE: usize = 1024 * 1024;

/// How many of the last stderr lines an error about a failed start carries.
pub(crate) const STDERR_TAIL: usize = 20;

/// Where the child's stderr goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stderr {
    /// Passed through to this process's stderr (the default).
    #[default]
    Inherit,
    /// Captured into a buffer (the last 1 MiB), read with `Client::stderr`.
    Capture,
    /// Discarded.
    Null,
}

/// A running server process.
pub(crate) struct ChildProcess {
    child: Child,
    /// The command line, for messages.
    command: String,
    captured: Option<Arc<Mutex<Vec<u8>>>>,
    /// The task that reads the captured stderr; it ends when the pipe closes.
    capturing: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for ChildProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildProcess")
            .field("pid", &self.child.id())
            .finish_non_exhaustive()
    }
}

impl ChildProcess {
    /// Starts `command` with piped stdin and stdout.
    pub(crate) fn spawn(
        mut command: Command,
        stderr: Stderr,
    ) -> Result<(ChildProcess, ChildStdout, ChildStdin), Error> {
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let line = command_line(command.as_std());
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match stderr {
                Stderr::Inherit => Stdio::inherit(),
                Stderr::Capture => Stdio::piped(),
                Stderr::Null => Stdio::null(),
            })
            // A client dropped without `close` must not leave the server running.
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|source| Error::Spawn { program, source })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut capturing = None;
        let captured = child.stderr.take().map(|mut pipe| {
            let buffer = Arc::new(Mutex::new(Vec::new()));
            let sink = buffer.clone();
            capturing = Some(tokio::spawn(async move {
                let mut chunk = vec![0u8; 8192];
                while let Ok(n) = pipe.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    let mut buf = sink.lock().expect("stderr lock");
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.len() > MAX_CAPTURE {
                        let excess = buf.len() - MAX_CAPTURE;
                        buf.drain(..excess);
                    }
                }
            }));
            buffer
        });
        let process = ChildProcess {
            child,
            command: line,
            captured,
            capturing,
        };
        Ok((process, stdout, stdin))
    }

    /// The command line, for messages.
    pub(crate) fn command(&self) -> &str {
        &self.command
    }

    /// The exit status if the child exits within `within`.
    pub(crate) async fn exited_within(&mut self, within: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(within, self.child.wait())
            .await
            .ok()?
            .ok()
    }

    /// The last [`STDERR_TAIL`] lines of the captured stderr (complete after
    /// [`shutdown`](Self::shutdown)); `None` when stderr is not captured or was empty.
    pub(crate) fn stderr_tail(&self) -> Option<String> {
        tail(&self.stderr()?, STDERR_TAIL)
    }

    /// What the child wrote to stderr so far, when it is captured.
    pub(crate) fn stderr(&self) -> Option<String> {
        self.captured
            .as_ref()
            .map(|b| String::from_utf8_lossy(&b.lock().expect("stderr lock")).into_owned())
    }

    /// Waits for the child after its stdin was closed; SIGTERM after `grace`, SIGKILL after
    /// another `grace`.
    pub(crate) async fn shutdown(&mut self, grace: Duration) -> std::io::Result<ExitStatus> {
        let status = self.stop(grace).await;
        // What it wrote last is in the buffer once the pipe closed (a grandchild may hold it
        // open, hence the bound).
        if let Some(task) = self.capturing.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), task).await;
        }
        status
    }

    async fn stop(&mut self, grace: Duration) -> std::io::Result<ExitStatus> {
        if let Ok(status) = tokio::time::timeout(grace, self.child.wait()).await {
            return status;
        }
        #[cfg(unix)]
        if let Some(pid) = self
            .child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            tracing::debug!(?pid, "the server did not exit on EOF; sending SIGTERM");
            // The child may have exited in between; then there is nothing to signal.
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            if let Ok(status) = tokio::time::timeout(grace, self.child.wait()).await {
                return status;
            }
        }
        tracing::debug!("the server did not exit; killing it");
        self.child.start_kill()?;
        self.child.wait().await
    }
}

/// The last `n` lines of `text` that are not blank, or `None` if there are none.
pub(crate) fn tail(text: &str, n: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(n)..].join("\n");
    (!tail.is_empty()).then_some(tail)
}

/// The program and its arguments as one line, each word quoted when it needs to be, so that the
/// line reads as the command that ran.
fn command_line(command: &std::process::Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|word| {
            let word = word.to_string_lossy();
            let plain = !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@+%".contains(&b));
            if plain {
                word.into_owned()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_quote_what_needs_it() {
        let mut command = std::process::Command::new("kelson");
        command.args(["serve", "--http", "127.0.0.1:0", "a b", "it's", ""]);
        assert_eq!(
            command_line(&command),
            r"kelson serve --http 127.0.0.1:0 'a b' 'it'\''s' ''"
        );
    }
}
