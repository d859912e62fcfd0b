//! What the workspace's tests need from outside the repository, found or reported in one line.
//!
//! Most tests need nothing but the repository: a fresh clone with a Rust toolchain runs them with
//! `cargo test`. Some need a service or program that the repository cannot carry: the PostgreSQL
//! server on 127.0.0.1:5432, the MariaDB server on 127.0.0.1:3306, or the pinned peers (the official TypeScript and Python SDKs, the
//! conformance suite, an authorization server) that `scripts/peers-install` puts under `peers/`.
//! Such a test asks here first. When the thing is there, the test runs. When it is not, the test
//! returns early and one line on the terminal says what to install or set, once per test binary
//! and missing thing; unless `KELSON_REQUIRE_ALL` is set, as `scripts/test` and `.ci/run` set it,
//! in which case the test fails with that line, so that nothing is skipped where everything must
//! run.
//!
//! ```
//! # async fn demo() {
//! if !kelson_testenv::postgres() {
//!     return; // PostgreSQL is not there: one line was printed, the test passes.
//! }
//! // ... connect to 127.0.0.1:5432 ...
//! # }
//! ```

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The environment variable that turns a missing requirement into a failure.
pub const REQUIRE_ALL: &str = "KELSON_REQUIRE_ALL";

/// The workspace's root folder (the one holding `Cargo.lock`).
pub fn workspace_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)
            .expect("crates/kelson-testenv sits two folders below the workspace root")
            .to_path_buf()
    })
}

/// Whether a requirement is met: `true` when `found`. Otherwise fails the test when
/// [`REQUIRE_ALL`] is set, and else writes `skipped: MISSING; HINT` once per process and
/// `missing`, and returns `false` so that the caller returns early. `missing` says what is not
/// there ("no PostgreSQL answers on 127.0.0.1:5432"), `hint` how to get it.
///
/// The line goes to the process's standard error directly rather than through the test harness's
/// capture, which would hide the output of a test that passes.
pub fn require(found: bool, missing: &str, hint: &str) -> bool {
    match decide(found, missing, hint, required()) {
        Decision::Run => true,
        Decision::Fail(message) => panic!("{message}"),
        Decision::Skip(line) => {
            static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
            let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
            if !said.contains(&line) {
                let _ = writeln!(std::io::stderr().lock(), "{line}");
                said.push(line);
            }
            false
        }
    }
}

/// What [`require`] does.
#[derive(Debug, PartialEq, Eq)]
enum Decision {
    Run,
    Skip(String),
    Fail(String),
}

fn decide(found: bool, missing: &str, hint: &str, required: bool) -> Decision {
    if found {
        Decision::Run
    } else if required {
        Decision::Fail(format!(
            "{missing} ({REQUIRE_ALL} is set, so no test may be skipped); {hint}"
        ))
    } else {
        Decision::Skip(format!(
            "skipped: {missing}, so the tests that need it return at once; {hint}"
        ))
    }
}

/// Whether every requirement must be met (`KELSON_REQUIRE_ALL` set and not `0`).
pub fn required() -> bool {
    std::env::var_os(REQUIRE_ALL).is_some_and(|v| v != "0" && !v.is_empty())
}

/// Whether the test PostgreSQL server answers on 127.0.0.1:5432 (database `test`, trust
/// authentication for the roles `postgres` or `root`), as [`require`] reports it.
pub fn postgres() -> bool {
    static UP: OnceLock<bool> = OnceLock::new();
    let up = *UP.get_or_init(|| {
        let addr = SocketAddr::from(([127, 0, 0, 1], 5432));
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
    });
    require(
        up,
        "no PostgreSQL answers on 127.0.0.1:5432",
        "run scripts/postgres (it starts the server, or installs it with apt-get, and creates the \
         database `test`), or start a server there with trust authentication for `postgres`",
    )
}

/// Whether the test MariaDB (or MySQL) server answers on 127.0.0.1:3306 (database `test`, `root`
/// without a password), as [`require`] reports it.
pub fn mariadb() -> bool {
    static UP: OnceLock<bool> = OnceLock::new();
    let up = *UP.get_or_init(|| {
        let addr = SocketAddr::from(([127, 0, 0, 1], 3306));
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
    });
    require(
        up,
        "no MariaDB answers on 127.0.0.1:3306",
        "run scripts/mariadb (it starts the server, or installs it with apt-get, and creates the \
         database `test`), or start a server there where `root` logs in without a password",
    )
}

fn answers(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
}

const BROKERS_HINT: &str = "run scripts/brokers (it starts NATS, Redis and installs haproxy with \
     apt-get where they are missing), or start nats-server on 4222 and redis-server on 6379";

/// Whether NATS answers on 127.0.0.1:4222, as [`require`] reports it.
pub fn nats() -> bool {
    static UP: OnceLock<bool> = OnceLock::new();
    let up = *UP.get_or_init(|| answers(4222));
    require(up, "no NATS answers on 127.0.0.1:4222", BROKERS_HINT)
}

/// Whether Redis answers on 127.0.0.1:6379, as [`require`] reports it.
pub fn redis() -> bool {
    static UP: OnceLock<bool> = OnceLock::new();
    let up = *UP.get_or_init(|| answers(6379));
    require(up, "no Redis answers on 127.0.0.1:6379", BROKERS_HINT)
}

/// Whether `program` (a broker or balancer the tests start on ports of their own:
/// `redis-server`, `nats-server`, `haproxy`) can be run, as [`require`] reports it.
pub fn program(program: &str) -> bool {
    let found = on_path(program) || Path::new("/usr/sbin").join(program).is_file();
    require(found, &format!("{program} is not installed"), BROKERS_HINT)
}

/// The pinned peers under `peers/`: Node 22 and the npm packages (the official SDKs, the
/// conformance suite, oidc-provider) in `peers/node_modules`, the Python SDK in `peers/.venv`.
#[derive(Debug, Clone)]
pub struct Peers {
    dir: PathBuf,
}

impl Peers {
    /// The peers, when each of `files` (paths relative to `peers/`, e.g.
    /// `node_modules/oidc-provider/package.json`) is installed; otherwise `None`, as [`require`]
    /// reports it.
    pub fn get(files: &[&str]) -> Option<Peers> {
        match Peers::find(files) {
            Ok(peers) => Some(peers),
            Err(missing) => {
                require(
                    false,
                    &format!("peers/ lacks {}", missing.join(", ")),
                    "run scripts/peers-install (it needs npm and python3 >= 3.10, and installs \
                     the pinned versions of peers/package-lock.json and peers/requirements.txt)",
                );
                None
            }
        }
    }

    /// The peers when each of `files` is installed, else the ones that are not.
    fn find<'a>(files: &[&'a str]) -> Result<Peers, Vec<&'a str>> {
        let dir = peers_dir();
        let missing: Vec<&str> = files
            .iter()
            .copied()
            .filter(|file| !dir.join(file).exists())
            .collect();
        if missing.is_empty() {
            Ok(Peers {
                dir: dir.to_path_buf(),
            })
        } else {
            Err(missing)
        }
    }

    /// `peers/`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A path below `peers/`.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    /// `node SCRIPT` with the pinned Node 22, which also comes first on the `PATH` of anything it
    /// starts; `script` is relative to `peers/`.
    pub fn node(&self, script: &str) -> Command {
        let bin = self.dir.join("node_modules/.bin");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let paths = std::iter::once(bin.clone()).chain(std::env::split_paths(&path));
        let mut command = Command::new(bin.join("node"));
        command
            .arg(self.dir.join(script))
            .env("PATH", std::env::join_paths(paths).expect("a PATH"));
        command
    }

    /// `python SCRIPT` in the peers' virtual environment; `script` is relative to `peers/`.
    pub fn python(&self, script: &str) -> Command {
        let mut command = Command::new(self.dir.join(".venv/bin/python"));
        command.arg(self.dir.join(script));
        command
    }
}

/// `peers/`, whether or not anything is installed there (canonical when it exists).
pub fn peers_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = workspace_root().join("peers");
        dir.canonicalize().unwrap_or(dir)
    })
}

/// Whether `program` can be run from `PATH` or is a path that exists.
pub fn on_path(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).exists();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_holds_the_workspace_manifest_and_lock() {
        assert!(workspace_root().join("Cargo.lock").exists());
        assert!(workspace_root().join("crates/kelson-testenv").is_dir());
    }

    #[test]
    fn a_requirement_found_runs_and_one_missing_is_skipped_or_fails_as_asked() {
        assert!(require(true, "nothing", "nothing to do"));
        assert_eq!(decide(true, "x", "y", true), Decision::Run);
        let Decision::Skip(line) = decide(false, "no thing here", "install it", false) else {
            panic!("skipped when not required");
        };
        assert!(line.starts_with("skipped: no thing here") && line.ends_with("install it"));
        let Decision::Fail(message) = decide(false, "no thing here", "install it", true) else {
            panic!("a failure when required");
        };
        assert!(message.contains("no thing here") && message.contains(REQUIRE_ALL));
    }

    #[test]
    fn peers_are_found_only_when_every_file_named_is_there() {
        let all = Peers::find(&[]).expect("nothing named, nothing missing");
        assert_eq!(all.path("interop"), peers_dir().join("interop"));
        let missing = Peers::find(&["interop", "node_modules/no-such-package/package.json"]);
        assert_eq!(
            missing.unwrap_err(),
            ["node_modules/no-such-package/package.json"]
        );
    }

    #[test]
    fn on_path_finds_a_shell_and_not_a_made_up_name() {
        assert!(on_path("sh"));
        assert!(!on_path("no-such-program-mcp-rs"));
        assert!(on_path("/bin/sh"));
    }
}
