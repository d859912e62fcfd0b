//! A long query stops promptly when the client cancels it, or when the request is dropped (the
//! stdio transport drops a cancelled request), on SQLite, PostgreSQL and MariaDB.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kelson_sql::{DatabaseConfig, Limits, SqlAdapter, SqliteConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{
    self, Client, MyFixture, PgFixture, TempDir, ok, sqlite_file, tool_error, wait_until,
};

/// Far longer than any bound below: a query that is not stopped fails the test by its timing.
const LONG: Duration = Duration::from_secs(120);
/// The generous bound for "stopped promptly".
const PROMPT: Duration = Duration::from_secs(5);

const SLOW_SQLITE: &str = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 100000000000) \
                           SELECT count(*) FROM n, t";

fn long_limits() -> DatabaseConfig {
    {
        let mut edited = DatabaseConfig::default();
        edited.limits = {
            let mut edited = Limits::default();
            edited.timeout = LONG;
            edited
        };
        edited
    }
}

/// Whether some connection is reading the SQLite file: a reader holds a shared lock, so an
/// exclusive lock cannot be taken.
fn sqlite_reader_active(path: &Path) -> bool {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::ZERO).unwrap();
    match conn.execute_batch("BEGIN EXCLUSIVE; ROLLBACK;") {
        Ok(()) => false,
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => true,
        Err(e) => panic!("probing the lock: {e}"),
    }
}

async fn sqlite_client(path: &Path) -> Client {
    sqlite_file(path, "CREATE TABLE t (a); INSERT INTO t VALUES (1);");
    // One read connection: the call after a cancellation needs the same one back.
    let config = {
        let mut edited = SqliteConfig::new(path);
        edited.read_connections = 1;
        edited
    };
    let adapter = SqlAdapter::sqlite(config, long_limits()).unwrap();
    Client::new(&adapter).await
}

#[tokio::test]
async fn sqlite_query_cancelled_by_the_client() {
    let dir = TempDir::new();
    let path = dir.path("slow.db");
    let client = Arc::new(sqlite_client(&path).await);
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let (client, cancel) = (client.clone(), cancel.clone());
        async move {
            client
                .call_cancellable("query", json!({"sql": SLOW_SQLITE}), cancel)
                .await
        }
    });
    wait_until(PROMPT, "the query runs", || sqlite_reader_active(&path)).await;
    let cancelled_at = Instant::now();
    cancel.cancel();
    let result = call.await.unwrap();
    assert!(
        cancelled_at.elapsed() < PROMPT,
        "{:?}",
        cancelled_at.elapsed()
    );
    assert!(tool_error(&result).contains("cancelled"), "{result}");
    assert!(
        !sqlite_reader_active(&path),
        "the statement still holds its lock"
    );
    // The single connection is back and healthy.
    let next = client
        .call("query", json!({"sql": "SELECT a FROM t"}))
        .await;
    assert_eq!(ok(&next)["rows"], json!([[1]]));
}

#[tokio::test]
async fn sqlite_query_dropped_mid_flight_is_interrupted() {
    let dir = TempDir::new();
    let path = dir.path("slow.db");
    let client = Arc::new(sqlite_client(&path).await);
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call("query", json!({"sql": SLOW_SQLITE})).await }
    });
    wait_until(PROMPT, "the query runs", || sqlite_reader_active(&path)).await;
    call.abort();
    let _ = call.await;
    wait_until(PROMPT, "the statement stops", || {
        !sqlite_reader_active(&path)
    })
    .await;
    let started = Instant::now();
    let next = client
        .call("query", json!({"sql": "SELECT a FROM t"}))
        .await;
    assert_eq!(ok(&next)["rows"], json!([[1]]));
    assert!(started.elapsed() < PROMPT);
}

/// Whether a `pg_sleep` statement of the fixture's reader role is running.
async fn pg_sleeping(fx: &PgFixture) -> bool {
    fx.scalar(&format!(
        "SELECT count(*) FROM pg_stat_activity WHERE usename = '{}' AND state = 'active' AND query LIKE '%pg_sleep%'",
        fx.reader
    ))
    .await
        != "0"
}

async fn pg_wait(fx: &PgFixture, running: bool) {
    let start = Instant::now();
    while pg_sleeping(fx).await != running {
        assert!(
            start.elapsed() < PROMPT,
            "pg_sleep running = {running} not reached"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn postgres_query_cancelled_by_the_client() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new("CREATE TABLE t (a int); INSERT INTO t VALUES (1);").await;
    let adapter = SqlAdapter::postgres(fx.reader_url(), long_limits())
        .await
        .unwrap();
    let client = Arc::new(Client::new(&adapter).await);
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let (client, cancel) = (client.clone(), cancel.clone());
        async move {
            client
                .call_cancellable("query", json!({"sql": "SELECT pg_sleep(30)"}), cancel)
                .await
        }
    });
    pg_wait(&fx, true).await;
    let cancelled_at = Instant::now();
    cancel.cancel();
    let result = call.await.unwrap();
    assert!(
        cancelled_at.elapsed() < PROMPT,
        "{:?}",
        cancelled_at.elapsed()
    );
    assert!(tool_error(&result).contains("cancelled"), "{result}");
    pg_wait(&fx, false).await;
    let next = client
        .call("query", json!({"sql": "SELECT a FROM t"}))
        .await;
    assert_eq!(ok(&next)["rows"], json!([[1]]));
}

#[tokio::test]
async fn postgres_query_dropped_mid_flight_is_cancelled() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new("CREATE TABLE t (a int);").await;
    let adapter = SqlAdapter::postgres(fx.reader_url(), long_limits())
        .await
        .unwrap();
    let client = Arc::new(Client::new(&adapter).await);
    let call = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .call("query", json!({"sql": "SELECT pg_sleep(30)"}))
                .await
        }
    });
    pg_wait(&fx, true).await;
    call.abort();
    let _ = call.await;
    pg_wait(&fx, false).await;
}

/// The whole path over the stdio transport: `notifications/cancelled` stops the running statement,
/// and the cancelled request gets no response.
#[tokio::test]
async fn sqlite_query_cancelled_over_stdio() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

    let dir = TempDir::new();
    let path = dir.path("slow.db");
    sqlite_file(&path, "CREATE TABLE t (a); INSERT INTO t VALUES (1);");
    let config = {
        let mut edited = SqliteConfig::new(&path);
        edited.read_connections = 1;
        edited
    };
    let adapter = SqlAdapter::sqlite(config, long_limits()).unwrap();
    let server = adapter
        .register(kelson_server::Server::builder("stdio-test", "0"))
        .await
        .unwrap()
        .build()
        .unwrap();
    let (mut to_server, server_in) = tokio::io::duplex(64 * 1024);
    let (server_out, from_server) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(kelson_server::stdio::serve_stream(
        server,
        server_in,
        server_out,
        Default::default(),
    ));
    let mut lines = BufReader::new(from_server).lines();
    let call = |id: u64, sql: &str| {
        let mut line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "query", "arguments": {"sql": sql}, "_meta": crate::support::meta(false)}})
        .to_string();
        line.push('\n');
        line
    };

    to_server
        .write_all(call(1, SLOW_SQLITE).as_bytes())
        .await
        .unwrap();
    wait_until(PROMPT, "the query runs", || sqlite_reader_active(&path)).await;
    let cancel =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    to_server
        .write_all(format!("{cancel}\n").as_bytes())
        .await
        .unwrap();
    wait_until(PROMPT, "the statement stops", || {
        !sqlite_reader_active(&path)
    })
    .await;

    to_server
        .write_all(call(2, "SELECT a FROM t").as_bytes())
        .await
        .unwrap();
    let line = tokio::time::timeout(PROMPT, lines.next_line())
        .await
        .expect("a response")
        .unwrap()
        .expect("a line");
    let response: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        response["id"], 2,
        "the cancelled request is never answered: {response}"
    );
    assert_eq!(
        response["result"]["structuredContent"]["rows"],
        json!([[1]])
    );

    drop(to_server);
    serving.await.unwrap().unwrap();
    let rest = lines.next_line().await.unwrap();
    assert_eq!(rest, None, "nothing more may be sent");
}

/// Whether a `SLEEP` statement of `user` is running on the MariaDB server.
async fn my_sleeping(fx: &MyFixture, user: &str) -> bool {
    fx.scalar(&format!(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
         WHERE USER = '{user}' AND INFO LIKE '%SLEEP%'"
    ))
    .await
        != "0"
}

async fn my_wait(fx: &MyFixture, user: &str, running: bool) {
    let start = Instant::now();
    while my_sleeping(fx, user).await != running {
        assert!(
            start.elapsed() < PROMPT,
            "SLEEP running = {running} not reached"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn mysql_query_cancelled_by_the_client() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new("CREATE TABLE t (a int);; INSERT INTO t VALUES (1)").await;
    let adapter = SqlAdapter::mysql(fx.reader_url(), long_limits())
        .await
        .unwrap();
    let client = Arc::new(Client::new(&adapter).await);
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let (client, cancel) = (client.clone(), cancel.clone());
        async move {
            client
                .call_cancellable("query", json!({"sql": "SELECT SLEEP(60)"}), cancel)
                .await
        }
    });
    my_wait(&fx, &fx.reader, true).await;
    let cancelled_at = Instant::now();
    cancel.cancel();
    let result = call.await.unwrap();
    assert!(
        cancelled_at.elapsed() < PROMPT,
        "{:?}",
        cancelled_at.elapsed()
    );
    assert!(tool_error(&result).contains("cancelled"), "{result}");
    // Killed on the server, not only abandoned by the adapter.
    my_wait(&fx, &fx.reader, false).await;
    let next = client
        .call("query", json!({"sql": "SELECT a FROM t"}))
        .await;
    assert_eq!(ok(&next)["rows"], json!([[1]]));
}

#[tokio::test]
async fn mysql_query_dropped_mid_flight_is_killed() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new("CREATE TABLE t (a int)").await;
    let adapter = SqlAdapter::mysql(fx.reader_url(), long_limits())
        .await
        .unwrap();
    let client = Arc::new(Client::new(&adapter).await);
    let call = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .call("query", json!({"sql": "SELECT SLEEP(60)"}))
                .await
        }
    });
    my_wait(&fx, &fx.reader, true).await;
    call.abort();
    let _ = call.await;
    my_wait(&fx, &fx.reader, false).await;
}

#[tokio::test]
async fn mysql_execute_cancelled_is_killed_and_rolled_back() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new("CREATE TABLE t (a int);; INSERT INTO t VALUES (1)").await;
    let config = {
        let mut edited = long_limits();
        edited.allow_write = true;
        edited
    };
    let mysql = {
        let mut edited = kelson_sql::MysqlConfig::new(fx.reader_url());
        edited.write_url = Some(fx.writer_url());
        edited
    };
    let adapter = SqlAdapter::mysql(mysql, config).await.unwrap();
    let client = Arc::new(Client::new(&adapter).await);
    let args = json!({"sql": "UPDATE t SET a = a + SLEEP(60) + 1"});
    let first = client.call("execute", args.clone()).await;
    let key = first["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let state = first["requestState"].as_str().unwrap().to_owned();
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let (client, cancel) = (client.clone(), cancel.clone());
        async move {
            let params = json!({
                "name": "execute", "arguments": args,
                "inputResponses": {key: {"action": "accept", "content": {"approve": true}}},
                "requestState": state, "_meta": support::meta(true),
            });
            client.send("tools/call", params, cancel).await
        }
    });
    my_wait(&fx, &fx.writer, true).await;
    cancel.cancel();
    let result = call.await.unwrap();
    assert!(
        tool_error(&result["result"]).contains("rolled back"),
        "{result}"
    );
    my_wait(&fx, &fx.writer, false).await;
    assert_eq!(
        fx.scalar(&format!("SELECT a FROM `{}`.t", fx.db)).await,
        "1"
    );
}
