//! `kelson serve` on the machine's MariaDB (127.0.0.1:3306), through least-privilege accounts made for
//! each test: every tool from a configuration file, writes through a writer account, read-only
//! bypass attempts, the refusal of a privileged account, and a query cancelled by the client
//! stopping on the server.

use std::process::Stdio;

use serde_json::json;

use super::support::{My, Serve, TempDir, my_url, rows, serve_refused, wait_until};
use crate::harness::command;

const SHOP: &str = "
CREATE TABLE customers (id int AUTO_INCREMENT PRIMARY KEY, name varchar(100) NOT NULL, city varchar(100));;
CREATE TABLE orders (
    id int AUTO_INCREMENT PRIMARY KEY,
    customer_id int NOT NULL,
    total decimal(10, 2) NOT NULL,
    FOREIGN KEY (customer_id) REFERENCES customers (id)
);;
INSERT INTO customers (name, city) VALUES ('Ada', 'London'), ('Grace', 'Arlington');;
INSERT INTO orders (customer_id, total) VALUES (1, 12.50), (1, 99.00), (2, 5.25)
";

/// Everything a read could have changed.
fn snapshot(my: &My) -> String {
    let d = &my.db;
    my.scalar(&format!(
        "SELECT CONCAT_WS('|', \
            (SELECT GROUP_CONCAT(CONCAT_WS(',', id, name, IFNULL(city, '-')) ORDER BY id) FROM `{d}`.customers), \
            (SELECT GROUP_CONCAT(CONCAT_WS(',', id, customer_id, total) ORDER BY id) FROM `{d}`.orders), \
            (SELECT GROUP_CONCAT(TABLE_NAME ORDER BY TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{d}'))"
    ))
}

#[test]
fn every_tool_and_approved_writes_from_a_config_file() {
    if !kelson_testenv::mariadb() {
        return;
    }
    let my = My::new(SHOP);
    let scratch = TempDir::new();
    let config = scratch.join("kelson.toml");
    std::fs::write(
        &config,
        format!(
            "[sample]\nenabled = false\n\n\
             [databases.shop]\nurl = \"{}\"\nwrite_url = \"{}\"\nallow_write = true\n\
             description = \"A test shop\"\nmax_rows = 2\n",
            my_url(&my.reader, &my.db),
            my_url(&my.writer, &my.db).replace("mysql://", "mariadb://")
        ),
    )
    .unwrap();
    let serve = Serve::start(scratch.path(), &["--config", config.to_str().unwrap()]);
    let db = my.db.as_str();
    let schema_arg = format!("schema={db}");

    let run = serve.run(&["call", "list_tables", "--arg", &schema_arg, "--json"], "");
    run.expect_code(0);
    let listed = &run.json()["structuredContent"];
    assert_eq!(listed["engine"], "MariaDB");
    assert_eq!(listed["database"], "shop");
    let names: Vec<&str> = listed["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["customers", "orders"]);

    let run = serve.run(&["call", "describe_table", "--arg", "table=orders"], "");
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
            "sql=select name, city from customers where city = ?",
            "--arg",
            "params=[\"London\"]",
            "--json",
        ],
        "",
    );
    run.expect_code(0);
    assert_eq!(
        rows(&run.json()["structuredContent"]),
        &vec![json!(["Ada", "London"])]
    );
    // max_rows from the file.
    let result = serve.query("select id from orders order by id");
    assert_eq!(rows(&result).len(), 2);
    assert_eq!(result["truncated"], true);

    let run = serve.run(&["resources"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains(&format!("sql://shop/{db}/orders")),
        "{}",
        run.stdout
    );

    // Writes: declined, then approved; they run as the writer account.
    let insert = "sql=insert into customers (name, city) values ('Linus', 'Helsinki')";
    let linus = || {
        my.scalar(&format!(
            "SELECT COUNT(*) FROM `{db}`.customers WHERE name = 'Linus'"
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
    let before = snapshot(&my);
    for sql in [
        "insert into customers (name) values ('x')",
        "commit; delete from orders",
        "select 1; delete from orders",
        "create table t (x int)",
        "create temporary table t (x int)",
        "select * from customers for update",
        "lock tables customers write",
    ] {
        let run = serve.run(&["call", "query", "--arg", &format!("sql={sql}")], "");
        run.expect_code(1);
        assert!(
            run.stdout.contains("Refused") || run.stdout.contains("SQL error"),
            "{sql}: {}",
            run.stdout
        );
    }
    assert_eq!(snapshot(&my), before);
}

#[test]
fn a_privileged_account_is_refused_at_start() {
    if !kelson_testenv::mariadb() {
        return;
    }
    let scratch = TempDir::new();
    let run = serve_refused(scratch.path(), &["--db", &my_url("root", "test")]);
    run.expect_code(3);
    assert!(
        run.stderr.contains("--db main: account root@")
            && run.stderr.contains("ALL PRIVILEGES")
            && run.stderr.contains("section MySQL and MariaDB"),
        "{}",
        run.stderr
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let run = serve_refused(
        scratch.path(),
        &["--db", &format!("sales=mysql://x@127.0.0.1:{closed}/test")],
    );
    run.expect_code(3);
    assert!(
        run.stderr.contains(&format!(
            "--db sales: MySQL x@127.0.0.1:{closed}/test: connection refused at 127.0.0.1:{closed}"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn a_query_the_client_cancels_stops_on_the_server() {
    if !kelson_testenv::mariadb() {
        return;
    }
    let my = My::new(SHOP);
    let scratch = TempDir::new();
    let serve = Serve::start(
        scratch.path(),
        &[
            "--db",
            &my_url(&my.reader, &my.db),
            "--query-timeout",
            "10m",
        ],
    );
    let active = || {
        my.scalar(&format!(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = '{}' \
             AND INFO LIKE '%SLEEP(600)%'",
            my.reader
        ))
    };
    let client = command(&[
        "call",
        "query",
        "--arg",
        "sql=select sleep(600)",
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
    // The adapter killed the statement on the server.
    wait_until("the query stops on the server", || active() == "0");
    let result = serve.query("select count(*) as n from customers");
    assert_eq!(rows(&result)[0][0], json!(2));
}
