//! Resolving flags and the configuration file into settings: defaults, precedence, and every
//! refusal naming its flag or key.
//!
//! The sections' tests are in files named like the sections' own: http.rs, server.rs,
//! databases.rs, observability.rs, and auth.rs for ../../auth.rs. Here: what spans them, the
//! defaults, the data folder, and the example files of the documentation.

mod auth;
mod databases;
mod docs;
mod http;
mod observability;
mod server;

use super::*;
use crate::serve::file::parse;
use clap::Parser as _;
use kelson_sql::Limits;

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
fn used_approvals_are_recorded_in_the_data_folder_unless_a_ledger_is_given() {
    let s = resolve_with(&[], None).unwrap();
    assert_eq!(s.approvals_file, None, "no writes, nothing to record");
    let s = resolve_with(&["--allow-write"], None).unwrap();
    assert_eq!(
        s.approvals_file.as_deref(),
        Some(Path::new("/home/ada/.local/share/kelson/used-approvals.db"))
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
fn no_flags_serve_the_sample_on_loopback() {
    let s = resolve_with(&[], None).unwrap();
    assert!(!s.stdio);
    assert_eq!(s.http.bind.to_string(), DEFAULT_BIND);
    assert_eq!(s.http.path, "/mcp");
    let sample = s.sample.expect("the sample is served");
    assert_eq!(
        sample.path(),
        Path::new("/home/ada/.local/share/kelson/sample.db")
    );
    assert!(!sample.config.allow_write);
    assert_eq!(sample.config.limits, Limits::default());
    assert!(s.databases.is_empty() && s.roots.is_empty() && s.server.state_key.is_none());
}

#[test]
fn data_dir_precedence() {
    let xdg = |name: &str| match name {
        "XDG_DATA_HOME" => Some(OsString::from("/xdg")),
        "HOME" => Some(OsString::from("/home/ada")),
        _ => None,
    };
    let s = resolve(&args(&[]), None, &xdg).unwrap();
    assert_eq!(s.sample.unwrap().data_dir, Path::new("/xdg/kelson"));
    let relative = |name: &str| match name {
        "XDG_DATA_HOME" => Some(OsString::from("xdg")),
        "HOME" => Some(OsString::from("/home/ada")),
        _ => None,
    };
    let s = resolve(&args(&[]), None, &relative).unwrap();
    assert_eq!(
        s.sample.unwrap().data_dir,
        Path::new("/home/ada/.local/share/kelson")
    );
    let s = resolve(&args(&["--data-dir", "/data"]), None, &xdg).unwrap();
    assert_eq!(s.sample.unwrap().data_dir, Path::new("/data"));
    let mcp = |name: &str| match name {
        "KELSON_DATA_DIR" => Some(OsString::from("/mcp-data")),
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
        "KELSON_DATA_DIR" => Some(OsString::new()),
        _ => xdg(name),
    };
    let s = resolve(&args(&[]), None, &empty).unwrap();
    assert_eq!(
        s.sample.unwrap().data_dir,
        Path::new("/xdg/kelson"),
        "empty is unset"
    );
    let file = "[sample]\ndata_dir = \"data\"\n";
    let s = resolve_with(&[], Some(file)).unwrap();
    assert_eq!(s.sample.unwrap().data_dir, Path::new("/etc/mcp/data"));
    let nothing = |_: &str| None;
    let e = resolve(&args(&[]), None, &nothing).unwrap_err();
    assert!(e.contains("KELSON_DATA_DIR"), "{e}");
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
    assert_eq!(s.server.name, "shop-data");
    assert_eq!(s.http.bind.to_string(), "127.0.0.1:9000");
    assert_eq!(s.http.path, "/api/mcp");
    assert_eq!(
        s.server.state_key.unwrap().path,
        Path::new("/etc/mcp/state.key")
    );
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
    assert_eq!(s.http.bind.to_string(), "127.0.0.1:9100");
    assert_eq!(s.http.path, "/x");
    assert!(s.databases.iter().all(|d| d.config.limits.max_rows == 7));
    let local = s.databases.iter().find(|d| d.name == "local").unwrap();
    assert_eq!(local.key, "--db local");
    assert!(matches!(&local.target, Target::Sqlite(c) if c.path == Path::new("other.db")));
    assert_eq!(s.roots.len(), 2);
    assert_eq!(s.http.allowed_hosts, ["mcp.example.com", "b.example.com"]);
    assert_eq!(s.server.state_key.unwrap().path, Path::new("/k"));
    assert!(s.sample.is_some());
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
fn the_example_file_parses() {
    let text = include_str!("../../../../../../examples/kelson.toml");
    let file = parse(text).expect("examples/kelson.toml parses");
    let s = resolve(&args(&[]), Some((file, PathBuf::from("/etc/mcp"))), &env)
        .expect("examples/kelson.toml is valid");
    // As shipped it serves what every machine has: the sample, and the examples folder itself.
    assert!(s.databases.is_empty(), "{:?}", s.databases);
    assert!(s.sample.is_some() && s.roots.len() == 1 && s.server.state_key.is_none());
}

#[test]
fn the_deployment_guides_configuration_file_is_valid() {
    let guide = include_str!("../../../../../../DEPLOYMENT.md");
    let block = guide
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("DEPLOYMENT.md has a toml block");
    let s = resolve_with(&[], Some(block)).unwrap_or_else(|e| panic!("{e}\n{block}"));
    assert_eq!(
        s.server.broker.expect("a broker").url,
        "redis://10.0.0.5:6379"
    );
    assert_eq!(s.http.shutdown_grace, Duration::from_secs(3));
    assert_eq!(
        s.observability.otlp.map(|(url, _)| url).as_deref(),
        Some("http://10.0.0.5:4318")
    );
    assert!(s.server.approval_ledger.is_some() && s.server.state_key.is_some());
}
