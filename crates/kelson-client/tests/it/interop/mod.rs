//! Our client against servers written with the official SDKs, as real child processes.
//!
//! - `modern`: the interop profile written with the TypeScript SDK v2 (`peers/interop/ts-server.mjs`)
//!   and the Python SDK 2.x (`peers/interop/py_server.py`), over stdio and Streamable HTTP, in the
//!   2026-07-28 stateless mode.
//! - `legacy`: `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem`,
//!   real servers on the TypeScript SDK v1 that speak only the handshake era.
//!
//! The peers are installed by `scripts/peers-install` (pinned npm and PyPI packages) into the
//! git-ignored `peers/node_modules` and `peers/.venv`; without them these tests return at once and
//! say so in one line (they fail under `KELSON_REQUIRE_ALL`, as `scripts/test` runs them).

mod legacy;
mod modern;

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};
use tokio::process::{Child, Command};

/// The installed peers.
pub struct Peers(kelson_testenv::Peers);

impl Peers {
    /// The peers these tests run, when installed; `None` (said in one line) when one is missing.
    pub fn get() -> Option<Peers> {
        kelson_testenv::Peers::get(&[
            "node_modules/.bin/node",
            "node_modules/@modelcontextprotocol/server/package.json",
            "node_modules/@modelcontextprotocol/node/package.json",
            "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
            ".venv/bin/python",
        ])
        .map(Peers)
    }

    /// The peers, for a helper of a test that began by checking [`get`](Self::get).
    pub fn installed() -> Peers {
        Peers::get().expect("the test checked that the peers are installed")
    }

    /// `node SCRIPT` with the pinned Node 22; `script` is relative to `peers/`.
    pub fn node(&self, script: &str) -> Command {
        let mut command = Command::from(self.0.node(script));
        command.kill_on_drop(true);
        command
    }

    /// `python SCRIPT` in the peers' virtual environment; `script` is relative to `peers/`.
    pub fn python(&self, script: &str) -> Command {
        let mut command = Command::from(self.0.python(script));
        command.kill_on_drop(true);
        command
    }
}

/// A peer serving HTTP: killed when dropped.
pub struct HttpPeer {
    _child: Child,
    pub url: String,
}

/// How long a peer may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts `command` and waits for the line on stdout (or stderr) from which `ready` reads the URL;
/// the rest of that output is drained so that the peer never blocks on a full pipe.
pub async fn http_peer(
    mut command: Command,
    on_stderr: bool,
    ready: impl Fn(&str) -> Option<String>,
) -> HttpPeer {
    command.stdin(Stdio::null());
    if on_stderr {
        command.stdout(Stdio::null()).stderr(Stdio::piped());
    } else {
        command.stdout(Stdio::piped());
    }
    let mut child = command.spawn().expect("the peer starts");
    let url = if on_stderr {
        wait_for(child.stderr.take().expect("piped stderr"), ready).await
    } else {
        wait_for(child.stdout.take().expect("piped stdout"), ready).await
    };
    HttpPeer { _child: child, url }
}

async fn wait_for(
    output: impl AsyncRead + Unpin + Send + 'static,
    ready: impl Fn(&str) -> Option<String>,
) -> String {
    let mut lines = BufReader::new(output).lines();
    let url = tokio::time::timeout(START_TIMEOUT, async {
        let mut seen = Vec::new();
        loop {
            match lines.next_line().await {
                Ok(Some(line)) => {
                    if let Some(url) = ready(&line) {
                        return url;
                    }
                    seen.push(line);
                }
                _ => panic!(
                    "the peer ended before it listened; it wrote:\n{}",
                    seen.join("\n")
                ),
            }
        }
    })
    .await
    .expect("the peer listens in time");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    url
}

/// A free loopback port, for a peer that cannot be told to pick one itself.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}
