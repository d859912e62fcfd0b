//! Running the real `kelson` binary, and the servers it talks to.
//!
//! - HTTP: the conformance fixture (`kelson_examples::conformance::build_server`, plus a few tools
//!   for the CLI's own features) served on a loopback port by a runtime on its own thread, so the
//!   test keeps a handle on the server (to change its registry while `kelson listen` runs).
//! - stdio: the `conformance-server` binary. Cargo exposes `CARGO_BIN_EXE_*` only for binaries of
//!   the package under test, so its path is derived from `kelson`'s: both are built into the same
//!   target directory and profile (`<target>/<profile>/`). A workspace build (`cargo nextest run
//!   --workspace`, `scripts/test`) has built it already; otherwise (`cargo test -p kelson-cli`) it is
//!   built here once, with the cargo that runs the tests, into that same target directory.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kelson_http::server::{HttpConfig, McpService, OriginPolicy};
use kelson_server::{HandlerError, RequestContext, Server};
use kelson_types::{
    BooleanSchema, CallToolResult, ElicitAction, ElicitRequestFormParams, ElicitRequestURLParams,
    JsonObject, NumberSchema, RequestedSchema, StringFormat, StringSchema, Tool,
    UntitledSingleSelectEnumSchema,
};
use serde_json::{Value, json};

/// The bound on any one run of the binary.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

pub fn mcp_path() -> &'static str {
    env!("CARGO_BIN_EXE_kelson")
}

/// What one run of `kelson` did.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "exit status\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Kills a child that outlives its bound, so a hung run fails the test instead of hanging it.
pub fn watchdog(pid: u32, bound: Duration) -> mpsc::Sender<()> {
    let (done, rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        if rx.recv_timeout(bound) == Err(mpsc::RecvTimeoutError::Timeout) {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .status();
        }
    });
    done
}

/// Runs `kelson ARGS` with `input` on stdin, without a terminal, colour or width settings.
pub fn mcp(args: &[&str], input: &str) -> Run {
    mcp_env(args, input, &[])
}

/// [`kelson`] with environment variables set (a server it starts over stdio inherits them).
pub fn mcp_env(args: &[&str], input: &str, env: &[(&str, &std::ffi::OsStr)]) -> Run {
    let mut command = command(args);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kelson starts");
    let done = watchdog(child.id(), RUN_TIMEOUT);
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_owned();
    // A prompt may never read all of it; a broken pipe is fine.
    std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().expect("kelson runs");
    let _ = done.send(());
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `kelson ARGS` with a clean environment for output: no colour, no width, no log filter, and media
/// saved under a cache folder of the test run's own rather than the user's.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(mcp_path());
    command
        .args(args)
        .env_remove("COLUMNS")
        .env_remove("KELSON_LOG")
        .env("NO_COLOR", "1")
        // One folder for every test run: `kelson` prunes it of files older than a day.
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("mcp-cli-it-cache"),
        );
    command
}

/// A running `kelson` whose output is read line by line while it runs (for `listen`).
pub struct Live {
    pub child: Child,
    pub stdout: mpsc::Receiver<String>,
    pub stderr: mpsc::Receiver<String>,
    _done: mpsc::Sender<()>,
}

fn lines(read: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(read).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Live {
    pub fn start(args: &[&str]) -> Live {
        Self::spawn(command(args))
    }

    /// [`Live::start`] with `KELSON_DATA_DIR=data_dir` (which a server it starts over stdio inherits).
    pub fn start_in(data_dir: &Path, args: &[&str]) -> Live {
        let mut command = command(args);
        command.env("KELSON_DATA_DIR", data_dir);
        Self::spawn(command)
    }

    fn spawn(mut command: Command) -> Live {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kelson starts");
        let done = watchdog(child.id(), RUN_TIMEOUT);
        let stdout = lines(child.stdout.take().expect("stdout"));
        let stderr = lines(child.stderr.take().expect("stderr"));
        Live {
            child,
            stdout,
            stderr,
            _done: done,
        }
    }

    /// Waits for a line containing `needle`; the lines before it are returned too.
    #[track_caller]
    pub fn wait_for(rx: &mpsc::Receiver<String>, needle: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    let hit = line.contains(needle);
                    seen.push(line);
                    if hit {
                        return seen;
                    }
                }
                Err(e) => panic!("no line with {needle:?} ({e}); saw {seen:?}"),
            }
        }
    }

    /// Sends SIGINT, as Ctrl-C does, and waits for the exit.
    pub fn interrupt(mut self) -> (ExitStatus, Vec<String>) {
        let status = Command::new("kill")
            .arg("-INT")
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success());
        let status = self.child.wait().expect("kelson exits");
        let rest: Vec<String> = self.stderr.iter().collect();
        (status, rest)
    }
}

/// The fixture plus the tools that exercise the CLI's own features.
fn fixture() -> Server {
    let server = kelson_examples::conformance::build_server().expect("the fixture builds");
    let object = |v: Value| -> JsonObject { v.as_object().expect("an object").clone() };
    server
        .add_tool(
            Tool::new(
                "cli_echo",
                object(json!({
                    "type": "object",
                    "properties": {
                        "zip": {"type": "string"},
                        "count": {"type": "integer"},
                        "flag": {"type": "boolean"},
                        "tags": {"type": "array", "items": {"type": "string"}}
                    }
                })),
            )
            .with_description("Returns its arguments as structured content"),
            |_ctx: RequestContext, args: JsonObject| async move {
                let mut result = CallToolResult::text(Value::Object(args.clone()).to_string());
                result.structured_content = Some(Value::Object(args));
                Ok::<_, HandlerError>(result)
            },
        )
        .expect("cli_echo registers");
    server
        .add_tool(
            Tool::new("cli_form", object(json!({"type": "object"}))).with_description(
                "Asks for a form with every kind of field, then echoes the answer",
            ),
            |mut ctx: RequestContext, _args: JsonObject| async move {
                let mut email = StringSchema::new()
                    .with_format(StringFormat::Email)
                    .with_title("E-mail");
                email.max_length = Some(40);
                let mut colour = UntitledSingleSelectEnumSchema::new(vec![
                    "red".into(),
                    "green".into(),
                    "blue".into(),
                ]);
                colour.default = Some("blue".into());
                let schema = RequestedSchema::new()
                    .required_property("email", email)
                    .required_property(
                        "age",
                        NumberSchema::integer().with_range(Some(18.0), Some(120.0)),
                    )
                    .property("colour", colour)
                    .property("subscribe", BooleanSchema::new());
                let answer = ctx.elicit(
                    "form",
                    ElicitRequestFormParams::new("Sign up for the newsletter", schema),
                )?;
                let text = match answer.action {
                    ElicitAction::Accept => format!(
                        "accepted: {}",
                        serde_json::to_string(&answer.content).unwrap_or_default()
                    ),
                    ElicitAction::Decline => "declined".to_owned(),
                    ElicitAction::Cancel => "cancelled".to_owned(),
                };
                Ok::<_, HandlerError>(CallToolResult::text(text))
            },
        )
        .expect("cli_form registers");
    server
        .add_tool(
            Tool::new("cli_url", object(json!({"type": "object"})))
                .with_description("Asks the user to open a URL, then reports the answer"),
            |mut ctx: RequestContext, _args: JsonObject| async move {
                let answer = ctx.elicit(
                    "visit",
                    ElicitRequestURLParams::new(
                        "Authorize the demo",
                        "https://auth.example.com/authorize?state=abc&scope=read",
                    ),
                )?;
                Ok::<_, HandlerError>(CallToolResult::text(format!("url: {:?}", answer.action)))
            },
        )
        .expect("cli_url registers");
    server
        .add_tool(
            Tool::new("cli_roots", object(json!({"type": "object"})))
                .with_description("Asks for the client's roots, then lists their URIs and names"),
            |mut ctx: RequestContext, _args: JsonObject| async move {
                let answer = ctx.list_roots("roots")?;
                let lines: Vec<String> = answer
                    .roots
                    .iter()
                    .map(|r| format!("{} {}", r.uri, r.name.as_deref().unwrap_or("-")))
                    .collect();
                Ok::<_, HandlerError>(CallToolResult::text(lines.join("\n")))
            },
        )
        .expect("cli_roots registers");
    server
}

/// The fixture over loopback HTTP, for the life of this value.
pub struct HttpServer {
    pub url: String,
    pub server: Server,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl HttpServer {
    pub fn start() -> HttpServer {
        let server = fixture();
        let served = server.clone();
        let (url_tx, url_rx) = mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("a loopback port");
                let addr = listener.local_addr().expect("the address");
                url_tx
                    .send(format!("http://{addr}/mcp"))
                    .expect("the test waits");
                let config = {
                    let mut edited = HttpConfig::default();
                    edited.policy = OriginPolicy::for_bind(addr);
                    edited
                };
                tokio::select! {
                    _ = kelson_http::server::serve(listener, McpService::new(served, config)) => {}
                    _ = stopped => {}
                }
            });
        });
        let url = url_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the server starts");
        HttpServer {
            url,
            server,
            _stop: stop,
        }
    }

    /// `kelson VERB ARGS --url URL`.
    pub fn run(&self, args: &[&str], input: &str) -> Run {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--url", &self.url]);
        mcp(&all, input)
    }
}

/// The `--stdio` command line of the conformance server (see the module docs for how it is found).
pub fn stdio_server() -> String {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    let path = PATH.get_or_init(|| {
        let dir = Path::new(mcp_path()).parent().expect("the bin dir");
        let path = dir.join(format!(
            "conformance-server{}",
            std::env::consts::EXE_SUFFIX
        ));
        if !path.exists() {
            build_conformance_server(dir);
        }
        assert!(path.exists(), "{} was not built", path.display());
        path
    });
    let text = path.to_str().expect("a UTF-8 path");
    // Quoted for the shell-words splitter, in case the path has spaces.
    format!("'{text}' --stdio")
}

fn build_conformance_server(bin_dir: &Path) {
    let target = bin_dir.parent().expect("the target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args([
            "build",
            "-p",
            "kelson-examples",
            "--bin",
            "conformance-server",
        ])
        .env("CARGO_TARGET_DIR", target)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if bin_dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    let mut child = build.stderr(Stdio::piped()).spawn().expect("cargo starts");
    let mut log = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut log);
    assert!(
        child.wait().expect("cargo runs").success(),
        "building conformance-server failed:\n{log}"
    );
}

/// A loopback HTTP server that answers every request with `response` (a whole HTTP/1.1 response,
/// head and body) and closes the connection, for as long as the test runs: a stand-in for a
/// proxy or a web server that is not an MCP server. Its URL, with `path`.
pub fn canned_http(response: &'static str, path: &str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("the address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                // Read the head and the body its Content-Length announces, then answer.
                let mut request = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = stream.read(&mut chunk) else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let _ = stream.write_all(response.as_bytes());
            });
        }
    });
    format!("http://{addr}{path}")
}

/// server-everything, the handshake-era reference server (TypeScript SDK v1), from the installed
/// peers: the node binary and the script; `None` (said in one line) when not installed.
pub fn everything() -> Option<(PathBuf, PathBuf)> {
    const SCRIPT: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";
    let peers = kelson_testenv::Peers::get(&["node_modules/.bin/node", SCRIPT])?;
    Some((peers.path("node_modules/.bin/node"), peers.path(SCRIPT)))
}

/// The `--stdio` command line of server-everything, when installed.
pub fn everything_stdio() -> Option<String> {
    let (node, script) = everything()?;
    Some(format!("'{}' '{}' stdio", node.display(), script.display()))
}

/// server-everything over Streamable HTTP (session mode) on a free loopback port, killed when
/// dropped.
pub struct Everything {
    child: Child,
    pub url: String,
}

impl Everything {
    /// Starts it, when installed.
    pub fn start() -> Option<Everything> {
        let (node, script) = everything()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(node)
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("server-everything starts");
        let server = Everything {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "server-everything did not listen"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(server)
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
