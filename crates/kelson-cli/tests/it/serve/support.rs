//! Running `kelson serve` as a process, scratch folders, the local PostgreSQL, and a bare HTTP POST.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Run, command, mcp_env, mcp_path};

/// How long a server may take to start (it may create the sample database or connect to
/// PostgreSQL) and any polled condition may take to hold.
pub const PATIENCE: Duration = Duration::from_secs(60);

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name unique to this test process and call, usable as an SQL identifier.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A scratch directory, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        let dir = std::env::temp_dir().join(unique("mcp-cli-serve"));
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        // Canonical, so that file:// URIs built from it match the server's.
        TempDir(std::fs::canonicalize(&dir).expect("canonicalise the temp dir"))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Polls `check` until it holds; fails after [`PATIENCE`].
#[track_caller]
pub fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A running `kelson serve` over HTTP on a port the system picked; stopped (SIGTERM) when dropped.
pub struct Serve {
    child: Child,
    pub url: String,
    /// Everything the server wrote on stderr so far.
    log: Arc<Mutex<Vec<String>>>,
}

impl Serve {
    /// `kelson serve --http 127.0.0.1:0 ARGS` with `KELSON_DATA_DIR=data_dir`; returns once it listens.
    #[track_caller]
    pub fn start(data_dir: &Path, args: &[&str]) -> Serve {
        let mut all = vec!["--http", "127.0.0.1:0"];
        all.extend_from_slice(args);
        Self::start_without_bind(data_dir, &all)
    }

    /// `kelson serve ARGS`, where ARGS (or the configuration file) pick the address.
    #[track_caller]
    pub fn start_without_bind(data_dir: &Path, args: &[&str]) -> Serve {
        Self::start_with_env(data_dir, args, &[])
    }

    /// `kelson serve ARGS` with environment variables set (`KELSON_LOG` is unset unless given).
    #[track_caller]
    pub fn start_with_env(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut all = vec!["serve"];
        all.extend_from_slice(args);
        let mut command = command(&all);
        for (name, value) in env {
            command.env(name, value);
        }
        Self::spawn(command, data_dir)
    }

    /// `kelson serve --http 127.0.0.1:0 ARGS` allowed at most `files` open file descriptors (run
    /// through `prlimit`, which sets the limit and then becomes the server).
    #[track_caller]
    pub fn start_with_file_limit(data_dir: &Path, files: u32, args: &[&str]) -> Serve {
        let mut command = Command::new("prlimit");
        command
            .arg(format!("--nofile={files}:{files}"))
            .arg("--")
            .arg(mcp_path())
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .env_remove("KELSON_LOG")
            .env("NO_COLOR", "1");
        Self::spawn(command, data_dir)
    }

    /// A prepared `kelson serve` or `kelson gateway` command, started with
    /// `KELSON_DATA_DIR=data_dir`; returns once it listens.
    #[track_caller]
    pub fn spawn_command(command: Command, data_dir: &Path) -> Serve {
        Self::spawn(command, data_dir)
    }

    #[track_caller]
    fn spawn(mut command: Command, data_dir: &Path) -> Serve {
        let mut child = command
            .env("KELSON_DATA_DIR", data_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kelson serve starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (url_tx, url_rx) = mpsc::channel();
        let stderr = child.stderr.take().expect("stderr");
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = url_after(&line, "serving MCP on ") {
                    let _ = url_tx.send(url);
                }
                lines.lock().unwrap().push(line);
            }
        });
        let mut serve = Serve {
            child,
            url: String::new(),
            log,
        };
        match url_rx.recv_timeout(PATIENCE) {
            Ok(url) => serve.url = url,
            Err(_) => {
                let status = serve.child.try_wait().ok().flatten();
                panic!(
                    "kelson serve did not start listening (exit: {status:?}); its log:\n{}",
                    serve.log()
                );
            }
        }
        serve
    }

    /// The server's stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The URL the server said it serves its metrics at, if it did.
    pub fn metrics_url(&self) -> Option<String> {
        let log = self.log.lock().unwrap();
        log.iter()
            .find_map(|line| url_after(line, "serving metrics on "))
    }

    /// Stops the server as a service manager does (SIGTERM) and waits for it to exit, killing it
    /// after 20 s; its exit status, `None` if it had to be killed.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Err(_) => return None,
                Ok(None) if Instant::now() > deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// `kelson ARGS --url URL`.
    pub fn run(&self, args: &[&str], input: &str) -> Run {
        let mut all = args.to_vec();
        all.extend(["--url", &self.url]);
        mcp_env(&all, input, &[])
    }

    /// `kelson call query --arg sql=SQL --json`, which must succeed; the structured content.
    #[track_caller]
    pub fn query(&self, sql: &str) -> Value {
        let run = self.run(
            &["call", "query", "--arg", &format!("sql={sql}"), "--json"],
            "",
        );
        run.expect_code(0);
        run.json()["structuredContent"].clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}

/// The URL in a log line after `marker`, in the text format or inside a JSON string.
pub fn url_after(line: &str, marker: &str) -> Option<String> {
    let rest = line.split(marker).nth(1)?;
    let url = rest
        .split(|c: char| c == '"' || c.is_whitespace())
        .next()
        .unwrap_or_default();
    Some(url.to_owned())
}

/// The `--stdio` command line that starts `kelson serve --stdio ARGS`.
pub fn stdio_serve(args: &[&str]) -> String {
    let mut line = format!("'{}' serve --stdio", mcp_path());
    for arg in args {
        line.push_str(&format!(" '{arg}'"));
    }
    line
}

/// `kelson ARGS` with `KELSON_DATA_DIR=data_dir` (which a server it starts over stdio inherits).
pub fn mcp_in(data_dir: &Path, args: &[&str], input: &str) -> Run {
    mcp_env(args, input, &[("KELSON_DATA_DIR", data_dir.as_os_str())])
}

/// `kelson serve ARGS` expected to refuse to start: its exit status and stderr. ARGS carry no
/// `--http`, so that a bind address in a configuration file is not overridden.
pub fn serve_refused(data_dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["serve"];
    all.extend_from_slice(args);
    let run = mcp_env(&all, "", &[("KELSON_DATA_DIR", data_dir.as_os_str())]);
    assert!(
        !run.stderr.contains("serving MCP on"),
        "the server started:\n{}",
        run.stderr
    );
    run
}

/// The row count a `query` result reports, and its rows.
pub fn rows(structured: &Value) -> &Vec<Value> {
    structured["rows"].as_array().expect("rows")
}

/// One HTTP exchange's answer.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    /// The status line and the headers.
    pub head: String,
    pub body: String,
}

impl HttpReply {
    /// A header's value (the first, by case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Sends one HTTP/1.0 request to `url` over a fresh connection: `Host` (unless `headers` give
/// one), `headers`, and `body` with its length. Returns once the server closes the connection.
pub fn http(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> HttpReply {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut request = format!("{method} {path} HTTP/1.0\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {authority}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    request.push_str(body);
    raw_http(authority, request.as_bytes())
}

/// Sends `request` byte for byte to `authority` over a fresh connection and reads the answer
/// until the server closes the connection.
pub fn raw_http(authority: &str, request: &[u8]) -> HttpReply {
    let mut stream = std::net::TcpStream::connect(authority)
        .unwrap_or_else(|e| panic!("connect to {authority}: {e}"));
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("a read timeout");
    stream.write_all(request).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {response}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head}"));
    HttpReply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// The standard headers of a JSON-RPC POST for `method`, and `Mcp-Name` when given.
pub fn rpc_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    headers
}

/// The JSON-RPC message of a reply, from a JSON body or the last SSE event.
pub fn rpc_message(reply: &HttpReply) -> Value {
    let is_sse = reply
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let json = if is_sse {
        reply
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .next_back()
            .expect("an SSE event")
            .trim()
            .to_owned()
    } else {
        reply.body.clone()
    };
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

/// POSTs one JSON-RPC request to `url` over a fresh HTTP/1.0 connection, with the standard
/// headers, and returns the JSON-RPC response (from a JSON body or the last SSE event).
pub fn post(url: &str, method: &str, name: Option<&str>, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let reply = http(url, "POST", &rpc_headers(method, name), &body);
    assert_eq!(reply.status, 200, "{}\n{}", reply.head, reply.body);
    rpc_message(&reply)
}

/// The `_meta` every request carries; `elicitation` declares form elicitation.
pub fn meta(elicitation: bool) -> Value {
    let caps = if elicitation {
        json!({"elicitation": {"form": {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

/// An SQLite file with `sql` run on it, written directly (not through the server).
pub fn sqlite_file(path: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).expect("create the test database");
    conn.execute_batch(sql).expect("fill the test database");
}

/// The first column of the first row of `sql` on an SQLite file, as text.
pub fn sqlite_scalar(path: &Path, sql: &str) -> String {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the database");
    conn.query_row(sql, [], |r| r.get::<_, rusqlite::types::Value>(0))
        .map(|v| match v {
            rusqlite::types::Value::Integer(i) => i.to_string(),
            rusqlite::types::Value::Text(t) => t,
            other => format!("{other:?}"),
        })
        .expect("the query runs")
}

/// CPU time (user + system, in clock ticks) a process has used so far, from /proc.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // The command name may hold spaces; the fields after it are space-separated.
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

// ---- PostgreSQL ----

/// The test server: 127.0.0.1:5432, database `test`, trust authentication.
pub fn pg_url(role: &str) -> String {
    format!("postgres://{role}@127.0.0.1:5432/test")
}

/// A schema of its own with two least-privilege roles (a reader and a writer) on the local
/// PostgreSQL, and an administrative connection to check what the server did; everything is
/// dropped at the end.
pub struct Pg {
    runtime: tokio::runtime::Runtime,
    admin: tokio_postgres::Client,
    pub schema: String,
    pub reader: String,
    pub writer: String,
}

impl Pg {
    /// Creates the schema, runs `setup` in it as the administrator, and creates the roles: the
    /// reader may only select; the writer may also insert, update and delete.
    pub fn new(setup: &str) -> Pg {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let admin = runtime.block_on(admin());
        let schema = unique("mcp_cli_t");
        let reader = format!("{schema}_r");
        let writer = format!("{schema}_w");
        runtime
            .block_on(admin.batch_execute(&format!(
                "CREATE SCHEMA {schema};
                 SET search_path = {schema};
                 {setup}
                 RESET search_path;
                 CREATE ROLE {reader} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
                 CREATE ROLE {writer} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
                 ALTER ROLE {reader} SET search_path = {schema};
                 ALTER ROLE {writer} SET search_path = {schema};
                 GRANT USAGE ON SCHEMA {schema} TO {reader}, {writer};
                 GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {reader}, {writer};
                 GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {writer};
                 GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {writer};"
            )))
            .expect("set up the test schema and roles");
        Pg {
            runtime,
            admin,
            schema,
            reader,
            writer,
        }
    }

    /// Runs `sql` (statements) as the administrator.
    pub fn exec(&self, sql: &str) {
        self.runtime
            .block_on(self.admin.batch_execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Runs `sql` as the administrator; the first column of the first row as text.
    pub fn scalar(&self, sql: &str) -> String {
        let row = self
            .runtime
            .block_on(self.admin.query_one(&format!("SELECT ({sql})::text"), &[]))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        row.get::<_, Option<String>>(0).unwrap_or_default()
    }
}

/// The administrative role of the test server: `postgres`, else `root`.
pub fn admin_role() -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(connect_admin()).1
}

async fn admin() -> tokio_postgres::Client {
    connect_admin().await.0
}

async fn connect_admin() -> (tokio_postgres::Client, String) {
    let mut last = None;
    for user in ["postgres", "root"] {
        match tokio_postgres::connect(&pg_url(user), tokio_postgres::NoTls).await {
            Ok((client, connection)) => {
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                return (client, user.to_owned());
            }
            Err(e) => last = Some(e),
        }
    }
    panic!(
        "cannot reach the test PostgreSQL at 127.0.0.1:5432, database test, as postgres or root \
         (scripts/postgres sets it up): {last:?}"
    );
}

impl Drop for Pg {
    fn drop(&mut self) {
        let (schema, reader, writer) = (&self.schema, &self.reader, &self.writer);
        let _ = self.runtime.block_on(self.admin.batch_execute(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename IN ('{reader}', '{writer}');
             DROP SCHEMA IF EXISTS {schema} CASCADE;
             DROP OWNED BY {reader}, {writer};
             DROP ROLE IF EXISTS {reader};
             DROP ROLE IF EXISTS {writer};"
        )));
    }
}

/// The URL of the test MariaDB for `user` (no password) and `database`.
pub fn my_url(user: &str, database: &str) -> String {
    format!("mysql://{user}@127.0.0.1:3306/{database}")
}

/// A database of its own with two accounts on the local MariaDB: a reader that may only select,
/// and a writer that may also insert, update and delete; dropped at the end.
pub struct My {
    runtime: tokio::runtime::Runtime,
    admin: std::cell::RefCell<mysql_async::Conn>,
    pub db: String,
    pub reader: String,
    pub writer: String,
}

impl My {
    /// Creates the database, runs `setup` in it as `root` (statements separated by `;;`), and
    /// creates the accounts.
    pub fn new(setup: &str) -> My {
        use mysql_async::prelude::Queryable as _;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let mut admin = runtime
            .block_on(mysql_async::Conn::from_url(my_url("root", "test")))
            .expect("the test MariaDB at 127.0.0.1:3306 as root (scripts/mariadb sets it up)");
        let db = unique("mcp_cli_t");
        let reader = format!("{db}_r");
        let writer = format!("{db}_w");
        for statement in [format!("CREATE DATABASE `{db}`"), format!("USE `{db}`")] {
            runtime.block_on(admin.query_drop(statement)).unwrap();
        }
        // From here on, dropping the fixture (a failed setup statement panics) drops it all.
        let my = My {
            runtime,
            admin: std::cell::RefCell::new(admin),
            db,
            reader,
            writer,
        };
        let mut statements: Vec<String> = setup
            .split(";;")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let (db, reader, writer) = (&my.db, &my.reader, &my.writer);
        statements.extend([
            format!("CREATE USER '{reader}'@'%'"),
            format!("CREATE USER '{writer}'@'%'"),
            format!("GRANT SELECT, SHOW VIEW ON `{db}`.* TO '{reader}'@'%'"),
            format!("GRANT SELECT, INSERT, UPDATE, DELETE ON `{db}`.* TO '{writer}'@'%'"),
        ]);
        for statement in statements {
            let mut admin = my.admin.borrow_mut();
            my.runtime
                .block_on(admin.query_drop(&statement))
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
        my
    }

    /// The first column of the first row of `sql`, as text (NULL as empty).
    pub fn scalar(&self, sql: &str) -> String {
        use mysql_async::prelude::Queryable as _;
        let mut admin = self.admin.borrow_mut();
        let row: Option<Option<String>> = self
            .runtime
            .block_on(admin.query_first(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        row.flatten().unwrap_or_default()
    }
}

impl Drop for My {
    fn drop(&mut self) {
        use mysql_async::prelude::Queryable as _;
        let (db, reader, writer) = (&self.db, &self.reader, &self.writer);
        let admin = self.admin.get_mut();
        for statement in [
            format!("DROP DATABASE IF EXISTS `{db}`"),
            format!("DROP USER IF EXISTS '{reader}'@'%'"),
            format!("DROP USER IF EXISTS '{writer}'@'%'"),
        ] {
            let _ = self.runtime.block_on(admin.query_drop(statement));
        }
    }
}
