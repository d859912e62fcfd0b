//! Writes through `execute`: a full MRTR approval round, declines, replays, unsolicited approvals,
//! clients without elicitation, and failed writes rolled back; on SQLite, PostgreSQL and MariaDB.

use std::future::Future;

use kelson_sql::{DatabaseConfig, MysqlConfig, PostgresConfig, SqlAdapter};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{
    self, Client, MyFixture, PgFixture, SHOP, TempDir, ok, sqlite_file, text, tool_error,
};

fn writable() -> DatabaseConfig {
    {
        let mut edited = DatabaseConfig::default();
        edited.allow_write = true;
        edited
    }
}

/// The single input request of an `input_required` result: its key, and the state to echo.
#[track_caller]
fn asked(result: &Value) -> (String, Value, String) {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let requests = result["inputRequests"].as_object().expect("input requests");
    assert_eq!(requests.len(), 1, "{result}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    let state = result["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned();
    (key.clone(), request["params"].clone(), state)
}

fn accept(approve: bool) -> Value {
    json!({"action": "accept", "content": {"approve": approve}})
}

/// The whole approval story against one database; `count` reads the number of customers.
async fn approval_story<F, Fut>(client: &Client, insert: &str, count: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = i64>,
{
    let args = json!({"sql": insert, "params": ["Mallory"]});
    let start = count().await;

    // Round 1: the server asks, showing the exact statement and parameters.
    let first = client.call("execute", args.clone()).await;
    let (key, params, state) = asked(&first);
    let message = params["message"].as_str().unwrap();
    assert!(message.contains(&format!("\n\n{insert}\n\n")), "{message}");
    assert!(message.contains("Parameters: [\"Mallory\"]"), "{message}");
    assert_eq!(params["requestedSchema"]["required"], json!(["approve"]));
    assert_eq!(count().await, start, "nothing runs before approval");

    // A declined confirmation changes nothing and says so.
    let declined = client
        .retry(
            "execute",
            args.clone(),
            Some(json!({ &key: {"action": "decline"} })),
            Some(&state),
        )
        .await;
    assert!(
        tool_error(&declined).contains("the user declined, so nothing was changed"),
        "{declined}"
    );
    let dismissed = client
        .retry(
            "execute",
            args.clone(),
            Some(json!({ &key: {"action": "cancel"} })),
            Some(&state),
        )
        .await;
    assert!(tool_error(&dismissed).contains("nothing was changed"));
    let unticked = client
        .retry(
            "execute",
            args.clone(),
            Some(json!({ &key: accept(false) })),
            Some(&state),
        )
        .await;
    assert!(tool_error(&unticked).contains("without ticking"));
    assert_eq!(count().await, start);

    // An unsolicited approval (no requestState) is never accepted: the server asks again, under a
    // new key, even when the answer uses the key of an earlier round.
    for key in [key.as_str(), "approve"] {
        let unsolicited = client
            .retry(
                "execute",
                args.clone(),
                Some(json!({ key: accept(true) })),
                None,
            )
            .await;
        let (new_key, _, _) = asked(&unsolicited);
        assert_ne!(new_key, key);
    }
    assert_eq!(count().await, start);

    // A retry with the state but no answer asks again.
    let again = client
        .retry("execute", args.clone(), None, Some(&state))
        .await;
    let (same_key, _, _) = asked(&again);
    assert_eq!(same_key, key);

    // The approved retry, in a fresh round, runs the statement once.
    let fresh = client.call("execute", args.clone()).await;
    let (key, _, state) = asked(&fresh);
    let approved = client
        .retry(
            "execute",
            args.clone(),
            Some(json!({ &key: accept(true) })),
            Some(&state),
        )
        .await;
    let out = ok(&approved);
    assert_eq!(out["rows_affected"], 1, "{approved}");
    assert!(text(&approved).contains("committed"), "{}", text(&approved));
    assert_eq!(count().await, start + 1);

    // Replaying the same state and answer does not run it twice.
    for _ in 0..2 {
        let replay = client
            .retry(
                "execute",
                args.clone(),
                Some(json!({ &key: accept(true) })),
                Some(&state),
            )
            .await;
        assert!(tool_error(&replay).contains("already used"), "{replay}");
    }
    assert_eq!(count().await, start + 1);

    // The state is bound to the statement: it cannot approve a different one.
    let other = json!({"sql": insert, "params": ["Eve"]});
    let swapped = client
        .send(
            "tools/call",
            json!({"name": "execute", "arguments": other, "inputResponses": { &key: accept(true) },
                   "requestState": state, "_meta": crate::support::meta(true)}),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(swapped["error"]["code"], -32602, "{swapped}");
    assert_eq!(count().await, start + 1);

    // A client that did not declare elicitation gets -32021, and nothing runs.
    let no_caps = client
        .send(
            "tools/call",
            json!({"name": "execute", "arguments": args, "_meta": crate::support::meta(false)}),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(no_caps["error"]["code"], -32021, "{no_caps}");
    assert_eq!(count().await, start + 1);
}

/// Runs one approved statement and returns the result.
pub async fn approved(client: &Client, args: Value) -> Value {
    let first = client.call("execute", args.clone()).await;
    let (key, _, state) = asked(&first);
    client
        .retry(
            "execute",
            args,
            Some(json!({ &key: accept(true) })),
            Some(&state),
        )
        .await
}

#[tokio::test]
async fn sqlite_write_approval() {
    let dir = TempDir::new();
    let path = dir.path("shop.db");
    sqlite_file(&path, SHOP);
    let adapter = SqlAdapter::sqlite(path.as_path(), writable()).unwrap();
    let client = Client::new(&adapter).await;
    let count = || {
        let path = path.clone();
        async move {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.query_row("SELECT count(*) FROM customers", [], |r| r.get::<_, i64>(0))
                .unwrap()
        }
    };
    approval_story(&client, "INSERT INTO customers (name) VALUES (?1)", count).await;

    // RETURNING rows come back, and the count of changed rows is right.
    let returned = approved(
        &client,
        json!({"sql": "UPDATE orders SET total = total + 1 WHERE customer_id = ?1 RETURNING id, total", "params": [1]}),
    )
    .await;
    let r = ok(&returned);
    assert_eq!(r["rows_affected"], 2);
    assert_eq!(r["rows"], json!([[1, 51.5], [2, 151.0]]));

    // A failing statement is a tool error and leaves nothing behind.
    let before = crate::support::sqlite_snapshot(&path);
    let failed = approved(
        &client,
        json!({"sql": "INSERT INTO orders (customer_id, total) VALUES (?1, 1)", "params": [999]}),
    )
    .await;
    assert!(
        tool_error(&failed).contains("FOREIGN KEY constraint failed"),
        "{failed}"
    );
    let escape = approved(&client, json!({"sql": "ATTACH DATABASE 'x.db' AS x"})).await;
    assert!(
        tool_error(&escape).contains("ATTACH is not allowed"),
        "{escape}"
    );
    let two = approved(
        &client,
        json!({"sql": "DELETE FROM orders; DROP TABLE customers"}),
    )
    .await;
    assert!(tool_error(&two).contains("exactly one"), "{two}");
    let txn = approved(&client, json!({"sql": "COMMIT"})).await;
    assert!(tool_error(&txn).contains("transaction control"), "{txn}");
    assert_eq!(crate::support::sqlite_snapshot(&path), before);
}

#[tokio::test]
async fn postgres_write_approval() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new(
        "CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL);
         CREATE TABLE orders (id serial PRIMARY KEY, customer_id int NOT NULL REFERENCES customers(id), total numeric(10,2) NOT NULL);
         INSERT INTO customers (name) VALUES ('Ada'), ('Alan');
         INSERT INTO orders (customer_id, total) VALUES (1, 10.50), (1, 20.00);",
    )
    .await;
    let pg = {
        let mut edited = PostgresConfig::new(fx.reader_url());
        edited.write_url = Some(fx.writer_url());
        edited
    };
    let adapter = SqlAdapter::postgres(pg, writable()).await.unwrap();
    let client = Client::new(&adapter).await;
    let table = format!("{}.customers", fx.schema);
    let count = || {
        let sql = format!("SELECT count(*) FROM {table}");
        let fx = &fx;
        async move { fx.scalar(&sql).await.parse::<i64>().unwrap() }
    };
    approval_story(&client, "INSERT INTO customers (name) VALUES ($1)", count).await;

    let returned = approved(
        &client,
        json!({"sql": "UPDATE orders SET total = total + 1 WHERE customer_id = $1 RETURNING id, total", "params": [1]}),
    )
    .await;
    let r = ok(&returned);
    assert_eq!(r["rows_affected"], 2);
    assert_eq!(r["rows"], json!([[1, "11.50"], [2, "21.00"]]));

    let failed = approved(
        &client,
        json!({"sql": "INSERT INTO orders (customer_id, total) VALUES ($1, 1)", "params": [999]}),
    )
    .await;
    assert!(
        tool_error(&failed).contains("violates foreign key constraint"),
        "{failed}"
    );
    let two = approved(
        &client,
        json!({"sql": "DELETE FROM orders; DROP TABLE customers"}),
    )
    .await;
    assert!(tool_error(&two).contains("exactly one"), "{two}");
    assert_eq!(
        fx.scalar(&format!("SELECT count(*) FROM {}.orders", fx.schema))
            .await,
        "2"
    );
    assert_eq!(
        fx.scalar(&format!("SELECT sum(total) FROM {}.orders", fx.schema))
            .await,
        "32.50"
    );
}

#[tokio::test]
async fn mysql_write_approval() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(
        "CREATE TABLE customers (id int AUTO_INCREMENT PRIMARY KEY, name varchar(100) NOT NULL) ENGINE=InnoDB;;
         CREATE TABLE orders (id int AUTO_INCREMENT PRIMARY KEY, customer_id int NOT NULL, total decimal(10,2) NOT NULL,
             FOREIGN KEY (customer_id) REFERENCES customers (id)) ENGINE=InnoDB;;
         INSERT INTO customers (name) VALUES ('Ada'), ('Alan');;
         INSERT INTO orders (customer_id, total) VALUES (1, 10.50), (1, 20.00)",
    )
    .await;
    // Reads run as the reader; `execute` gets a connection of its own, as the writer.
    let mysql = {
        let mut edited = MysqlConfig::new(fx.reader_url());
        edited.write_url = Some(fx.writer_url());
        edited
    };
    let adapter = SqlAdapter::mysql(mysql, writable()).await.unwrap();
    let client = Client::new(&adapter).await;
    let table = format!("`{}`.customers", fx.db);
    let count = || {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        let fx = &fx;
        async move { fx.scalar(&sql).await.parse::<i64>().unwrap() }
    };
    approval_story(&client, "INSERT INTO customers (name) VALUES (?)", count).await;

    let updated = approved(
        &client,
        json!({"sql": "UPDATE orders SET total = total + 1 WHERE customer_id = ?", "params": [1]}),
    )
    .await;
    assert_eq!(ok(&updated)["rows_affected"], 2);
    let returned = approved(
        &client,
        json!({"sql": "INSERT INTO orders (customer_id, total) VALUES (?, ?) RETURNING id, total", "params": [2, "1.25"]}),
    )
    .await;
    let r = ok(&returned);
    assert_eq!(r["rows_affected"], 1);
    assert_eq!(r["rows"], json!([[3, "1.25"]]));

    let failed = approved(
        &client,
        json!({"sql": "INSERT INTO orders (customer_id, total) VALUES (?, 1)", "params": [999]}),
    )
    .await;
    assert!(
        tool_error(&failed).contains("foreign key constraint fails"),
        "{failed}"
    );
    let two = approved(
        &client,
        json!({"sql": "DELETE FROM orders; DROP TABLE customers"}),
    )
    .await;
    assert!(tool_error(&two).contains("exactly one"), "{two}");
    // The write pool never serves reads: a read-only `query` still refuses writes.
    let read = client
        .call("query", json!({"sql": "DELETE FROM orders"}))
        .await;
    assert!(tool_error(&read).contains("may not do this"), "{read}");
    assert_eq!(
        fx.scalar(&format!("SELECT COUNT(*) FROM `{}`.orders", fx.db))
            .await,
        "3"
    );
    assert_eq!(
        fx.scalar(&format!("SELECT SUM(total) FROM `{}`.orders", fx.db))
            .await,
        "33.75"
    );
    // A write that outlives the time limit is rolled back.
    let slow = {
        let mut edited = writable();
        edited.limits.timeout = std::time::Duration::from_millis(500);
        edited
    };
    let mysql = {
        let mut edited = MysqlConfig::new(fx.reader_url());
        edited.write_url = Some(fx.writer_url());
        edited
    };
    let adapter = SqlAdapter::mysql(mysql, slow).await.unwrap();
    let client = Client::new(&adapter).await;
    let stopped = approved(
        &client,
        json!({"sql": "UPDATE orders SET total = total + SLEEP(5)"}),
    )
    .await;
    assert!(tool_error(&stopped).contains("rolled back"), "{stopped}");
    assert_eq!(
        fx.scalar(&format!("SELECT SUM(total) FROM `{}`.orders", fx.db))
            .await,
        "33.75"
    );
}

/// Two instances sharing a state key accept each other's sealed approvals. With a shared ledger an
/// approval runs its statement once between them; with the default in-memory record it would run
/// once on each (shown first, so the test could fail).
#[tokio::test]
async fn a_shared_ledger_makes_an_approval_single_use_across_instances() {
    if !support::postgres() {
        return;
    }
    let dir = TempDir::new();
    let path = dir.path("shop.db");
    sqlite_file(&path, SHOP);
    let count = || {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.query_row("SELECT count(*) FROM customers", [], |r| r.get::<_, i64>(0))
            .unwrap()
    };
    let key = [7u8; 32];
    let args = json!({"sql": "INSERT INTO customers (name) VALUES ($1)", "params": ["Mallory"]});
    // Approves on `a` and replays the same state and answer on `b`.
    async fn approve_then_replay(a: &Client, b: &Client, args: &Value) -> (Value, Value) {
        let first = a.call("execute", args.clone()).await;
        let (k, _, state) = asked(&first);
        let answer = Some(json!({ &k: accept(true) }));
        let ran = a
            .retry("execute", args.clone(), answer.clone(), Some(&state))
            .await;
        let replay = b.retry("execute", args.clone(), answer, Some(&state)).await;
        (ran, replay)
    }

    // Memory only: the replay on the other instance runs the statement a second time.
    let local_a = Client::with_state_key(
        &SqlAdapter::sqlite(path.as_path(), writable()).unwrap(),
        &key,
    )
    .await;
    let local_b = Client::with_state_key(
        &SqlAdapter::sqlite(path.as_path(), writable()).unwrap(),
        &key,
    )
    .await;
    let start = count();
    let (ran, replay) = approve_then_replay(&local_a, &local_b, &args).await;
    assert_eq!(ok(&ran)["rows_affected"], 1, "{ran}");
    assert_eq!(ok(&replay)["rows_affected"], 1, "{replay}");
    assert_eq!(count(), start + 2);

    // A shared ledger: the replay is refused on the other instance, and on the first one too.
    let fx = PgFixture::new("SELECT 1;").await;
    let shared = |url: String| {
        let path = path.clone();
        async move {
            SqlAdapter::sqlite(path.as_path(), writable())
                .unwrap()
                .with_shared_approvals(&url)
                .await
                .expect("the ledger connects")
        }
    };
    let a = Client::with_state_key(&shared(fx.writer_url()).await, &key).await;
    let b = Client::with_state_key(&shared(fx.writer_url()).await, &key).await;
    let start = count();
    let (ran, replay) = approve_then_replay(&a, &b, &args).await;
    assert_eq!(ok(&ran)["rows_affected"], 1, "{ran}");
    assert!(tool_error(&replay).contains("already used"), "{replay}");
    assert_eq!(count(), start + 1);
    let rows = fx
        .scalar(&format!(
            "SELECT count(*) FROM {}.{}",
            fx.schema,
            kelson_sql::LEDGER_TABLE
        ))
        .await;
    assert_eq!(rows, "1", "one approval recorded");

    // A ledger that cannot be reached is refused at start.
    let refused = SqlAdapter::sqlite(path.as_path(), writable())
        .unwrap()
        .with_shared_approvals("postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
        .await;
    assert!(refused.is_err());
}

/// A server that restarts with the same state key accepts its old sealed approvals; with an
/// approvals file a used one stays used (without it, shown first, it runs again).
#[tokio::test]
async fn an_approvals_file_keeps_an_approval_used_across_a_restart() {
    let dir = TempDir::new();
    let path = dir.path("shop.db");
    sqlite_file(&path, SHOP);
    let count = || {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.query_row("SELECT count(*) FROM customers", [], |r| r.get::<_, i64>(0))
            .unwrap()
    };
    let key = [8u8; 32];
    let args = json!({"sql": "INSERT INTO customers (name) VALUES ($1)", "params": ["Eve"]});
    let approvals = dir.path("approvals.db");
    let server = |file: bool| {
        let (path, approvals) = (path.clone(), approvals.clone());
        async move {
            let adapter = SqlAdapter::sqlite(path.as_path(), writable()).unwrap();
            let adapter = if file {
                adapter.with_approvals_file(&approvals).unwrap()
            } else {
                adapter
            };
            Client::with_state_key(&adapter, &key).await
        }
    };

    for file in [false, true] {
        let first = server(file).await;
        let asked_for = first.call("execute", args.clone()).await;
        let (k, _, state) = asked(&asked_for);
        let answer = Some(json!({ &k: accept(true) }));
        let start = count();
        let ran = first
            .retry("execute", args.clone(), answer.clone(), Some(&state))
            .await;
        assert_eq!(ok(&ran)["rows_affected"], 1, "{ran}");
        let replay = first
            .retry("execute", args.clone(), answer.clone(), Some(&state))
            .await;
        assert!(tool_error(&replay).contains("already used"), "{replay}");
        drop(first);

        let restarted = server(file).await;
        let replay = restarted
            .retry("execute", args.clone(), answer, Some(&state))
            .await;
        if file {
            assert!(tool_error(&replay).contains("already used"), "{replay}");
            assert_eq!(count(), start + 1);
        } else {
            assert_eq!(ok(&replay)["rows_affected"], 1, "memory forgets: {replay}");
            assert_eq!(count(), start + 2);
        }
    }

    // A place where the file cannot be made is refused at start.
    let refused = SqlAdapter::sqlite(path.as_path(), writable())
        .unwrap()
        .with_approvals_file(&dir.path("no/such/dir/approvals.db"));
    assert!(refused.is_err());
}
