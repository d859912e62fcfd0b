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
    captured: Option<Arc<Mutex<Vec<u8>>>>,
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
        let captured = child.stderr.take().map(|mut pipe| {
            let buffer = Arc::new(Mutex::new(Vec::new()));
            let sink = buffer.clone();
            tokio::spawn(async move {
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
            });
            buffer
        });
        Ok((ChildProcess { child, captured }, stdout, stdin))
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
