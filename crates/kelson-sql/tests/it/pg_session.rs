//! PostgreSQL sessions: what a call costs in round trips (seen on the wire by a proxy that records
//! what the adapter sends between two answers of the server, and counted by the pool), and that
//! nothing a call leaves in its session reaches the next call on the same connection.

use std::net::SocketAddr;

use crate::proxy::{Proxy, contains};
use crate::support::{self, Client, PgFixture, ok, pg_base, pg_url, tool_error};
use crate::writes::approved;
use kelson_sql::{Database, DatabaseConfig, Limits, PostgresConfig, SqlAdapter};
use serde_json::{Value, json};

/// Flights without the reset of the previous call in front: written when that call ended, it
/// shares the flight of the next call when the server has not answered it yet.
fn calls(flights: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    flights
        .iter()
        .map(|flight| {
            tags(flight)
                .into_iter()
                .skip_while(|t| *t == b'Q')
                .collect()
        })
        .collect()
}

/// The type bytes of the messages in a flight of typed messages (everything after the startup).
fn tags(mut bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while bytes.len() >= 5 {
        let len = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize;
        out.push(bytes[0]);
        bytes = &bytes[(1 + len).min(bytes.len())..];
    }
    out
}

/// The test server's address and database, from the connection string the tests use.
fn upstream() -> (SocketAddr, String) {
    let config: tokio_postgres::Config = pg_base().parse().unwrap();
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let addr = format!("{host}:{port}")
        .parse()
        .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], port)));
    (addr, config.get_dbname().unwrap_or("test").to_owned())
}

/// A database of one connection per pool: every call of a test meets the same session.
async fn one_connection(url: String, write: bool) -> (Database, Client) {
    let mut pg = PostgresConfig::new(url);
    pg.connections = 1;
    let mut config = DatabaseConfig::default();
    config.allow_write = write;
    config.limits = Limits::default();
    let db = Database::postgres("main", pg, config).await.unwrap();
    let adapter = SqlAdapter::new([db.clone()]).unwrap();
    let client = Client::new(&adapter).await;
    (db, client)
}

/// A read-only database of one connection that reaches the fixture's server through a recording
/// proxy.
async fn through_proxy(fx: &PgFixture) -> (Proxy, Database, Client) {
    let (addr, dbname) = upstream();
    let proxy = Proxy::start(addr).await;
    let url = format!(
        "host=127.0.0.1 port={} dbname={dbname} user={}",
        proxy.port, fx.reader
    );
    let (db, client) = one_connection(url, false).await;
    (proxy, db, client)
}

/// The next flight on the connection after the one holding `marker` that `done` accepts, waited
/// for (the proxy may still be relaying it when a call returns); fails after 10 s.
async fn flight_after(proxy: &Proxy, marker: &str, done: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let flight = proxy.flight_after(marker);
        if let Some(flight) = flight.as_ref().filter(|f| done(f)) {
            return flight.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no such flight after {marker:?}: {flight:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

fn trips(db: &Database) -> u64 {
    db.pools()[0].round_trips
}

async fn query(client: &Client, sql: &str) -> Value {
    client.call("query", json!({ "sql": sql })).await
}

const ACCOUNTS: &str = "
CREATE TYPE tier AS ENUM ('basic', 'gold');
CREATE TABLE accounts (id serial PRIMARY KEY, owner text NOT NULL, balance numeric(12, 2) NOT NULL, tier tier);
INSERT INTO accounts (owner, balance, tier)
  SELECT 'owner ' || i, i * 1.5, CASE WHEN i % 2 = 0 THEN 'gold'::tier ELSE 'basic'::tier END
  FROM generate_series(1, 600) i;
";

#[tokio::test]
async fn a_one_row_read_is_one_round_trip_on_the_wire() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new(ACCOUNTS).await;
    let (proxy, db, client) = through_proxy(&fx).await;
    // The connection is open (the role check at the start used it).
    let sql = "SELECT id, owner, balance FROM accounts WHERE id = 42 -- first";
    let before = trips(&db);
    let rows = query(&client, sql).await;
    assert_eq!(
        ok(&rows)["rows"],
        json!([[42, "owner 42", "63.00"]]),
        "{rows}"
    );
    assert_eq!(trips(&db) - before, 1, "one wait for the server");
    // Everything went out in one write: the transaction's start, its limits, then the statement's
    // Parse, Describe, Bind and Execute, and one Sync.
    assert_eq!(
        calls(proxy.flights_with("-- first")),
        vec![b"PBEPBEPDBES".to_vec()],
        "the read's messages, in flights"
    );
    // The rollback and the reset went in a flight of their own, which the call did not wait for.
    let reset = flight_after(&proxy, "-- first", |_| true).await;
    assert_eq!(tags(&reset), b"Q");
    assert!(contains(&reset, b"ROLLBACK"), "{reset:?}");

    // The next read reads the reset's answer with its own: again one wait.
    let before = trips(&db);
    let rows = query(&client, "SELECT owner FROM accounts WHERE id = 7 -- second").await;
    assert_eq!(ok(&rows)["rows"], json!([["owner 7"]]));
    assert_eq!(trips(&db) - before, 1);
    assert_eq!(
        calls(proxy.flights_with("-- second")),
        vec![b"PBEPBEPDBES".to_vec()]
    );

    // 600 rows are fetched 256 at a time: three waits.
    let before = trips(&db);
    let rows = query(&client, "SELECT id FROM accounts ORDER BY id").await;
    assert_eq!(ok(&rows)["rows"].as_array().unwrap().len(), 600);
    assert_eq!(trips(&db) - before, 3);

    // A type that is not built in costs one lookup the first time it is met, then nothing.
    let before = trips(&db);
    let rows = query(
        &client,
        "SELECT tier FROM accounts WHERE id IN (1, 2) ORDER BY id",
    )
    .await;
    assert_eq!(ok(&rows)["rows"], json!([["basic"], ["gold"]]));
    assert_eq!(trips(&db) - before, 2);
    let before = trips(&db);
    let rows = query(&client, "SELECT tier FROM accounts WHERE id = 4").await;
    assert_eq!(ok(&rows)["rows"], json!([["gold"]]));
    assert_eq!(trips(&db) - before, 1);
}

/// Each kind of state a statement can leave in its session, and how the next call looks for it.
#[tokio::test]
async fn nothing_a_read_leaves_in_its_session_reaches_the_next_call() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new(ACCOUNTS).await;
    // So that a refusal of nextval is the read-only transaction's, not a missing privilege.
    fx.admin
        .batch_execute(&format!(
            "GRANT USAGE ON SEQUENCE {}.accounts_id_seq TO {}",
            fx.schema, fx.reader
        ))
        .await
        .unwrap();
    let (_, client) = one_connection(pg_url(&fx.reader), false).await;
    let scalar = |sql: &'static str| {
        let client = &client;
        async move { ok(&query(client, sql).await)["rows"][0][0].clone() }
    };
    let pid = scalar("SELECT pg_backend_pid()").await;
    let search_path = scalar("SELECT current_setting('search_path')").await;
    let app = scalar("SELECT current_setting('application_name')").await;

    // What a read-only transaction allows and a rollback does not undo: cleared by the reset.
    ok(&query(&client, "SELECT pg_advisory_lock(4242)").await);
    assert_eq!(
        scalar(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        )
        .await,
        json!(0)
    );
    ok(&query(&client, "PREPARE leak AS SELECT 1").await);
    assert_eq!(
        scalar("SELECT count(*) FROM pg_prepared_statements").await,
        json!(0)
    );

    // What the rollback undoes.
    ok(&query(&client, "SET search_path = pg_catalog").await);
    assert_eq!(
        scalar("SELECT current_setting('search_path')").await,
        search_path
    );
    ok(&query(
        &client,
        "SELECT set_config('application_name', 'leak', false)",
    )
    .await);
    assert_eq!(
        scalar("SELECT current_setting('application_name')").await,
        app
    );
    ok(&query(&client, "SET statement_timeout = 1").await);
    assert_eq!(
        scalar("SELECT count(*) FROM pg_sleep(0.05)").await,
        json!(1),
        "the session's statement_timeout is back to the call's limit"
    );
    ok(&query(&client, "LISTEN leak").await);
    assert_eq!(
        scalar("SELECT count(*) FROM pg_listening_channels()").await,
        json!(0)
    );
    ok(&query(&client, "DECLARE leak CURSOR WITH HOLD FOR SELECT 1").await);
    assert_eq!(
        scalar("SELECT count(*) FROM pg_cursors WHERE name = 'leak'").await,
        json!(0)
    );

    // What would outlive the transaction otherwise is refused in a read-only one.
    let refused = query(&client, "CREATE TEMP TABLE leak (x int)").await;
    assert!(tool_error(&refused).contains("read-only"), "{refused}");
    let refused = query(&client, "SELECT nextval('accounts_id_seq')").await;
    assert!(tool_error(&refused).contains("read-only"), "{refused}");
    let never = query(&client, "SELECT currval('accounts_id_seq')").await;
    assert!(tool_error(&never).contains("not yet defined"), "{never}");

    // All of it on one session, which the resets kept serving.
    assert_eq!(scalar("SELECT pg_backend_pid()").await, pid);
}

/// An approved write commits what its statement did to the session too: the reset after the
/// commit (`DISCARD ALL`, in the write's round trip) clears it before the next write.
#[tokio::test]
async fn nothing_a_committed_write_leaves_in_its_session_reaches_the_next_write() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new(ACCOUNTS).await;
    let mut pg = PostgresConfig::new(fx.reader_url());
    pg.write_url = Some(fx.writer_url());
    pg.connections = 1;
    let mut config = DatabaseConfig::default();
    config.allow_write = true;
    let db = Database::postgres("main", pg, config).await.unwrap();
    let client = Client::new(&SqlAdapter::new([db.clone()]).unwrap()).await;
    let write = |sql: &'static str| {
        let client = &client;
        async move { ok(&approved(client, json!({ "sql": sql })).await).clone() }
    };
    let pid = write("SELECT pg_backend_pid()").await["rows"][0][0].clone();
    let search_path = write("SELECT current_setting('search_path')").await["rows"][0][0].clone();

    let before = db.pools()[1].round_trips;
    write("SET search_path = pg_catalog").await;
    assert_eq!(
        db.pools()[1].round_trips - before,
        1,
        "a write is one round trip"
    );
    assert_eq!(
        write("SELECT current_setting('search_path')").await["rows"][0][0],
        search_path
    );
    write("CREATE TEMP TABLE leak AS SELECT 1 AS x").await;
    assert_eq!(
        write("SELECT count(*) FROM pg_class WHERE relname = 'leak' AND relpersistence = 't'")
            .await["rows"][0][0],
        json!(0)
    );
    write("SELECT pg_advisory_lock(77)").await;
    assert_eq!(
        write(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        )
        .await["rows"][0][0],
        json!(0)
    );
    write("SELECT nextval('accounts_id_seq')").await;
    let never = approved(&client, json!({"sql": "SELECT currval('accounts_id_seq')"})).await;
    assert!(tool_error(&never).contains("not yet defined"), "{never}");
    assert_eq!(write("SELECT pg_backend_pid()").await["rows"][0][0], pid);
}

/// Under load, a read's rollback and reset go out in front of the next call's own messages
/// (one write fewer for the adapter, one read fewer for the server); the connection is never
/// idle long with them unsent.
#[tokio::test]
async fn a_waiting_call_carries_the_previous_reads_reset() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new(ACCOUNTS).await;
    let (proxy, db, client) = through_proxy(&fx).await;
    let before = trips(&db);
    // The second call waits for the one connection while the first runs.
    let (slow, next) = tokio::join!(
        query(&client, "SELECT count(*) FROM pg_sleep(0.3) -- slow"),
        query(&client, "SELECT owner FROM accounts WHERE id = 9 -- next"),
    );
    assert_eq!(ok(&slow)["rows"], json!([[1]]), "{slow}");
    assert_eq!(ok(&next)["rows"], json!([["owner 9"]]), "{next}");
    assert_eq!(trips(&db) - before, 2, "still one wait per call");
    // The first call's end went out with the second call, in one flight.
    let flights = proxy.flights_with("-- next");
    assert_eq!(flights.len(), 1);
    let tags = tags(&flights[0]);
    assert_eq!(tags[0], b'Q', "{tags:?}");
    assert!(contains(&flights[0], b"ROLLBACK"));
    assert_eq!(calls(flights), vec![b"PBEPBEPDBES".to_vec()]);
    assert!(
        proxy
            .flight_after("-- slow")
            .is_some_and(|f| contains(&f, b"-- next")),
        "no flight of its own for the first call's reset"
    );

    // A waiting call that gives up leaves the reset unsent in the pool: the pool writes it
    // itself, and the session leaves its transaction.
    let slow = query(&client, "SELECT count(*) FROM pg_sleep(0.3) -- again");
    tokio::pin!(slow);
    // Boxed so that dropping it below ends the call there, while it waits.
    let mut never = Box::pin(query(&client, "SELECT 1 -- never"));
    let slow = tokio::select! {
        biased;
        done = &mut slow => done,
        _ = &mut never => panic!("the second call ran while the first held the connection"),
    };
    drop(never);
    assert_eq!(ok(&slow)["rows"], json!([[1]]), "{slow}");
    flight_after(&proxy, "-- again", |f| contains(f, b"ROLLBACK")).await;
    assert!(proxy.flights_with("-- never").is_empty());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let rows = fx
            .admin
            .query(
                "SELECT state FROM pg_stat_activity WHERE usename = $1 AND application_name = 'kelson-sql'",
                &[&fx.reader],
            )
            .await
            .unwrap();
        let states: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        if states == ["idle"] {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the session stayed {states:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
