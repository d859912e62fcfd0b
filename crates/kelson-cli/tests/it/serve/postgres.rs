//! `kelson serve` on the machine's PostgreSQL (127.0.0.1:5432, database `test`), through
//! least-privilege roles made for each test: every tool from a configuration file, writes through
//! a writer role, read-only bypass attempts, the refusal of a superuser, and a query cancelled by
//! the client stopping on the server.

use std::process::Stdio;

use serde_json::json;

use super::support::{Pg, Serve, TempDir, admin_role, pg_url, rows, serve_refused, wait_until};
use crate::harness::command;

const SHOP: &str = "
CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, city text);
CREATE TABLE orders (
    id serial PRIMARY KEY,
    customer_id int NOT NULL REFERENCES customers(id),
    total numeric(10, 2) NOT NULL
);
INSERT INTO customers (name, city) VALUES ('Ada', 'London'), ('Grace', 'Arlington');
INSERT INTO orders (customer_id, total) VALUES (1, 12.50), (1, 99.00), (2, 5.25);
CREATE FUNCTION sneaky() RETURNS int LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN INSERT INTO customers (name) VALUES ('sneaky'); RETURN 1; END $$;
GRANT EXECUTE ON FUNCTION sneaky() TO PUBLIC;
";

/// Everything a read could have changed.
fn snapshot(pg: &Pg) -> String {
    let s = &pg.schema;
    pg.scalar(&format!(
        "SELECT concat_ws('|', \
            (SELECT string_agg(c::text, ',' ORDER BY id) FROM {s}.customers c), \
            (SELECT string_agg(o::text, ',' ORDER BY id) FROM {s}.orders o), \
            (SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = '{s}'::regnamespace))"
    ))
}

#[test]
fn every_tool_and_approved_writes_from_a_config_file() {
    if !kelson_testenv::postgres() {
        return;
    }
    let pg = Pg::new(SHOP);
    let scratch = TempDir::new();
    let config = scratch.join("kelson.toml");
    std::fs::write(
        &config,
        format!(
            "[sample]\nenabled = false\n\n\
             [databases.shop]\nurl = \"{}\"\nwrite_url = \"{}\"\nallow_write = true\n\
             description = \"A test shop\"\nmax_rows = 2\n",
            pg_url(&pg.reader),
            pg_url(&pg.writer)
        ),
    )
    .unwrap();
    let serve = Serve::start(scratch.path(), &["--config", config.to_str().unwrap()]);
    assert!(!scratch.join("sample.db").exists(), "the sample is off");
    let schema = pg.schema.as_str();
    let schema_arg = format!("schema={schema}");

    let run = serve.run(&["call", "list_tables", "--arg", &schema_arg, "--json"], "");
    run.expect_code(0);
    let listed = &run.json()["structuredContent"];
    assert_eq!(listed["engine"], "PostgreSQL");
    assert_eq!(listed["database"], "shop");
    let names: Vec<&str> = listed["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["customers", "orders"]);

    let run = serve.run(
        &[
            "call",
            "describe_table",
            "--arg",
            &schema_arg,
            "--arg",
            "table=orders",
        ],
        "",
    );
    run.expect_code(0);
    assert!(
        run.stdout.contains("customer_id") && run.stdout.contains("customers"),
        "{}",
        run.stdout
    );

    let run = serve.run(
        &[
            "call",
            "query",
            "--arg",
            "sql=select name from customers where city = $1",
            "--arg",
            "params=[\"London\"]",
            "--json",
        ],
        "",
    );
    run.expect_code(0);
    assert_eq!(
        rows(&run.json()["structuredContent"]),
        &vec![json!(["Ada"])]
    );
    // max_rows from the file.
    let result = serve.query("select id from orders order by id");
    assert_eq!(rows(&result).len(), 2);
    assert_eq!(result["truncated"], true);

    let run = serve.run(&["resources"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains(&format!("sql://shop/{schema}/orders")),
        "{}",
        run.stdout
    );

    // Writes: declined, then approved; they run as the writer role.
    let insert = "sql=insert into customers (name, city) values ('Linus', 'Helsinki')";
    let linus = || {
        pg.scalar(&format!(
            "SELECT count(*) FROM {schema}.customers WHERE name = 'Linus'"
        ))
    };
    let run = serve.run(&["call", "execute", "--arg", insert], ":decline\n");
    run.expect_code(1);
    assert!(run.stdout.contains("declined"), "{}", run.stdout);
    assert_eq!(linus(), "0");
    let run = serve.run(&["call", "execute", "--arg", insert], "y\n");
    run.expect_code(0);
    assert!(run.stdout.contains("1 row changed"), "{}", run.stdout);
    assert_eq!(linus(), "1");

    // Reads cannot write, whatever the statement tries.
    let before = snapshot(&pg);
    for sql in [
        "insert into customers (name) values ('x')",
        "with x as (insert into customers (name) values ('x') returning id) select * from x",
        "select sneaky()",
        "select 1; delete from orders",
        "create table t (x int)",
        "copy (select 1) to program 'true'",
    ] {
        let run = serve.run(&["call", "query", "--arg", &format!("sql={sql}")], "");
        run.expect_code(1);
        assert!(
            run.stdout.contains("Refused") || run.stdout.contains("SQL error"),
            "{sql}: {}",
            run.stdout
        );
    }
    assert_eq!(snapshot(&pg), before);
}

#[test]
fn a_superuser_url_is_refused_at_start() {
    if !kelson_testenv::postgres() {
        return;
    }
    let scratch = TempDir::new();
    let run = serve_refused(scratch.path(), &["--db", &pg_url(&admin_role())]);
    run.expect_code(3);
    assert!(
        run.stderr.contains("--db main: ") && run.stderr.contains("superuser"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_query_the_client_cancels_stops_on_the_server() {
    if !kelson_testenv::postgres() {
        return;
    }
    let pg = Pg::new(SHOP);
    let scratch = TempDir::new();
    let serve = Serve::start(
        scratch.path(),
        &["--db", &pg_url(&pg.reader), "--query-timeout", "10m"],
    );
    let active = || {
        pg.scalar(&format!(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = '{}' AND state = 'active' \
             AND query LIKE '%pg_sleep(600)%'",
            pg.reader
        ))
    };
    // The client gives up after 3 s and cancels the request.
    let client = command(&[
        "call",
        "query",
        "--arg",
        "sql=select pg_sleep(600)",
        "--timeout",
        "3",
        "--url",
        &serve.url,
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("kelson starts");
    wait_until("the query runs on the server", || active() == "1");
    let output = client.wait_with_output().expect("kelson runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("timeout"), "{stderr}");
    // The adapter sent PostgreSQL a cancel request: the backend is no longer running it.
    wait_until("the query stops on the server", || active() == "0");
    assert!(!serve.log().contains("could not send"), "{}", serve.log());
    // The server still answers.
    let result = serve.query("select count(*) as n from customers");
    assert_eq!(rows(&result)[0][0], json!(2));
}

#[test]
fn an_unreachable_approval_ledger_is_refused_at_start() {
    let scratch = TempDir::new();
    let run = serve_refused(
        scratch.path(),
        &[
            "--allow-write",
            "--approval-ledger",
            "postgres://nobody@127.0.0.1:1/none?connect_timeout=2",
        ],
    );
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("--approval-ledger: connecting to the approval ledger"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_database_that_cannot_be_opened_says_what_the_server_said_and_where() {
    if !kelson_testenv::postgres() {
        return;
    }
    let scratch = TempDir::new();
    // A role that does not exist, a database that does not exist, a port where nothing listens.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let refused = format!("connection refused at 127.0.0.1:{closed}");
    let cases = [
        (
            "postgres://nobody_here@127.0.0.1:5432/test".to_owned(),
            vec![
                "--db main: PostgreSQL nobody_here@127.0.0.1:5432/test: ",
                "role \"nobody_here\" does not exist",
            ],
        ),
        (
            format!(
                "postgres://{}@127.0.0.1:5432/no_such_database",
                admin_role()
            ),
            vec!["database \"no_such_database\" does not exist"],
        ),
        (
            format!("sales=postgres://{}@127.0.0.1:{closed}/test", admin_role()),
            vec!["--db sales: PostgreSQL ", &*refused],
        ),
    ];
    for (url, wanted) in &cases {
        let run = serve_refused(scratch.path(), &["--db", url]);
        run.expect_code(3);
        for needle in wanted {
            assert!(
                run.stderr.contains(needle),
                "{needle:?} in:\n{}",
                run.stderr
            );
        }
        assert!(!run.stderr.contains("db error"), "{}", run.stderr);
    }
}
