//! The tools on SQLite: results, errors, every read-only bypass attempt, parameters and limits.

use std::time::{Duration, Instant};

use kelson_sql::{Database, DatabaseConfig, Limits, SqlAdapter};
use serde_json::{Value, json};

use crate::support::{Client, SHOP, TempDir, ok, sqlite_file, sqlite_snapshot, text, tool_error};

fn config(allow_write: bool) -> DatabaseConfig {
    {
        let mut edited = DatabaseConfig::default();
        edited.allow_write = allow_write;
        edited.description = Some("A tiny shop".into());
        edited
    }
}

async fn shop(allow_write: bool) -> (TempDir, std::path::PathBuf, Client) {
    let dir = TempDir::new();
    let path = dir.path("shop.db");
    sqlite_file(&path, SHOP);
    let adapter = SqlAdapter::sqlite(path.as_path(), config(allow_write)).unwrap();
    let client = Client::new(&adapter).await;
    (dir, path, client)
}

#[tokio::test]
async fn tools_have_precise_schemas_and_annotations() {
    let (_dir, _path, client) = shop(false).await;
    let tools = client.request("tools/list", json!({})).await;
    let tools = tools["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["describe_table", "list_tables", "query"],
        "no execute without writes"
    );
    for tool in tools {
        let name = &tool["name"];
        assert!(tool["description"].as_str().unwrap().len() > 80, "{name}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{name}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
        let a = &tool["annotations"];
        assert_eq!(
            (
                &a["readOnlyHint"],
                &a["destructiveHint"],
                &a["idempotentHint"],
                &a["openWorldHint"]
            ),
            (&json!(true), &json!(false), &json!(true), &json!(false)),
            "{name}"
        );
    }
    let query = tools.iter().find(|t| t["name"] == "query").unwrap();
    let sql = &query["inputSchema"]["properties"]["sql"];
    assert_eq!(
        (sql["minLength"].as_u64(), sql["maxLength"].as_u64()),
        (Some(1), Some(100_000))
    );
    assert_eq!(
        query["inputSchema"]["properties"]["params"]["maxItems"],
        100
    );
    assert_eq!(
        query["inputSchema"]["properties"]["max_rows"]["maximum"],
        1000
    );
    assert_eq!(
        query["inputSchema"]["required"],
        json!(["sql"]),
        "one database: optional"
    );

    let (_dir, _path, client) = shop(true).await;
    let tools = client.request("tools/list", json!({})).await;
    let execute = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "execute")
        .expect("execute with writes");
    let a = &execute["annotations"];
    assert_eq!(
        (
            &a["readOnlyHint"],
            &a["destructiveHint"],
            &a["idempotentHint"],
            &a["openWorldHint"]
        ),
        (&json!(false), &json!(true), &json!(false), &json!(false))
    );
    assert!(
        execute["outputSchema"]["required"]
            .as_array()
            .unwrap()
            .contains(&json!("rows_affected"))
    );
}

#[tokio::test]
async fn list_describe_and_query() {
    let (_dir, _path, client) = shop(false).await;

    let listed = client.call("list_tables", json!({})).await;
    let tables = &ok(&listed)["tables"];
    assert_eq!(ok(&listed)["engine"], "SQLite");
    assert_eq!(
        tables,
        &json!([
            {"schema": "main", "name": "big_orders", "type": "view", "uri": "sql://main/main/big_orders"},
            {"schema": "main", "name": "customers", "type": "table", "uri": "sql://main/main/customers"},
            {"schema": "main", "name": "orders", "type": "table", "uri": "sql://main/main/orders"},
        ])
    );
    assert!(text(&listed).contains("A tiny shop"), "{}", text(&listed));
    assert!(text(&listed).contains("customers"));

    let described = client
        .call("describe_table", json!({"table": "orders"}))
        .await;
    let d = ok(&described);
    assert_eq!(d["name"], "orders");
    assert_eq!(d["primary_key"], json!(["id"]));
    assert_eq!(
        d["columns"][1],
        json!({"name": "customer_id", "type": "INTEGER", "nullable": false, "default": null, "primary_key": false})
    );
    assert_eq!(d["columns"][2]["default"], "0");
    assert_eq!(
        d["foreign_keys"],
        json!([{"columns": ["customer_id"], "references_schema": "main", "references_table": "customers", "references_columns": ["id"]}])
    );
    assert_eq!(
        d["indexes"],
        json!([{"name": "orders_customer", "columns": ["customer_id"], "unique": false}])
    );
    assert!(
        d["definition"]
            .as_str()
            .unwrap()
            .starts_with("CREATE TABLE orders")
    );
    assert!(text(&described).contains("foreign key (customer_id) references main.customers (id)"));

    let missing = client
        .call("describe_table", json!({"table": "nope"}))
        .await;
    assert!(tool_error(&missing).contains("list_tables"), "{missing}");

    let result = client
        .call(
            "query",
            json!({"sql": "SELECT c.name, count(o.id) AS orders, sum(o.total) AS spent, x'00ff' AS raw \
                           FROM customers c LEFT JOIN orders o ON o.customer_id = c.id \
                           GROUP BY c.id ORDER BY c.id"}),
        )
        .await;
    let r = ok(&result);
    assert_eq!(
        r["columns"],
        json!([{"name": "name", "type": "TEXT"}, {"name": "orders", "type": null},
               {"name": "spent", "type": null}, {"name": "raw", "type": null}])
    );
    assert_eq!(
        r["rows"],
        json!([["Ada", 2, 200.5, {"base64": "AP8="}], ["Alan", 1, 20.0, {"base64": "AP8="}],
               ["Grace", 0, null, {"base64": "AP8="}]])
    );
    assert_eq!(
        (r["row_count"].as_u64(), &r["truncated"]),
        (Some(3), &json!(false))
    );
    assert_eq!(r["truncated_reason"], Value::Null);
    // A trailing semicolon and comments are not a second statement.
    let trailing = client
        .call(
            "query",
            json!({"sql": "SELECT 1 AS one; -- done\n/* really */ ;"}),
        )
        .await;
    assert_eq!(ok(&trailing)["rows"], json!([[1]]));
    let table = text(&result);
    assert!(
        table.starts_with("name  | orders | spent | raw\n"),
        "{table}"
    );
    assert!(table.contains("Grace | 0      | NULL  |"), "{table}");
    assert!(table.trim_end().ends_with("(3 rows)"), "{table}");
}

#[tokio::test]
async fn sql_errors_are_tool_errors_the_model_can_act_on() {
    let (_dir, _path, client) = shop(false).await;
    for (sql, expect) in [
        ("SELEC 1", "syntax error"),
        ("SELECT * FROM nope", "no such table: nope"),
        ("SELECT nope FROM customers", "no such column: nope"),
        ("  -- only a comment", "holds no statement"),
        ("SELECT ?1, ?2", "2 parameter placeholder(s) but 0 value(s)"),
    ] {
        let result = client.call("query", json!({"sql": sql})).await;
        let message = tool_error(&result);
        assert!(message.contains(expect), "{sql}: {message}");
    }
    // Arguments that break the input schema are tool errors too (SEP-1303).
    for bad in [
        json!({}),
        json!({"sql": ""}),
        json!({"sql": "SELECT 1", "extra": 1}),
        json!({"sql": "SELECT 1", "params": [[1]]}),
        json!({"sql": "SELECT 1", "max_rows": 0}),
        json!({"sql": "SELECT 1", "database": "other"}),
    ] {
        let result = client.call("query", bad.clone()).await;
        assert!(
            tool_error(&result).contains("Invalid arguments"),
            "{bad}: {result}"
        );
    }
}

#[tokio::test]
async fn every_read_only_bypass_is_refused_and_nothing_changes() {
    let (dir, path, client) = shop(true).await;
    let before = sqlite_snapshot(&path);
    let copy = dir.path("copy.db");
    let attached = dir.path("attached.db");
    let attempts: Vec<(String, &str)> = vec![
        (
            "INSERT INTO customers (name) VALUES ('Mallory')".into(),
            "insert into table \"customers\"",
        ),
        (
            "UPDATE customers SET name = 'x'".into(),
            "update table \"customers\"",
        ),
        ("DELETE FROM orders".into(), "delete from table \"orders\""),
        (
            "INSERT INTO customers (name) VALUES ('x') RETURNING id".into(),
            "insert into",
        ),
        (
            "REPLACE INTO customers VALUES (1, 'x', NULL)".into(),
            "insert into",
        ),
        ("DROP TABLE orders".into(), "would change the schema"),
        ("CREATE TABLE t (a)".into(), "would change the schema"),
        (
            "ALTER TABLE customers ADD COLUMN evil TEXT".into(),
            "alter table",
        ),
        (
            "CREATE INDEX i ON customers(name)".into(),
            "would change the schema|would create index \"i\"",
        ),
        (
            "CREATE TRIGGER tr AFTER INSERT ON customers BEGIN DELETE FROM orders; END".into(),
            "would change the schema|would create trigger \"tr\"",
        ),
        (
            "CREATE VIEW v AS SELECT 1".into(),
            "would change the schema|would create view \"v\"",
        ),
        ("CREATE TEMP TABLE scratch (a)".into(), "temporary"),
        ("CREATE TEMP VIEW tv AS SELECT 1".into(), "temporary"),
        (
            "CREATE TEMP TRIGGER tt AFTER INSERT ON customers BEGIN SELECT 1; END".into(),
            "temporary",
        ),
        (
            "CREATE VIRTUAL TABLE fts USING fts5(body)".into(),
            "would change the schema|would create virtual table",
        ),
        (
            format!("ATTACH DATABASE '{}' AS other", attached.display()),
            "ATTACH is not allowed",
        ),
        ("DETACH DATABASE main".into(), "DETACH"),
        (
            "PRAGMA writable_schema = ON".into(),
            "PRAGMA writable_schema = ON is not allowed",
        ),
        (
            "PRAGMA user_version = 42".into(),
            "PRAGMA user_version = 42 is not allowed",
        ),
        ("PRAGMA journal_mode = WAL".into(), "PRAGMA journal_mode"),
        ("PRAGMA query_only = OFF".into(), "PRAGMA query_only"),
        ("PRAGMA foreign_keys = OFF".into(), "PRAGMA foreign_keys"),
        (
            "PRAGMA main.user_version".into(),
            "PRAGMA user_version is not allowed",
        ),
        (
            "SELECT 1; DROP TABLE orders".into(),
            "exactly one SQL statement",
        ),
        ("SELECT 1; SELECT 2".into(), "exactly one SQL statement"),
        (
            "SELECT 1;\n-- trailing comment\n; DELETE FROM orders".into(),
            "exactly one SQL statement",
        ),
        (
            "SELECT load_extension('/tmp/evil.so')".into(),
            "load_extension() is not allowed",
        ),
        (
            "SELECT load_extension('/tmp/evil.so', 'init')".into(),
            "load_extension() is not allowed",
        ),
        (
            "SELECT fts3_tokenizer('simple')".into(),
            "fts3_tokenizer() is not allowed",
        ),
        (
            format!("VACUUM INTO '{}'", copy.display()),
            "would change the database file",
        ),
        ("VACUUM".into(), "would change the database file"),
        ("REINDEX".into(), "would reindex|would change the schema"),
        ("ANALYZE".into(), "would analyze|would change the schema"),
        ("BEGIN".into(), "transaction control"),
        ("COMMIT".into(), "transaction control"),
        ("SAVEPOINT s".into(), "transaction control"),
        // SQLite has no data-changing CTEs; the parser refuses them before the authorizer.
        (
            "WITH x AS (INSERT INTO customers (name) VALUES ('x') RETURNING id) SELECT * FROM x"
                .into(),
            "SQL error",
        ),
        (
            "WITH x AS (SELECT 1) DELETE FROM orders".into(),
            "delete from table \"orders\"",
        ),
        // A function with side effects is unknown here, and could not write anyway.
        (
            format!("SELECT writefile('{}', 'x')", dir.path("w").display()),
            "no such function: writefile",
        ),
    ];
    for (sql, expect) in &attempts {
        let result = client.call("query", json!({"sql": sql})).await;
        let message = tool_error(&result);
        // `a|b`: either wording (SQLite asks about the object or the schema table first).
        assert!(
            expect.split('|').any(|e| message.contains(e)),
            "{sql}\n=> {message}"
        );
        if message.starts_with("Refused") {
            assert!(
                message.contains("Nothing was") || message.contains("nothing"),
                "{message}"
            );
        }
    }
    // The refusal points at execute when writes are allowed.
    let result = client
        .call("query", json!({"sql": "DELETE FROM orders"}))
        .await;
    assert!(tool_error(&result).contains("use the `execute` tool"));

    assert_eq!(sqlite_snapshot(&path), before, "the database changed");
    assert!(!copy.exists(), "VACUUM INTO wrote a file");
    assert!(!attached.exists(), "ATTACH created a file");

    // Reads that use pragmas allowed for schema inspection still work.
    let info = client
        .call(
            "query",
            json!({"sql": "SELECT name FROM pragma_table_info('customers') ORDER BY cid"}),
        )
        .await;
    assert_eq!(ok(&info)["rows"], json!([["id"], ["name"], ["email"]]));
    let recursive = client
        .call(
            "query",
            json!({"sql": "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 5) SELECT sum(x) FROM n"}),
        )
        .await;
    assert_eq!(ok(&recursive)["rows"], json!([[15]]));
}

#[tokio::test]
async fn parameters_are_bound_never_interpolated() {
    let (_dir, path, client) = shop(false).await;
    let before = sqlite_snapshot(&path);
    let evil = "x'); DROP TABLE orders; --";
    let result = client
        .call(
            "query",
            json!({"sql": "SELECT ?1 AS s, ?2 + 1 AS n, ?3 IS NULL AS is_null, ?4 AS f, ?5 AS b",
                   "params": [evil, 41, null, 1.5, true]}),
        )
        .await;
    assert_eq!(ok(&result)["rows"], json!([[evil, 42, 1, 1.5, 1]]));
    let named = client
        .call(
            "query",
            json!({"sql": "SELECT name FROM customers WHERE id = :id OR email = :email ORDER BY id",
                   "params": [3, "ada@example.com"]}),
        )
        .await;
    assert_eq!(ok(&named)["rows"], json!([["Ada"], ["Grace"]]));
    assert_eq!(sqlite_snapshot(&path), before);
}

#[tokio::test]
async fn results_are_cut_at_the_row_and_byte_limits() {
    let dir = TempDir::new();
    let path = dir.path("big.db");
    sqlite_file(
        &path,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT);
         WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 500)
         INSERT INTO t SELECT x, printf('%.200c', 'a') FROM n;",
    );
    let limits = {
        let mut edited = Limits::default();
        edited.max_rows = 50;
        edited.max_bytes = 4096;
        edited.timeout = Duration::from_secs(10);
        edited
    };
    let adapter = SqlAdapter::sqlite(path.as_path(), {
        let mut edited = DatabaseConfig::default();
        edited.limits = limits;
        edited
    })
    .unwrap();
    let client = Client::new(&adapter).await;

    let rows = client
        .call("query", json!({"sql": "SELECT id FROM t ORDER BY id"}))
        .await;
    let r = ok(&rows);
    assert_eq!(
        (
            r["row_count"].as_u64(),
            &r["truncated"],
            &r["truncated_reason"]
        ),
        (Some(50), &json!(true), &json!("max_rows"))
    );
    assert_eq!(r["rows"][49], json!([50]));
    assert!(
        text(&rows).contains("cut at the limit of 50 rows"),
        "{}",
        text(&rows)
    );

    let fewer = client
        .call("query", json!({"sql": "SELECT id FROM t", "max_rows": 7}))
        .await;
    assert_eq!(
        (ok(&fewer)["row_count"].as_u64(), &ok(&fewer)["truncated"]),
        (Some(7), &json!(true))
    );
    let exact = client
        .call("query", json!({"sql": "SELECT id FROM t LIMIT 50"}))
        .await;
    assert_eq!(
        ok(&exact)["truncated"],
        json!(false),
        "exactly the limit is not truncated"
    );

    let bytes = client
        .call(
            "query",
            json!({"sql": "SELECT id, body FROM t ORDER BY id"}),
        )
        .await;
    let b = ok(&bytes);
    assert_eq!(
        (&b["truncated"], &b["truncated_reason"]),
        (&json!(true), &json!("max_bytes"))
    );
    let n = b["row_count"].as_u64().unwrap();
    assert!((10..20).contains(&n), "about 4096 / 212 rows fit: {n}");
    assert!(serde_json::to_vec(&b["rows"]).unwrap().len() <= 4096);
    assert!(text(&bytes).contains("size limit"));
}

#[tokio::test]
async fn a_single_value_over_the_byte_budget_is_refused_at_once() {
    let (_dir, _path, client) = shop(false).await;
    // The default budget is 512 KiB of row data, so no value over four times that is ever built.
    let started = Instant::now();
    let result = client
        .call("query", json!({"sql": "SELECT randomblob(60000000)"}))
        .await;
    let elapsed = started.elapsed();
    let message = tool_error(&result);
    assert!(
        message.contains("2097152 bytes") && message.contains("max_bytes"),
        "{message}"
    );
    assert!(elapsed < Duration::from_millis(500), "{elapsed:?}");
    // The same for a value built step by step, and for a parameter bound to the statement.
    let built = client
        .call(
            "query",
            json!({"sql": "WITH RECURSIVE s(x) AS (SELECT 'x' UNION ALL SELECT x || x FROM s WHERE length(x) < 100000000) SELECT max(length(x)) FROM s"}),
        )
        .await;
    assert!(tool_error(&built).contains("2097152 bytes"), "{built}");
    // Within the headroom a value is built as before: an intermediate one larger than the budget
    // can be measured, and a returned one is cut with `truncated`.
    let measured = client
        .call(
            "query",
            json!({"sql": "SELECT length(randomblob(1000000))"}),
        )
        .await;
    assert_eq!(ok(&measured)["rows"], json!([[1_000_000]]));
    let cut = client
        .call("query", json!({"sql": "SELECT randomblob(1000000)"}))
        .await;
    assert_eq!(ok(&cut)["truncated_reason"], json!("max_bytes"));
}

#[tokio::test]
async fn a_query_over_the_time_limit_is_stopped() {
    let dir = TempDir::new();
    let path = dir.path("slow.db");
    sqlite_file(&path, "CREATE TABLE t (a); INSERT INTO t VALUES (1);");
    let adapter = SqlAdapter::sqlite(path.as_path(), {
        let mut edited = DatabaseConfig::default();
        edited.limits = {
            let mut edited = Limits::default();
            edited.timeout = Duration::from_millis(300);
            edited
        };
        edited
    })
    .unwrap();
    let client = Client::new(&adapter).await;
    let started = Instant::now();
    let result = client
        .call(
            "query",
            json!({"sql": "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000000000) SELECT count(*) FROM n"}),
        )
        .await;
    let elapsed = started.elapsed();
    let message = tool_error(&result);
    assert!(message.contains("stopped after 300 ms"), "{message}");
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    // The connection is fine afterwards.
    let next = client
        .call("query", json!({"sql": "SELECT a FROM t"}))
        .await;
    assert_eq!(ok(&next)["rows"], json!([[1]]));
}

#[tokio::test]
async fn several_databases_share_one_tool_set() {
    let dir = TempDir::new();
    let (a, b) = (dir.path("a.db"), dir.path("b.db"));
    sqlite_file(
        &a,
        "CREATE TABLE only_in_a (x); INSERT INTO only_in_a VALUES (1);",
    );
    sqlite_file(
        &b,
        "CREATE TABLE only_in_b (y); INSERT INTO only_in_b VALUES (2);",
    );
    let adapter = SqlAdapter::new([
        Database::sqlite("alpha", a.as_path(), DatabaseConfig::default()).unwrap(),
        Database::sqlite("beta", b.as_path(), {
            let mut edited = DatabaseConfig::default();
            edited.allow_write = true;
            edited
        })
        .unwrap(),
    ])
    .unwrap();
    let client = Client::new(&adapter).await;

    let tools = client.request("tools/list", json!({})).await;
    let by_name = |n: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap()
            .clone()
    };
    let query = by_name("query");
    assert_eq!(
        query["inputSchema"]["properties"]["database"]["enum"],
        json!(["alpha", "beta"])
    );
    assert_eq!(query["inputSchema"]["required"], json!(["database", "sql"]));
    assert_eq!(
        by_name("execute")["inputSchema"]["properties"]["database"]["enum"],
        json!(["beta"])
    );

    let instructions = adapter.instructions();
    assert!(
        instructions.contains("alpha (SQLite, read-only)")
            && instructions.contains("beta (SQLite, writable with approval)")
            && instructions.contains("list_tables"),
        "{instructions}"
    );

    let missing = client.call("query", json!({"sql": "SELECT 1"})).await;
    assert!(tool_error(&missing).contains("database"), "{missing}");
    let from_a = client
        .call(
            "query",
            json!({"database": "alpha", "sql": "SELECT x FROM only_in_a"}),
        )
        .await;
    assert_eq!(ok(&from_a)["rows"], json!([[1]]));
    let wrong = client
        .call(
            "query",
            json!({"database": "alpha", "sql": "SELECT y FROM only_in_b"}),
        )
        .await;
    assert!(tool_error(&wrong).contains("no such table"));
    let listed = client
        .call("list_tables", json!({"database": "beta"}))
        .await;
    assert_eq!(ok(&listed)["tables"][0]["uri"], "sql://beta/main/only_in_b");
    // A read-only database cannot be written even by naming it.
    let write = client
        .call(
            "execute",
            json!({"database": "alpha", "sql": "DELETE FROM only_in_a"}),
        )
        .await;
    assert!(tool_error(&write).contains("Invalid arguments"), "{write}");

    assert!(matches!(
        SqlAdapter::new([
            Database::sqlite("same", a.as_path(), DatabaseConfig::default()).unwrap(),
            Database::sqlite("same", b.as_path(), DatabaseConfig::default()).unwrap(),
        ]),
        Err(kelson_sql::SqlError::DuplicateName(_))
    ));
    assert!(matches!(
        Database::sqlite("Bad Name", a.as_path(), DatabaseConfig::default()),
        Err(kelson_sql::SqlError::InvalidName(_))
    ));
    assert!(matches!(
        Database::sqlite(
            "missing",
            dir.path("missing.db").as_path(),
            DatabaseConfig::default()
        ),
        Err(kelson_sql::SqlError::Sqlite { .. })
    ));
    assert!(
        !dir.path("missing.db").exists(),
        "a read-only adapter never creates a file"
    );
}
