//! `kelson tools` as a user sees it: the table cut to an 80-column terminal (a real pseudo-terminal),
//! whole with `--wide` and whenever stdout is not a terminal, and `kelson tools NAME`, one tool in
//! full (arguments with types, constraints and nesting, output schema, annotations, execution,
//! `_meta`), with the closest names for one that is not there.

use kelson_server::{HandlerError, RequestContext};
use kelson_types::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::harness::{HttpServer, command, mcp};
use crate::legacy::legacy_server;
#[cfg(unix)]
use crate::terminal::in_terminal;

/// The description of one of the fixture's tools: 83 characters, longer than any share of an
/// 80-column table.
const LONG: &str =
    "Reports progress three times, 50 ms apart, when the request carries a progressToken";

fn object(value: Value) -> JsonObject {
    value.as_object().expect("an object").clone()
}

/// Registers `build_report`, a tool with every kind of argument the detail view describes.
fn add_report_tool(server: &HttpServer) {
    let input = object(json!({
        "type": "object",
        "$defs": {"range": {
            "type": "object",
            "properties": {
                "from": {"type": "string", "format": "date", "description": "The first day"},
                "to": {"type": "string", "format": "date"}
            },
            "required": ["from"]
        }},
        "properties": {
            "table": {"type": "string", "description": "The table to read", "minLength": 1,
                      "maxLength": 64, "pattern": "^[a-z_]+$"},
            "format": {"type": "string", "enum": ["csv", "json", "markdown"], "default": "csv"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
            "period": {"$ref": "#/$defs/range"},
            "columns": {"type": "array", "maxItems": 20, "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "alias": {"type": "string"}},
                "required": ["name"]
            }}
        },
        "required": ["table"],
        "additionalProperties": false
    }));
    let output = object(json!({
        "type": "object",
        "properties": {"rows": {"type": "integer", "description": "How many rows"}},
        "required": ["rows"]
    }));
    let mut tool = Tool::new("build_report", input)
        .with_title("Build a report")
        .with_description("Builds a report from a table's rows.\nThe second line says more.")
        .with_output_schema(output)
        .with_annotations(
            ToolAnnotations::new()
                .with_read_only(true)
                .with_idempotent(true),
        );
    tool.meta = Some(object(json!({"example.com/scopes": ["reports:read"]})));
    server
        .server
        .add_tool(tool, |_ctx: RequestContext, _args: JsonObject| async move {
            Ok::<_, HandlerError>(CallToolResult::text("a report"))
        })
        .expect("build_report registers");
}

#[cfg(unix)]
#[test]
fn an_80_column_terminal_cuts_the_table_and_says_how_to_see_it_whole() {
    let server = HttpServer::start();
    let run = in_terminal(&["tools", "--url", &server.url], 80, &[]);
    run.expect_code(0);
    let out = &run.stdout;
    for line in out.lines() {
        assert!(line.chars().count() <= 80, "{line:?} is wider than 80");
    }
    assert!(out.contains('…'), "{out}");
    assert!(!out.contains(LONG), "{out}");
    assert!(
        out.contains(
            "(cut to 80 columns: --wide keeps values whole; kelson tools NAME shows one tool)\n"
        ),
        "{out}"
    );
    // COLUMNS wins over the kernel's width on a terminal.
    let run = in_terminal(&["tools", "--url", &server.url], 80, &[("COLUMNS", "60")]);
    run.expect_code(0);
    // The table's lines (the note after it is one sentence, made for 80 columns).
    for line in run.stdout.lines().filter(|l| !l.starts_with("(cut to")) {
        assert!(line.chars().count() <= 60, "{line:?} is wider than 60");
    }
    assert!(run.stdout.contains("(cut to 60 columns"), "{}", run.stdout);
}

#[cfg(unix)]
#[test]
fn wide_and_piped_tables_keep_every_value_whole() {
    let server = HttpServer::start();
    let run = in_terminal(&["tools", "--wide", "--url", &server.url], 80, &[]);
    run.expect_code(0);
    let out = &run.stdout;
    assert!(out.contains(LONG), "{out}");
    assert!(out.lines().any(|l| l.chars().count() > 80), "{out}");
    assert!(!out.contains("cut to"), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("json_schema_2020_12_tool"))
        .expect("a row for json_schema_2020_12_tool");
    assert!(
        row.contains(
            "name: string, address: address, contactMethod: string, phone: string, email: string"
        ),
        "{row}"
    );

    // Piped: whole, even with COLUMNS exported by the shell.
    let output = command(&["tools", "--url", &server.url])
        .env("COLUMNS", "60")
        .output()
        .expect("kelson runs");
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains(LONG), "{stdout}");
    assert!(!stdout.contains('…'), "{stdout}");
    assert!(output.stderr.is_empty(), "{:?}", output.stderr);
}

#[test]
fn a_tool_in_full() {
    let server = HttpServer::start();
    add_report_tool(&server);
    let run = server.run(&["tools", "build_report"], "");
    run.expect_code(0);
    let expected = "\
tool        build_report
title       Build a report
description Builds a report from a table's rows.
            The second line says more.
arguments   (* required)
              table*: string (1 to 64 characters; pattern \"^[a-z_]+$\")
                  The table to read
              format: string (one of \"csv\", \"json\", \"markdown\"; default \"csv\")
              limit: integer (1 to 1000; default 100)
              period: object (from #/$defs/range)
                from*: string (format date)
                    The first day
                to: string (format date)
              columns: array of object (at most 20 items)
                name*: string
                alias: string
              (no others accepted)
output      (structuredContent) (* required)
              rows*: integer
                  How many rows
annotations read-only: yes, idempotent: yes
_meta       example.com/scopes: [\"reports:read\"]
";
    assert_eq!(run.stdout, expected, "{}", run.stdout);

    // --json: the tool as the server sent it.
    let run = server.run(&["tools", "build_report", "--json"], "");
    run.expect_code(0);
    let tool = run.json();
    assert_eq!(tool["name"], "build_report");
    assert_eq!(tool["_meta"]["example.com/scopes"][0], "reports:read");
    assert_eq!(tool["inputSchema"]["properties"]["limit"]["maximum"], 1000);

    // A tool of the fixture: composition keywords shown as they are.
    let run = server.run(&["tools", "json_schema_2020_12_tool"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains(
            "              address: object (from #/$defs/address)\n                street: string\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(r#"  allOf: [{"anyOf":[{"required":["phone"]},{"required":["email"]}]}]"#),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(r#"contactMethod: string (one of "phone", "email")"#),
        "{}",
        run.stdout
    );
}

#[test]
fn execution_is_shown_where_the_server_declares_it() {
    // A 2025-11-25 server declares task support in `execution`, which the typed Tool drops.
    let server = legacy_server();
    let run = mcp(&["tools", "legacy_echo", "--stdio", &server], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains("\nexecution   taskSupport: optional\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("arguments   (no arguments)\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn an_unknown_tool_gets_the_closest_names() {
    let server = HttpServer::start();
    add_report_tool(&server);
    let run = server.run(&["tools", "build_reprot"], "");
    run.expect_code(4);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains(
            "error: the server lists no tool named \"build_reprot\"; did you mean \
             \"build_report\"? (kelson tools lists all "
        ),
        "{}",
        run.stderr
    );
    let run = server.run(&["tools", "deploy_to_production"], "");
    run.expect_code(4);
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("no tool named \"deploy_to_production\""),
        "{}",
        run.stderr
    );
}
