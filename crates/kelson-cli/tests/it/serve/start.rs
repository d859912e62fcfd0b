//! How `kelson serve` starts, through the real binary: the listener bound before anything is opened
//! or announced (a taken port says so and what to do), the next step printed once it serves,
//! `GET /` pointing at the endpoint, databases that are not SQLite files named up front, the exit
//! status of each kind of mistake, and refused writes pointing at `--allow-write`.

use super::support::{Serve, TempDir, http, serve_refused, wait_until};
use crate::harness::mcp;

#[test]
fn a_taken_port_stops_the_start_before_anything_is_opened_and_says_what_to_do() {
    let data = TempDir::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let run = serve_refused(data.path(), &["--http", &addr.to_string()]);
    run.expect_code(3);
    let want = format!(
        "error: --http: cannot listen on {addr}: the address is in use; another server (perhaps \
         another kelson serve) is running there: stop it, or serve on another port with --http PORT \
         (e.g. --http {})",
        addr.port() + 1
    );
    assert!(
        run.stderr.contains(&want),
        "wanted {want:?} in:\n{}",
        run.stderr
    );
    // Nothing was opened, created or announced first.
    assert!(!run.stderr.contains("database sample"), "{}", run.stderr);
    assert!(!run.stderr.contains("accepting"), "{}", run.stderr);
    assert!(!data.join("sample.db").exists());

    // From the configuration file: the file, the key and its line.
    let config = data.join("kelson.toml");
    std::fs::write(&config, format!("[http]\nbind = \"{addr}\"\n")).unwrap();
    let run = serve_refused(data.path(), &["--config", config.to_str().unwrap()]);
    run.expect_code(3);
    let want = format!(
        "error: {}: http.bind: cannot listen on {addr}: the address is in use",
        config.display()
    );
    assert!(
        run.stderr.contains(&want),
        "wanted {want:?} in:\n{}",
        run.stderr
    );
    assert!(run.stderr.contains("(line 2)"), "{}", run.stderr);
    drop(taken);
}

#[test]
fn the_start_ends_with_the_next_step_and_get_slash_points_at_the_endpoint() {
    let data = TempDir::new();
    let serve = Serve::start(data.path(), &[]);
    // The last start line, after the address: a command that works as printed.
    wait_until("the next step is printed", || {
        serve.log().contains("try it: ")
    });
    let log = serve.log();
    let line = log
        .lines()
        .find(|l| l.contains("try it: "))
        .unwrap_or_else(|| panic!("no next step in:\n{log}"));
    assert!(
        line.ends_with(&format!("try it: kelson tools --url {}", serve.url)),
        "{line}"
    );
    let tools = mcp(&["tools", "--url", &serve.url], "");
    tools.expect_code(0);
    assert!(tools.stdout.contains("query"), "{}", tools.stdout);

    // GET / names the endpoint, under the host the request used.
    let root = serve.url.trim_end_matches("/mcp");
    let page = http(&format!("{root}/"), "GET", &[], "");
    assert_eq!(page.status, 200, "{}", page.head);
    assert_eq!(
        page.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(page.body.contains("This is an MCP server"), "{}", page.body);
    assert!(
        page.body
            .contains(&format!("Its endpoint is {}\n", serve.url)),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains(&format!("kelson tools --url {}", serve.url)),
        "{}",
        page.body
    );
    let head = http(&format!("{root}/"), "HEAD", &[], "");
    assert_eq!(head.status, 200);
    assert_eq!(head.body, "");
    // Behind the same Host/Origin policy as the endpoint.
    let port = serve
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp");
    let rebinding = format!("evil.example:{port}");
    let refused = http(
        &format!("{root}/"),
        "GET",
        &[("Host", rebinding.as_str())],
        "",
    );
    assert_eq!(refused.status, 403, "{}", refused.head);
    assert!(!refused.body.contains("endpoint"), "{}", refused.body);
    // Other paths and methods are as before.
    assert_eq!(http(&format!("{root}/"), "POST", &[], "").status, 404);
    assert_eq!(http(&format!("{root}/nothing"), "GET", &[], "").status, 404);
}

#[test]
fn with_the_endpoint_at_the_root_get_slash_is_the_endpoint() {
    let data = TempDir::new();
    let serve = Serve::start(data.path(), &["--path", "/"]);
    let page = http(&serve.url, "GET", &[], "");
    assert_ne!(page.status, 200, "{}", page.body);
    assert!(
        !page.body.contains("This is an MCP server"),
        "{}",
        page.body
    );
}

#[test]
fn a_directory_or_a_file_of_something_else_is_named_before_anything_is_served() {
    let scratch = TempDir::new();
    let data = scratch.join("data");
    let folder = scratch.join("folder");
    std::fs::create_dir(&folder).unwrap();
    let run = serve_refused(&data, &["--db", folder.to_str().unwrap()]);
    run.expect_code(3);
    let want = format!(
        "error: --db main: {} is a directory, not an SQLite database file",
        folder.display()
    );
    assert!(
        run.stderr.contains(&want),
        "wanted {want:?} in:\n{}",
        run.stderr
    );
    assert!(!run.stderr.contains("disk I/O error"), "{}", run.stderr);

    let notes = scratch.join("notes.txt");
    std::fs::write(&notes, "a shopping list, not a database\n").unwrap();
    let named = format!("shop={}", notes.display());
    let run = serve_refused(&data, &["--db", &named]);
    run.expect_code(3);
    let want = format!(
        "error: --db shop: {} is not an SQLite database: it does not begin with SQLite's header",
        notes.display()
    );
    assert!(
        run.stderr.contains(&want),
        "wanted {want:?} in:\n{}",
        run.stderr
    );
    // Not logged as opened, and not found while registering the tools.
    assert!(!run.stderr.contains("database shop:"), "{}", run.stderr);
    assert!(!run.stderr.contains("registering"), "{}", run.stderr);
}

#[test]
fn each_kind_of_mistake_has_its_exit_status() {
    let scratch = TempDir::new();
    let data = scratch.join("data");
    let config = scratch.join("kelson.toml");
    let config_arg = config.to_str().unwrap().to_owned();
    // 4, usage: a flag, a value, the configuration file, settings that conflict, nothing to serve.
    let usage: [&[&str]; 4] = [
        &["--no-such-flag"],
        &["--max-rows", "many"],
        &["--stdio", "--http", "127.0.0.1:0"],
        &["--config", "/no/such/kelson.toml"],
    ];
    for args in usage {
        serve_refused(&data, args).expect_code(4);
    }
    for text in [
        "[http]\nbnd = \"127.0.0.1:0\"\n",
        "[limits]\nmax_rows = 0\n",
        "[sample]\nenabled = false\n",
    ] {
        std::fs::write(&config, text).unwrap();
        let run = serve_refused(&data, &["--config", &config_arg]);
        run.expect_code(4);
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    }
    // 3: what the settings name cannot be used: a missing file, a server that refuses.
    let missing = scratch.join("missing.db");
    serve_refused(&data, &["--db", missing.to_str().unwrap()]).expect_code(3);
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let run = serve_refused(
        &data,
        &[
            "--db",
            &format!("postgres://x@127.0.0.1:{closed}/x?connect_timeout=5"),
        ],
    );
    run.expect_code(3);
    assert!(run.stderr.contains("connection refused"), "{}", run.stderr);
    // The help says so.
    let help = mcp(&["serve", "--help"], "");
    help.expect_code(0);
    assert!(
        help.stdout
            .contains("Exit codes: 0 stopped by SIGTERM or Ctrl-C"),
        "{}",
        help.stdout
    );
    for class in [
        "; 1 the server failed while serving;",
        "; 3 something the settings name",
        "; 4 a usage error",
    ] {
        assert!(help.stdout.contains(class), "{class}: {}", help.stdout);
    }
}

#[test]
fn a_refused_write_points_at_allow_write() {
    let data = TempDir::new();
    let serve = Serve::start(data.path(), &[]);
    let run = serve.run(&["call", "query", "--arg", "sql=delete from products"], "");
    run.expect_code(1);
    assert!(
        run.stdout.contains(
            "Nothing was changed. This database is read-only for this server: writes go through \
             the `execute` tool, which its operator enables with allow_write (`kelson serve \
             --allow-write`)."
        ),
        "{}",
        run.stdout
    );
    // Calling `execute` itself says how to offer it.
    let run = serve.run(
        &["call", "execute", "--arg", "sql=delete from products"],
        "",
    );
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("kelson serve offers execute only with --allow-write"),
        "{}",
        run.stderr
    );
    // The instructions say so too, for a model that reads them first.
    let discover = serve.run(&["discover", "--json"], "");
    discover.expect_code(0);
    assert!(
        discover.stdout.contains("`kelson serve --allow-write`"),
        "{}",
        discover.stdout
    );

    // With writes on, a write sent to query points at execute.
    let data = TempDir::new();
    let writable = Serve::start(data.path(), &["--allow-write"]);
    let run = writable.run(&["call", "query", "--arg", "sql=delete from products"], "");
    run.expect_code(1);
    assert!(
        run.stdout.contains("use the `execute` tool"),
        "{}",
        run.stdout
    );
}
