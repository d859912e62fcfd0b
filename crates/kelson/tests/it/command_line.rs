//! The command line of a server built with `kelson::run`, through the real `quickstart` example:
//! `--help` and `--version` answer, a mistake is said in words with status 2, and an address in
//! use stops the start in words with status 1.

use std::process::{Command, Output};

use super::quickstart::example;

fn quickstart(args: &[&str]) -> Output {
    Command::new(example("quickstart"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("quickstart runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_and_version_answer_on_stdout() {
    for flag in ["--help", "-h"] {
        let out = quickstart(&[flag]);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{flag}: {stdout}{}",
            text(&out.stderr)
        );
        assert!(
            stdout.starts_with("quickstart 1.0.0: an MCP server"),
            "{stdout}"
        );
        assert!(
            stdout.contains("Usage: quickstart [--stdio | --http ADDR]"),
            "{stdout}"
        );
        assert!(stdout.contains("--http ADDR"), "{stdout}");
        assert!(stdout.contains("-V, --version"), "{stdout}");
    }
    for flag in ["--version", "-V"] {
        let out = quickstart(&[flag]);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(text(&out.stdout), "quickstart 1.0.0\n");
    }
}

#[test]
fn a_mistake_is_said_in_words_with_the_usage_status() {
    let out = quickstart(&["--verbose"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(
            "quickstart: error: unknown argument --verbose; usage: [--stdio | --http ADDR]\n"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("Try 'quickstart --help'"), "{stderr}");
    // Not the Debug form `main` would print for a returned error.
    assert!(!stderr.contains("Error: \""), "{stderr}");
    assert!(text(&out.stdout).is_empty());

    let out = quickstart(&["--http", "nowhere"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--http \"nowhere\""), "{stderr}");
}

#[test]
fn an_address_in_use_stops_the_start_in_words() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = taken.local_addr().unwrap().to_string();
    let out = quickstart(&["--http", &addr]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "quickstart: error: cannot listen on {addr}: the address is in use"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("Os {"), "{stderr}");
    drop(taken);
}
