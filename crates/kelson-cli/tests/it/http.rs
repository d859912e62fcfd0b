//! Every client command over Streamable HTTP, in both output modes, and every exit status.

use serde_json::json;

use crate::harness::{HttpServer, Live, mcp};

#[test]
fn discover_shows_the_server_and_json_is_the_raw_result() {
    let server = HttpServer::start();
    let run = server.run(&["discover"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains("kelson-conformance-server"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("2026-07-28 (stateless)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("tools (listChanged)"), "{}", run.stdout);
    assert!(run.stdout.contains("instructions"), "{}", run.stdout);

    let run = server.run(&["discover", "--json"], "");
    run.expect_code(0);
    let value = run.json();
    assert_eq!(value["supportedVersions"], json!(["2026-07-28"]));
    assert!(value["capabilities"]["tools"].is_object());
}

#[test]
fn lists_are_tables_and_json() {
    let server = HttpServer::start();
    let run = server.run(&["tools"], "");
    run.expect_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("DESCRIPTION"),
        "{}",
        run.stdout
    );
    let simple = lines
        .iter()
        .find(|l| l.starts_with("test_simple_text"))
        .expect("a row");
    // Aligned: every description starts in the same column as the header's.
    let column = lines[0].find("DESCRIPTION").unwrap();
    assert_eq!(
        simple.find("Returns a simple text"),
        Some(column),
        "{}",
        run.stdout
    );

    let run = server.run(&["tools", "--json"], "");
    let value = run.json();
    let names: Vec<&str> = value["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"test_simple_text") && names.contains(&"cli_echo"));

    let run = server.run(&["resources"], "");
    run.expect_code(0);
    assert!(run.stdout.lines().next().unwrap().starts_with("URI"));
    assert!(run.stdout.contains("test://static-text") && run.stdout.contains("text/plain"));
    let value = server.run(&["resources", "--json"], "").json();
    assert!(
        value["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == "test://static-binary")
    );

    let run = server.run(&["templates"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains("test://template/{id}/data"),
        "{}",
        run.stdout
    );
    let value = server.run(&["templates", "--json"], "").json();
    assert_eq!(
        value["resourceTemplates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );

    let run = server.run(&["prompts"], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains("test_prompt_with_arguments") && run.stdout.contains("arg1*, arg2*"),
        "{}",
        run.stdout
    );
    let value = server.run(&["prompts", "--json"], "").json();
    assert!(
        value["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "test_simple_prompt")
    );
}

#[test]
fn call_renders_content_and_saves_media() {
    let server = HttpServer::start();
    let run = server.run(&["call", "test_simple_text"], "");
    run.expect_code(0);
    assert_eq!(run.stdout, "This is a simple text response for testing.\n");

    let dir = std::env::temp_dir().join(format!("mcp-cli-it-media-{}", std::process::id()));
    let dir_text = dir.to_str().unwrap();
    let run = server.run(
        &[
            "call",
            "test_multiple_content_types",
            "--save-dir",
            dir_text,
        ],
        "",
    );
    run.expect_code(0);
    assert!(run.stdout.contains("[image] image/png"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("[resource] test://mixed-content-resource (application/json)"),
        "{}",
        run.stdout
    );
    let png = dir.join("test_multiple_content_types.png");
    let bytes =
        std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}\n{}", png.display(), run.stdout));
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");

    let run = server.run(&["call", "test_audio_content", "--save-dir", dir_text], "");
    run.expect_code(0);
    assert!(run.stdout.contains("[audio] audio/wav"), "{}", run.stdout);
    let wav = std::fs::read(dir.join("test_audio_content.wav")).unwrap();
    assert_eq!(&wav[..4], b"RIFF");
    std::fs::remove_dir_all(&dir).unwrap();

    let value = server
        .run(&["call", "test_image_content", "--json"], "")
        .json();
    assert_eq!(value["content"][0]["type"], "image");
    assert_eq!(value["resultType"], "complete");
}

#[test]
fn arguments_follow_the_schema() {
    let server = HttpServer::start();
    let run = server.run(
        &[
            "call",
            "cli_echo",
            "--arg",
            "zip=02134",
            "--arg",
            "count=3",
            "--arg",
            "flag=true",
            "--arg",
            r#"tags=["a","b"]"#,
        ],
        "",
    );
    run.expect_code(0);
    // Structured content is shown once, pretty.
    let value: serde_json::Value = serde_json::from_str(&run.stdout).expect("pretty JSON");
    assert_eq!(
        value,
        json!({"zip": "02134", "count": 3, "flag": true, "tags": ["a", "b"]})
    );

    let value = server
        .run(
            &[
                "call",
                "cli_echo",
                r#"{"zip": "1", "count": 1}"#,
                "--arg",
                "count=2",
                "--json",
            ],
            "",
        )
        .json();
    assert_eq!(value["structuredContent"], json!({"zip": "1", "count": 2}));
}

#[test]
fn read_prompt_and_complete() {
    let server = HttpServer::start();
    let run = server.run(&["read", "test://static-text"], "");
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("This is the content of the static text resource."),
        "{}",
        run.stdout
    );
    let value = server
        .run(&["read", "test://template/42/data", "--json"], "")
        .json();
    assert_eq!(value["contents"][0]["uri"], "test://template/42/data");

    let run = server.run(
        &[
            "prompt",
            "test_prompt_with_arguments",
            "--arg",
            "arg1=x",
            "--arg",
            "arg2=y",
        ],
        "",
    );
    run.expect_code(0);
    assert!(run.stdout.starts_with("user:\n"), "{}", run.stdout);
    assert!(
        run.stdout.contains("arg1='x'") && run.stdout.contains("arg2='y'"),
        "{}",
        run.stdout
    );
    let value = server
        .run(&["prompt", "test_simple_prompt", "--json"], "")
        .json();
    assert_eq!(value["messages"][0]["role"], "user");

    let run = server.run(
        &[
            "complete",
            "--prompt",
            "test_prompt_with_arguments",
            "arg1",
            "test",
        ],
        "",
    );
    run.expect_code(0);
    assert!(
        run.stdout.lines().any(|l| l == "testValue1"),
        "{}",
        run.stdout
    );
    let value = server
        .run(
            &[
                "complete",
                "--prompt",
                "test_prompt_with_arguments",
                "arg1",
                "",
                "--json",
            ],
            "",
        )
        .json();
    assert!(
        value["completion"]["values"]
            .as_array()
            .is_some_and(|v| !v.is_empty())
    );
}

#[test]
fn progress_goes_to_stderr() {
    let server = HttpServer::start();
    let run = server.run(&["call", "test_tool_with_progress"], "");
    run.expect_code(0);
    // Without a terminal the bar is plain lines.
    assert!(
        run.stderr
            .contains("progress: 0/100 (0%) Completed step 0 of 100 ["),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("progress: 100/100"), "{}", run.stderr);
    assert!(!run.stdout.contains("progress"), "{}", run.stdout);

    let run = server.run(&["call", "test_tool_with_logging", "--log", "info"], "");
    run.expect_code(0);
    assert!(run.stderr.contains("[info"), "{}", run.stderr);
}

#[test]
fn exit_codes() {
    let server = HttpServer::start();
    // 1: the tool reported an error; the content is still shown.
    let run = server.run(&["call", "test_error_handling"], "");
    run.expect_code(1);
    assert!(
        run.stdout.contains("intentionally returns an error"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("isError"), "{}", run.stderr);
    let run = server.run(&["call", "test_error_handling", "--json"], "");
    run.expect_code(1);
    assert_eq!(run.json()["isError"], true);

    // 2: a JSON-RPC error, with its code and message on stderr.
    let run = server.run(&["call", "no_such_tool"], "");
    run.expect_code(2);
    assert!(
        run.stderr.contains("JSON-RPC error -32602"),
        "{}",
        run.stderr
    );
    let run = server.run(&["read", "test://missing"], "");
    run.expect_code(2);
    let run = server.run(&["call", "test_panic"], "");
    run.expect_code(2);
    assert!(run.stderr.contains("-32603"), "{}", run.stderr);

    // 3: a local timeout (the request is cancelled) ...
    let run = server.run(
        &["call", "test_slow", "--arg", "ms=5000", "--timeout", "0.5"],
        "",
    );
    run.expect_code(3);
    assert!(run.stderr.contains("local timeout"), "{}", run.stderr);
    // ... and nobody listening.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", listener.local_addr().unwrap())
    };
    let run = mcp(&["tools", "--url", &dead], "");
    run.expect_code(3);
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);

    // 4: usage errors.
    server.run(&["call", "cli_echo", "[1]"], "").expect_code(4);
    server
        .run(&["call", "cli_echo", "--arg", "novalue"], "")
        .expect_code(4);
    server
        .run(&["call", "test_tool_with_logging", "--log", "loud"], "")
        .expect_code(4);
    mcp(&["tools"], "").expect_code(4);
    mcp(&["tools", "--url", &server.url, "--header", "no colon"], "").expect_code(4);
    mcp(&["tools", "--stdio", "'unterminated"], "").expect_code(4);
}

#[test]
fn listen_prints_changes_until_ctrl_c() {
    let server = HttpServer::start();
    let live = Live::start(&["listen", "--tools", "--url", &server.url]);
    Live::wait_for(&live.stderr, "listening for tool list changes");
    // A change on the server reaches the stream.
    let tool = kelson_types::Tool::without_arguments("transient");
    server
        .server
        .add_tool(
            tool,
            |_ctx: kelson_server::RequestContext, _args: kelson_types::JsonObject| async {
                Ok::<_, kelson_server::HandlerError>(kelson_types::CallToolResult::text("hi"))
            },
        )
        .unwrap();
    Live::wait_for(&live.stdout, "tools list changed");
    let (status, rest) = live.interrupt();
    assert_eq!(status.code(), Some(0), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("stopped")), "{rest:?}");

    // --json: one notification per line.
    let live = Live::start(&["listen", "--prompts", "--json", "--url", &server.url]);
    Live::wait_for(&live.stderr, "listening for prompt list changes");
    let run = server.run(&["call", "test_trigger_prompt_change"], "");
    run.expect_code(0);
    let line = Live::wait_for(&live.stdout, "list_changed").pop().unwrap();
    let value: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(value["method"], "notifications/prompts/list_changed");
    let (status, _) = live.interrupt();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn roots_given_as_paths_are_sent_as_file_uris() {
    let server = HttpServer::start();
    let dir = crate::serve::support::TempDir::new();
    let notes = dir.join("My Notes");
    std::fs::create_dir(&notes).unwrap();
    let home = dir.join("home");
    std::fs::create_dir_all(home.join("docs")).unwrap();
    let base = format!("file://{}", dir.path().display());
    let mut command = crate::harness::command(&[
        "call",
        "cli_roots",
        "--url",
        &server.url,
        "--root",
        ".",
        "--root",
        "My Notes/../My Notes",
        "--root",
        "~/docs",
        "--root",
        "file:///kept/as%20is",
    ]);
    let output = command
        .current_dir(dir.path())
        .env("HOME", &home)
        .output()
        .expect("kelson runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let name = dir.path().file_name().unwrap().to_str().unwrap();
    assert_eq!(
        stdout,
        format!(
            "{base} {name}\n{base}/My%20Notes My Notes\n{base}/home/docs docs\nfile:///kept/as%20is -\n"
        )
    );

    // A path that does not exist is a usage error, before anything is sent.
    let run = server.run(&["tools", "--root", "/nonexistent/mcp-root"], "");
    run.expect_code(4);
    assert!(
        run.stderr.contains("--root /nonexistent/mcp-root"),
        "{}",
        run.stderr
    );
}

#[test]
fn timeouts_take_the_duration_forms_of_every_command() {
    let server = HttpServer::start();
    let run = server.run(
        &[
            "call",
            "test_slow",
            "--arg",
            "ms=5000",
            "--timeout",
            "300ms",
        ],
        "",
    );
    run.expect_code(3);
    assert!(
        run.stderr
            .contains("no answer within 300ms (local timeout)"),
        "{}",
        run.stderr
    );
    server.run(&["tools", "--timeout", "2s"], "").expect_code(0);
    server.run(&["tools", "--timeout", "1m"], "").expect_code(0);
    server.run(&["tools", "--timeout", "0"], "").expect_code(4);
    let run = server.run(&["tools", "--timeout", "soon"], "");
    run.expect_code(4);
    assert!(
        run.stderr.contains("invalid duration \"soon\""),
        "{}",
        run.stderr
    );
}
