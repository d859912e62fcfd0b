//! `kelson serve --check` through the real binary: what would be served is printed and nothing is
//! started or created; a bad setting is refused as at a start (file, key, line, status).

use super::support::{Pg, TempDir, mcp_in, sqlite_file};

#[test]
fn the_defaults_are_checked_without_creating_the_sample_or_binding() {
    let data = TempDir::new();
    // Whatever holds the default port does not matter: nothing is bound.
    let run = mcp_in(data.path(), &["serve", "--check"], "");
    run.expect_code(0);
    let out = &run.stdout;
    assert!(
        out.starts_with("kelson serve --check: the settings (the flags) and what they name are good; nothing was started\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "listener:  http://127.0.0.1:8080/mcp (Streamable HTTP; GET /healthz, /readyz)\n"
        ),
        "{out}"
    );
    assert!(out.contains("auth:      none\n"), "{out}");
    let sample = data.join("sample.db");
    assert!(
        out.contains(&format!(
            "database sample: SQLite {} (created on the first start), read-only\n",
            sample.display()
        )),
        "{out}"
    );
    assert!(!sample.exists(), "--check created the sample database");
    // No log lines: the report is the output.
    assert_eq!(run.stderr, "");
}

#[test]
fn a_configuration_file_is_reported_with_every_database_and_root() {
    let scratch = TempDir::new();
    let shop = scratch.join("shop.db");
    sqlite_file(
        &shop,
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);",
    );
    let docs = scratch.join("docs");
    std::fs::create_dir(&docs).unwrap();
    let config = scratch.join("kelson.toml");
    let mut text = format!(
        "[http]\nbind = \"127.0.0.1:9911\"\n\n[databases.shop]\nurl = \"shop.db\"\nallow_write = true\n\n\
         [[roots]]\npath = \"{}\"\nname = \"docs\"\n",
        docs.display()
    );
    // PostgreSQL too when it is here, with a password in the URL that the report leaves out.
    let pg = kelson_testenv::postgres().then(|| Pg::new("CREATE TABLE t (a int);"));
    if let Some(pg) = &pg {
        text.push_str(&format!(
            "\n[databases.pg]\nurl = \"postgres://{}:secret@127.0.0.1:5432/test\"\n",
            pg.reader
        ));
    }
    std::fs::write(&config, &text).unwrap();
    let run = mcp_in(
        &scratch.join("data"),
        &["serve", "--check", "--config", config.to_str().unwrap()],
        "",
    );
    let out = &run.stdout;
    if let Some(pg) = &pg {
        assert!(
            out.contains(&format!(
                "database pg: PostgreSQL postgres://{}@127.0.0.1:5432/test, read-only\n",
                pg.reader
            )),
            "{out}{}",
            run.stderr
        );
    }
    run.expect_code(0);
    assert!(
        out.contains(&format!(
            "the settings ({} and the flags)",
            config.display()
        )),
        "{out}"
    );
    assert!(
        out.contains("listener:  http://127.0.0.1:9911/mcp"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "database shop: SQLite {}, writable through execute, each statement approved by the user\n",
            shop.display()
        )),
        "{out}"
    );
    assert!(out.contains("root docs: file://"), "{out}");
    assert!(out.contains("tools:     "), "{out}");
    assert!(out.contains("execute"), "{out}");
    // The sample is off when databases are configured, and no approvals file was made.
    assert!(!out.contains("database sample"), "{out}");
    assert!(!scratch.join("data").join("used-approvals.db").exists());
    assert!(!out.contains("secret"), "{out}");
}

#[test]
fn a_bad_setting_is_refused_as_a_start_would_refuse_it() {
    let scratch = TempDir::new();
    let data = scratch.join("data");
    let config = scratch.join("kelson.toml");
    let config_arg = config.to_str().unwrap().to_owned();
    std::fs::write(
        &config,
        "[http]\nbind = \"127.0.0.1:0\"\n\n[limits]\nmax_rows = 0\n",
    )
    .unwrap();
    let run = mcp_in(&data, &["serve", "--check", "--config", &config_arg], "");
    run.expect_code(4);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains(&format!(
            "error: {config_arg}: limits.max_rows: must be between 1 and 100000 (line 5)"
        )),
        "{}",
        run.stderr
    );
    // What the settings name is opened: a missing file is found without serving.
    std::fs::write(&config, "[databases.local]\nurl = \"missing.db\"\n").unwrap();
    let run = mcp_in(&data, &["serve", "--check", "--config", &config_arg], "");
    run.expect_code(3);
    assert!(
        run.stderr.contains("databases.local: the SQLite file"),
        "{}",
        run.stderr
    );
    let notes = scratch.join("notes.txt");
    std::fs::write(&notes, "not a database at all, just some words\n").unwrap();
    let run = mcp_in(
        &data,
        &["serve", "--check", "--db", notes.to_str().unwrap()],
        "",
    );
    run.expect_code(3);
    assert!(
        run.stderr.contains("is not an SQLite database"),
        "{}",
        run.stderr
    );
}
