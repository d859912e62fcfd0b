//! The official Inspector's CLI (`@modelcontextprotocol/inspector-cli`, `--cli` mode; handshake era)
//! over stdio, started from the very host configurations the README's "From a desktop MCP host"
//! section gives: its JSON block and every `"args": [...]` variant in its text, with the README's
//! example paths in a scratch home folder. It reads them as a desktop host does (`--config FILE
//! --server NAME`), lists the tools, and calls them.

use std::path::Path;

use serde_json::{Value, json};

use super::{PeerRun, run_peer};
use crate::harness::mcp_path;
use crate::serve::support::{TempDir, sqlite_file};

/// The README's section about hosts, up to the next section of its level or above.
fn host_section() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(path).expect("README.md");
    let start = readme
        .find("### From a desktop MCP host")
        .expect("the README has its host section");
    let rest = &readme[start + 3..];
    let end = rest
        .find("\n## ")
        .into_iter()
        .chain(rest.find("\n### "))
        .min()
        .unwrap_or(rest.len());
    rest[..end].to_owned()
}

/// The host configurations of the section: the server entry of its JSON block, and that entry
/// with each `"args": [...]` of the text instead of its own.
fn host_configs(section: &str) -> Vec<Value> {
    let block = section
        .split("```json")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a json block");
    let config: Value = serde_json::from_str(block).expect("the json block parses");
    let entry = config["mcpServers"]["kelson"].clone();
    assert!(entry["command"].is_string(), "{config}");
    let mut configs = vec![entry.clone()];
    let text = section.replace(block, "");
    for (at, _) in text.match_indices("\"args\": [") {
        let array = &text[at + "\"args\": ".len()..];
        let array = &array[..=array.find(']').expect("a closed array")];
        let args: Value = serde_json::from_str(array)
            .unwrap_or_else(|e| panic!("{e}: {array} in the README's host section"));
        let mut variant = entry.clone();
        variant["args"] = args;
        configs.push(variant);
    }
    configs
}

/// A scratch home holding what the README's examples name: `app.db`, `notes/` and `kelson.toml`.
fn home() -> TempDir {
    let home = TempDir::new();
    sqlite_file(
        &home.join("app.db"),
        "create table notes (id integer primary key, body text);
         insert into notes (body) values ('read the README');",
    );
    std::fs::create_dir_all(home.join("notes")).unwrap();
    std::fs::write(home.join("notes/todo.md"), "- try a host\n").unwrap();
    sqlite_file(
        &home.join("inventory.db"),
        "create table stock (sku text primary key, qty integer);",
    );
    std::fs::write(
        home.join("kelson.toml"),
        "[databases.inventory]\nurl = \"inventory.db\"\n",
    )
    .unwrap();
    home
}

/// The README's paths, in the scratch home; the README's `kelson`, the one under test.
fn localize(entry: &Value, home: &TempDir) -> Value {
    let home = home.path().display().to_string();
    let text = entry.to_string().replace("/home/you", &home);
    let mut entry: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        entry["command"],
        format!("{home}/.cargo/bin/kelson"),
        "the README names the installed kelson"
    );
    entry["command"] = json!(mcp_path());
    entry
}

/// `mcp-inspector-cli --cli --config FILE --server kelson ARGS`, as a host with that
/// configuration runs the server: in the scratch home, with nothing of the test's environment
/// that would point the server elsewhere.
fn inspector(home: &TempDir, entry: &Value, args: &[&str]) -> PeerRun {
    let peers = super::installed();
    let config = home.join("host.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"kelson": entry}}).to_string(),
    )
    .unwrap();
    let cli = peers.path("node_modules/@modelcontextprotocol/inspector-cli/build/cli.js");
    let mut command = peers.node("node_modules/@modelcontextprotocol/inspector-cli/build/cli.js");
    command
        .args(["--cli", "--config"])
        .arg(&config)
        .args(["--server", "kelson"])
        .args(args)
        // The CLI finds its own package.json through `../package.json` of the working folder.
        .current_dir(cli.parent().unwrap())
        .env("HOME", home.path())
        .env_remove("KELSON_DATA_DIR")
        .env_remove("XDG_DATA_HOME")
        .env_remove("KELSON_LOG");
    run_peer(command, |event| panic!("unexpected stop {event}"))
}

/// The JSON the CLI printed (all of its stdout).
fn printed(run: &PeerRun) -> Value {
    assert!(run.success, "the Inspector CLI failed:\n{run}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}:\n{run}"))
}

fn tool_names(listed: &Value) -> Vec<String> {
    let mut names: Vec<String> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn the_readme_host_configurations_work_in_the_inspector() {
    if super::peers().is_none() {
        return;
    }
    let section = host_section();
    let configs = host_configs(&section);
    assert_eq!(
        configs.len(),
        3,
        "the JSON block and its two variants: {configs:#?}"
    );
    let home = home();
    let read_only = ["describe_table", "list_tables", "query"];

    // ["serve", "--stdio"]: the sample database, read-only, created in the host's home.
    let sample = localize(&configs[0], &home);
    assert_eq!(sample["args"], json!(["serve", "--stdio"]));
    let listed = printed(&inspector(&home, &sample, &["--method", "tools/list"]));
    assert_eq!(tool_names(&listed), read_only, "{listed}");
    assert!(home.join(".local/share/kelson/sample.db").is_file());
    let called = printed(&inspector(
        &home,
        &sample,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "query",
            "--tool-arg",
            "sql=select count(*) as n from orders",
        ],
    ));
    assert!(called["isError"] != json!(true), "{called}");
    assert_eq!(
        called["structuredContent"]["rows"],
        json!([[2000]]),
        "{called}"
    );

    // --db app.db --root notes: the host's own database.
    let own = localize(&configs[1], &home);
    assert!(own["args"].to_string().contains("app.db"), "{own}");
    let called = printed(&inspector(
        &home,
        &own,
        &["--method", "tools/call", "--tool-name", "list_tables"],
    ));
    let tables = &called["structuredContent"]["tables"];
    assert_eq!(tables[0]["name"], "notes", "{called}");

    // --config kelson.toml: the databases of the configuration file.
    let configured = localize(&configs[2], &home);
    assert!(
        configured["args"].to_string().contains("kelson.toml"),
        "{configured}"
    );
    let called = printed(&inspector(
        &home,
        &configured,
        &["--method", "tools/call", "--tool-name", "list_tables"],
    ));
    let tables = &called["structuredContent"]["tables"];
    assert_eq!(tables[0]["name"], "stock", "{called}");
}

#[test]
fn the_section_is_read_as_written() {
    let configs = host_configs(
        "x\n```json\n{\"mcpServers\": {\"kelson\": {\"command\": \"/c\", \"args\": [\"a\"]}}}\n```\n\
         Or `\"args\": [\"a\", \"b\",\n\"c\"]`, or `\"args\": []`.",
    );
    assert_eq!(
        configs,
        [
            json!({"command": "/c", "args": ["a"]}),
            json!({"command": "/c", "args": ["a", "b", "c"]}),
            json!({"command": "/c", "args": []}),
        ]
    );
}
