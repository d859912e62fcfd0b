//! The server's order of fields is kept, so that answers can be piped: an elicitation form is
//! asked field by field as the server wrote its schema (docs/client/commands.md's promise), in
//! both eras.
//! `test_elicitation` of the conformance server asks for `username` then `email`, which sorted
//! would come the other way round, and echoes what it received. (`kelson tools` summarises a tool's
//! arguments in its schema's order too: arguments.rs.)

use crate::harness::{mcp, stdio_server};

#[test]
fn piped_answers_fill_the_fields_in_the_servers_order() {
    let server = stdio_server();
    for era in ["auto", "legacy"] {
        let run = mcp(
            &[
                "call",
                "test_elicitation",
                r#"{"message":"Who are you?"}"#,
                "--era",
                era,
                "--stdio",
                &server,
            ],
            "ada\nada@example.com\n",
        );
        run.expect_code(0);
        assert!(
            run.stdout.contains("action=accept")
                && run.stdout.contains(r#""username":"ada""#)
                && run.stdout.contains(r#""email":"ada@example.com""#),
            "--era {era}: the first answer goes to the first field\nstdout: {}\nstderr: {}",
            run.stdout,
            run.stderr
        );
        assert!(
            run.stderr.contains("fields: username*, email*"),
            "--era {era}: {}",
            run.stderr
        );
    }
}
