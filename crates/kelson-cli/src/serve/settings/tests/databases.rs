//! The databases' settings: `--db`, limits and connections, scopes (the roots' too), and the keys
//! of PostgreSQL and MySQL.

use super::*;
use crate::serve::settings::databases::split_db_flag;

#[test]
fn db_flags() {
    assert_eq!(
        split_db_flag("sales=postgres://u@h/db"),
        (Some("sales"), "postgres://u@h/db")
    );
    assert_eq!(
        split_db_flag("postgres://u@h/db?options=a=b"),
        (None, "postgres://u@h/db?options=a=b")
    );
    assert_eq!(split_db_flag("./a=b.db"), (None, "./a=b.db"));
    assert_eq!(split_db_flag("app.db"), (None, "app.db"));
    assert_eq!(split_db_flag("x=sqlite:a.db"), (Some("x"), "sqlite:a.db"));

    let s = resolve_with(&["--db", "app.db"], None).unwrap();
    assert!(s.sample.is_none(), "a --db turns the sample off");
    assert_eq!(s.databases[0].name, "main");
    assert!(matches!(&s.databases[0].target, Target::Sqlite(c) if c.path == Path::new("app.db")));

    let s = resolve_with(
        &[
            "--db",
            "sqlite:///var/a.db",
            "--db",
            "pg=postgres://r@127.0.0.1/test",
            "--sample",
            "--allow-write",
            "--max-rows",
            "5",
        ],
        None,
    )
    .unwrap();
    assert!(
        matches!(&s.databases[0].target, Target::Sqlite(c) if c.path == Path::new("/var/a.db"))
    );
    assert!(
        matches!(&s.databases[1].target, Target::Postgres(c) if c.url == "postgres://r@127.0.0.1/test")
    );
    assert!(s.databases.iter().all(|d| d.config.allow_write));
    assert_eq!(s.databases[1].config.limits.max_rows, 5);
    let sample = s.sample.expect("--sample keeps the sample");
    assert!(sample.config.allow_write);
    assert_eq!(sample.config.limits.max_rows, 5);

    let e = resolve_with(&["--db", "a.db", "--db", "b.db"], None).unwrap_err();
    assert!(e.contains("more than one database without a name"), "{e}");
    let e = resolve_with(&["--db", "a=a.db", "--db", "a=b.db"], None).unwrap_err();
    assert!(e.starts_with("--db a: "), "{e}");
    let e = resolve_with(&["--db", "x=oracle://u:secret@h/db"], None).unwrap_err();
    assert!(
        e.starts_with(
            "--db x: unsupported database URL scheme \"oracle\": use postgres://..., mysql://..."
        ),
        "{e}"
    );
    assert!(!e.contains("secret"), "{e}");
    // MySQL and MariaDB URLs name a MySQL database, with or without a name before them.
    for url in ["mysql://u@h/db", "mariadb://u@h/db", "m=mysql://u@h/db"] {
        let s = resolve_with(&["--db", url], None).unwrap();
        assert!(
            matches!(&s.databases[0].target, Target::Mysql(my) if my.url.ends_with("://u@h/db")),
            "{url}"
        );
    }
    let e = resolve_with(&["--max-rows", "0"], None).unwrap_err();
    assert_eq!(e, "--max-rows: must be between 1 and 100000");
    let e = resolve_with(&["--max-bytes", "10"], None).unwrap_err();
    assert_eq!(e, "--max-bytes: must be at least 1024");
}

#[test]
fn connection_wait_and_read_connections() {
    let s = resolve_with(&[], None).unwrap();
    let sample = s.sample.unwrap();
    assert_eq!(
        sample.read_connections,
        SqliteConfig::default_read_connections()
    );
    assert!(sample.read_connections >= 4);
    assert_eq!(sample.config.limits.connection_wait, Duration::from_secs(5));

    let file = "[sample]\nenabled = true\nread_connections = 3\n\
                [limits]\nconnection_wait = \"2s\"\n\
                [databases.a]\nurl = \"a.db\"\nread_connections = 5\nconnection_wait = \"1s\"\n\
                [databases.b]\nurl = \"postgres://r@h/b\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(s.sample.as_ref().unwrap().read_connections, 3);
    let wait = |s: &Settings, name: &str| {
        let db = s.databases.iter().find(|d| d.name == name).unwrap();
        db.config.limits.connection_wait
    };
    assert_eq!(wait(&s, "a"), Duration::from_secs(1));
    assert_eq!(wait(&s, "b"), Duration::from_secs(2));
    assert!(matches!(&s.databases[0].target, Target::Sqlite(c) if c.read_connections == 5));

    // The flags win, on every SQLite database (PostgreSQL has `connections`).
    let argv = [
        "--read-connections",
        "9",
        "--connection-wait",
        "250ms",
        "--db",
        "c=c.db",
    ];
    let s = resolve_with(&argv, Some(file)).unwrap();
    assert_eq!(s.sample.as_ref().unwrap().read_connections, 9);
    for db in &s.databases {
        assert_eq!(db.config.limits.connection_wait, Duration::from_millis(250));
        if let Target::Sqlite(c) = &db.target {
            assert_eq!(c.read_connections, 9, "{}", db.name);
        }
    }

    let e = resolve_with(&["--read-connections", "0"], None).unwrap_err();
    assert!(
        e.starts_with("--read-connections: must be between 1 and 64"),
        "{e}"
    );
    let e = resolve_with(&["--connection-wait", "0"], None).unwrap_err();
    assert!(
        e.starts_with("--connection-wait: must be more than zero"),
        "{e}"
    );
}

#[test]
fn scopes_default_to_least_privilege_and_are_set_per_database_and_root() {
    let s = resolve_with(
        &["--db", "pg=postgres://r@127.0.0.1/test", "--root", "/srv"],
        None,
    )
    .unwrap();
    let db = &s.databases[0].config;
    assert_eq!(db.read_scopes, Scopes::all(["pg:read"]));
    assert_eq!(db.write_scopes, Scopes::all(["pg:write"]));
    assert_eq!(s.roots[0].config.scopes, Scopes::all(["files:read"]));
    let sample = resolve_with(&[], None).unwrap().sample.unwrap();
    assert_eq!(sample.config.read_scopes, Scopes::all(["sample:read"]));
    assert_eq!(sample.config.write_scopes, Scopes::all(["sample:write"]));

    let file = r#"
[sample]
enabled = true
read_scope = "shop:read  extra"
write_scope = ""

[databases.sales]
url = "sales.db"
read_scope = "sales:ro"
write_scope = "sales:rw admin"

[databases.other]
url = "other.db"

[[roots]]
path = "docs"
scope = "docs:read"

[[roots]]
path = "more"
"#;
    let s = resolve_with(&[], Some(file)).unwrap();
    let sales = s.databases.iter().find(|d| d.name == "sales").unwrap();
    assert_eq!(sales.config.read_scopes, Scopes::all(["sales:ro"]));
    assert_eq!(
        sales.config.write_scopes,
        Scopes::all(["admin", "sales:rw"])
    );
    let other = s.databases.iter().find(|d| d.name == "other").unwrap();
    assert_eq!(other.config.read_scopes, Scopes::all(["other:read"]));
    let sample = s.sample.unwrap();
    assert_eq!(
        sample.config.read_scopes,
        Scopes::all(["extra", "shop:read"])
    );
    assert!(
        sample.config.write_scopes.is_unrestricted(),
        "\"\" needs none"
    );
    assert_eq!(s.roots[0].config.scopes, Scopes::all(["docs:read"]));
    assert_eq!(s.roots[1].config.scopes, Scopes::all(["files:read"]));
}

#[test]
fn bad_scopes_name_their_key() {
    let cases = [
        (
            "[databases.s]\nurl = \"a.db\"\nread_scope = \"s:\\\"read\\\"\"\n",
            "databases.s.read_scope: invalid scope \"s:\\\"read\\\"\"",
        ),
        (
            "[databases.s]\nurl = \"a.db\"\nwrite_scope = \"ok caf\u{e9}\"\n",
            "databases.s.write_scope: invalid scope \"caf\u{e9}\"",
        ),
        (
            "[sample]\nenabled = true\nread_scope = \"back\\\\slash\"\n",
            "sample.read_scope: invalid scope \"back\\\\slash\"",
        ),
        (
            "[[roots]]\npath = \"d\"\nscope = \"tab\\u0001\"\n",
            "roots[0].scope: invalid scope",
        ),
    ];
    for (toml, expected) in cases {
        let e = resolve_with(&[], Some(toml)).expect_err(toml);
        assert!(e.contains(expected), "{toml}: {e}");
    }
    // A scope that is not a string, and a misspelt key, are refused by the file's parser.
    let e = parse("[[roots]]\npath = \"d\"\nscope = [\"a\"]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("roots[0].scope"), "{e}");
    let e = parse("[databases.s]\nurl = \"a.db\"\nread_scopes = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("read_scopes"), "{e}");
}

#[test]
fn postgres_tls_keys_are_checked_and_only_for_postgres() {
    let pg = |toml: &str| {
        let s = resolve_with(&[], Some(toml)).unwrap();
        match &s.databases[0].target {
            Target::Postgres(pg) => (pg.ssl_mode, pg.ssl_root_cert.clone()),
            _ => panic!("a PostgreSQL database"),
        }
    };
    assert_eq!(
        pg(
            "[databases.a]\nurl = \"postgres://u@db.example/a\"\nssl_mode = \"verify-ca\"\nssl_root_cert = \"ca.pem\"\n"
        ),
        (
            Some(kelson_sql::SslMode::VerifyCa),
            Some(PathBuf::from("/etc/mcp/ca.pem"))
        )
    );
    let err = resolve_with(
        &[],
        Some("[databases.a]\nurl = \"postgres://u@h/a\"\nssl_mode = \"verify\"\n"),
    )
    .unwrap_err();
    assert!(
        err.starts_with("databases.a.ssl_mode: unknown sslmode \"verify\""),
        "{err}"
    );
    let err = resolve_with(
        &[],
        Some("[databases.a]\nurl = \"a.db\"\nssl_root_cert = \"ca.pem\"\n"),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "databases.a.ssl_root_cert: only for PostgreSQL and MySQL databases"
    );
}

#[test]
fn mysql_keys_reach_the_mysql_settings() {
    let s = resolve_with(
        &[],
        Some(
            "[databases.shop]\nurl = \"mysql://reader@db.example/shop\"\n\
             write_url = \"mariadb://writer@db.example/shop\"\nallow_write = true\n\
             connections = 3\nssl_mode = \"verify-ca\"\nssl_root_cert = \"ca.pem\"\n",
        ),
    )
    .unwrap();
    let Target::Mysql(my) = &s.databases[0].target else {
        panic!("a MySQL database");
    };
    assert_eq!(
        my.write_url.as_deref(),
        Some("mariadb://writer@db.example/shop")
    );
    assert_eq!(my.connections, 3);
    assert_eq!(my.ssl_mode, Some(kelson_sql::SslMode::VerifyCa));
    assert_eq!(my.ssl_root_cert, Some(PathBuf::from("/etc/mcp/ca.pem")));
    assert!(s.databases[0].config.allow_write);
}
