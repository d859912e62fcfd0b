//! `kelson serve` on SQLite: the out-of-the-box start on the sample database (HTTP and stdio), every
//! tool, `--db` files, writes declined and approved in the terminal, read-only bypass attempts,
//! and a long query cancelled by the client.

use std::time::{Duration, Instant};

use kelson_sql::SAMPLE_TABLES;
use serde_json::{Value, json};

use super::support::{
    Serve, TempDir, cpu_ticks, mcp_in, rows, sqlite_file, sqlite_scalar, stdio_serve, wait_until,
};

fn table_names(list_tables: &Value) -> Vec<String> {
    list_tables["structuredContent"]["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

const SAMPLE_NAMES: &[&str] = &[
    "categories",
    "customers",
    "order_items",
    "order_totals",
    "orders",
    "products",
];

#[test]
fn out_of_the_box_over_http() {
    let scratch = TempDir::new();
    // A data folder that does not exist yet: the first run creates it.
    let data = scratch.join("fresh/kelson");
    let serve = Serve::start(&data, &[]);
    assert!(data.join("sample.db").is_file(), "{}", serve.log());
    assert!(serve.log().contains("(created now)"), "{}", serve.log());

    let run = serve.run(&["tools"], "");
    run.expect_code(0);
    for tool in ["list_tables", "describe_table", "query"] {
        assert!(run.stdout.contains(tool), "{}", run.stdout);
    }
    assert!(
        !run.stdout.contains("execute"),
        "read-only by default: {}",
        run.stdout
    );

    let run = serve.run(&["discover"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains("sample (SQLite, read-only)"),
        "{}",
        run.stdout
    );

    let listed = serve.run(&["call", "list_tables", "--json"], "");
    listed.expect_code(0);
    assert_eq!(table_names(&listed.json()), SAMPLE_NAMES);

    // Every table holds the rows the README promises.
    for (table, count) in SAMPLE_TABLES {
        let result = serve.query(&format!("select count(*) as n from {table}"));
        assert_eq!(rows(&result)[0][0], json!(count), "{table}");
    }

    let run = serve.run(&["call", "describe_table", "--arg", "table=orders"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains("customer_id") && run.stdout.contains("customers"),
        "{}",
        run.stdout
    );

    // Parameters are bound, and the text table is for people.
    let run = serve.run(
        &[
            "call",
            "query",
            "--arg",
            "sql=select name from categories where id = ?1",
            "--arg",
            "params=[2]",
        ],
        "",
    );
    run.expect_code(0);
    assert!(
        run.stdout.starts_with("name\n----\nTea\n(1 row)"),
        "{}",
        run.stdout
    );

    // Each table's schema is a resource.
    let run = serve.run(&["resources"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains("sql://sample/main/orders"),
        "{}",
        run.stdout
    );
    let run = serve.run(&["read", "sql://sample/main/orders"], "");
    run.expect_code(0);
    assert!(run.stdout.contains("customer_id"), "{}", run.stdout);

    // The next start finds the database and leaves it alone.
    drop(serve);
    let serve = Serve::start(&data, &[]);
    assert!(serve.log().contains("(existing)"), "{}", serve.log());
}

#[test]
fn out_of_the_box_over_stdio() {
    let scratch = TempDir::new();
    let data = scratch.join("data");
    let server = stdio_serve(&[]);
    let run = mcp_in(&data, &["tools", "--stdio", &server], "");
    run.expect_code(0);
    assert!(run.stdout.contains("query"), "{}", run.stdout);
    assert!(data.join("sample.db").is_file());

    let run = mcp_in(
        &data,
        &["call", "list_tables", "--json", "--stdio", &server],
        "",
    );
    run.expect_code(0);
    assert_eq!(table_names(&run.json()), SAMPLE_NAMES);

    let run = mcp_in(
        &data,
        &[
            "call",
            "query",
            "--arg",
            "sql=select count(*) as n from orders where status = ?1",
            "--arg",
            "params=[\"delivered\"]",
            "--json",
            "--stdio",
            &server,
        ],
        "",
    );
    run.expect_code(0);
    let n = &run.json()["structuredContent"]["rows"][0][0];
    assert!(n.as_u64().is_some_and(|n| n > 0 && n < 2000), "{n}");
}

#[test]
fn db_flags_name_databases_and_replace_the_sample() {
    let scratch = TempDir::new();
    let file = scratch.join("shop.db");
    sqlite_file(
        &file,
        "CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
         INSERT INTO widgets VALUES (1, 'sprocket'), (2, 'gear');",
    );
    let data = scratch.join("data");
    let db = format!("shop=sqlite:{}", file.display());

    // With a --db, the sample is not served (nor created).
    let serve = Serve::start(&data, &["--db", &db]);
    let listed = serve.run(&["call", "list_tables", "--json"], "");
    assert_eq!(table_names(&listed.json()), ["widgets"]);
    assert_eq!(listed.json()["structuredContent"]["database"], "shop");
    assert!(!data.join("sample.db").exists());
    let result = serve.query("select name from widgets order by id");
    assert_eq!(rows(&result), &vec![json!(["sprocket"]), json!(["gear"])]);
    drop(serve);

    // --sample keeps it: two databases, so every tool needs `database`.
    let serve = Serve::start(&data, &["--db", &db, "--sample", "--max-rows", "3"]);
    let run = serve.run(
        &["call", "list_tables", "--arg", "database=sample", "--json"],
        "",
    );
    run.expect_code(0);
    assert_eq!(table_names(&run.json()), SAMPLE_NAMES);
    // The schema says so: kelson call stops before sending.
    let run = serve.run(&["call", "list_tables"], "");
    run.expect_code(4);
    assert!(
        run.stderr
            .contains(r#"missing required argument "database""#),
        "{}",
        run.stderr
    );
    // --max-rows applies to every database, and truncation is flagged.
    let run = serve.run(
        &[
            "call",
            "query",
            "--arg",
            "database=sample",
            "--arg",
            "sql=select id from customers",
            "--json",
        ],
        "",
    );
    run.expect_code(0);
    let result = &run.json()["structuredContent"];
    assert_eq!(rows(result).len(), 3);
    assert_eq!(result["truncated"], true);
}

#[test]
fn writes_are_declined_or_approved_in_the_terminal() {
    let data = TempDir::new();
    let db = data.join("sample.db");
    let serve = Serve::start(data.path(), &["--allow-write"]);
    let run = serve.run(&["tools"], "");
    assert!(run.stdout.contains("execute"), "{}", run.stdout);

    let insert = "sql=insert into categories (name, description) values ('Bikes', 'Two wheels')";
    let count = || sqlite_scalar(&db, "select count(*) from categories where name = 'Bikes'");

    // Declined: nothing runs; the question showed the exact statement.
    let run = serve.run(&["call", "execute", "--arg", insert], ":decline\n");
    run.expect_code(1);
    assert!(run.stdout.contains("declined"), "{}", run.stdout);
    assert!(
        run.stderr.contains("Approve this SQL statement")
            && run.stderr.contains("values ('Bikes', 'Two wheels')"),
        "{}",
        run.stderr
    );
    assert_eq!(count(), "0");

    // Cancelled, or accepted without ticking the box: nothing runs either.
    serve
        .run(&["call", "execute", "--arg", insert], ":cancel\n")
        .expect_code(1);
    let run = serve.run(&["call", "execute", "--arg", insert], "n\n");
    run.expect_code(1);
    assert!(run.stdout.contains("without ticking"), "{}", run.stdout);
    serve
        .run(&["call", "execute", "--arg", insert, "--no-input"], "y\n")
        .expect_code(1);
    assert_eq!(count(), "0");

    // Approved: it runs once.
    let run = serve.run(&["call", "execute", "--arg", insert], "y\n");
    run.expect_code(0);
    assert!(run.stdout.contains("1 row changed"), "{}", run.stdout);
    assert_eq!(count(), "1");

    // The sample is never overwritten: a restart (read-only now) still has the row.
    drop(serve);
    let serve = Serve::start(data.path(), &[]);
    let result = serve.query("select description from categories where name = 'Bikes'");
    assert_eq!(rows(&result), &vec![json!(["Two wheels"])]);
    let run = serve.run(&["tools"], "");
    assert!(!run.stdout.contains("execute"), "{}", run.stdout);
}

#[test]
fn read_only_bypass_attempts_are_refused() {
    let data = TempDir::new();
    let serve = Serve::start(data.path(), &[]);
    let db = data.join("sample.db");
    let before = std::fs::read(&db).expect("the sample database");
    let outside = data.join("other.db");
    let attempts = [
        "insert into categories (name, description) values ('x', 'y')".to_owned(),
        "with t as (select 1) insert into categories (name, description) select 'x', 'y' from t"
            .to_owned(),
        "delete from orders".to_owned(),
        format!("attach database '{}' as other", outside.display()),
        "pragma user_version = 7".to_owned(),
        "select 1; delete from orders".to_owned(),
        "select load_extension('/nonexistent/evil')".to_owned(),
        "create temp table t (x)".to_owned(),
        "vacuum into '/tmp/mcp-cli-copy.db'".to_owned(),
    ];
    for sql in &attempts {
        let run = serve.run(&["call", "query", "--arg", &format!("sql={sql}")], "");
        run.expect_code(1);
        assert!(
            run.stdout.contains("Refused") || run.stdout.contains("not authorized"),
            "{sql}: {}",
            run.stdout
        );
    }
    assert!(!outside.exists(), "ATTACH created a file");
    assert!(!std::path::Path::new("/tmp/mcp-cli-copy.db").exists());
    drop(serve);
    assert!(
        std::fs::read(&db).expect("the sample database") == before,
        "the database file changed"
    );
}

#[test]
fn a_long_query_is_stopped_when_the_client_gives_up() {
    let data = TempDir::new();
    let serve = Serve::start(data.path(), &["--query-timeout", "5m"]);
    // Counts to a billion: minutes of CPU unless stopped.
    let sql = "sql=with recursive c(x) as (select 1 union all select x + 1 from c where x < 1000000000) select count(*) from c";
    let started = Instant::now();
    let run = serve.run(&["call", "query", "--arg", sql, "--timeout", "1"], "");
    run.expect_code(3);
    assert!(run.stderr.contains("timeout"), "{}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(30));
    // The server stops burning CPU: the statement was interrupted. (A running query uses a whole
    // core, so 0.5 s of wall time without 0.2 s of CPU means it is gone.)
    let pid = serve.pid();
    let ticks_per_s = 100; // USER_HZ on Linux
    wait_until("the server goes idle", || {
        let before = cpu_ticks(pid);
        std::thread::sleep(Duration::from_millis(500));
        cpu_ticks(pid) - before < ticks_per_s / 5
    });
    // And it still answers.
    let result = serve.query("select count(*) from products");
    assert_eq!(rows(&result)[0][0], json!(120));
}

/// The same server through the `kelson-client` library: typed results, and `execute` refused with
/// -32021 when the client cannot answer elicitations.
#[test]
fn through_mcp_client() {
    let data = TempDir::new();
    let serve = Serve::start(data.path(), &["--allow-write"]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let client = kelson_client::Client::builder()
            .connect_http(&serve.url)
            .await
            .expect("connect");
        let discovered = client.discover().await.expect("discover");
        let instructions = discovered.instructions.unwrap_or_default();
        assert!(
            instructions.contains("sample (SQLite, writable with approval)"),
            "{instructions}"
        );
        let tools = client.list_all_tools().await.expect("tools");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["describe_table", "execute", "list_tables", "query"]);
        let result = client
            .call_tool(
                "query",
                json!({"sql": "select name, price from products where id = ?1", "params": [1]}),
            )
            .await
            .expect("query");
        assert_ne!(result.is_error, Some(true));
        let structured = result.structured_content.expect("structured content");
        assert_eq!(structured["columns"][0]["name"], "name");
        assert_eq!(structured["row_count"], 1);

        let error = client
            .call_tool("execute", json!({"sql": "delete from orders"}))
            .await
            .expect_err("no elicitation capability");
        assert_eq!(error.kind(), kelson_client::ErrorKind::Protocol, "{error}");
        assert_eq!(error.code(), Some(-32021), "{error}");
        client.close().await.expect("close");
    });
    assert_eq!(
        sqlite_scalar(&data.join("sample.db"), "select count(*) from orders"),
        "2000"
    );
}
