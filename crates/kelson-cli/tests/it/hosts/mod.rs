//! The clients that hosts embed, against the real `kelson serve`: the proof that the handshake era
//! (2025-03-26 to 2025-11-25) is served next to 2026-07-28 by one binary, with its defaults.
//!
//! - `ts_v1`: the official TypeScript SDK v1 client (`@modelcontextprotocol/sdk` 1.x, the one most
//!   hosts embed) over stdio, Streamable HTTP with sessions (the default) and stateless HTTP:
//!   tools, a table resource, a file subscription and its update, and the write approval answered
//!   through its elicitation handler (`peers/interop/ts-v1-serve-client.mjs`).
//! - `inspector`: the official Inspector's CLI mode over stdio.
//! - `python`: the official Python SDK's client forced to the handshake (`mode="legacy"`) over stdio.
//! - `modern`: the TypeScript v2 and Python clients pinned to 2026-07-28 against the same server,
//!   and the TypeScript v2 client in its default mode (the handshake era).
//! - `sessions`: the session bounds docs/serve/hosts.md names, through the binary.
//! - `login`: `kelson auth login` and the client verbs against `kelson serve` behind a real
//!   authorization server: the browser step scripted, refresh, step-up, logout.
//!
//! The peers come from `scripts/peers-install` (npm and PyPI, pinned in `peers/`); without them
//! these tests return at once and say so in one line (they fail under `KELSON_REQUIRE_ALL`, as
//! `scripts/test` runs them).

mod answers;
mod auth;
mod inspector;
mod login;
mod modern;
mod python;
mod sessions;
mod ts_v1;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{mcp_path, watchdog};
use crate::serve::support::{TempDir, sqlite_file, sqlite_scalar};

/// The write every client is asked to approve: declined, then accepted.
pub const EXECUTE: &str = "update items set qty = qty + 1 where name = 'gear'";
/// The query every client runs, whose answer the writes do not change.
pub const QUERY: &str = "select name from items order by id";
/// The table resource every client reads.
pub const TABLE: &str = "sql://main/main/items";

/// The bound on one peer's run; each of its steps has its own 15 s bound.
const PEER_TIMEOUT: Duration = Duration::from_secs(90);

pub use kelson_testenv::Peers;

/// The peers these tests run, when installed; `None` (said in one line) when one is missing.
pub fn peers() -> Option<Peers> {
    Peers::get(&[
        "node_modules/.bin/node",
        "node_modules/@modelcontextprotocol/sdk/package.json",
        "node_modules/@modelcontextprotocol/inspector-cli/build/cli.js",
        "node_modules/@modelcontextprotocol/client/package.json",
        "node_modules/oidc-provider/package.json",
        ".venv/bin/python",
    ])
}

/// The peers, for a helper of a test that began by checking [`peers`].
pub fn installed() -> Peers {
    peers().expect("the test checked that the peers are installed")
}

/// What one peer run printed.
pub struct PeerRun {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl PeerRun {
    /// The JSON summary on its last line that is one, which must report no errors.
    #[track_caller]
    pub fn summary(&self) -> Value {
        let summary: Value = self
            .stdout
            .lines()
            .rev()
            .find_map(|l| {
                serde_json::from_str::<Value>(l)
                    .ok()
                    .filter(|v| v.get("steps").is_some())
            })
            .unwrap_or_else(|| panic!("the peer printed no summary.\n{self}"));
        assert!(
            summary["errors"].as_array().is_some_and(Vec::is_empty) && self.success,
            "the peer reported errors:\n{}\nstderr:\n{}",
            serde_json::to_string_pretty(&summary).unwrap(),
            self.stderr
        );
        summary
    }
}

impl std::fmt::Display for PeerRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "success: {}\nstdout:\n{}\nstderr:\n{}",
            self.success, self.stdout, self.stderr
        )
    }
}

/// Runs a peer to its end. Each line it prints on stdout that is a JSON object with `awaiting`
/// is handed to `on_await`, after which the peer is told to go on with a line on its stdin.
pub fn run_peer(mut command: Command, mut on_await: impl FnMut(&Value)) -> PeerRun {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the peer starts");
    let done = watchdog(child.id(), PEER_TIMEOUT);
    let mut stderr = child.stderr.take().expect("piped stderr");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = String::new();
    for line in BufReader::new(child.stdout.take().expect("piped stdout")).lines() {
        let Ok(line) = line else { break };
        if let Ok(event) = serde_json::from_str::<Value>(&line)
            && event.get("awaiting").is_some()
        {
            on_await(&event);
            let _ = stdin.write_all(b"go on\n");
        }
        stdout.push_str(&line);
        stdout.push('\n');
    }
    drop(stdin);
    let status = child.wait().expect("the peer runs");
    let _ = done.send(());
    PeerRun {
        success: status.success(),
        stdout,
        stderr: errors.join().unwrap_or_default(),
    }
}

/// What a server of these tests serves: a writable scratch SQLite database with a table `items`,
/// a root folder with a file to watch, and a data folder of its own.
pub struct Scratch {
    /// The folder that holds the rest, removed when the scratch is dropped.
    _dir: TempDir,
    pub db: PathBuf,
    pub root: PathBuf,
    pub data: PathBuf,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = TempDir::new();
        let db = dir.join("shop.db");
        sqlite_file(
            &db,
            "create table items (id integer primary key, name text not null, qty integer not null);
             insert into items (name, qty) values ('bolt', 10), ('nut', 20), ('gear', 3);",
        );
        let root = dir.join("notes");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("todo.txt"), "first line\n").unwrap();
        let data = dir.join("data");
        Scratch {
            _dir: dir,
            db,
            root,
            data,
        }
    }

    /// The arguments of `kelson serve` after `serve` (and `--stdio`): the README's host example with
    /// writes allowed.
    pub fn serve_args(&self) -> Vec<String> {
        vec![
            "--db".to_owned(),
            self.db.display().to_string(),
            "--allow-write".to_owned(),
            "--root".to_owned(),
            self.root.display().to_string(),
        ]
    }

    /// The file the subscription tests watch, as its resource URI.
    pub fn watched_uri(&self) -> String {
        format!("file://{}", self.root.join("todo.txt").display())
    }

    /// Changes the watched file.
    pub fn change_watched(&self) {
        let path = self.root.join("todo.txt");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open the watched file");
        file.write_all(b"second line\n").expect("append to it");
    }
}

/// Every row of `items`, as `name=qty`, to compare before and after a write.
pub fn items(scratch: &Scratch) -> Vec<String> {
    (1..=3)
        .map(|id| {
            sqlite_scalar(
                &scratch.db,
                &format!("select name || '=' || qty from items where id = {id}"),
            )
        })
        .collect()
}

/// Runs a client of the plan's kind (`*-serve-client`): when it stops after the declined write,
/// checks that nothing was written; once it ends, that the accepted one changed exactly the one
/// row, once. Other stops go to `on_other`. Returns its summary, which must report no errors.
pub fn run_approving(
    scratch: &Scratch,
    command: Command,
    mut on_other: impl FnMut(&Value),
) -> Value {
    let before = items(scratch);
    let mut declined_checked = false;
    let run = run_peer(command, |event| {
        if event["awaiting"] == "declined" {
            assert_eq!(items(scratch), before, "a declined write changed the table");
            declined_checked = true;
        } else {
            on_other(event);
        }
    });
    let summary = run.summary();
    assert!(
        declined_checked,
        "the client never stopped after the decline:\n{run}"
    );
    let mut after = before.clone();
    let qty: i64 = before[2].trim_start_matches("gear=").parse().unwrap();
    after[2] = format!("gear={}", qty + 1);
    assert_eq!(items(scratch), after, "the accepted write");
    summary
}

/// The steps of the SQL plan every client runs: the tools, `list_tables`, the query, the table
/// resource, and the approval asked twice (declined, then accepted, one row).
pub fn check_sql_steps(summary: &Value) {
    let pretty = serde_json::to_string_pretty(summary).unwrap();
    let steps = &summary["steps"];
    assert_eq!(
        steps["listTools"],
        json!(["describe_table", "execute", "list_tables", "query"]),
        "{pretty}"
    );
    assert_eq!(steps["listTables"]["isError"], false, "{pretty}");
    assert_eq!(steps["listTables"]["tables"], json!(["items"]), "{pretty}");
    assert_eq!(steps["query"]["isError"], false, "{pretty}");
    assert_eq!(
        steps["query"]["rows"],
        json!([["bolt"], ["nut"], ["gear"]]),
        "{pretty}"
    );
    let read = &steps["read"][0];
    assert_eq!(read["uri"], TABLE, "{pretty}");
    assert!(
        read["text"].as_str().is_some_and(|t| t.contains("qty")),
        "the table resource describes its columns: {pretty}"
    );
    let asked = steps["asked"].as_array().expect("asked");
    assert_eq!(asked.len(), 2, "{pretty}");
    for question in asked {
        assert!(
            question["message"].as_str().unwrap().contains(EXECUTE),
            "{pretty}"
        );
        assert_eq!(question["fields"], json!(["approve"]), "{pretty}");
    }
    assert_eq!(steps["declined"]["isError"], true, "{pretty}");
    assert!(
        steps["declined"]["text"]
            .as_str()
            .unwrap()
            .contains("declined"),
        "{pretty}"
    );
    assert_eq!(steps["accepted"]["isError"], false, "{pretty}");
    assert_eq!(steps["accepted"]["rowsAffected"], 1, "{pretty}");
}

/// The plan of the `*-serve-client` scripts, as their first argument.
pub fn plan(extra: Value) -> String {
    let mut plan = json!({"query": QUERY, "read": TABLE, "execute": EXECUTE});
    for (k, v) in extra.as_object().expect("an object") {
        plan[k] = v.clone();
    }
    plan.to_string()
}

/// The `kelson` binary and its arguments for `kelson serve --stdio ARGS`, as a host's configuration
/// gives them.
pub fn stdio_command(args: &[String]) -> Vec<String> {
    let mut all = vec![
        mcp_path().to_owned(),
        "serve".to_owned(),
        "--stdio".to_owned(),
    ];
    all.extend(args.iter().cloned());
    all
}
