//! The tools on PostgreSQL: results and types, every read-only bypass attempt, the time limit,
//! row and byte limits, and the refusal of privileged roles.

use std::time::{Duration, Instant};

use kelson_sql::{DatabaseConfig, Limits, PostgresConfig, SqlAdapter, SqlError};
use serde_json::{Value, json};

use crate::support::{self, Client, PgFixture, ok, pg_admin, pg_url, text, tool_error};

const SHOP: &str = "
CREATE TYPE mood AS ENUM ('happy', 'sad');
CREATE TYPE size AS ENUM ('small', 'big');
CREATE TABLE customers (
    id serial PRIMARY KEY,
    name text NOT NULL,
    email varchar(200) UNIQUE,
    joined date NOT NULL DEFAULT '2024-01-15',
    mood mood
);
CREATE TABLE orders (
    id bigserial PRIMARY KEY,
    customer_id int NOT NULL REFERENCES customers(id),
    total numeric(10, 2) NOT NULL,
    placed_at timestamptz NOT NULL,
    tags text[],
    meta jsonb,
    ref uuid
);
CREATE INDEX orders_customer ON orders (customer_id);
CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
INSERT INTO customers (name, email, mood) VALUES ('Ada', 'ada@example.com', 'happy'), ('Alan', NULL, NULL);
INSERT INTO orders (customer_id, total, placed_at, tags, meta, ref) VALUES
  (1, 12.50, '2025-03-04 05:06:07.25+00', '{a,b}', '{\"k\": [1, true]}', '12345678-9abc-def0-1234-56789abcdef0'),
  (1, 150, '2025-03-05 00:00:00+00', NULL, NULL, NULL),
  (2, 0.05, '1999-12-31 23:59:59+00', '{}', 'null', NULL);
CREATE FUNCTION sneaky_insert() RETURNS int LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN INSERT INTO customers (name) VALUES ('sneaky'); RETURN 1; END $$;
GRANT EXECUTE ON FUNCTION sneaky_insert() TO PUBLIC;
";

fn config(limits: Limits) -> DatabaseConfig {
    {
        let mut edited = DatabaseConfig::default();
        edited.limits = limits;
        edited.allow_write = false;
        edited.description = None;
        edited
    }
}

async fn client(fx: &PgFixture, limits: Limits) -> Client {
    let adapter = SqlAdapter::postgres(fx.reader_url(), config(limits))
        .await
        .unwrap();
    Client::new(&adapter).await
}

/// Everything the reader could have changed.
async fn snapshot(fx: &PgFixture) -> String {
    let s = &fx.schema;
    fx.scalar(&format!(
        "SELECT concat_ws('|', \
            (SELECT string_agg(c::text, ',' ORDER BY id) FROM {s}.customers c), \
            (SELECT string_agg(o::text, ',' ORDER BY id) FROM {s}.orders o), \
            (SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = '{s}'::regnamespace), \
            (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'))"
    ))
    .await
}

#[tokio::test]
async fn list_describe_and_query() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new(SHOP).await;
    let client = client(&fx, Limits::default()).await;
    let s = fx.schema.as_str();

    let listed = client.call("list_tables", json!({"schema": s})).await;
    let l = ok(&listed);
    assert_eq!(l["engine"], "PostgreSQL");
    assert_eq!(
        l["tables"],
        json!([
            {"schema": s, "name": "big_orders", "type": "view", "uri": format!("sql://main/{s}/big_orders")},
            {"schema": s, "name": "customers", "type": "table", "uri": format!("sql://main/{s}/customers")},
            {"schema": s, "name": "orders", "type": "table", "uri": format!("sql://main/{s}/orders")},
        ])
    );
    let everything = client.call("list_tables", json!({})).await;
    assert!(ok(&everything)["tables"].as_array().unwrap().len() >= 3);
    let none = client
        .call("list_tables", json!({"schema": "no_such_schema"}))
        .await;
    assert_eq!(ok(&none)["tables"], json!([]));

    // Without a schema, the search path decides (the reader's is the test schema).
    let described = client
        .call("describe_table", json!({"table": "orders"}))
        .await;
    let d = ok(&described);
    assert_eq!(
        (d["schema"].as_str(), d["name"].as_str()),
        (Some(s), Some("orders"))
    );
    assert_eq!(d["primary_key"], json!(["id"]));
    assert_eq!(
        d["columns"][2],
        json!({"name": "total", "type": "numeric(10,2)", "nullable": false, "default": null, "primary_key": false})
    );
    assert!(
        d["columns"][0]["default"]
            .as_str()
            .unwrap()
            .starts_with("nextval(")
    );
    assert_eq!(
        d["foreign_keys"],
        json!([{"columns": ["customer_id"], "references_schema": s, "references_table": "customers", "references_columns": ["id"]}])
    );
    let index_names: Vec<&str> = d["indexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(index_names, ["orders_customer", "orders_pkey"]);
    let view = client
        .call(
            "describe_table",
            json!({"schema": s, "table": "big_orders"}),
        )
        .await;
    assert!(
        ok(&view)["definition"]
            .as_str()
            .unwrap()
            .contains("total > 100")
    );
    let missing = client
        .call("describe_table", json!({"table": "nope"}))
        .await;
    assert!(tool_error(&missing).contains("list_tables"));

    let result = client
        .call(
            "query",
            json!({"sql": "SELECT o.id, c.name, o.total, o.placed_at, c.joined, o.tags, o.meta, o.ref, c.mood, \
                           o.total::float8 AS f, NULL::int AS nothing, '\\x00ff'::bytea AS raw, interval '1 day 2 hours' AS i \
                           FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id"}),
        )
        .await;
    let r = ok(&result);
    let types: Vec<&str> = r["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "int8",
            "text",
            "numeric",
            "timestamptz",
            "date",
            "_text",
            "jsonb",
            "uuid",
            "mood",
            "float8",
            "int4",
            "bytea",
            "interval"
        ]
    );
    assert_eq!(
        r["rows"][0],
        json!([1, "Ada", "12.50", "2025-03-04 05:06:07.25+00", "2024-01-15", ["a", "b"], {"k": [1, true]},
               "12345678-9abc-def0-1234-56789abcdef0", "happy", 12.5, null, {"base64": "AP8="}, "1 day 02:00:00"])
    );
    assert_eq!(r["rows"][2][2], "0.05");
    assert_eq!(r["rows"][2][3], "1999-12-31 23:59:59+00");
    assert_eq!(r["rows"][2][5], json!([]));
    assert_eq!(r["rows"][2][6], Value::Null, "JSON null decodes to null");
    assert!(text(&result).contains("(3 rows)"));

    // Custom types keep decoding across calls (each call resets the session and the type cache).
    for _ in 0..2 {
        let moods = client
            .call(
                "query",
                json!({"sql": "SELECT mood, ARRAY[mood] FROM customers ORDER BY id"}),
            )
            .await;
        assert_eq!(
            ok(&moods)["rows"],
            json!([["happy", ["happy"]], [null, [null]]])
        );
    }
    // A user's DEALLOCATE ALL removes the statements the driver caches for custom types: at most
    // the next call on that connection fails, and the connection is replaced.
    ok(&client.call("query", json!({"sql": "DEALLOCATE ALL"})).await);
    let mut failures = 0;
    for _ in 0..3 {
        // A type the driver has not seen yet, so it must look it up.
        let sizes = client
            .call("query", json!({"sql": "SELECT 'big'::size"}))
            .await;
        if sizes["isError"] == json!(true) {
            failures += 1;
            assert!(tool_error(&sizes).contains("does not exist"), "{sizes}");
        } else {
            assert_eq!(ok(&sizes)["rows"], json!([["big"]]));
        }
    }
    assert!(failures <= 1, "{failures} calls failed");
    let trailing = client
        .call("query", json!({"sql": "SELECT 1 AS one; -- done"}))
        .await;
    assert_eq!(ok(&trailing)["rows"], json!([[1]]));
    let empty = client
        .call("query", json!({"sql": "-- only a comment"}))
        .await;
    assert!(tool_error(&empty).contains("holds no statement"), "{empty}");

    // Parameters are sent as text and parsed for the type PostgreSQL inferred.
    let evil = "x'); DROP TABLE orders; --";
    let params = client
        .call(
            "query",
            json!({"sql": "SELECT $1::text AS s, count(*) FROM orders WHERE total > $2 AND placed_at < $3 AND customer_id = $4 AND $5",
                   "params": [evil, "10.00", "2025-03-05", 1, true]}),
        )
        .await;
    assert_eq!(ok(&params)["rows"], json!([[evil, 1]]));
    let bad = client
        .call(
            "query",
            json!({"sql": "SELECT * FROM orders WHERE id = $1", "params": ["abc"]}),
        )
        .await;
    assert!(
        tool_error(&bad).contains("invalid input syntax for type bigint"),
        "{bad}"
    );
    let count = client
        .call("query", json!({"sql": "SELECT $1, $2", "params": [1]}))
        .await;
    assert!(
        tool_error(&count).contains("2 parameter placeholder(s) ($1, $2, ...) but 1 value(s)"),
        "{count}"
    );
    for (sql, expect) in [
        ("SELEC 1", "syntax error"),
        ("SELECT * FROM nope", "relation \"nope\" does not exist"),
    ] {
        let e = client.call("query", json!({"sql": sql})).await;
        assert!(tool_error(&e).contains(expect), "{sql}: {e}");
        assert!(tool_error(&e).contains("SQLSTATE"), "{e}");
    }
}

#[tokio::test]
async fn every_read_only_bypass_is_refused_and_nothing_changes() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new(SHOP).await;
    let limits = {
        let mut edited = Limits::default();
        edited.timeout = Duration::from_millis(1500);
        edited
    };
    let client = client(&fx, limits).await;
    let before = snapshot(&fx).await;
    let file = std::env::temp_dir().join(crate::support::unique("mcp-sql-copy"));
    let attempts: Vec<(String, &str)> = vec![
        (
            "INSERT INTO customers (name) VALUES ('Mallory')".into(),
            "read-only transaction",
        ),
        (
            "UPDATE customers SET name = 'x'".into(),
            "read-only transaction",
        ),
        ("DELETE FROM orders".into(), "read-only transaction"),
        (
            "WITH x AS (INSERT INTO customers (name) VALUES ('x') RETURNING id) SELECT * FROM x"
                .into(),
            "read-only transaction",
        ),
        (
            "WITH x AS (DELETE FROM orders RETURNING id) SELECT count(*) FROM x".into(),
            "read-only transaction",
        ),
        ("SELECT sneaky_insert()".into(), "read-only transaction"),
        (
            "DO $$ BEGIN INSERT INTO customers (name) VALUES ('do'); END $$".into(),
            "read-only transaction",
        ),
        ("CREATE TABLE evil (a int)".into(), "Refused"),
        ("CREATE TEMP TABLE evil (a int)".into(), "Refused"),
        ("DROP TABLE orders".into(), "Refused"),
        ("TRUNCATE orders".into(), "Refused"),
        ("SELECT nextval('customers_id_seq')".into(), "Refused"),
        (
            "SELECT 1; DROP TABLE orders".into(),
            "exactly one SQL statement",
        ),
        ("SELECT 1; SELECT 2".into(), "exactly one SQL statement"),
        ("COPY orders TO STDOUT".into(), "COPY"),
        ("COPY customers FROM STDIN".into(), "Refused"),
        (
            format!("COPY (SELECT 1) TO '{}'", file.display()),
            "Refused: the database role may not do this",
        ),
        (
            "COPY (SELECT 1) TO PROGRAM 'touch /tmp/mcp-sql-pwned'".into(),
            "Refused: the database role may not do this",
        ),
        (
            "SELECT pg_read_file('/etc/passwd')".into(),
            "Refused: the database role may not do this",
        ),
        ("SELECT lo_import('/etc/passwd')".into(), "Refused"),
        ("VACUUM orders".into(), "transaction"),
        ("CREATE DATABASE evil".into(), "Refused"),
        ("SELECT pg_sleep(30)".into(), "stopped after 1500 ms"),
        // The transaction's first snapshot is taken before the statement, so it cannot be made
        // read-write from inside.
        (
            "SET TRANSACTION READ WRITE".into(),
            "read-write mode must be set before any query",
        ),
        (
            "SELECT set_config('transaction_read_only', 'off', true)".into(),
            "read-write mode must be set before any query",
        ),
        ("COMMIT".into(), ""),
        ("ROLLBACK".into(), ""),
        ("BEGIN".into(), ""),
    ];
    for (sql, expect) in &attempts {
        let result = client.call("query", json!({"sql": sql})).await;
        if expect.is_empty() {
            // Accepted as a statement, but it is alone in its transaction: there is nothing to
            // commit, and the connection is reset after the call.
            assert_ne!(result["isError"], json!(true), "{sql}: {result}");
            continue;
        }
        let message = tool_error(&result);
        assert!(message.contains(expect), "{sql}\n=> {message}");
    }
    assert!(!file.exists(), "COPY wrote a file");
    assert!(!std::path::Path::new("/tmp/mcp-sql-pwned").exists());

    // Settings and session state never outlive the call: a session-level SET, set_config, an
    // advisory lock, a prepared statement.
    for sql in [
        "SET statement_timeout = 0",
        "SET SESSION statement_timeout = 0",
        "SELECT set_config('statement_timeout', '0', false)",
        "SELECT pg_advisory_lock(4242)",
        "PREPARE sneaky AS SELECT 1",
        "SET search_path = public",
    ] {
        let result = client.call("query", json!({"sql": sql})).await;
        assert_ne!(result["isError"], json!(true), "{sql}: {result}");
    }
    let started = Instant::now();
    let sleep = client
        .call("query", json!({"sql": "SELECT pg_sleep(30)"}))
        .await;
    assert!(
        tool_error(&sleep).contains("stopped after 1500 ms"),
        "{sleep}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let prepared = client.call("query", json!({"sql": "EXECUTE sneaky"})).await;
    assert!(
        tool_error(&prepared).contains("does not exist"),
        "{prepared}"
    );
    let path = client
        .call("query", json!({"sql": "SELECT count(*) FROM customers"}))
        .await;
    assert_eq!(ok(&path)["rows"], json!([[2]]), "the search path was reset");

    assert_eq!(snapshot(&fx).await, before, "the database changed");
}

#[tokio::test]
async fn results_are_cut_at_the_row_and_byte_limits() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new("CREATE TABLE t AS SELECT g AS id, repeat('a', 200) AS body FROM generate_series(1, 500) g;").await;
    let limits = {
        let mut edited = Limits::default();
        edited.max_rows = 50;
        edited.max_bytes = 4096;
        edited.timeout = Duration::from_secs(10);
        edited
    };
    let client = client(&fx, limits).await;
    let rows = client
        .call("query", json!({"sql": "SELECT id FROM t ORDER BY id"}))
        .await;
    let r = ok(&rows);
    assert_eq!(
        (r["row_count"].as_u64(), &r["truncated_reason"]),
        (Some(50), &json!("max_rows"))
    );
    let exact = client
        .call("query", json!({"sql": "SELECT id FROM t LIMIT 50"}))
        .await;
    assert_eq!(ok(&exact)["truncated"], json!(false));
    let few = client
        .call("query", json!({"sql": "SELECT id FROM t", "max_rows": 3}))
        .await;
    assert_eq!(ok(&few)["row_count"], 3);
    let bytes = client
        .call(
            "query",
            json!({"sql": "SELECT id, body FROM t ORDER BY id"}),
        )
        .await;
    let b = ok(&bytes);
    assert_eq!(b["truncated_reason"], "max_bytes");
    assert!(serde_json::to_vec(&b["rows"]).unwrap().len() <= 4096);
}

#[tokio::test]
async fn a_single_value_over_the_byte_budget_is_refused_before_it_is_decoded() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new("CREATE TABLE t (id int);").await;
    let limits = {
        let mut edited = Limits::default();
        edited.max_bytes = 100_000;
        edited
    };
    let client = client(&fx, limits).await;
    // Four times the budget, at least 1 MiB: the bytes a value may take on the wire.
    for sql in [
        "SELECT repeat('x', 30000000)",
        "SELECT decode(repeat('ab', 2000000), 'hex')",
    ] {
        let result = client.call("query", json!({"sql": sql})).await;
        let message = tool_error(&result);
        assert!(
            message.contains("1048576 bytes") && message.contains("max_bytes"),
            "{sql}: {message}"
        );
    }
    // Under the cap, a value over the budget is still cut as before.
    let cut = client
        .call("query", json!({"sql": "SELECT repeat('x', 500000)"}))
        .await;
    assert_eq!(ok(&cut)["truncated_reason"], json!("max_bytes"));
}

#[tokio::test]
async fn privileged_roles_are_refused_unless_allowed() {
    if !support::postgres() {
        return;
    }
    let fx = PgFixture::new("CREATE TABLE t (a int); INSERT INTO t VALUES (7);").await;
    let (_, admin) = pg_admin().await;
    let refused = SqlAdapter::postgres(pg_url(&admin), DatabaseConfig::default()).await;
    match refused {
        Err(SqlError::PrivilegedRole {
            role, privileges, ..
        }) => {
            assert_eq!(role, admin);
            assert!(privileges.contains("superuser"), "{privileges}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // A role that may write server files is refused too.
    let filer = format!("{}_f", fx.schema);
    fx.admin
        .batch_execute(&format!(
            "CREATE ROLE {filer} LOGIN; GRANT pg_write_server_files TO {filer};"
        ))
        .await
        .unwrap();
    let refused = SqlAdapter::postgres(pg_url(&filer), DatabaseConfig::default()).await;
    let _ = fx.admin.batch_execute(&format!("DROP ROLE {filer}")).await;
    assert!(
        matches!(&refused, Err(SqlError::PrivilegedRole { privileges, .. }) if privileges.contains("pg_write_server_files")),
        "{refused:?}"
    );

    let allowed = {
        let mut edited = PostgresConfig::new(pg_url(&admin));
        edited.allow_privileged_role = true;
        edited
    };
    let adapter = SqlAdapter::postgres(allowed, DatabaseConfig::default())
        .await
        .unwrap();
    let client = Client::new(&adapter).await;
    let result = client
        .call(
            "query",
            json!({"sql": format!("SELECT a FROM {}.t", fx.schema)}),
        )
        .await;
    assert_eq!(ok(&result)["rows"], json!([[7]]));
    // Even so, the transaction stays read-only.
    let write = client
        .call(
            "query",
            json!({"sql": format!("DELETE FROM {}.t", fx.schema)}),
        )
        .await;
    assert!(tool_error(&write).contains("read-only transaction"));

    let bad_url = SqlAdapter::postgres(
        "host=127.0.0.1 port=1 user=x dbname=test connect_timeout=2",
        DatabaseConfig::default(),
    )
    .await;
    assert!(
        matches!(bad_url, Err(SqlError::Postgres { .. })),
        "{bad_url:?}"
    );
}
