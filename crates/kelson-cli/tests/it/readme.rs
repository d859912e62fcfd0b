//! Every command in the `sh` blocks of the README and of the pages under docs/ (the guide aside,
//! whose Rust is tested as the facade's doc tests), run as a reader would run it.
//!
//! The blocks are read from the documents themselves, so a command added there is run here.
//! `kelson` lines run
//! the real binary with the binaries of this build first on `PATH` (as the README's "Try it" puts
//! them), in a scratch home folder that holds what the README's examples name (`~/notes/todo.md`,
//! `app.db`). Addresses are the README's, mapped to servers this test starts: `127.0.0.1:8080` is
//! `kelson serve` on the sample (or the `kelson serve` a block started), `127.0.0.1:8081` the conformance
//! fixture a block starts. A line that is not an `kelson` command must be one of the few the test
//! knows not to run here (installing packages, the test suite itself), so that a misspelt `kelson`
//! command cannot slip through unrun.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::harness::mcp_path;
use super::serve::support::{TempDir, http, url_after};

/// Lines of README blocks that are not run here, by their first word: the quick start's build and
/// test commands (this test is part of `scripts/test`), the PostgreSQL installation steps, and the
/// static executable's and the container image's builds.
const NOT_RUN: &[&str] = &[
    "scripts/test",
    "sudo",
    "psql",
    "cargo",
    "scripts/build-static",
    "scripts/build-image",
    "docker",
    "podman",
];

/// One `sh` block of the README, its commands with continuation lines joined and comments cut.
pub(crate) struct Block {
    section: String,
    commands: Vec<String>,
}

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(path).expect("README.md")
}

/// The repository's root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The pages under docs/ a reader of the `kelson` command reads, as (path from the root, text):
/// every Markdown file but the guide's, in a stable order.
pub(crate) fn doc_pages() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "guide") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = root();
    let mut paths = Vec::new();
    walk(&root.join("docs"), &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let name = path.strip_prefix(&root).unwrap().display().to_string();
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, text)
        })
        .collect()
}

pub(crate) fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut current: Option<Vec<String>> = None;
    let mut pending = String::new();
    for line in text.lines() {
        if let Some(lines) = current.as_mut() {
            if line.starts_with("```") {
                out.push(Block {
                    section: section.clone(),
                    commands: std::mem::take(lines),
                });
                current = None;
                continue;
            }
            pending.push_str(line.trim_end());
            if pending.ends_with('\\') {
                pending.pop();
                pending.push(' ');
                continue;
            }
            let command = strip_comment(&pending).trim().to_owned();
            pending.clear();
            if !command.is_empty() {
                lines.push(command);
            }
        } else if line.starts_with("```sh") {
            current = Some(Vec::new());
        } else if line.starts_with('#') {
            section = line.trim_start_matches('#').trim().to_owned();
        }
    }
    out
}

/// The line without a trailing `# comment` (a `#` after whitespace, outside quotes).
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => return &line[..i],
            _ => {}
        }
        previous = c;
    }
    line
}

/// Splits a command line into words as a shell would for these lines: quotes, `$NAME` and `~`
/// at the start of a word expanded from `vars`.
pub(crate) fn words(line: &str, vars: &HashMap<&str, String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => {
                single = !single;
                in_word = true;
            }
            '"' if !single => {
                double = !double;
                in_word = true;
            }
            '$' if !single => {
                let mut name = String::new();
                while let Some(&n) = chars.peek() {
                    if n.is_ascii_alphanumeric() || n == '_' {
                        name.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                let value = vars
                    .get(name.as_str())
                    .unwrap_or_else(|| panic!("${name} in {line:?} is not set here"));
                word.push_str(value);
                in_word = true;
            }
            '~' if !single && !double && !in_word => {
                word.push_str(&vars["HOME"]);
                in_word = true;
            }
            c if c.is_whitespace() && !single && !double => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// A server a block started (or the sample one), stopped when dropped.
pub(crate) struct Running {
    child: Child,
    pub(crate) authority: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// What the README commands run in: the scratch home, the environment, the servers.
pub(crate) struct Reader {
    pub(crate) home: TempDir,
    bin: PathBuf,
    pub(crate) servers: HashMap<&'static str, Running>,
    /// Servers a block's own server stands in for, put back when the block ends.
    displaced: Vec<(&'static str, Running)>,
}

impl Reader {
    pub(crate) fn new() -> Reader {
        let home = TempDir::new();
        std::fs::create_dir_all(home.join("notes")).unwrap();
        std::fs::write(home.join("notes/todo.md"), "- read the README\n").unwrap();
        // The example configurations, at the path the README gives from the checkout's root.
        std::fs::create_dir_all(home.join("examples")).unwrap();
        for example in ["kelson.toml", "gateway.toml"] {
            std::fs::copy(
                kelson_testenv::workspace_root()
                    .join("examples")
                    .join(example),
                home.join("examples").join(example),
            )
            .unwrap();
        }
        // `kelson serve --db app.db` serves an SQLite file that exists.
        rusqlite::Connection::open(home.join("app.db"))
            .unwrap()
            .execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);")
            .unwrap();
        let bin = Path::new(mcp_path()).parent().unwrap().to_path_buf();
        let mut reader = Reader {
            home,
            bin,
            servers: HashMap::new(),
            displaced: Vec::new(),
        };
        // The quick start's server: the sample over HTTP at 127.0.0.1:8080 (here, another port).
        let sample = reader.serve(&["kelson".into(), "serve".into()]);
        reader.servers.insert("127.0.0.1:8080", sample);
        reader
    }

    pub(crate) fn vars(&self) -> HashMap<&'static str, String> {
        let mut vars = HashMap::new();
        vars.insert("HOME", self.home.path().display().to_string());
        vars.insert("PWD", self.home.path().display().to_string());
        vars.insert("PATH", std::env::var("PATH").unwrap_or_default());
        vars.insert("TOKEN", "a-token-for-the-readme".to_owned());
        vars
    }

    /// The README's addresses and example paths, mapped to this run's.
    pub(crate) fn localize(&self, word: &str) -> String {
        let mut word = word.replace("/home/you", &self.home.path().display().to_string());
        word = word.replace(
            "/var/lib/app.db",
            &self.home.join("app.db").display().to_string(),
        );
        for (readme, running) in &self.servers {
            word = word.replace(readme, &running.authority);
        }
        word
    }

    pub(crate) fn command(&self, words: &[String]) -> Command {
        let program = if words[0] == "kelson" || words[0] == "conformance-server" {
            self.bin.join(&words[0])
        } else {
            PathBuf::from(&words[0])
        };
        let mut command = Command::new(program);
        command
            .args(words[1..].iter().map(|w| self.localize(w)))
            .current_dir(self.home.path())
            .env("HOME", self.home.path())
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("KELSON_DATA_DIR", self.home.join("data"))
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    self.bin.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("NO_COLOR", "1")
            .env_remove("KELSON_LOG");
        command
    }

    /// Starts a server command (`kelson serve ...` or `conformance-server --http ...`) on a free
    /// port, and waits until it listens.
    fn serve(&self, words: &[String]) -> Running {
        let mut words = words.to_vec();
        if let Some(at) = words.iter().position(|w| w == "--http") {
            words[at + 1] = "127.0.0.1:0".to_owned();
        } else if words[0] == "kelson" {
            words.extend(["--http".to_owned(), "127.0.0.1:0".to_owned()]);
        }
        let mut child = self
            .command(&words)
            // conformance-server logs where it listens at INFO.
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{words:?}: {e}"));
        let (tx, rx) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    let _ = tx.send(line);
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{words:?} did not listen; it wrote {seen:#?}");
            };
            // `kelson serve` says "serving MCP on URL"; conformance-server logs "bound=ADDR".
            let authority = url_after(&line, "serving MCP on ")
                .map(|url| {
                    url.trim_start_matches("http://")
                        .split('/')
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                })
                .or_else(|| {
                    line.split_whitespace()
                        .find_map(|w| w.strip_prefix("bound="))
                        .map(str::to_owned)
                });
            if let Some(authority) = authority {
                // The rest of its output is drained so that it never blocks on a full pipe.
                std::thread::spawn(move || for _ in rx {});
                return Running { child, authority };
            }
            seen.push(line);
        }
    }

    /// Ends the servers a block started and puts back the ones they stood in for.
    pub(crate) fn end_block(&mut self, before: &[&'static str]) {
        self.servers.retain(|k, _| before.contains(k));
        for (address, server) in self.displaced.drain(..).rev() {
            self.servers.insert(address, server);
        }
    }

    /// Runs one README line.
    pub(crate) fn run(&mut self, section: &str, line: &str) {
        let program = line.split_whitespace().next().unwrap_or_default();
        if NOT_RUN.contains(&program) || program == "export" {
            return;
        }
        let words = words(line, &self.vars());
        let first = words[0].clone();
        let first = first.as_str();
        if first == "curl" {
            return self.curl(line, &words);
        }
        assert!(
            first == "kelson" || first == "conformance-server",
            "section {section:?}: {line:?} is neither a kelson command nor one this test knows \
             not to run; add it to NOT_RUN if it is not meant to be run here"
        );
        let background = words.last().map(String::as_str) == Some("&");
        let words: Vec<String> = words.into_iter().filter(|w| w != "&").collect();
        // `kelson serve` and `kelson gateway` serve (over HTTP, unless --stdio); `kelson gateway
        // check` and `pin` are one-off commands.
        let serving = match words.get(1).map(String::as_str) {
            Some("serve") => true,
            Some("gateway") => !matches!(words.get(2).map(String::as_str), Some("check" | "pin")),
            _ => false,
        };
        let is_server = (first == "kelson" && serving && !words.iter().any(|w| w == "--stdio"))
            || first == "conformance-server";
        if is_server {
            if words.iter().any(|w| w.contains("postgres://mcp_reader")) {
                return self.postgres_example(section, line, &words);
            }
            if words.iter().any(|w| w.contains("mysql://mcp_reader")) {
                return self.mysql_example(section, line, &words);
            }
            let running = self.serve(&words);
            // A server started here answers at the README's address for the lines after it.
            let readme_address = if first == "conformance-server" {
                "127.0.0.1:8081"
            } else {
                "127.0.0.1:8080"
            };
            let _ = background;
            if let Some(before) = self.servers.insert(readme_address, running) {
                self.displaced.push((readme_address, before));
            }
            return;
        }
        self.client(section, line, &words);
    }

    /// An `kelson` client command: it must succeed; `listen` runs until interrupted, as the README
    /// says.
    fn client(&self, section: &str, line: &str, words: &[String]) {
        let mut command = self.command(words);
        let listen = words.get(1).map(String::as_str) == Some("listen");
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        // A form asked for is answered as a reader at a terminal would.
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            use std::io::Write as _;
            let _ = stdin.write_all(b"Ada\nada@example.com\n");
        });
        if listen {
            std::thread::sleep(Duration::from_millis(1_500));
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
        }
        let done = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < done, "{line}: still running after 60 s");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        let mut stderr = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(
            status.success(),
            "section {section:?}: {line}\nexit {status}\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        if listen {
            assert!(stderr.contains("listening for"), "{line}: {stderr}");
        } else {
            assert!(!stdout.trim().is_empty(), "{line}: printed nothing");
        }
    }

    /// `curl -s URL | grep PATTERN`, as the README writes it.
    fn curl(&self, line: &str, words: &[String]) {
        let url = words
            .iter()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("{line}: no URL"));
        let pattern = words
            .iter()
            .skip_while(|w| *w != "grep")
            .nth(1)
            .unwrap_or_else(|| panic!("{line}: no grep"));
        let reply = http(&self.localize(url), "GET", &[], "");
        assert_eq!(reply.status, 200, "{line}: {}", reply.body);
        assert!(
            reply.body.contains(pattern.as_str()),
            "{line}: {}",
            reply.body
        );
    }

    /// The PostgreSQL examples name a role the README's own SQL creates (`mcp_reader`), which
    /// this machine's test database does not have: the command must get as far as connecting,
    /// and be refused for that role, not for its flags. The TLS example names a CA file only the
    /// reader's machine has: it must get as far as reading it.
    fn postgres_example(&self, section: &str, line: &str, words: &[String]) {
        if !kelson_testenv::postgres() {
            return;
        }
        let output = self
            .command(words)
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("role \"mcp_reader\" does not exist")
                || stderr.contains("password authentication failed")
                || stderr.contains("cannot read the CA file /etc/kelson/db-ca.pem")
                || stderr.contains("serving MCP on"),
            "section {section:?}: {line}\n{stderr}"
        );
    }
}

impl Reader {
    /// The MySQL examples name an account the README's own SQL creates (`mcp_reader`), which this
    /// machine's test server does not have: the command must get as far as connecting, and be
    /// refused for that account, not for its flags. The TLS example names a CA file only the
    /// reader's machine has: it must get as far as reading it.
    fn mysql_example(&self, section: &str, line: &str, words: &[String]) {
        if !kelson_testenv::mariadb() {
            return;
        }
        let output = self
            .command(words)
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("Access denied for user 'mcp_reader'")
                || stderr.contains("the CA file /etc/kelson/db-ca.pem cannot be read"),
            "section {section:?}: {line}\n{stderr}"
        );
    }
}

#[test]
fn the_readme_blocks_are_found() {
    let found = blocks(&readme());
    let commands: usize = found.iter().map(|b| b.commands.len()).sum();
    assert!(
        commands > 10,
        "{commands} commands in the README's sh blocks"
    );
    let in_docs: usize = doc_pages()
        .iter()
        .flat_map(|(_, text)| blocks(text))
        .map(|b| b.commands.len())
        .sum();
    assert!(in_docs > 25, "{in_docs} commands in the docs' sh blocks");
    let line = "kelson call x --arg a=\"b c\" --url ...   # the comment";
    assert_eq!(
        strip_comment(line).trim_end(),
        "kelson call x --arg a=\"b c\" --url ..."
    );
    let mut vars = HashMap::new();
    vars.insert("HOME", "/h".to_owned());
    assert_eq!(
        words(
            "kelson read '{\"a\": 1}' --root ~/notes --arg x=\"y z\"",
            &vars
        ),
        [
            "kelson",
            "read",
            "{\"a\": 1}",
            "--root",
            "/h/notes",
            "--arg",
            "x=y z"
        ]
    );
}

/// Runs every `sh` block of `text`; the number of lines run.
fn run_blocks(reader: &mut Reader, document: &str, text: &str) -> usize {
    let mut ran = 0;
    for block in blocks(text) {
        // Servers a block starts serve that block only; the sample serves them all.
        let before: Vec<&'static str> = reader.servers.keys().copied().collect();
        let section = format!("{document}: {}", block.section);
        for line in &block.commands {
            reader.run(&section, line);
            ran += 1;
        }
        reader.end_block(&before);
    }
    ran
}

#[test]
fn every_command_in_the_readme_runs() {
    let text = readme();
    let mut reader = Reader::new();
    let ran = run_blocks(&mut reader, "README.md", &text);
    assert!(ran > 10, "ran {ran} lines");
}

#[test]
fn every_command_in_the_docs_runs() {
    // The conformance fixture the client pages start is built beside kelson.
    let _ = super::harness::stdio_server();
    let mut reader = Reader::new();
    let mut ran = 0;
    for (name, text) in doc_pages() {
        ran += run_blocks(&mut reader, &name, &text);
    }
    assert!(ran > 25, "ran {ran} lines");
}
