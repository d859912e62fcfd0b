//! Resolving flags and the configuration file into settings: defaults, precedence, and every
//! refusal naming its flag or key.

use super::*;
use crate::serve::file::parse;
use clap::Parser as _;

#[derive(clap::Parser)]
struct Cli {
    #[command(flatten)]
    args: ServeArgs,
}

fn args(argv: &[&str]) -> ServeArgs {
    let mut all = vec!["serve"];
    all.extend_from_slice(argv);
    Cli::try_parse_from(all).expect("the flags parse").args
}

fn env(name: &str) -> Option<OsString> {
    match name {
        "HOME" => Some("/home/ada".into()),
        _ => None,
    }
}

fn resolve_with(argv: &[&str], toml: Option<&str>) -> Result<Settings, String> {
    let file = toml.map(|t| {
        (
            parse(t).expect("the file parses"),
            PathBuf::from("/etc/mcp"),
        )
    });
    resolve(&args(argv), file, &env)
}

#[test]
fn addresses_take_a_port_or_localhost_in_flags_and_file() {
    let bind = |argv: &[&str], toml: Option<&str>| resolve_with(argv, toml).unwrap().bind;
    assert_eq!(
        bind(&["--http", "8080"], None).to_string(),
        "127.0.0.1:8080"
    );
    assert_eq!(
        bind(&["--http", "localhost:9000"], None).to_string(),
        "127.0.0.1:9000"
    );
    assert_eq!(
        bind(&[], Some("[http]\nbind = \"localhost:8081\"\n")).to_string(),
        "127.0.0.1:8081"
    );
    assert_eq!(
        bind(&[], Some("[http]\nbind = \"8082\"\n")).to_string(),
        "127.0.0.1:8082"
    );
    let metrics = resolve_with(&["--metrics-addr", "9090"], None)
        .unwrap()
        .metrics
        .unwrap();
    assert_eq!(metrics.addr.unwrap().0.to_string(), "127.0.0.1:9090");
    let e = Cli::try_parse_from(["serve", "--http", "example.com:80"])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("invalid address \"example.com:80\""), "{e}");
}

#[test]
fn the_approval_ledger_comes_from_the_flag_or_the_file_and_must_be_postgres() {
    assert!(resolve_with(&[], None).unwrap().approval_ledger.is_none());
    let file = "[server]\napproval_ledger = \"postgres://ledger@db/mcp\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(
        s.approval_ledger,
        Some((
            "postgres://ledger@db/mcp".to_owned(),
            "server.approval_ledger"
        ))
    );
    let s = resolve_with(&["--approval-ledger", "postgresql://x@y/z"], Some(file)).unwrap();
    assert_eq!(
        s.approval_ledger,
        Some(("postgresql://x@y/z".to_owned(), "--approval-ledger"))
    );
    let e = resolve_with(&["--approval-ledger", "redis://x"], None).unwrap_err();
    assert!(e.starts_with("--approval-ledger:"), "{e}");
    let e = resolve_with(&[], Some("[server]\napproval_ledger = \"x\"\n")).unwrap_err();
    assert!(e.starts_with("server.approval_ledger:"), "{e}");
}

#[test]
fn the_task_store_and_the_task_threshold_come_from_the_flags_or_the_file() {
    let s = resolve_with(&[], None).unwrap();
    assert!(s.task_store.is_none());
    assert_eq!(s.task_after, Some(Duration::from_secs(5)));
    let file = "[server]\ntask_store = \"postgres://t@db/mcp\"\ntask_after = \"30s\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(
        s.task_store,
        Some(("postgres://t@db/mcp".to_owned(), "server.task_store"))
    );
    assert_eq!(s.task_after, Some(Duration::from_secs(30)));
    let s = resolve_with(&["--task-after", "off"], Some(file)).unwrap();
    assert_eq!(s.task_after, None);
    let s = resolve_with(&["--task-after", "750ms"], None).unwrap();
    assert_eq!(s.task_after, Some(Duration::from_millis(750)));
    let s = resolve_with(&[], Some("[server]\ntask_after = \"off\"\n")).unwrap();
    assert_eq!(s.task_after, None);
    assert_eq!(s.task_runner_timeout, Duration::from_secs(30));
    let s = resolve_with(&["--task-runner-timeout", "10s"], Some(file)).unwrap();
    assert_eq!(s.task_runner_timeout, Duration::from_secs(10));
    let e = resolve_with(&["--task-runner-timeout", "10s"], None).unwrap_err();
    assert!(
        e.starts_with("--task-runner-timeout: only with a shared task store"),
        "{e}"
    );
    let e = resolve_with(&["--task-runner-timeout", "2s"], Some(file)).unwrap_err();
    assert!(
        e.starts_with("--task-runner-timeout: must be at least 5s"),
        "{e}"
    );
    let e = resolve_with(&["--task-store", "redis://x"], None).unwrap_err();
    assert!(
        e.starts_with("--task-store: expected a postgres:// URL"),
        "{e}"
    );
    let e = resolve_with(&["--task-after", "0"], None).unwrap_err();
    assert!(e.contains("--task-after: must be more than zero"), "{e}");
    let e = parse("[server]\ntask_after = \"soon\"\n").unwrap_err();
    assert!(
        e.starts_with("server.task_after: invalid duration \"soon\"") && e.contains("or \"off\""),
        "{e}"
    );
    let e = Cli::try_parse_from(["serve", "--task-after", "later"])
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("invalid duration \"later\"") && e.contains("or off"),
        "{e}"
    );
}

#[test]
fn used_approvals_are_recorded_in_the_data_folder_unless_a_ledger_is_given() {
    let s = resolve_with(&[], None).unwrap();
    assert_eq!(s.approvals_file, None, "no writes, nothing to record");
    let s = resolve_with(&["--allow-write"], None).unwrap();
    assert_eq!(
        s.approvals_file.as_deref(),
        Some(Path::new("/home/ada/.local/share/mcp-rs/used-approvals.db"))
    );
    // A database of the file that allows writes, without the sample: the data folder still.
    let file = "[sample]\ndata_dir = \"data\"\n[databases.a]\nurl = \"a.db\"\nallow_write = true\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert!(s.sample.is_none());
    assert_eq!(
        s.approvals_file.as_deref(),
        Some(Path::new("/etc/mcp/data/used-approvals.db"))
    );
    let s = resolve_with(&["--approval-ledger", "postgres://l@db/mcp"], Some(file)).unwrap();
    assert_eq!(s.approvals_file, None, "the ledger records them");
}

#[test]
fn the_handler_deadline_comes_from_the_flag_over_the_file_over_five_minutes() {
    assert_eq!(
        resolve_with(&[], None).unwrap().handler_timeout,
        Duration::from_secs(300)
    );
    let file = "[server]\nhandler_timeout = \"90s\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(s.handler_timeout, Duration::from_secs(90));
    let s = resolve_with(&["--handler-timeout", "2m"], Some(file)).unwrap();
    assert_eq!(s.handler_timeout, Duration::from_secs(120));
    let err = resolve_with(&["--handler-timeout", "0s"], None).unwrap_err();
    assert!(
        err.contains("--handler-timeout: must be more than zero"),
        "{err}"
    );
    let err = resolve_with(&[], Some("[server]\nhandler_timeout = 0\n")).unwrap_err();
    assert!(
        err.contains("server.handler_timeout: must be more than zero"),
        "{err}"
    );
}

#[test]
fn header_and_per_address_limits_come_from_the_flags_over_the_file() {
    let s = resolve_with(&[], None).unwrap();
    assert_eq!(
        (s.max_header_bytes, s.max_connections_per_address),
        (64 * 1024, None)
    );
    let file = "[http]\nmax_header_bytes = 16384\nmax_connections_per_address = 20\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(
        (s.max_header_bytes, s.max_connections_per_address),
        (16384, Some(20))
    );
    let s = resolve_with(
        &[
            "--max-header-bytes",
            "8192",
            "--max-connections-per-address",
            "4",
        ],
        Some(file),
    )
    .unwrap();
    assert_eq!(
        (s.max_header_bytes, s.max_connections_per_address),
        (8192, Some(4))
    );
    let err = resolve_with(&["--max-header-bytes", "100"], None).unwrap_err();
    assert!(
        err.contains("--max-header-bytes: must be at least 4096"),
        "{err}"
    );
    let err = resolve_with(&[], Some("[http]\nmax_connections_per_address = 0\n")).unwrap_err();
    assert!(
        err.contains("http.max_connections_per_address: must be at least 1"),
        "{err}"
    );
}

#[test]
fn connection_limits_come_from_the_flags_over_the_file_over_the_defaults() {
    let s = resolve_with(&[], None).unwrap();
    let defaults = HttpConfig::default();
    assert_eq!(s.idle_timeout, Duration::from_secs(120));
    assert_eq!(s.write_timeout, Duration::from_secs(30));
    assert_eq!(s.max_connections, None);
    assert_eq!(s.h2_max_streams, defaults.h2_max_concurrent_streams);
    assert_eq!(s.response_memory, 64 * 1024 * 1024);
    let file = "[http]\nidle_timeout = \"5s\"\nwrite_timeout = 7\nmax_connections = 300\n\
                h2_max_streams = 8\nresponse_memory = 2097152\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(
        (s.idle_timeout, s.write_timeout),
        (Duration::from_secs(5), Duration::from_secs(7))
    );
    assert_eq!(
        (s.max_connections, s.h2_max_streams, s.response_memory),
        (Some(300), 8, 2 * 1024 * 1024)
    );
    let s = resolve_with(
        &[
            "--idle-timeout",
            "500ms",
            "--write-timeout",
            "1s",
            "--max-connections",
            "9",
            "--h2-max-streams",
            "3",
            "--response-memory",
            "1048576",
        ],
        Some(file),
    )
    .unwrap();
    assert_eq!(
        (s.idle_timeout, s.write_timeout),
        (Duration::from_millis(500), Duration::from_secs(1))
    );
    assert_eq!(
        (s.max_connections, s.h2_max_streams, s.response_memory),
        (Some(9), 3, 1024 * 1024)
    );
    for (flags, error) in [
        (
            ["--idle-timeout", "0s"],
            "--idle-timeout: must be more than zero",
        ),
        (
            ["--write-timeout", "0"],
            "--write-timeout: must be more than zero",
        ),
        (
            ["--max-connections", "0"],
            "--max-connections: must be at least 1",
        ),
        (
            ["--h2-max-streams", "0"],
            "--h2-max-streams: must be at least 1",
        ),
        (
            ["--response-memory", "65536"],
            "--response-memory: must be at least 1048576",
        ),
    ] {
        assert_eq!(resolve_with(&flags, None).unwrap_err(), error);
    }
}

#[test]
fn no_flags_serve_the_sample_on_loopback() {
    let s = resolve_with(&[], None).unwrap();
    assert!(!s.stdio);
    assert_eq!(s.bind.to_string(), DEFAULT_BIND);
    assert_eq!(s.path, "/mcp");
    let sample = s.sample.expect("the sample is served");
    assert_eq!(
        sample.path(),
        Path::new("/home/ada/.local/share/mcp-rs/sample.db")
    );
    assert!(!sample.config.allow_write);
    assert_eq!(sample.config.limits, Limits::default());
    assert!(s.databases.is_empty() && s.roots.is_empty() && s.state_key.is_none());
}

#[test]
fn data_dir_precedence() {
    let xdg = |name: &str| match name {
        "XDG_DATA_HOME" => Some(OsString::from("/xdg")),
        "HOME" => Some(OsString::from("/home/ada")),
        _ => None,
    };
    let s = resolve(&args(&[]), None, &xdg).unwrap();
    assert_eq!(s.sample.unwrap().data_dir, Path::new("/xdg/mcp-rs"));
    let relative = |name: &str| match name {
        "XDG_DATA_HOME" => Some(OsString::from("xdg")),
        "HOME" => Some(OsString::from("/home/ada")),
        _ => None,
    };
    let s = resolve(&args(&[]), None, &relative).unwrap();
    assert_eq!(
        s.sample.unwrap().data_dir,
        Path::new("/home/ada/.local/share/mcp-rs")
    );
    let s = resolve(&args(&["--data-dir", "/data"]), None, &xdg).unwrap();
    assert_eq!(s.sample.unwrap().data_dir, Path::new("/data"));
    let mcp = |name: &str| match name {
        "MCP_DATA_DIR" => Some(OsString::from("/mcp-data")),
        _ => xdg(name),
    };
    let s = resolve(&args(&[]), None, &mcp).unwrap();
    assert_eq!(s.sample.unwrap().data_dir, Path::new("/mcp-data"));
    let file = (
        parse("[sample]\ndata_dir = \"d\"\n").unwrap(),
        PathBuf::from("/etc"),
    );
    let s = resolve(&args(&[]), Some(file), &mcp).unwrap();
    assert_eq!(
        s.sample.unwrap().data_dir,
        Path::new("/mcp-data"),
        "the environment wins over the file"
    );
    let s = resolve(&args(&["--data-dir", "/data"]), None, &mcp).unwrap();
    assert_eq!(
        s.sample.unwrap().data_dir,
        Path::new("/data"),
        "the flag wins"
    );
    let empty = |name: &str| match name {
        "MCP_DATA_DIR" => Some(OsString::new()),
        _ => xdg(name),
    };
    let s = resolve(&args(&[]), None, &empty).unwrap();
    assert_eq!(
        s.sample.unwrap().data_dir,
        Path::new("/xdg/mcp-rs"),
        "empty is unset"
    );
    let file = "[sample]\ndata_dir = \"data\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(s.sample.unwrap().data_dir, Path::new("/etc/mcp/data"));
    let nothing = |_: &str| None;
    let e = resolve(&args(&[]), None, &nothing).unwrap_err();
    assert!(e.contains("MCP_DATA_DIR"), "{e}");
}

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

const FILE: &str = r#"
[server]
name = "shop-data"
instructions = "Answer questions about the shop."
state_key_file = "state.key"

[http]
bind = "127.0.0.1:9000"
path = "/api/mcp"
allowed_hosts = ["mcp.example.com"]
allowed_origins = ["https://app.example.com"]

[limits]
max_rows = 200
query_timeout = "30s"

[databases.sales]
url = "postgres://reader@127.0.0.1/sales"
write_url = "postgres://writer@127.0.0.1/sales"
allow_write = true
max_rows = 50
connections = 2

[databases.local]
url = "local.db"
read_connections = 3

[[roots]]
path = "docs"
name = "docs"

[files]
max_file_bytes = 1000
"#;

#[test]
fn the_file_and_the_flags() {
    let s = resolve_with(&[], Some(FILE)).unwrap();
    assert_eq!(s.name, "shop-data");
    assert_eq!(s.bind.to_string(), "127.0.0.1:9000");
    assert_eq!(s.path, "/api/mcp");
    assert_eq!(s.state_key.unwrap().path, Path::new("/etc/mcp/state.key"));
    assert!(
        s.sample.is_none(),
        "databases in the file turn the sample off"
    );
    let names: Vec<&str> = s.databases.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["local", "sales"]);
    let (local, sales) = (&s.databases[0], &s.databases[1]);
    assert!(
        matches!(&local.target, Target::Sqlite(c) if c.path == Path::new("/etc/mcp/local.db") && c.read_connections == 3)
    );
    assert!(!local.config.allow_write);
    assert_eq!(local.config.limits.max_rows, 200);
    assert_eq!(local.config.limits.timeout, Duration::from_secs(30));
    assert!(
        matches!(&sales.target, Target::Postgres(c) if c.connections == 2 && c.write_url.is_some())
    );
    assert!(sales.config.allow_write);
    assert_eq!(sales.config.limits.max_rows, 50);
    assert_eq!(s.roots[0].config.path, Path::new("/etc/mcp/docs"));
    assert_eq!(s.fs_limits.max_file_bytes, 1000);

    // Flags win.
    let s = resolve_with(
        &[
            "--http",
            "127.0.0.1:9100",
            "--path",
            "/x",
            "--max-rows",
            "7",
            "--db",
            "local=other.db",
            "--root",
            "/srv",
            "--allowed-host",
            "b.example.com",
            "--state-key-file",
            "/k",
            "--sample",
        ],
        Some(FILE),
    )
    .unwrap();
    assert_eq!(s.bind.to_string(), "127.0.0.1:9100");
    assert_eq!(s.path, "/x");
    assert!(s.databases.iter().all(|d| d.config.limits.max_rows == 7));
    let local = s.databases.iter().find(|d| d.name == "local").unwrap();
    assert_eq!(local.key, "--db local");
    assert!(matches!(&local.target, Target::Sqlite(c) if c.path == Path::new("other.db")));
    assert_eq!(s.roots.len(), 2);
    assert_eq!(s.allowed_hosts, ["mcp.example.com", "b.example.com"]);
    assert_eq!(s.state_key.unwrap().path, Path::new("/k"));
    assert!(s.sample.is_some());
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
fn bad_values_name_their_key() {
    let cases = [
        (
            "[http]\nbind = \"localhost\"\n",
            "http.bind: invalid address \"localhost\"",
        ),
        (
            "[http]\npath = \"mcp\"\n",
            "http.path: invalid endpoint path",
        ),
        (
            "[http]\nallowed_origins = [\"app.example.com\"]\n",
            "http.allowed_origins[0]: invalid origin",
        ),
        (
            "[http]\nmax_message = 10\n",
            "http.max_message: must be at least 1024",
        ),
        (
            "[http]\nread_timeout = \"0s\"\n",
            "http.read_timeout: must be more than zero",
        ),
        (
            "[http]\nidle_timeout = 0\n",
            "http.idle_timeout: must be more than zero",
        ),
        (
            "[http]\nmax_connections = 0\n",
            "http.max_connections: must be at least 1",
        ),
        (
            "[http]\nresponse_memory = 1000\n",
            "http.response_memory: must be at least 1048576",
        ),
        (
            "[limits]\nmax_rows = 0\n",
            "limits.max_rows: must be between",
        ),
        (
            "[limits]\nquery_timeout = 0\n",
            "limits.query_timeout: must be more than zero",
        ),
        (
            "[limits]\nconnection_wait = 0\n",
            "limits.connection_wait: must be more than zero",
        ),
        (
            "[databases.s]\nurl = \"a.db\"\nread_connections = 0\n",
            "databases.s.read_connections: must be between 1 and 64",
        ),
        (
            "[sample]\nread_connections = 65\n",
            "sample.read_connections: must be between 1 and 64",
        ),
        (
            "[databases.s]\nurl = \"a.db\"\nmax_bytes = 1\n",
            "databases.s.max_bytes: must be at least 1024",
        ),
        (
            "[databases.s]\nurl = \"oracle://x\"\n",
            "databases.s.url: unsupported database URL scheme",
        ),
        (
            "[databases.s]\nurl = \"\"\n",
            "databases.s.url: the database URL is empty",
        ),
        (
            "[databases.s]\nurl = \"a.db\"\nwrite_url = \"b.db\"\n",
            "databases.s.write_url: only for PostgreSQL and MySQL",
        ),
        (
            "[databases.s]\nurl = \"postgres://a@b/c\"\nwrite_url = \"b.db\"\n",
            "databases.s.write_url: must be a postgres:// URL",
        ),
        (
            "[databases.s]\nurl = \"mysql://a@b/c\"\nwrite_url = \"postgres://a@b/c\"\n",
            "databases.s.write_url: must be a mysql:// (or mariadb://) URL like url",
        ),
        (
            "[databases.s]\nurl = \"mysql://a@b/c\"\nread_connections = 2\n",
            "databases.s.read_connections: only for SQLite databases",
        ),
        (
            "[databases.s]\nurl = \"a.db\"\nconnections = 2\n",
            "databases.s.connections: only for PostgreSQL and MySQL",
        ),
        (
            "[databases.sample]\nurl = \"a.db\"\n[sample]\nenabled = true\n",
            "databases.sample: the name",
        ),
        ("[server]\nname = \" \"\n", "server.name: must not be empty"),
        (
            "[files]\nmax_file_bytes = 0\n",
            "files.max_file_bytes: must be at least 1",
        ),
        ("[sample]\nenabled = false\n", "nothing to serve"),
        (
            "[observability]\nmetrics_addr = \"metrics.example.com:9090\"\n",
            "observability.metrics_addr: invalid address \"metrics.example.com:9090\"",
        ),
        (
            "[observability]\nmetrics = true\nmetrics_path = \"metrics\"\n",
            "observability.metrics_path: invalid metrics path \"metrics\"",
        ),
        (
            "[observability]\nmetrics_path = \"/m\"\n",
            "observability.metrics_path: the metrics are off",
        ),
        (
            "[http]\npath = \"/x\"\n[observability]\nmetrics = true\nmetrics_path = \"/x\"\n",
            "observability.metrics_path: the metrics path \"/x\" is the MCP endpoint's",
        ),
    ];
    for (file, want) in cases {
        let e = resolve_with(&[], Some(file)).unwrap_err();
        assert!(e.starts_with(want), "{file}: {e}");
    }
}

#[test]
fn logs_and_metrics() {
    let s = resolve_with(&[], None).unwrap();
    assert_eq!(s.log_format, LogFormat::Text);
    assert!(s.log_arguments.is_none() && s.metrics.is_none() && s.notes.is_empty());

    let s = resolve_with(&["--metrics"], None).unwrap();
    let m = s.metrics.expect("metrics on");
    assert_eq!((m.path.as_str(), m.addr), ("/metrics", None));
    let s = resolve_with(&["--metrics", "--metrics-path", "/m"], None).unwrap();
    assert_eq!(s.metrics.unwrap().path, "/m");
    let s = resolve_with(&["--metrics-addr", "127.0.0.1:9090"], None).unwrap();
    let m = s.metrics.expect("an address turns them on");
    assert_eq!(
        m.addr,
        Some(("127.0.0.1:9090".parse().unwrap(), "--metrics-addr"))
    );
    let s = resolve_with(&["--stdio", "--metrics-addr", "127.0.0.1:0"], None).unwrap();
    assert!(
        s.metrics.unwrap().addr.is_some(),
        "an address works on stdio"
    );

    let e = resolve_with(&["--metrics-path", "/m"], None).unwrap_err();
    assert!(e.starts_with("--metrics-path: the metrics are off"), "{e}");
    let e = resolve_with(&["--metrics", "--metrics-path", "m"], None).unwrap_err();
    assert!(e.starts_with("--metrics-path: invalid metrics path"), "{e}");
    let e = resolve_with(&["--metrics", "--path", "/metrics"], None).unwrap_err();
    assert!(e.contains("is the MCP endpoint's"), "{e}");
    let e = resolve_with(&["--stdio", "--metrics"], None).unwrap_err();
    assert!(e.starts_with("--metrics: with --stdio"), "{e}");
    assert!(e.contains("--metrics-addr"), "{e}");

    let file = "[observability]\nlog_format = \"json\"\nlog_arguments = true\n\
                metrics_addr = \"127.0.0.1:9100\"\nmetrics_path = \"/stats\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(s.log_format, LogFormat::Json);
    assert_eq!(s.log_arguments, Some("observability.log_arguments"));
    let m = s.metrics.unwrap();
    assert_eq!(m.path, "/stats");
    assert_eq!(
        m.addr,
        Some((
            "127.0.0.1:9100".parse().unwrap(),
            "observability.metrics_addr"
        ))
    );
    // Flags win.
    let s = resolve_with(
        &[
            "--log-format",
            "text",
            "--metrics-addr",
            "127.0.0.1:9200",
            "--metrics-path",
            "/p",
        ],
        Some(file),
    )
    .unwrap();
    assert_eq!(s.log_format, LogFormat::Text);
    let m = s.metrics.unwrap();
    assert_eq!(m.path, "/p");
    assert_eq!(
        m.addr,
        Some(("127.0.0.1:9200".parse().unwrap(), "--metrics-addr"))
    );

    // Metrics on the HTTP listener, from a file also used with --stdio: not served there,
    // and said so.
    let file = "[observability]\nmetrics = true\n";
    let s = resolve_with(&["--stdio"], Some(file)).unwrap();
    assert!(s.metrics.is_none());
    assert!(
        s.notes[0].starts_with("observability.metrics: not served with --stdio"),
        "{:?}",
        s.notes
    );
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(s.metrics.unwrap().path, "/metrics");
}

#[test]
fn the_readme_shows_the_example_file() {
    let readme = include_str!("../../../../../README.md");
    let start = readme
        .find("```toml\n")
        .expect("a TOML block in the README")
        + 8;
    let end = start + readme[start..].find("```").expect("the block ends");
    assert_eq!(
        &readme[start..end],
        include_str!("../../../../../examples/mcp.toml"),
        "the README's TOML block is examples/mcp.toml"
    );
}

#[test]
fn the_example_file_parses() {
    let text = include_str!("../../../../../examples/mcp.toml");
    let file = parse(text).expect("examples/mcp.toml parses");
    let s = resolve(&args(&[]), Some((file, PathBuf::from("/etc/mcp"))), &env)
        .expect("examples/mcp.toml is valid");
    assert!(s.databases.len() >= 2, "{s:?}");
    assert!(s.sample.is_some() && !s.roots.is_empty() && s.state_key.is_some());
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
fn tls_files_come_in_pairs_from_the_flags_or_the_file() {
    let tls = resolve_with(&["--tls-cert", "c.pem", "--tls-key", "k.pem"], None)
        .unwrap()
        .tls
        .expect("HTTPS");
    assert_eq!(
        (tls.cert, tls.key, tls.from),
        (PathBuf::from("c.pem"), PathBuf::from("k.pem"), "--tls-cert")
    );
    // The file's paths are relative to the file; the flags win over it.
    let file = "[http]\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n";
    let tls = resolve_with(&[], Some(file)).unwrap().tls.expect("HTTPS");
    assert_eq!(tls.cert, PathBuf::from("/etc/mcp/c.pem"));
    assert_eq!(tls.from, "http.tls_cert");
    let tls = resolve_with(&["--tls-cert", "a", "--tls-key", "b"], Some(file))
        .unwrap()
        .tls
        .unwrap();
    assert_eq!(tls.cert, PathBuf::from("a"));
    // One without the other is an error that names the missing key.
    let err = resolve_with(&[], Some("[http]\ntls_cert = \"c.pem\"\n")).unwrap_err();
    assert!(
        err.starts_with("http.tls_cert: http.tls_key is missing"),
        "{err}"
    );
    let err = resolve_with(&[], Some("[http]\ntls_key = \"k.pem\"\n")).unwrap_err();
    assert!(err.starts_with("http.tls_key:"), "{err}");
    // With --stdio there is no listener: a note, and no TLS.
    let s = resolve_with(&["--stdio"], Some(file)).unwrap();
    assert!(s.tls.is_none());
    assert!(
        s.notes
            .iter()
            .any(|n| n.starts_with("http.tls_cert: not used")),
        "{:?}",
        s.notes
    );
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
            Some(mcp_sql::SslMode::VerifyCa),
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
    assert_eq!(my.ssl_mode, Some(mcp_sql::SslMode::VerifyCa));
    assert_eq!(my.ssl_root_cert, Some(PathBuf::from("/etc/mcp/ca.pem")));
    assert!(s.databases[0].config.allow_write);
}

#[test]
fn auth_comes_from_the_file_and_the_flags() {
    assert!(resolve_with(&[], None).unwrap().auth.is_none());
    let toml = "[auth]\nissuer = \"https://as.example\"\nresource = \"https://mcp.example/mcp\"\n\
                required_scopes = [\"mcp:tools\"]\nclaims = [\"email\"]\nleeway = \"5s\"\n\
                resource_name = \"Shop\"\nresource_documentation = \"https://docs.example/mcp\"\n";
    let auth = resolve_with(&["--auth-required-scope", "mcp:admin"], Some(toml))
        .unwrap()
        .auth
        .unwrap()
        .config;
    assert_eq!(auth.resource_name.as_deref(), Some("Shop"));
    assert_eq!(
        auth.resource_documentation.as_deref(),
        Some("https://docs.example/mcp")
    );
    // The flags win over the file.
    let auth = resolve_with(
        &[
            "--auth-resource-name",
            "Sales",
            "--auth-resource-documentation",
            "https://docs.example/sales",
        ],
        Some(toml),
    )
    .unwrap()
    .auth
    .unwrap()
    .config;
    assert_eq!(auth.resource_name.as_deref(), Some("Sales"));
    assert_eq!(
        auth.resource_documentation.as_deref(),
        Some("https://docs.example/sales")
    );
    let auth = resolve_with(&["--auth-required-scope", "mcp:admin"], Some(toml))
        .unwrap()
        .auth
        .unwrap()
        .config;
    assert_eq!(auth.issuer, "https://as.example");
    assert_eq!(auth.resource, "https://mcp.example/mcp");
    assert_eq!(auth.required_scopes, ["mcp:tools", "mcp:admin"]);
    assert_eq!(auth.claims, ["email"]);
    assert_eq!(auth.leeway, Duration::from_secs(5));
    assert!(auth.introspection.is_none());

    // The flags alone, with the introspection secret from the environment.
    let env = |name: &str| match name {
        "MCP_AUTH_CLIENT_SECRET" => Some(OsString::from("s3cret")),
        other => env(other),
    };
    let argv = [
        "--auth-issuer",
        "http://127.0.0.1:9000",
        "--auth-resource",
        "http://127.0.0.1:8080/mcp",
        "--auth-client-id",
        "rs",
    ];
    let auth = resolve(&args(&argv), None, &env)
        .unwrap()
        .auth
        .unwrap()
        .config;
    let introspection = auth.introspection.unwrap();
    assert_eq!(introspection.client_id, "rs");
    assert_eq!(introspection.client_secret, "s3cret");
    assert!(!format!("{introspection:?}").contains("s3cret"));
}

#[test]
fn auth_refuses_incomplete_or_malformed_settings() {
    let err = |argv: &[&str], toml: Option<&str>| resolve_with(argv, toml).unwrap_err();
    assert!(
        err(&["--auth-issuer", "https://as.example"], None).starts_with("auth.resource: "),
        "a resource is required"
    );
    assert!(
        err(&["--auth-resource", "https://mcp.example/mcp"], None).starts_with("auth.issuer: ")
    );
    assert!(
        err(
            &[],
            Some("[auth]\nissuer = \"as.example\"\nresource = \"https://m/mcp\"\n")
        )
        .starts_with("auth.issuer: ")
    );
    assert!(
        err(
            &[],
            Some("[auth]\nissuer = \"https://as\"\nresource = \"https://m/mcp\"\nrequired_scopes = [\"a b\"]\n")
        )
        .starts_with("auth.required_scopes[0]: ")
    );
    assert!(
        err(
            &[],
            Some("[auth]\nissuer = \"https://as\"\nresource = \"https://m/mcp\"\nresource_documentation = \"docs\"\n")
        )
        .starts_with("auth.resource_documentation: ")
    );
    // Introspection without a secret anywhere.
    assert!(
        err(
            &[
                "--auth-issuer",
                "https://as",
                "--auth-resource",
                "https://m/mcp",
                "--auth-client-id",
                "rs"
            ],
            None
        )
        .starts_with("--auth-client-id: introspection needs the client's secret")
    );
    // There is no flag for the secret itself.
    let cli = Cli::try_parse_from(["serve", "--auth-client-secret", "x"]);
    assert!(cli.is_err());
}

#[test]
fn the_metadata_lists_every_scope_served_unless_set() {
    let toml = "[auth]\nissuer = \"https://as.example\"\nresource = \"https://mcp.example/mcp\"\n\
                required_scopes = [\"mcp:tools\"]\n";
    let auth = resolve_with(
        &["--db", "pg=postgres://r@127.0.0.1/test", "--root", "/srv"],
        Some(toml),
    )
    .unwrap()
    .auth
    .unwrap()
    .config;
    assert_eq!(
        auth.scopes_supported,
        ["mcp:tools", "pg:read", "pg:write", "files:read"]
    );
    let set = format!("{toml}scopes_supported = [\"only\"]\n");
    let auth = resolve_with(&[], Some(&set)).unwrap().auth.unwrap().config;
    assert_eq!(auth.scopes_supported, ["only"]);
}

#[test]
fn the_broker_the_shutdown_grace_and_previous_keys_come_from_the_flags_or_the_file() {
    let s = resolve_with(&[], None).unwrap();
    assert!(s.broker.is_none());
    assert_eq!(s.shutdown_grace, Duration::ZERO);
    assert!(s.previous_state_keys.is_empty());

    let file = "[server]\nbroker = \"nats://10.0.0.5:4222\"\nstate_key_file = \"new.key\"\n\
                previous_state_key_files = [\"old.key\"]\n[http]\nshutdown_grace = 3\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    let broker = s.broker.expect("a broker");
    assert_eq!(
        (broker.url.as_str(), broker.channel.as_str(), broker.key),
        ("nats://10.0.0.5:4222", "mcp.changes", "server.broker")
    );
    assert_eq!(s.shutdown_grace, Duration::from_secs(3));
    assert_eq!(s.previous_state_keys.len(), 1);
    assert_eq!(
        s.previous_state_keys[0].path,
        PathBuf::from("/etc/mcp/old.key")
    );

    let s = resolve_with(
        &[
            "--broker",
            "redis://:pw@cache:6379",
            "--broker-channel",
            "prod.mcp",
            "--shutdown-grace",
            "500ms",
        ],
        Some(file),
    )
    .unwrap();
    let broker = s.broker.expect("a broker");
    assert_eq!(
        (broker.url.as_str(), broker.channel.as_str(), broker.key),
        ("redis://:pw@cache:6379", "prod.mcp", "--broker")
    );
    assert_eq!(s.shutdown_grace, Duration::from_millis(500));

    for (argv, says) in [
        (
            &["--broker", "amqp://x"][..],
            "--broker: unsupported scheme \"amqp\"",
        ),
        (
            &["--broker", "nats://x", "--broker-channel", "a b"][..],
            "--broker-channel: the channel \"a b\" is not usable",
        ),
    ] {
        let e = resolve_with(argv, None).unwrap_err();
        assert!(e.starts_with(says), "{e}");
    }
    let e = resolve_with(&[], Some("[server]\nbroker_channel = \"x\"\n")).unwrap_err();
    assert!(
        e.starts_with("server.broker_channel: only with a broker"),
        "{e}"
    );
    let e = resolve_with(
        &[],
        Some("[server]\nprevious_state_key_files = [\"old.key\"]\n"),
    )
    .unwrap_err();
    assert!(e.starts_with("server.previous_state_key_files:"), "{e}");
    let e = resolve_with(&["--path", "/readyz"], None).unwrap_err();
    assert!(e.contains("/readyz is where health is served"), "{e}");
}

#[test]
fn the_deployment_guides_configuration_file_is_valid() {
    let guide = include_str!("../../../../../DEPLOYMENT.md");
    let block = guide
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("DEPLOYMENT.md has a toml block");
    let s = resolve_with(&[], Some(block)).unwrap_or_else(|e| panic!("{e}\n{block}"));
    assert_eq!(s.broker.expect("a broker").url, "redis://10.0.0.5:6379");
    assert_eq!(s.shutdown_grace, Duration::from_secs(3));
    assert_eq!(
        s.otlp.map(|(url, _)| url).as_deref(),
        Some("http://10.0.0.5:4318")
    );
    assert!(s.approval_ledger.is_some() && s.state_key.is_some());
}
