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

/// How the adapter sends a text of the user's: its UTF-8 bytes in hex.
fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_one_row_read_is_one_round_trip_before_its_answer_and_one_after() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(ACCOUNTS).await;
    let proxy = Proxy::start(upstream()).await;
    let (db, client) = one_connection(&fx.reader, &fx.db, proxy.port).await;
    for marker in ["-- first", "-- second"] {
        let sql = format!("SELECT id, owner, balance FROM accounts WHERE id = ? {marker}");
        let rows = client
            .call("query", json!({ "sql": sql, "params": [42] }))
            .await;
        assert_eq!(
            ok(&rows)["rows"],
            json!([[42, "owner 42", "63.00"]]),
            "{rows}"
        );
        settled(&db).await;
    }
    // The first read, up to the second's start: one query that sets the limits, starts the
    // read-only XA transaction, prepares and executes the statement and ends and rolls back the
    // transaction; after the answer, the session reset (which also drops the variables and the
    // prepared statement).
    let flights = proxy.flights_from(&hex("-- first"));
    let second = flights
        .iter()
        .position(|f| contains(f, hex("-- second").as_bytes()))
        .expect("the second read's query");
    let first: Vec<Vec<u8>> = flights[..second].iter().map(|f| commands(f)).collect();
    assert_eq!(
        first,
        vec![vec![0x03], vec![0x1f]],
        "the first read's packets, in flights"
    );
    let query = String::from_utf8_lossy(&flights[0][5..]).into_owned();
    let order = [
        "max_statement_time",
        "sql_select_limit",
        "@kelson_p1 = 42",
        "SET TRANSACTION READ ONLY",
        "XA START",
        "PREPARE kelson_stmt FROM @kelson_sql",
        "EXECUTE kelson_stmt USING @kelson_p1",
        "XA END",
        "XA ROLLBACK",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|part| {
            query
                .find(part)
                .unwrap_or_else(|| panic!("{part} in {query}"))
        })
        .collect();
    assert!(at.is_sorted(), "the statements' order: {query}");
    // The user's text is never in the query as text.
    assert!(!query.contains("accounts"), "{query}");
    // The second read costs the same.
    assert_eq!(flights.len() - second, 2, "the second read's flights");
}

/// A statement that fails leaves its transaction open, since the query stops at it: it is ended,
/// rolled back and the session reset after the answer, and the next call finds a clean session.
#[tokio::test]
async fn a_failed_read_ends_its_transaction_before_the_next_call() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(ACCOUNTS).await;
    let proxy = Proxy::start(upstream()).await;
    let (db, client) = one_connection(&fx.reader, &fx.db, proxy.port).await;
    for sql in [
        "SELECT nope FROM accounts -- failed prepare",
        "SELECT 1 + ? -- failed execute",
        "INSERT INTO accounts VALUES (1000, 'x', 0) -- refused write",
    ] {
        let failed = query(&client, sql).await;
        assert_eq!(failed["isError"], json!(true), "{sql}: {failed}");
        settled(&db).await;
        // A transaction still open would make this call's `XA START` fail.
        let rows = query(&client, "SELECT COUNT(*) FROM accounts").await;
        assert_eq!(ok(&rows)["rows"], json!([[100]]), "after {sql}: {rows}");
        settled(&db).await;
    }
    // Each failure: the query, then the end and rollback, then the reset.
    let flights = proxy.flights_from(&hex("-- failed prepare"));
    let commands: Vec<Vec<u8>> = flights[..3].iter().map(|f| commands(f)).collect();
    assert_eq!(commands, vec![vec![0x03], vec![0x03], vec![0x1f]]);
    assert!(contains(&flights[1], b"XA ROLLBACK"));
    // The placeholder count is told in words.
    let count = query(&client, "SELECT ?, ?").await;
    assert!(
        count["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("2 parameter placeholder(s) (?) but 0 value(s)"),
        "{count}"
    );
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
    // The adapter's own variables (a call's values) and prepared statement do not stay either.
    let with_value = client
        .call("query", json!({"sql": "SELECT ? + 0", "params": [7]}))
        .await;
    assert_eq!(ok(&with_value)["rows"], json!([[7]]), "{with_value}");
    settled(&db).await;
    let seen = query(&client, "SELECT @kelson_p1").await;
    assert_eq!(ok(&seen)["rows"], json!([[null]]), "{seen}");
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
    // The first read looks the table up after its rows came; the reads after it cost what a read
    // of a table without text costs: the query and the reset.
    let first = proxy.flights_from(&hex("-- first"));
    assert!(contains(&first[1], b"CHECK_CONSTRAINTS"));
    let flights = proxy.flights_from(&hex("-- second"));
    assert_eq!(flights.len(), 2 + 2);
}
