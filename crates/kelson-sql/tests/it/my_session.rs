//! MariaDB sessions: what a call costs in round trips (seen on the wire by a proxy that records
//! what the adapter sends between two answers of the server), and that nothing a read leaves in
//! its session reaches the next call on the same connection.

use std::net::{SocketAddr, ToSocketAddrs as _};
use std::time::{Duration, Instant};

use kelson_sql::{Database, DatabaseConfig, Limits, MysqlConfig, SqlAdapter};
use serde_json::{Value, json};

use crate::proxy::{Proxy, contains};
use crate::support::{self, Client, MyFixture, my_base, ok};

const ACCOUNTS: &str = "
CREATE TABLE accounts (id int PRIMARY KEY, owner varchar(40) NOT NULL, balance decimal(12, 2) NOT NULL) ENGINE=InnoDB;;
INSERT INTO accounts SELECT seq, CONCAT('owner ', seq), seq * 1.5 FROM seq_1_to_100
";

/// The test server's address.
fn upstream() -> SocketAddr {
    let base = my_base();
    let hostport = base.trim_start_matches("mysql://").trim_end_matches('/');
    hostport
        .to_socket_addrs()
        .expect("the test MariaDB's address")
        .next()
        .expect("an address")
}

/// A database of one connection per pool, reached through `port`: every call of a test meets the
/// same session.
async fn one_connection(user: &str, db: &str, port: u16) -> (Database, Client) {
    let mut my = MysqlConfig::new(format!("mysql://{user}@127.0.0.1:{port}/{db}"));
    my.connections = 1;
    let mut config = DatabaseConfig::default();
    config.limits = Limits::default();
    let db = Database::mysql("main", my, config).await.unwrap();
    let adapter = SqlAdapter::new([db.clone()]).unwrap();
    let client = Client::new(&adapter).await;
    (db, client)
}

async fn query(client: &Client, sql: &str) -> Value {
    client.call("query", json!({ "sql": sql })).await
}

/// The command bytes of the packets in a flight (`0x03` a query, `0x16` a prepare, `0x17` an
/// execute, `0x19` a statement's close, `0x1f` a session reset).
fn commands(mut bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while bytes.len() >= 5 {
        let len = usize::from(bytes[0]) | usize::from(bytes[1]) << 8 | usize::from(bytes[2]) << 16;
        out.push(bytes[4]);
        bytes = &bytes[(4 + len).min(bytes.len())..];
    }
    out
}

/// Waits until the read pool has lent no connection: the last call has settled.
async fn settled(db: &Database) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while db.pools()[0].in_use > 0 {
        assert!(Instant::now() < deadline, "the connection never settled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_one_row_read_is_three_round_trips_before_its_answer_and_two_after() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(ACCOUNTS).await;
    let proxy = Proxy::start(upstream()).await;
    let (db, client) = one_connection(&fx.reader, &fx.db, proxy.port).await;
    for marker in ["-- first", "-- second"] {
        let sql = format!("SELECT id, owner, balance FROM accounts WHERE id = 42 {marker}");
        let rows = query(&client, &sql).await;
        assert_eq!(
            ok(&rows)["rows"],
            json!([[42, "owner 42", "63.00"]]),
            "{rows}"
        );
        settled(&db).await;
    }
    // The flights of the first read, up to the second's start: the limits, read-only and the XA
    // start in one query; the statement prepared; executed; then, after the answer, the
    // transaction ended and rolled back in one query; the session reset (which also drops the
    // prepared statement).
    let flights = proxy.flights_from("XA START");
    let second = flights
        .iter()
        .skip(1)
        .position(|f| contains(f, b"XA START"))
        .expect("the second read's start")
        + 1;
    let first: Vec<Vec<u8>> = flights[..second].iter().map(|f| commands(f)).collect();
    assert_eq!(
        first,
        vec![vec![0x03], vec![0x16], vec![0x17], vec![0x03], vec![0x1f]],
        "the first read's packets, in flights"
    );
    assert!(contains(&flights[0], b"SET TRANSACTION READ ONLY"));
    assert!(contains(&flights[0], b"max_statement_time"));
    assert!(contains(&flights[1], b"-- first"));
    assert!(contains(&flights[3], b"XA ROLLBACK"));
    // The second read costs the same.
    assert_eq!(flights.len() - second, 5, "the second read's flights");
}

/// Each kind of state a read can leave in its session, and how the next call looks for it.
#[tokio::test]
async fn nothing_a_read_leaves_in_its_session_reaches_the_next_call() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(ACCOUNTS).await;
    let (db, client) = one_connection(&fx.reader, &fx.db, upstream().port()).await;
    let cases: [(&str, &str, Value); 4] = [
        // A user variable.
        ("SELECT @leak := 42", "SELECT @leak", json!([[null]])),
        // A user-level lock.
        (
            "SELECT GET_LOCK('kelson_leak', 0)",
            "SELECT IS_USED_LOCK('kelson_leak') IS NULL",
            json!([[1]]),
        ),
        // A session setting, changed by a statement of the user's.
        (
            "SET SESSION div_precision_increment = 9",
            "SELECT @@SESSION.div_precision_increment = @@GLOBAL.div_precision_increment",
            json!([[1]]),
        ),
        // The row limit of the previous call does not stay: the next call sets its own.
        (
            "SET SESSION sql_select_limit = 1",
            "SELECT id FROM accounts WHERE id <= 3 ORDER BY id",
            json!([[1], [2], [3]]),
        ),
    ];
    for (leave, look, expected) in cases {
        // The statement that leaves the state may be refused (then nothing was left either).
        let _ = query(&client, leave).await;
        settled(&db).await;
        let seen = query(&client, look).await;
        assert_eq!(ok(&seen)["rows"], expected, "after {leave}: {seen}");
        settled(&db).await;
    }
}

/// MariaDB marks no JSON column in a result: the adapter asks the catalog about a table with a
/// text column once, not on every read.
#[tokio::test]
async fn a_text_columns_json_lookup_is_made_once_per_table_not_per_read() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(
        "CREATE TABLE notes (id int PRIMARY KEY, body text, meta JSON) ENGINE=InnoDB;;
         INSERT INTO notes VALUES (1, 'kept', '{\"k\": 1}')",
    )
    .await;
    let proxy = Proxy::start(upstream()).await;
    let (db, client) = one_connection(&fx.reader, &fx.db, proxy.port).await;
    for marker in ["-- first", "-- second", "-- third"] {
        let rows = query(&client, &format!("SELECT body, meta FROM notes {marker}")).await;
        // The JSON column is still told from the text one.
        assert_eq!(ok(&rows)["rows"], json!([["kept", {"k": 1}]]), "{rows}");
        settled(&db).await;
    }
    assert_eq!(
        proxy.flights_with("CHECK_CONSTRAINTS").len(),
        1,
        "one catalog lookup for three reads"
    );
    // The reads after the first cost what a read of a table without text costs: from the second
    // read's prepare on, its prepare, execute, end and reset, then the third read's five.
    let flights = proxy.flights_from("-- second");
    assert_eq!(flights.len(), 4 + 5);
}
