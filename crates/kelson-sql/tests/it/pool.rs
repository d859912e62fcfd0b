//! Connection pools under slow statements: a quick query is not held up behind two slow ones, a
//! call that cannot get a connection in time is refused as busy, and the pools report their queue.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kelson_sql::{Database, DatabaseConfig, Limits, PoolStats, SqlAdapter, SqliteConfig};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::support::{self, Client, PgFixture, TempDir, ok, sqlite_file, tool_error, wait_until};

/// Counts to a hundred billion: it runs until it is cancelled.
const SLOW_SQLITE: &str = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 100000000000) \
                           SELECT count(*) FROM n";
const SLOW_PG: &str = "SELECT pg_sleep(100)";

fn limits(connection_wait: Duration) -> DatabaseConfig {
    {
        let mut edited = DatabaseConfig::default();
        edited.limits = {
            let mut edited = Limits::default();
            edited.timeout = Duration::from_secs(120);
            edited.connection_wait = connection_wait;
            edited
        };
        edited
    }
}

fn read_pool(db: &Database) -> PoolStats {
    db.pools()
        .into_iter()
        .find(|p| p.pool == "read")
        .expect("a read pool")
}

/// Starts `n` calls of `sql` that run until `cancel` fires.
fn start_slow(
    client: &Arc<Client>,
    sql: &'static str,
    n: usize,
    cancel: &CancellationToken,
) -> Vec<JoinHandle<Value>> {
    (0..n)
        .map(|_| {
            let (client, cancel) = (client.clone(), cancel.clone());
            tokio::spawn(async move {
                client
                    .call_cancellable("query", json!({"sql": sql}), cancel)
                    .await
            })
        })
        .collect()
}

async fn stop(slow: Vec<JoinHandle<Value>>, cancel: CancellationToken) {
    cancel.cancel();
    for call in slow {
        call.await.expect("the slow call ends");
    }
}

async fn sqlite(read_connections: Option<usize>, wait: Duration) -> (TempDir, SqlAdapter) {
    let dir = TempDir::new();
    let path = dir.path("pool.db");
    sqlite_file(&path, "CREATE TABLE t (a); INSERT INTO t VALUES (1);");
    let mut config = SqliteConfig::new(&path);
    if let Some(n) = read_connections {
        config.read_connections = n;
    }
    let adapter = SqlAdapter::sqlite(config, limits(wait)).unwrap();
    (dir, adapter)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_third_query_runs_while_two_slow_ones_do() {
    assert!(SqliteConfig::new("x.db").read_connections >= 4);
    let (_dir, adapter) = sqlite(None, Duration::from_secs(60)).await;
    let db = adapter.databases()[0].clone();
    let client = Arc::new(Client::new(&adapter).await);
    let cancel = CancellationToken::new();
    let slow = start_slow(&client, SLOW_SQLITE, 2, &cancel);
    wait_until(Duration::from_secs(10), "two slow queries run", || {
        read_pool(&db).in_use == 2
    })
    .await;

    let started = Instant::now();
    let quick = client.call("query", json!({"sql": "SELECT 1"})).await;
    assert_eq!(ok(&quick)["rows"], json!([[1]]));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(read_pool(&db).waiting, 0);
    stop(slow, cancel).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_cannot_get_a_connection_in_time_is_refused_as_busy() {
    let (_dir, adapter) = sqlite(Some(2), Duration::from_millis(400)).await;
    let db = adapter.databases()[0].clone();
    let client = Arc::new(Client::new(&adapter).await);
    let cancel = CancellationToken::new();
    let slow = start_slow(&client, SLOW_SQLITE, 2, &cancel);
    wait_until(Duration::from_secs(10), "two slow queries run", || {
        read_pool(&db).in_use == 2
    })
    .await;

    let started = Instant::now();
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move { client.call("query", json!({"sql": "SELECT 1"})).await })
    };
    // The queue shows while the call waits.
    wait_until(Duration::from_secs(2), "the call waits", || {
        read_pool(&db).waiting == 1
    })
    .await;
    let refused = waiting.await.unwrap();
    let elapsed = started.elapsed();
    let message = tool_error(&refused);
    assert!(
        message.contains("busy")
            && message.contains("all 2 connections")
            && message.contains("400 ms"),
        "{message}"
    );
    assert!(
        elapsed >= Duration::from_millis(400) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    assert_eq!(
        read_pool(&db),
        PoolStats {
            pool: "read",
            size: 2,
            in_use: 2,
            waiting: 0,
            round_trips: 0,
        }
    );
    stop(slow, cancel).await;
    // The connections come back.
    let again = client
        .call("query", json!({"sql": "SELECT a FROM t"}))
        .await;
    assert_eq!(ok(&again)["rows"], json!([[1]]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_calls_wait_a_bounded_time_for_a_connection() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new("CREATE TABLE t (a int); INSERT INTO t VALUES (1);").await;
    let config = {
        let mut edited = kelson_sql::PostgresConfig::new(fx.reader_url());
        edited.connections = 2;
        edited
    };
    let adapter = SqlAdapter::postgres(config, limits(Duration::from_millis(400)))
        .await
        .unwrap();
    let db = adapter.databases()[0].clone();
    let client = Arc::new(Client::new(&adapter).await);
    let cancel = CancellationToken::new();
    let slow = start_slow(&client, SLOW_PG, 2, &cancel);
    wait_until(Duration::from_secs(10), "two slow queries run", || {
        read_pool(&db).in_use == 2
    })
    .await;
    let refused = client.call("query", json!({"sql": "SELECT 1"})).await;
    assert!(
        tool_error(&refused).contains("all 2 connections"),
        "{refused}"
    );
    stop(slow, cancel).await;
    let again = client
        .call("query", json!({"sql": "SELECT a FROM t"}))
        .await;
    assert_eq!(ok(&again)["rows"], json!([[1]]));
}
