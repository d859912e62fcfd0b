//! Tool arguments: listed by `kelson tools`, checked against the inputSchema before `kelson call` sends
//! anything, and `key=value` positionals pointed at `--arg`.

use crate::harness::HttpServer;

#[test]
fn tools_list_their_arguments() {
    let server = HttpServer::start();
    let run = server.run(&["tools"], "");
    run.expect_code(0);
    let header = run.stdout.lines().next().unwrap_or_default();
    assert!(header.contains("ARGUMENTS (* required)"), "{}", run.stdout);
    let row = |name: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("a row for {name}:\n{}", run.stdout))
            .to_owned()
    };
    assert!(row("test_custom_header").contains("region*: string"));
    // In the schema's order (zip, count, flag, tags), not sorted.
    assert!(
        row("cli_echo").contains("zip: string, count: integer, flag: boolean, tags: array"),
        "{}",
        run.stdout
    );
}

#[test]
fn calls_are_checked_before_they_are_sent() {
    let server = HttpServer::start();
    // The fixture would answer an isError result (exit 1); the local check exits 4 first.
    let run = server.run(&["call", "cli_echo", "--arg", "count=many"], "");
    run.expect_code(4);
    assert!(run.stderr.contains("nothing was sent"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains(r#"argument count: "many" is not of type "integer""#),
        "{}",
        run.stderr
    );
    let run = server.run(&["call", "test_custom_header"], "");
    run.expect_code(4);
    assert!(
        run.stderr.contains(r#"missing required argument "region""#),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("the tool takes: region*: string"),
        "{}",
        run.stderr
    );
    // Valid arguments go through.
    server
        .run(&["call", "test_custom_header", "--arg", "region=eu"], "")
        .expect_code(0);
}

#[test]
fn key_value_positionals_suggest_arg() {
    let server = HttpServer::start();
    let run = server.run(&["call", "cli_echo", "count=2"], "");
    run.expect_code(4);
    assert!(run.stderr.contains("try --arg count=2"), "{}", run.stderr);
    let run = server.run(&["call", "cli_echo", "count=2", "zip=1"], "");
    run.expect_code(4);
    assert!(
        run.stderr.contains("try --arg count=2 --arg zip=1"),
        "{}",
        run.stderr
    );
}
