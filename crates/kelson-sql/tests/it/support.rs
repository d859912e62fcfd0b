//! Helpers: a server in process driven with JSON-RPC bytes, scratch SQLite files, and scratch
//! PostgreSQL schemas and roles on the local server, with the check that it answers.

use std::net::{TcpStream, ToSocketAddrs as _};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kelson_server::Server;
use kelson_server::transport::{Reply, RequestIo};
use kelson_sql::SqlAdapter;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name unique to this test process and call.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A scratch directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        let dir = std::env::temp_dir().join(unique("mcp-sql-test"));
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Creates an SQLite file with `sql` run on it.
pub fn sqlite_file(path: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).expect("create the test database");
    conn.execute_batch(sql).expect("fill the test database");
}

/// A small shop: two related tables with a foreign key, and a view.
pub const SHOP: &str = "
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT UNIQUE);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    total REAL NOT NULL DEFAULT 0,
    note TEXT
);
CREATE INDEX orders_customer ON orders(customer_id);
CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
INSERT INTO customers VALUES (1, 'Ada', 'ada@example.com'), (2, 'Alan', 'alan@example.com'), (3, 'Grace', NULL);
INSERT INTO orders (id, customer_id, total, note) VALUES (1, 1, 50.5, 'first'), (2, 1, 150, NULL), (3, 2, 20, 'x');
";

/// Everything a test may compare to prove that nothing changed: schema, data and settings.
pub fn sqlite_snapshot(path: &Path) -> String {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the test database");
    let mut out = String::new();
    let mut stmt = conn
        .prepare("SELECT type, name, coalesce(sql, '') FROM sqlite_schema ORDER BY name")
        .unwrap();
    let rows: Vec<(String, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (kind, name, sql) in rows {
        out.push_str(&format!("{kind} {name} {sql}\n"));
        if kind == "table" {
            let mut rows = conn.prepare(&format!("SELECT * FROM \"{name}\"")).unwrap();
            let width = rows.column_count();
            let dump: Vec<String> = rows
                .query_map([], |r| {
                    (0..width)
                        .map(|i| {
                            r.get::<_, rusqlite::types::Value>(i)
                                .map(|v| format!("{v:?}"))
                        })
                        .collect::<Result<Vec<_>, _>>()
                        .map(|v| v.join(","))
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            out.push_str(&dump.join(";"));
            out.push('\n');
        }
    }
    for pragma in [
        "user_version",
        "application_id",
        "journal_mode",
        "page_size",
    ] {
        let v: String = conn
            .query_row(&format!("PRAGMA {pragma}"), [], |r| {
                r.get::<_, rusqlite::types::Value>(0)
                    .map(|v| format!("{v:?}"))
            })
            .unwrap();
        out.push_str(&format!("{pragma}={v}\n"));
    }
    out
}

/// The `_meta` of a request; `elicitation` declares form elicitation.
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

/// A client talking to a server in process.
pub struct Client {
    pub server: Server,
    next_id: AtomicU64,
}

impl Client {
    pub async fn new(adapter: &SqlAdapter) -> Client {
        Self::with_builder(adapter, Server::builder("mcp-sql-test", "0.0.0")).await
    }

    /// A client of a server sealing its state under `key`: several of them stand for instances
    /// behind a load balancer.
    pub async fn with_state_key(adapter: &SqlAdapter, key: &[u8]) -> Client {
        let builder = Server::builder("mcp-sql-test", "0.0.0").state_key(key.to_vec());
        Self::with_builder(adapter, builder).await
    }

    async fn with_builder(adapter: &SqlAdapter, builder: kelson_server::ServerBuilder) -> Client {
        let server = adapter
            .register(builder)
            .await
            .expect("the adapter registers")
            .build()
            .expect("the server builds");
        Client {
            server,
            next_id: AtomicU64::new(1),
        }
    }

    /// Sends one request and returns the whole response.
    pub async fn send(&self, method: &str, params: Value, cancel: CancellationToken) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut io = RequestIo::plain(&self.server);
        io.cancel = cancel;
        let reply = self
            .server
            .handle(body.to_string().as_bytes(), io)
            .await
            .expect("a request gets a reply");
        match reply {
            Reply::Message(m) => serde_json::from_slice(&m.body).expect("the reply is JSON"),
            Reply::Listen(_) => panic!("unexpected listen stream"),
        }
    }

    /// Sends a request with `_meta` added and returns its `result`, failing on an error response.
    pub async fn request(&self, method: &str, mut params: Value) -> Value {
        params["_meta"] = meta(true);
        let response = self.send(method, params, CancellationToken::new()).await;
        match response.get("result") {
            Some(r) => r.clone(),
            None => panic!("{method} failed: {response}"),
        }
    }

    /// Calls a tool and returns its result (complete or input_required).
    pub async fn call(&self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await
    }

    /// Calls a tool with a cancellation token the test controls.
    pub async fn call_cancellable(
        &self,
        tool: &str,
        arguments: Value,
        cancel: CancellationToken,
    ) -> Value {
        let params = json!({"name": tool, "arguments": arguments, "_meta": meta(true)});
        let response = self.send("tools/call", params, cancel).await;
        response["result"].clone()
    }

    /// The retry of a `tools/call`: the same name and arguments, plus answers and the echoed state.
    pub async fn retry(
        &self,
        tool: &str,
        arguments: Value,
        responses: Option<Value>,
        state: Option<&str>,
    ) -> Value {
        let mut params = Map::new();
        params.insert("name".into(), json!(tool));
        params.insert("arguments".into(), arguments);
        if let Some(r) = responses {
            params.insert("inputResponses".into(), r);
        }
        if let Some(s) = state {
            params.insert("requestState".into(), json!(s));
        }
        self.request("tools/call", Value::Object(params)).await
    }
}

/// The text of a tool result.
#[track_caller]
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result}"))
}

/// A successful tool result's structured content.
#[track_caller]
pub fn ok(result: &Value) -> &Value {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_ne!(result["isError"], json!(true), "the call failed: {result}");
    &result["structuredContent"]
}

/// A failed tool result's message.
#[track_caller]
pub fn tool_error(result: &Value) -> &str {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(
        result["isError"],
        json!(true),
        "expected a tool error: {result}"
    );
    text(result)
}

/// Waits until `check` holds, polling; fails after `limit`.
pub async fn wait_until(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ---- PostgreSQL ----

/// The variable that points the tests at another server: a connection string without the user.
const TEST_PG: &str = "KELSON_SQL_TEST_PG";

/// The connection string of the test server, without the user.
pub fn pg_base() -> String {
    std::env::var(TEST_PG).unwrap_or_else(|_| "host=127.0.0.1 port=5432 dbname=test".into())
}

/// Whether the test server answers, as `kelson_testenv` reports it: a test that needs PostgreSQL
/// starts with `if !support::postgres() { return; }`. Without `KELSON_SQL_TEST_PG` the server is the
/// one on 127.0.0.1:5432 that `kelson_testenv::postgres` looks for; with it, the first host and port
/// it names, so that pointing it at a closed port shows which tests need the server without
/// stopping the one others use.
pub fn postgres() -> bool {
    let Ok(base) = std::env::var(TEST_PG) else {
        return kelson_testenv::postgres();
    };
    static UP: OnceLock<bool> = OnceLock::new();
    let up = *UP.get_or_init(|| answers(&base));
    kelson_testenv::require(
        up,
        &format!("no PostgreSQL answers at {TEST_PG} ({base})"),
        &format!(
            "start a server there with trust authentication for `postgres` and a database as \
             named, or unset {TEST_PG} to use the one on 127.0.0.1:5432 (see scripts/postgres)"
        ),
    )
}

/// Whether the first host and port of a connection string accept a connection. A string that does
/// not parse counts as not answering: every test that needs it would fail on it anyway.
fn answers(base: &str) -> bool {
    let Ok(config) = base.parse::<tokio_postgres::Config>() else {
        return false;
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => (host.as_str(), port)
            .to_socket_addrs()
            .is_ok_and(|mut addrs| {
                addrs.any(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok())
            }),
        #[cfg(unix)]
        Some(tokio_postgres::config::Host::Unix(dir)) => {
            std::os::unix::net::UnixStream::connect(dir.join(format!(".s.PGSQL.{port}"))).is_ok()
        }
        // No host: tokio-postgres refuses to connect at all.
        _ => false,
    }
}

/// The URL of the test server for `user` (trust authentication).
pub fn pg_url(user: &str) -> String {
    format!("{} user={user}", pg_base())
}

/// Connects as the administrative user (`postgres`, else `root`).
pub async fn pg_admin() -> (tokio_postgres::Client, String) {
    let mut last = None;
    for user in ["postgres", "root"] {
        match tokio_postgres::connect(&pg_url(user), tokio_postgres::NoTls).await {
            Ok((client, conn)) => {
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                return (client, user.to_owned());
            }
            Err(e) => last = Some(e),
        }
    }
    panic!("cannot reach the test PostgreSQL ({}): {last:?}", pg_base());
}

/// A schema of its own plus a read-only role and a writing role, dropped at the end.
pub struct PgFixture {
    pub admin: tokio_postgres::Client,
    pub schema: String,
    pub reader: String,
    pub writer: String,
}

impl PgFixture {
    /// Creates the schema, runs `setup` in it, and creates the roles: the reader may only select,
    /// the writer may also insert, update, delete and create tables in the schema.
    pub async fn new(setup: &str) -> PgFixture {
        let (admin, _) = pg_admin().await;
        let schema = unique("mcp_sql_t");
        let reader = format!("{schema}_r");
        let writer = format!("{schema}_w");
        admin
            .batch_execute(&format!(
                "CREATE SCHEMA {schema};
                 SET search_path = {schema};
                 {setup}
                 RESET search_path;
                 CREATE ROLE {reader} LOGIN;
                 CREATE ROLE {writer} LOGIN;
                 ALTER ROLE {reader} SET search_path = {schema};
                 ALTER ROLE {writer} SET search_path = {schema};
                 GRANT USAGE ON SCHEMA {schema} TO {reader}, {writer};
                 GRANT CREATE ON SCHEMA {schema} TO {writer};
                 GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {reader}, {writer};
                 GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {writer};
                 GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {writer};
                 ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT SELECT ON TABLES TO {reader};
                 ALTER DEFAULT PRIVILEGES FOR ROLE {writer} IN SCHEMA {schema} GRANT SELECT ON TABLES TO {reader};"
            ))
            .await
            .expect("set up the test schema");
        PgFixture {
            admin,
            schema,
            reader,
            writer,
        }
    }

    pub fn reader_url(&self) -> String {
        pg_url(&self.reader)
    }

    pub fn writer_url(&self) -> String {
        pg_url(&self.writer)
    }

    /// Runs a query as the administrator and returns the first column of the first row as text.
    pub async fn scalar(&self, sql: &str) -> String {
        let row = self
            .admin
            .query_one(&format!("SELECT ({sql})::text"), &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        row.get::<_, Option<String>>(0).unwrap_or_default()
    }
}

impl Drop for PgFixture {
    fn drop(&mut self) {
        let (schema, reader, writer) = (
            self.schema.clone(),
            self.reader.clone(),
            self.writer.clone(),
        );
        // Async cleanup from a destructor: a thread of its own with a runtime of its own.
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async move {
                let (admin, _) = pg_admin().await;
                let _ = admin
                    .batch_execute(&format!(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename IN ('{reader}', '{writer}');
                         DROP SCHEMA IF EXISTS {schema} CASCADE;
                         DROP OWNED BY {reader}, {writer};
                         DROP ROLE IF EXISTS {reader};
                         DROP ROLE IF EXISTS {writer};"
                    ))
                    .await;
            });
        });
        let _ = cleanup.join();
    }
}

// ---- MariaDB / MySQL ----

/// The variable that points the tests at another server: `mysql://host:port` without user or
/// database (the administrator is `root` without a password).
const TEST_MYSQL: &str = "KELSON_SQL_TEST_MYSQL";

/// `mysql://host:port` of the test server.
pub fn my_base() -> String {
    std::env::var(TEST_MYSQL).unwrap_or_else(|_| "mysql://127.0.0.1:3306".into())
}

/// Whether the test MariaDB answers, as `kelson_testenv` reports it: a test that needs it starts
/// with `if !support::mariadb() { return; }`.
pub fn mariadb() -> bool {
    let Ok(base) = std::env::var(TEST_MYSQL) else {
        return kelson_testenv::mariadb();
    };
    static UP: OnceLock<bool> = OnceLock::new();
    let up = *UP.get_or_init(|| {
        let hostport = base.trim_start_matches("mysql://").trim_end_matches('/');
        hostport.to_socket_addrs().is_ok_and(|mut addrs| {
            addrs.any(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok())
        })
    });
    kelson_testenv::require(
        up,
        &format!("no MariaDB answers at {TEST_MYSQL} ({base})"),
        &format!(
            "start one there, or unset {TEST_MYSQL} to use 127.0.0.1:3306 (see scripts/mariadb)"
        ),
    )
}

/// The URL of the test server for `user` (no password) and `database`.
pub fn my_url(user: &str, database: &str) -> String {
    let base = my_base();
    let rest = base.trim_start_matches("mysql://").trim_end_matches('/');
    format!("mysql://{user}@{rest}/{database}")
}

/// Connects as `root`, to the database `test`.
pub async fn my_admin() -> mysql_async::Conn {
    let url = my_url("root", "test");
    let mut conn = mysql_async::Conn::new(mysql_async::Opts::from_url(&url).unwrap())
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test MariaDB as root ({url}): {e}"));
    use mysql_async::prelude::Queryable as _;
    conn.query_drop("SET time_zone = '+00:00'").await.unwrap();
    conn
}

/// A database of its own plus two accounts, dropped at the end: `reader` may only select (and
/// see views); `writer` may also change rows, create and drop tables, lock tables, create
/// temporary tables and execute routines, which is more than `query` ever lets through.
pub struct MyFixture {
    pub admin: tokio::sync::Mutex<mysql_async::Conn>,
    pub db: String,
    pub reader: String,
    pub writer: String,
}

impl MyFixture {
    /// Creates the database, runs `setup` in it (statements separated by `;;`, so that routine
    /// bodies may hold `;`), and creates the accounts.
    pub async fn new(setup: &str) -> MyFixture {
        use mysql_async::prelude::Queryable as _;
        let mut admin = my_admin().await;
        let db = unique("mcp_sql_t");
        let reader = format!("{db}_r");
        let writer = format!("{db}_w");
        admin
            .query_drop(format!("CREATE DATABASE `{db}`"))
            .await
            .unwrap();
        admin.query_drop(format!("USE `{db}`")).await.unwrap();
        // From here on, dropping the fixture (a failed setup statement panics) drops it all.
        let fx = MyFixture {
            admin: tokio::sync::Mutex::new(admin),
            db,
            reader,
            writer,
        };
        for statement in setup.split(";;").map(str::trim).filter(|s| !s.is_empty()) {
            fx.exec(statement).await;
        }
        let (db, reader, writer) = (&fx.db, &fx.reader, &fx.writer);
        for statement in [
            format!("CREATE USER '{reader}'@'%'"),
            format!("CREATE USER '{writer}'@'%'"),
            format!("GRANT SELECT, SHOW VIEW ON `{db}`.* TO '{reader}'@'%'"),
            format!(
                "GRANT SELECT, SHOW VIEW, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, \
                 CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, CREATE VIEW \
                 ON `{db}`.* TO '{writer}'@'%'"
            ),
        ] {
            fx.exec(&statement).await;
        }
        fx
    }

    pub fn reader_url(&self) -> String {
        my_url(&self.reader, &self.db)
    }

    pub fn writer_url(&self) -> String {
        my_url(&self.writer, &self.db)
    }

    /// Runs `sql` as the administrator, in the fixture's database.
    pub async fn exec(&self, sql: &str) {
        use mysql_async::prelude::Queryable as _;
        let mut admin = self.admin.lock().await;
        admin
            .query_drop(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The first column of the first row of `sql`, as text (NULL as empty).
    pub async fn scalar(&self, sql: &str) -> String {
        use mysql_async::prelude::Queryable as _;
        let mut admin = self.admin.lock().await;
        let row: Option<Option<String>> = admin
            .query_first(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        row.flatten().unwrap_or_default()
    }
}

impl Drop for MyFixture {
    fn drop(&mut self) {
        let (db, reader, writer) = (self.db.clone(), self.reader.clone(), self.writer.clone());
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async move {
                use mysql_async::prelude::Queryable as _;
                let mut admin = my_admin().await;
                // The accounts' connections first: one the test's runtime no longer drives (a
                // read's rollback after its answer, abandoned when the test ended) would hold
                // its tables' locks, and DROP DATABASE would wait for them.
                let ids: Vec<u64> = admin
                    .exec(
                        "SELECT ID FROM information_schema.PROCESSLIST WHERE USER IN (?, ?)",
                        (&reader, &writer),
                    )
                    .await
                    .unwrap_or_default();
                for id in ids {
                    let _ = admin.query_drop(format!("KILL CONNECTION {id}")).await;
                }
                let _ = admin
                    .query_drop(format!("DROP DATABASE IF EXISTS `{db}`"))
                    .await;
                let _ = admin
                    .query_drop(format!("DROP USER IF EXISTS '{reader}'@'%'"))
                    .await;
                let _ = admin
                    .query_drop(format!("DROP USER IF EXISTS '{writer}'@'%'"))
                    .await;
                let _ = admin.disconnect().await;
            });
        });
        let _ = cleanup.join();
    }
}
