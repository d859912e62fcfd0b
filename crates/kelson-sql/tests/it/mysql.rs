//! The tools on MariaDB: results and every column type, every read-only bypass attempt, the time
//! limit, row and byte limits, and the refusal of privileged accounts.

use std::time::{Duration, Instant};

use kelson_sql::{DatabaseConfig, Limits, MysqlConfig, SqlAdapter, SqlError};
use serde_json::{Value, json};

use crate::support::{self, Client, MyFixture, ok, text, tool_error};

/// The shop, in statements separated by `;;`.
pub const SHOP: &str = "
CREATE TABLE customers (
    id int AUTO_INCREMENT PRIMARY KEY,
    name varchar(100) NOT NULL,
    email varchar(200) UNIQUE,
    joined date NOT NULL DEFAULT '2024-01-15',
    mood ENUM('happy', 'sad')
) ENGINE=InnoDB;;
CREATE TABLE orders (
    id bigint AUTO_INCREMENT PRIMARY KEY,
    customer_id int NOT NULL,
    total decimal(10, 2) NOT NULL,
    placed_at timestamp(2) NOT NULL DEFAULT CURRENT_TIMESTAMP(2),
    meta JSON,
    KEY orders_customer (customer_id),
    CONSTRAINT orders_customer_fk FOREIGN KEY (customer_id) REFERENCES customers (id)
) ENGINE=InnoDB;;
CREATE TABLE notes (id int PRIMARY KEY, body text) ENGINE=MyISAM;;
CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;;
CREATE SEQUENCE counter;;
INSERT INTO customers (name, email, mood) VALUES ('Ada', 'ada@example.com', 'happy'), ('Alan', NULL, NULL);;
INSERT INTO orders (customer_id, total, placed_at, meta) VALUES
  (1, 12.50, '2025-03-04 05:06:07.25', '{\"k\": [1, true]}'),
  (1, 150, '2025-03-05 00:00:00', NULL),
  (2, 0.05, '1999-12-31 23:59:59', 'null');;
INSERT INTO notes VALUES (1, 'kept');;
CREATE FUNCTION sneaky_insert() RETURNS int MODIFIES SQL DATA SQL SECURITY INVOKER
  BEGIN INSERT INTO customers (name) VALUES ('sneaky'); RETURN 1; END;;
CREATE PROCEDURE sneaky_commit() MODIFIES SQL DATA SQL SECURITY INVOKER
  BEGIN INSERT INTO customers (name) VALUES ('proc'); COMMIT; END
";

pub fn config(limits: Limits) -> DatabaseConfig {
    let mut edited = DatabaseConfig::default();
    edited.limits = limits;
    edited
}

async fn client(url: String, limits: Limits) -> Client {
    let adapter = SqlAdapter::mysql(url, config(limits)).await.unwrap();
    Client::new(&adapter).await
}

/// Everything a statement could have changed: rows of every table, the tables and routines of the
/// database, the sequence, user-level locks, and files the server could have written.
async fn snapshot(fx: &MyFixture) -> String {
    let d = &fx.db;
    fx.scalar(&format!(
        "SELECT CONCAT_WS('|', \
            (SELECT GROUP_CONCAT(CONCAT_WS(',', id, name, IFNULL(email, '-'), joined, IFNULL(mood, '-')) ORDER BY id) FROM `{d}`.customers), \
            (SELECT GROUP_CONCAT(CONCAT_WS(',', id, customer_id, total, placed_at, IFNULL(meta, '-')) ORDER BY id) FROM `{d}`.orders), \
            (SELECT GROUP_CONCAT(CONCAT_WS(',', id, body) ORDER BY id) FROM `{d}`.notes), \
            (SELECT GROUP_CONCAT(TABLE_NAME ORDER BY TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{d}'), \
            (SELECT GROUP_CONCAT(ROUTINE_NAME ORDER BY ROUTINE_NAME) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = '{d}'), \
            (SELECT next_not_cached_value FROM `{d}`.counter), \
            IFNULL(IS_USED_LOCK('mcp_sql_test_lock'), 'free'), \
            (SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'mcp_sql_evil%'))"
    ))
    .await
}

#[tokio::test]
async fn list_describe_and_query() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(SHOP).await;
    let client = client(fx.reader_url(), Limits::default()).await;
    let d = fx.db.as_str();

    let listed = client.call("list_tables", json!({"schema": d})).await;
    let l = ok(&listed);
    assert_eq!(l["engine"], "MariaDB");
    assert_eq!(
        l["tables"],
        json!([
            {"schema": d, "name": "big_orders", "type": "view", "uri": format!("sql://main/{d}/big_orders")},
            {"schema": d, "name": "counter", "type": "sequence", "uri": format!("sql://main/{d}/counter")},
            {"schema": d, "name": "customers", "type": "table", "uri": format!("sql://main/{d}/customers")},
            {"schema": d, "name": "notes", "type": "table", "uri": format!("sql://main/{d}/notes")},
            {"schema": d, "name": "orders", "type": "table", "uri": format!("sql://main/{d}/orders")},
        ])
    );

    // Without a schema: the URL's database.
    let described = client
        .call("describe_table", json!({"table": "orders"}))
        .await;
    let o = ok(&described);
    assert_eq!(
        (o["schema"].as_str(), o["name"].as_str()),
        (Some(d), Some("orders"))
    );
    assert_eq!(o["primary_key"], json!(["id"]));
    assert_eq!(
        o["columns"][2],
        json!({"name": "total", "type": "decimal(10,2)", "nullable": false, "default": null, "primary_key": false})
    );
    assert_eq!(
        o["foreign_keys"],
        json!([{"columns": ["customer_id"], "references_schema": d, "references_table": "customers", "references_columns": ["id"]}])
    );
    let index_names: Vec<&str> = o["indexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(index_names, ["orders_customer", "PRIMARY"]);
    let customers = client
        .call("describe_table", json!({"schema": d, "table": "customers"}))
        .await;
    assert_eq!(
        ok(&customers)["columns"][3]["default"],
        json!("'2024-01-15'")
    );
    let view = client
        .call(
            "describe_table",
            json!({"schema": d, "table": "big_orders"}),
        )
        .await;
    assert!(
        ok(&view)["definition"].as_str().unwrap().contains("> 100"),
        "{view}"
    );
    let missing = client
        .call("describe_table", json!({"table": "nope"}))
        .await;
    assert!(tool_error(&missing).contains("list_tables"), "{missing}");

    // Every table is a resource: sql://main/DATABASE/TABLE, its description as JSON.
    let list = client.request("resources/list", json!({})).await;
    let uris: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(
        uris.contains(&format!("sql://main/{d}/orders").as_str()),
        "{list}"
    );
    let read = client
        .request(
            "resources/read",
            json!({"uri": format!("sql://main/{d}/orders")}),
        )
        .await;
    let schema: Value =
        serde_json::from_str(read["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(schema["foreign_keys"][0]["references_table"], "customers");

    let result = client
        .call(
            "query",
            json!({"sql": "SELECT o.id, c.name, o.total, o.placed_at, c.joined, o.meta, c.mood, \
                           CAST(o.total AS DOUBLE) AS f, NULL AS nothing, X'00FF' AS raw \
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
            "BIGINT",
            "VARCHAR",
            "DECIMAL",
            "TIMESTAMP",
            "DATE",
            "JSON",
            "ENUM",
            "DOUBLE",
            "NULL",
            "VARBINARY"
        ]
    );
    assert_eq!(
        r["rows"][0],
        json!([1, "Ada", "12.50", "2025-03-04T05:06:07.250000Z", "2024-01-15", {"k": [1, true]}, "happy", 12.5, null, {"base64": "AP8="}])
    );
    assert_eq!(r["rows"][2][2], "0.05");
    assert_eq!(r["rows"][2][5], Value::Null, "JSON null decodes to null");
    assert!(text(&result).contains("(3 rows)"));

    // Parameters are bound, never written into the text.
    let evil = "x'); DROP TABLE orders; --";
    let params = client
        .call(
            "query",
            json!({"sql": "SELECT ? AS s, COUNT(*) FROM orders WHERE total > ? AND placed_at < ? AND customer_id = ? AND ?",
                   "params": [evil, "10.00", "2025-03-05", 1, true]}),
        )
        .await;
    assert_eq!(ok(&params)["rows"], json!([[evil, 1]]));
    let count = client
        .call("query", json!({"sql": "SELECT ?, ?", "params": [1]}))
        .await;
    assert!(
        tool_error(&count).contains("2 parameter placeholder(s) (?) but 1 value(s)"),
        "{count}"
    );
    let empty = client.call("query", json!({"sql": "   "})).await;
    assert!(tool_error(&empty).contains("holds no statement"), "{empty}");
    // MariaDB prepares a comment alone as a statement that does nothing.
    let comment = client
        .call("query", json!({"sql": "-- only a comment"}))
        .await;
    assert_eq!(ok(&comment)["columns"], json!([]));
    for (sql, expect) in [
        ("SELEC 1", "SQL syntax"),
        ("SELECT * FROM nope", "doesn't exist"),
    ] {
        let e = client.call("query", json!({"sql": sql})).await;
        assert!(tool_error(&e).contains(expect), "{sql}: {e}");
        assert!(tool_error(&e).contains("SQLSTATE"), "{e}");
    }
}

/// One table per type family: the column's values as the tool returns them.
#[tokio::test]
async fn every_column_type_maps_to_json() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(
        "CREATE TABLE ints (a tinyint, b smallint, c mediumint, d int, e bigint, f bigint unsigned, g tinyint(1), h year);;
         INSERT INTO ints VALUES (-128, -32768, -8388608, -2147483648, -9223372036854775808, 18446744073709551615, 1, 2025);;
         CREATE TABLE reals (a float, b double, c decimal(30, 10), d decimal(5, 0));;
         INSERT INTO reals VALUES (0.1, 2.5e300, 12345678901234567890.0123456789, -7);;
         CREATE TABLE times (a date, b datetime, c datetime(6), d timestamp(3) NULL, e time, f time(6), g datetime);;
         INSERT INTO times VALUES ('2024-02-29', '2025-03-04 05:06:07', '2025-03-04 05:06:07.000001', '2025-03-04 05:06:07.123', '-838:59:59', '12:00:00.5', '0000-00-00 00:00:00');;
         CREATE TABLE texts (a char(3), b varchar(10), c text, d mediumtext, e longtext, f tinytext);;
         INSERT INTO texts VALUES ('abc', 'héllo', 'text', 'medium', 'long', 'tiny');;
         CREATE TABLE bins (a binary(2), b varbinary(4), c blob, d longblob, e tinyblob, f mediumblob);;
         INSERT INTO bins VALUES (X'0001', X'FF', X'DEADBEEF', X'', X'00', X'01');;
         CREATE TABLE bits (a bit(1), b bit(3), c bit(10), d bit(64));;
         INSERT INTO bits VALUES (b'1', b'101', b'1000000001', b'1');;
         CREATE TABLE choices (a ENUM('x', 'y'), b SET('r', 'g', 'b'), c SET('r', 'g'));;
         INSERT INTO choices VALUES ('y', 'r,b', '');;
         CREATE TABLE docs (a JSON, b JSON);;
         INSERT INTO docs VALUES ('{\"a\": [1, 2.5, \"x\", null]}', '\"just a string\"');;
         CREATE TABLE shapes (a POINT, b GEOMETRY);;
         INSERT INTO shapes VALUES (ST_PointFromText('POINT(1 2)'), ST_GeomFromText('LINESTRING(0 0, 1 1)', 4326));;
         CREATE TABLE extras (a inet6, b uuid);;
         INSERT INTO extras VALUES ('::1', '123e4567-e89b-12d3-a456-426655440000');;",
    )
    .await;
    let client = client(fx.reader_url(), Limits::default()).await;
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "ints",
            json!([
                -128,
                -32768,
                -8388608,
                -2147483648i64,
                i64::MIN,
                u64::MAX,
                1,
                2025
            ]),
            vec![
                "TINYINT",
                "SMALLINT",
                "MEDIUMINT",
                "INT",
                "BIGINT",
                "BIGINT UNSIGNED",
                "TINYINT",
                "YEAR",
            ],
        ),
        (
            "reals",
            json!([0.1, 2.5e300, "12345678901234567890.0123456789", "-7"]),
            vec!["FLOAT", "DOUBLE", "DECIMAL", "DECIMAL"],
        ),
        (
            "times",
            json!([
                "2024-02-29",
                "2025-03-04T05:06:07",
                "2025-03-04T05:06:07.000001",
                "2025-03-04T05:06:07.123000Z",
                "-838:59:59",
                "12:00:00.500000",
                "0000-00-00 00:00:00"
            ]),
            vec![
                "DATE",
                "DATETIME",
                "DATETIME",
                "TIMESTAMP",
                "TIME",
                "TIME",
                "DATETIME",
            ],
        ),
        (
            "texts",
            json!(["abc", "héllo", "text", "medium", "long", "tiny"]),
            vec!["CHAR", "VARCHAR", "TEXT", "TEXT", "TEXT", "TEXT"],
        ),
        (
            "bins",
            json!([{"base64": "AAE="}, {"base64": "/w=="}, {"base64": "3q2+7w=="}, {"base64": ""}, {"base64": "AA=="}, {"base64": "AQ=="}]),
            vec!["BINARY", "VARBINARY", "BLOB", "BLOB", "BLOB", "BLOB"],
        ),
        (
            "bits",
            json!(["1", "101", "1000000001", format!("{:064b}", 1)]),
            vec!["BIT", "BIT", "BIT", "BIT"],
        ),
        (
            "choices",
            json!(["y", ["r", "b"], []]),
            vec!["ENUM", "SET", "SET"],
        ),
        (
            "docs",
            json!([{"a": [1, 2.5, "x", null]}, "just a string"]),
            vec!["JSON", "JSON"],
        ),
        (
            "shapes",
            json!([
                {"srid": 0, "wkb": {"base64": "AQEAAAAAAAAAAADwPwAAAAAAAABA"}},
                {"srid": 4326, "wkb": {"base64": "AQIAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAPA/AAAAAAAA8D8="}}
            ]),
            vec!["GEOMETRY", "GEOMETRY"],
        ),
        (
            "extras",
            json!(["::1", "123e4567-e89b-12d3-a456-426655440000"]),
            vec!["CHAR", "CHAR"],
        ),
    ];
    for (table, row, types) in cases {
        let result = client
            .call("query", json!({"sql": format!("SELECT * FROM {table}")}))
            .await;
        let r = ok(&result);
        assert_eq!(r["rows"], json!([row]), "{table}: {result}");
        let got: Vec<&str> = r["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(got, types, "{table}");
    }
    // Expressions have types of their own.
    let exprs = client
        .call(
            "query",
            json!({"sql": "SELECT 1 + 1, 2.50 * 2, 1e0 / 4, 'a', CAST('2025-01-02' AS DATE), \
                           JSON_OBJECT('k', 1), TIMEDIFF('10:00', '08:30')"}),
        )
        .await;
    assert_eq!(
        ok(&exprs)["rows"],
        json!([[2, "5.00", 0.25, "a", "2025-01-02", "{\"k\": 1}", "01:30:00"]]),
        "{exprs}"
    );
}

#[tokio::test]
async fn every_read_only_bypass_is_refused_and_nothing_changes() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(SHOP).await;
    let limits = {
        let mut edited = Limits::default();
        edited.timeout = Duration::from_millis(1500);
        edited
    };
    let outfile = std::env::temp_dir().join(support::unique("mcp-sql-outfile"));
    let before = snapshot(&fx).await;
    // The writer account may change rows, create and drop tables, lock tables and create
    // temporary ones: `query` must still change nothing. The reader may only select.
    for url in [fx.writer_url(), fx.reader_url()] {
        let client = client(url.clone(), limits).await;
        let attempts: Vec<(String, &str)> = vec![
            ("INSERT INTO customers (name) VALUES ('Mallory')".into(), "Refused"),
            ("UPDATE customers SET name = 'x'".into(), "Refused"),
            ("DELETE FROM orders".into(), "Refused"),
            ("INSERT INTO notes VALUES (9, 'MyISAM, no transactions')".into(), "Refused"),
            ("REPLACE INTO notes VALUES (1, 'replaced')".into(), "Refused"),
            ("COMMIT".into(), "Refused"),
            ("COMMIT; DELETE FROM orders".into(), "exactly one SQL statement"),
            ("SELECT 1; DELETE FROM orders".into(), "exactly one SQL statement"),
            ("ROLLBACK; DROP TABLE orders".into(), "exactly one SQL statement"),
            ("CREATE TABLE evil (a int)".into(), "Refused"),
            ("CREATE TABLE evil AS SELECT * FROM customers".into(), "Refused"),
            ("DROP TABLE orders".into(), "Refused"),
            ("TRUNCATE TABLE notes".into(), "Refused"),
            ("ALTER TABLE customers ADD COLUMN x int".into(), "Refused"),
            ("RENAME TABLE notes TO notes2".into(), "Refused"),
            ("CREATE DATABASE mcp_sql_evil".into(), "Refused"),
            ("CREATE TEMPORARY TABLE evil (a int)".into(), "Refused"),
            ("CREATE TEMPORARY TABLE evil AS SELECT 1".into(), "Refused"),
            ("LOCK TABLES customers WRITE".into(), "Refused"),
            ("SELECT * FROM customers FOR UPDATE".into(), "Refused"),
            ("SELECT sneaky_insert()".into(), "Refused"),
            ("CALL sneaky_commit()".into(), "Refused"),
            ("SELECT nextval(counter)".into(), "Refused"),
            ("SELECT setval(counter, 1000)".into(), "Refused"),
            ("SET STATEMENT max_statement_time = 0 FOR INSERT INTO customers (name) VALUES ('s')".into(), "Refused"),
            ("SET STATEMENT max_statement_time = 0 FOR CREATE TABLE evil (a int)".into(), "Refused"),
            ("EXECUTE IMMEDIATE 'DELETE FROM orders'".into(), "Refused"),
            ("PREPARE s FROM 'DELETE FROM orders'".into(), "Refused"),
            ("XA END 'x'".into(), "XAER_NOTA"),
            ("XA COMMIT 'x' ONE PHASE".into(), "XAER_"),
            ("XA ROLLBACK 'x'".into(), "XAER_"),
            ("XA START 'y'".into(), "XAER_"),
            ("XA PREPARE 'x'".into(), "XAER_"),
            ("START TRANSACTION".into(), "Refused"),
            ("BEGIN".into(), "Refused"),
            ("SET GLOBAL max_connections = 1".into(), "Refused"),
            (format!("SELECT * FROM customers INTO OUTFILE '{}'", outfile.display()), "Refused"),
            ("LOAD DATA INFILE '/etc/passwd' INTO TABLE notes".into(), "Refused"),
            // A file of this machine is never sent: the driver has no handler for it.
            ("LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE notes".into(), ""),
            ("DO SLEEP(60)".into(), "stopped after 1500 ms"),
            ("SELECT SLEEP(60)".into(), "stopped after 1500 ms"),
            (
                "SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(60)".into(),
                "stopped after 1500 ms",
            ),
        ];
        for (sql, expect) in &attempts {
            let started = Instant::now();
            let result = client.call("query", json!({"sql": sql})).await;
            assert_eq!(
                result["isError"],
                json!(true),
                "{url}: {sql} was accepted: {result}"
            );
            let message = tool_error(&result);
            assert!(message.contains(expect), "{url}: {sql}\n=> {message}");
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{sql} took {:?}",
                started.elapsed()
            );
        }
        assert!(!outfile.exists(), "INTO OUTFILE wrote a file");

        // Accepted, but nothing outlives the call: the transaction mode, session limits, a
        // user-level lock, a variable, a handler.
        for sql in [
            "SET SESSION TRANSACTION READ WRITE",
            "SET SESSION max_statement_time = 0",
            "SET SESSION sql_select_limit = DEFAULT",
            "DO GET_LOCK('mcp_sql_test_lock', 0)",
            "SET @x = 1",
            "SET autocommit = 1",
            "SAVEPOINT a",
            "HANDLER customers OPEN",
        ] {
            let result = client.call("query", json!({"sql": sql})).await;
            assert_ne!(result["isError"], json!(true), "{sql}: {result}");
        }
        let after = client
            .call(
                "query",
                json!({"sql": "INSERT INTO customers (name) VALUES ('late')"}),
            )
            .await;
        // The writer account holds INSERT: only the transaction refuses it.
        let expect = if url == fx.writer_url() {
            "read-only transaction"
        } else {
            "may not do this"
        };
        assert!(tool_error(&after).contains(expect), "{after}");
        let handler = client
            .call("query", json!({"sql": "HANDLER customers READ FIRST"}))
            .await;
        assert!(tool_error(&handler).contains("Unknown table"), "{handler}");
        let var = client.call("query", json!({"sql": "SELECT @x"})).await;
        assert_eq!(ok(&var)["rows"], json!([[null]]));
        // LOAD_FILE needs FILE, which no account here holds: it reads nothing.
        let file = client
            .call("query", json!({"sql": "SELECT LOAD_FILE('/etc/passwd')"}))
            .await;
        assert_eq!(ok(&file)["rows"], json!([[null]]));
        let slow = client
            .call(
                "query",
                json!({"sql": "SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(60)"}),
            )
            .await;
        assert!(tool_error(&slow).contains("stopped"), "{slow}");
        let next = client
            .call("query", json!({"sql": "SELECT COUNT(*) FROM customers"}))
            .await;
        assert_eq!(ok(&next)["rows"], json!([[2]]));
        assert_eq!(snapshot(&fx).await, before, "{url}: the database changed");
    }
    // No statement of the reader is left running (the sleeps were killed).
    let running = fx
        .scalar(&format!(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
             WHERE USER IN ('{}', '{}') AND INFO LIKE '%SLEEP%'",
            fx.reader, fx.writer
        ))
        .await;
    assert_eq!(running, "0");
}

#[tokio::test]
async fn results_are_cut_at_the_row_and_byte_limits() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(
        "CREATE TABLE t (id int PRIMARY KEY, body varchar(300));;
         INSERT INTO t SELECT seq, REPEAT('a', 200) FROM seq_1_to_500",
    )
    .await;
    let limits = {
        let mut edited = Limits::default();
        edited.max_rows = 50;
        edited.max_bytes = 4096;
        edited
    };
    let client = client(fx.reader_url(), limits).await;
    let rows = client
        .call("query", json!({"sql": "SELECT id FROM t ORDER BY id"}))
        .await;
    let r = ok(&rows);
    assert_eq!(
        (r["row_count"].as_u64(), &r["truncated_reason"]),
        (Some(50), &json!("max_rows"))
    );
    // The server's own limit can be lifted by the statement; the adapter still cuts.
    let lifted = client
        .call(
            "query",
            json!({"sql": "SET STATEMENT sql_select_limit = 100000 FOR SELECT id FROM t ORDER BY id"}),
        )
        .await;
    assert_eq!(ok(&lifted)["row_count"], 50);
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
    // A value over the cap (four times max_bytes, at least 1 MiB) is refused.
    let big = client
        .call("query", json!({"sql": "SELECT REPEAT('x', 3000000)"}))
        .await;
    assert!(tool_error(&big).contains("1048576 bytes"), "{big}");
    // And the connections still serve.
    let after = client
        .call("query", json!({"sql": "SELECT COUNT(*) FROM t"}))
        .await;
    assert_eq!(ok(&after)["rows"], json!([[500]]));
}

#[tokio::test]
async fn privileged_accounts_are_refused_unless_allowed() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new(
        "CREATE TABLE t (a int);; INSERT INTO t VALUES (7);;
         CREATE FUNCTION definer_rights() RETURNS int SQL SECURITY DEFINER RETURN 1",
    )
    .await;
    let d = fx.db.clone();
    let refused = |result: Result<SqlAdapter, SqlError>| match result {
        Err(SqlError::PrivilegedAccount { privileges, .. }) => privileges,
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(_) => panic!("expected a refusal, got an adapter"),
    };
    // root holds everything.
    let root =
        refused(SqlAdapter::mysql(support::my_url("root", &d), DatabaseConfig::default()).await);
    assert!(
        root.contains("ALL PRIVILEGES") && root.contains("GRANT OPTION"),
        "{root}"
    );

    let cases: Vec<(&str, &str)> = vec![
        ("GRANT FILE ON *.* TO {u}", "FILE"),
        ("GRANT SUPER ON *.* TO {u}", "SUPER"),
        (
            "GRANT SELECT ON `{d}`.t TO {u} WITH GRANT OPTION",
            "GRANT OPTION on `{d}`.`t`",
        ),
        (
            "GRANT CREATE ROUTINE ON `{d}`.* TO {u}",
            "CREATE ROUTINE on `{d}`.*",
        ),
        ("GRANT ALL ON `{d}`.* TO {u}", "ALL PRIVILEGES on `{d}`.*"),
        ("GRANT INSERT ON mysql.* TO {u}", "INSERT on `mysql`.*"),
        (
            "GRANT EXECUTE ON FUNCTION `{d}`.definer_rights TO {u}",
            "definer_rights`, which runs with the rights of root",
        ),
        (
            "GRANT {role} TO {u};; SET DEFAULT ROLE {role} FOR {u}",
            "FILE (through role",
        ),
    ];
    for (i, (grant, expect)) in cases.into_iter().enumerate() {
        let user = format!("{}_p{i}", fx.db);
        let role = format!("{}_role{i}", fx.db);
        let u = format!("'{user}'@'%'");
        fx.exec(&format!("CREATE USER {u}")).await;
        fx.exec(&format!("GRANT SELECT ON `{d}`.* TO {u}")).await;
        fx.exec(&format!("CREATE ROLE {role}")).await;
        fx.exec(&format!("GRANT FILE ON *.* TO {role}")).await;
        for statement in grant.split(";;") {
            fx.exec(
                &statement
                    .replace("{u}", &u)
                    .replace("{d}", &d)
                    .replace("{role}", &role),
            )
            .await;
        }
        let result = SqlAdapter::mysql(support::my_url(&user, &d), DatabaseConfig::default()).await;
        fx.exec(&format!("DROP USER {u}")).await;
        fx.exec(&format!("DROP ROLE {role}")).await;
        let privileges = refused(result);
        let expect = expect.replace("{d}", &d);
        assert!(privileges.contains(&expect), "{grant}: {privileges}");
    }
    let message =
        refused(SqlAdapter::mysql(support::my_url("root", &d), DatabaseConfig::default()).await);
    assert!(!message.is_empty());
    let error = SqlAdapter::mysql(support::my_url("root", &d), DatabaseConfig::default())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("account root@") && error.contains("allow_privileged_account"),
        "{error}"
    );

    // Allowed on request; the transaction stays read-only even so.
    let allowed = {
        let mut edited = MysqlConfig::new(support::my_url("root", &d));
        edited.allow_privileged_account = true;
        edited
    };
    let adapter = SqlAdapter::mysql(allowed, DatabaseConfig::default())
        .await
        .unwrap();
    let client = Client::new(&adapter).await;
    let result = client
        .call("query", json!({"sql": "SELECT a FROM t"}))
        .await;
    assert_eq!(ok(&result)["rows"], json!([[7]]));
    let write = client.call("query", json!({"sql": "DELETE FROM t"})).await;
    assert!(
        tool_error(&write).contains("read-only transaction"),
        "{write}"
    );
    assert_eq!(
        fx.scalar(&format!("SELECT COUNT(*) FROM `{d}`.t")).await,
        "1"
    );

    // Bad URLs and unreachable servers are errors in words.
    let bad = SqlAdapter::mysql("mysql://x@127.0.0.1:1/test", DatabaseConfig::default())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(bad.contains("connection refused at 127.0.0.1:1"), "{bad}");
    let bad = SqlAdapter::mysql(
        "mysql://nobody_here@127.0.0.1:3306/test",
        DatabaseConfig::default(),
    )
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(bad.contains("Access denied"), "{bad}");
    let bad = SqlAdapter::mysql(
        "mysql://x@127.0.0.1/test?pool_max=3",
        DatabaseConfig::default(),
    )
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(bad.contains("unknown URL parameter \"pool_max\""), "{bad}");
}

#[tokio::test]
async fn tls_that_the_server_does_not_offer_is_an_error_in_words() {
    if !support::mariadb() {
        return;
    }
    let fx = MyFixture::new("CREATE TABLE t (a int)").await;
    let have_ssl = fx.scalar("SELECT @@have_ssl").await;
    let url = format!("{}?sslmode=require", fx.reader_url());
    let result = SqlAdapter::mysql(url, DatabaseConfig::default()).await;
    if have_ssl == "YES" {
        // A server with TLS: `require` connects, encrypted.
        let adapter = result.unwrap();
        let client = Client::new(&adapter).await;
        let cipher = client
            .call(
                "query",
                json!({"sql": "SHOW SESSION STATUS LIKE 'Ssl_cipher'"}),
            )
            .await;
        assert_ne!(ok(&cipher)["rows"][0][1], json!(""));
    } else {
        let error = result.err().unwrap().to_string();
        assert!(error.contains("TLS") || error.contains("SSL"), "{error}");
    }
}
