//! What `mcp call` prints: the content for a person, structured content only where it adds
//! something, and media files.

use crate::harness::HttpServer;
use crate::serve::support::{Serve, TempDir};

/// 1,000 rows from the sample database, without depending on its tables' sizes.
const THOUSAND: &str = "sql=with recursive n(i) as (select 1 union all select i + 1 from n where i < 1000) select i from n";

#[test]
fn a_query_prints_its_rows_once() {
    let data = TempDir::new();
    let serve = Serve::start(data.path(), &[]);
    let run = serve.run(&["call", "query", "--arg", THOUSAND], "");
    run.expect_code(0);
    // The table: a header, a rule, the rows, the count.
    assert!(run.stdout.contains("(1000 rows)"), "{}", run.stdout);
    assert!(
        run.stdout.lines().count() < 1_010,
        "{}",
        run.stdout.lines().count()
    );
    assert!(!run.stdout.contains("structured content"), "{}", run.stdout);
    assert!(
        run.stderr.contains("--structured prints it"),
        "{}",
        run.stderr
    );

    let run = serve.run(&["call", "query", "--arg", THOUSAND, "--structured"], "");
    run.expect_code(0);
    let (table, structured) = run
        .stdout
        .split_once("structured content:\n")
        .expect("the structured content follows the table");
    assert!(table.contains("(1000 rows)"));
    let value: serde_json::Value = serde_json::from_str(structured).expect("JSON");
    assert_eq!(value["row_count"], 1000);
}

#[test]
fn structured_content_repeated_as_text_is_shown_once() {
    let server = HttpServer::start();
    let run = server.run(&["call", "cli_echo", "--arg", "count=2"], "");
    run.expect_code(0);
    assert_eq!(run.stdout, "{\n  \"count\": 2\n}\n");
    assert!(!run.stderr.contains("--structured"), "{}", run.stderr);
}
