//! Elicitation answered through the terminal prompt, driven by piping the answers into stdin.

use serde_json::{Value, json};

use crate::harness::{HttpServer, mcp, stdio_server};
use crate::legacy::legacy_server;

#[test]
fn a_form_is_filled_in_field_by_field() {
    let server = HttpServer::start();
    // No accept question first: e-mail: bad then good; age: out of range then 30; colour:
    // default (blue); subscribe: y.
    let answers = "not-an-email\nme@example.com\n12\n30\n\ny\n";
    let run = server.run(&["call", "cli_form"], answers);
    run.expect_code(0);
    assert_eq!(
        run.stdout.trim(),
        r#"accepted: {"age":30,"colour":"blue","email":"me@example.com","subscribe":true}"#,
        "{}",
        run.stderr
    );
    // The questions went to stderr, with the checks' complaints.
    assert!(
        run.stderr
            .contains("The server asks: Sign up for the newsletter"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("E-mail *"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("type :decline or :cancel at any prompt"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("not a valid email"), "{}", run.stderr);
    assert!(run.stderr.contains("at least 18"), "{}", run.stderr);
    assert!(run.stderr.contains("(default blue)"), "{}", run.stderr);
    assert!(run.stderr.contains("3) blue"), "{}", run.stderr);
}

#[test]
fn decline_cancel_and_no_input() {
    let server = HttpServer::start();
    let run = server.run(&["call", "cli_form"], ":decline\n");
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "declined");
    let run = server.run(&["call", "cli_form"], ":cancel\n");
    assert_eq!(run.stdout.trim(), "cancelled");
    // At a later field.
    let run = server.run(&["call", "cli_form"], "me@example.com\n:decline\n");
    assert_eq!(run.stdout.trim(), "declined", "{}", run.stderr);
    // The input ends mid-form, or before it: cancelled.
    let run = server.run(&["call", "cli_form"], "me@example.com\n");
    assert_eq!(run.stdout.trim(), "cancelled", "{}", run.stderr);
    let run = server.run(&["call", "cli_form"], "");
    assert_eq!(run.stdout.trim(), "cancelled", "{}", run.stderr);
    // --no-input never reads stdin.
    let run = server.run(
        &["call", "cli_form", "--no-input"],
        "me@example.com\n30\n\ny\n",
    );
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "declined");
    assert!(
        run.stderr.contains("declined (--no-input)"),
        "{}",
        run.stderr
    );
}

#[test]
fn url_elicitation_shows_the_url_and_asks_for_consent() {
    let server = HttpServer::start();
    let run = server.run(&["call", "cli_url"], "y\n");
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "url: Accept");
    assert!(
        run.stderr
            .contains("https://auth.example.com/authorize?state=abc&scope=read"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("does not open or fetch it"),
        "{}",
        run.stderr
    );
    let run = server.run(&["call", "cli_url"], "\n");
    assert_eq!(run.stdout.trim(), "url: Decline");
}

#[test]
fn piped_answers_fill_the_form() {
    // As `echo Ada | kelson call ...`: the one line is the first field's answer.
    let run = mcp(
        &[
            "call",
            "test_input_required_result_elicitation",
            "--stdio",
            &stdio_server(),
        ],
        "Ada\n",
    );
    run.expect_code(0);
    assert_eq!(run.stdout.trim(), "Hello, Ada!");
}

#[test]
fn fields_are_asked_in_the_servers_order() {
    // A legacy server asks with elicitation/create; its fields are name (required), age, city.
    let run = mcp(
        &["call", "legacy_form", "--stdio", &legacy_server()],
        "Ada\n30\nParis\n",
    );
    run.expect_code(0);
    let name = run.stderr.find("Name *").expect("Name is asked");
    let age = run.stderr.find("Age").expect("Age is asked");
    let city = run.stderr.find("City").expect("City is asked");
    assert!(name < age && age < city, "{}", run.stderr);
    // The server echoes the response it got.
    let response: Value = serde_json::from_str(run.stdout.trim()).expect("JSON");
    assert_eq!(
        response["result"],
        json!({"action": "accept", "content": {"name": "Ada", "age": 30, "city": "Paris"}}),
        "{}",
        run.stderr
    );
}
