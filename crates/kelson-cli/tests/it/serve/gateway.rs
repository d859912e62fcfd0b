//! `kelson gateway` as an operator runs it: the real binary in front of two real upstreams, a
//! `kelson serve --stdio` it starts itself and a `kelson serve` over HTTP, driven by the `kelson`
//! client commands.

use std::path::Path;

use crate::harness::{mcp_env, mcp_path};
use crate::serve::support::{Serve, TempDir};

/// A configuration with the stdio upstream `local` and the HTTP upstream `remote` at `url`.
fn config(dir: &TempDir, url: &str, extra: &str) -> std::path::PathBuf {
    let path = dir.join("gateway.toml");
    let text = format!(
        r#"
[[upstream]]
name = "local"
command = ["{kelson}", "serve", "--stdio", "--data-dir", "{data}"]

[[upstream]]
name = "remote"
url = "{url}"
timeout = "20s"
headers = {{ Authorization = {{ env = "KELSON_GW_REMOTE_TOKEN" }} }}
{extra}
"#,
        kelson = mcp_path(),
        data = dir.join("local-data").display(),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `kelson gateway --http 127.0.0.1:0 --config FILE` with its data in `data` and `env` set;
/// returns once it listens.
fn start(file: &Path, data: &Path, env: &[(&str, &str)]) -> Serve {
    let mut command = crate::harness::command(&[
        "gateway",
        "--http",
        "127.0.0.1:0",
        "--config",
        file.to_str().unwrap(),
    ]);
    command.envs(env.iter().copied());
    Serve::spawn_command(command, data)
}

fn gateway_in(dir: &Path, args: &[&str]) -> crate::harness::Run {
    mcp_env(
        args,
        "",
        &[
            ("KELSON_DATA_DIR", dir.as_os_str()),
            ("KELSON_GW_REMOTE_TOKEN", "Bearer unused".as_ref()),
        ],
    )
}

#[test]
fn a_gateway_serves_a_stdio_and_an_http_upstream_and_audits_each_call() {
    let dir = TempDir::new();
    let remote = Serve::start(&dir.join("remote-data"), &[]);
    let file = config(&dir, &remote.url, "[policy]\ndeny = [\"*_execute\"]\n");
    let file = file.to_str().unwrap();

    // `check` connects to both and says what would be served, writing nothing.
    let check = gateway_in(
        &dir.join("gw-data"),
        &["gateway", "check", "--config", file],
    );
    check.expect_code(0);
    assert!(
        check.stdout.contains("upstream local:") && check.stdout.contains("local_query"),
        "{}",
        check.stdout
    );
    assert!(check.stdout.contains("upstream remote:") && check.stdout.contains("remote_query"));
    assert!(
        !dir.join("gw-data").join("pins.json").exists(),
        "check writes nothing"
    );

    let gateway = start(
        Path::new(file),
        &dir.join("gw-data"),
        &[("KELSON_GW_REMOTE_TOKEN", "Bearer unused")],
    );
    let tools = gateway.run(&["tools", "--json"], "");
    tools.expect_code(0);
    let names: Vec<String> = tools.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"local_query".to_owned()), "{names:?}");
    assert!(names.contains(&"remote_query".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.ends_with("_execute")),
        "denied: {names:?}"
    );
    for tool in ["local_query", "remote_query"] {
        let run = gateway.run(
            &[
                "call",
                tool,
                "--arg",
                "sql=SELECT 40 + 2 AS answer",
                "--json",
            ],
            "",
        );
        run.expect_code(0);
        assert_eq!(
            run.json()["structuredContent"]["rows"][0][0],
            42,
            "{}",
            run.stdout
        );
    }
    // Through the handshake era too.
    let run = gateway.run(
        &[
            "call",
            "remote_query",
            "--era",
            "legacy",
            "--arg",
            "sql=SELECT 1 AS one",
            "--json",
        ],
        "",
    );
    run.expect_code(0);

    let audit = std::fs::read_to_string(dir.join("gw-data").join("audit.jsonl")).unwrap();
    assert_eq!(audit.lines().count(), 3, "{audit}");
    assert!(audit.contains(r#""tool":"local_query""#) && audit.contains(r#""outcome":"ok""#));
    assert!(
        !audit.contains("SELECT"),
        "arguments are not recorded by default"
    );

    // Over stdio, as a desktop host starts it.
    let line = format!(
        "'{}' gateway --stdio --config '{file}' --data-dir '{}'",
        mcp_path(),
        dir.join("gw-stdio-data").display()
    );
    let run = mcp_env(
        &[
            "call",
            "remote_query",
            "--stdio",
            &line,
            "--arg",
            "sql=SELECT 5 AS five",
            "--json",
        ],
        "",
        &[("KELSON_GW_REMOTE_TOKEN", "Bearer unused".as_ref())],
    );
    run.expect_code(0);
    assert_eq!(
        run.json()["structuredContent"]["rows"][0][0],
        5,
        "{}",
        run.stderr
    );

    // Nothing is pending: what was seen first is pinned.
    let list = gateway_in(
        &dir.join("gw-data"),
        &["gateway", "pin", "--list", "--config", file],
    );
    list.expect_code(0);
    assert!(list.stdout.contains("no pending change"), "{}", list.stdout);
    assert!(
        gateway.log().contains("upstream local: "),
        "{}",
        gateway.log()
    );
}

#[test]
fn a_gateway_refuses_what_belongs_to_serve_and_a_file_without_upstreams() {
    let dir = TempDir::new();
    let empty = dir.join("empty.toml");
    std::fs::write(&empty, "[policy]\nread_only = true\n").unwrap();
    let run = gateway_in(
        dir.path(),
        &["gateway", "--config", empty.to_str().unwrap()],
    );
    run.expect_code(4);
    assert!(run.stderr.contains("no upstream"), "{}", run.stderr);

    let run = gateway_in(dir.path(), &["gateway"]);
    run.expect_code(4);
    assert!(run.stderr.contains("--config"), "{}", run.stderr);

    let file = config(&dir, "http://127.0.0.1:9/mcp", "");
    let run = gateway_in(
        dir.path(),
        &[
            "gateway",
            "--config",
            file.to_str().unwrap(),
            "--db",
            "x.db",
        ],
    );
    run.expect_code(4);
    assert!(run.stderr.contains("kelson serve"), "{}", run.stderr);

    // A misspelt key names the file, the key and its line.
    let typo = dir.join("typo.toml");
    std::fs::write(
        &typo,
        "[[upstream]]\nname = \"a\"\nurll = \"http://x/mcp\"\n",
    )
    .unwrap();
    let run = gateway_in(dir.path(), &["gateway", "--config", typo.to_str().unwrap()]);
    run.expect_code(4);
    assert!(
        run.stderr.contains("typo.toml") && run.stderr.contains("line"),
        "{}",
        run.stderr
    );

    // serve's own file must not carry the gateway's sections.
    let run = crate::harness::mcp_env(
        &["serve", "--check", "--config", file.to_str().unwrap()],
        "",
        &[("KELSON_DATA_DIR", dir.path().as_os_str())],
    );
    run.expect_code(4);
    assert!(run.stderr.contains("kelson gateway"), "{}", run.stderr);
}

/// The processes whose parent is `pid`, from /proc.
fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return found;
    };
    for task in tasks.flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        found.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    found
}

#[test]
fn a_stdio_upstream_that_dies_is_started_again_and_ends_with_the_gateway() {
    let dir = TempDir::new();
    let file = dir.join("gateway.toml");
    std::fs::write(
        &file,
        format!(
            "[[upstream]]\nname = \"local\"\ncommand = [\"{}\", \"serve\", \"--stdio\", \"--data-dir\", \"{}\"]\n",
            mcp_path(),
            dir.join("local-data").display()
        ),
    )
    .unwrap();
    let mut gateway = start(&file, &dir.join("gw-data"), &[]);
    let call = |gateway: &Serve| {
        gateway.run(
            &[
                "call",
                "local_query",
                "--arg",
                "sql=SELECT 7 AS n",
                "--json",
            ],
            "",
        )
    };
    call(&gateway).expect_code(0);
    let upstream = children(gateway.pid());
    assert_eq!(upstream.len(), 1, "one program started: {upstream:?}");
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &upstream[0].to_string()])
        .status();
    // The gateway notices, starts it again, and serves its tools as before.
    crate::serve::support::wait_until("the upstream is started again", || {
        let now = children(gateway.pid());
        !now.is_empty() && now != upstream && call(&gateway).code == Some(0)
    });
    assert!(
        gateway.log().contains("upstream local: lost"),
        "{}",
        gateway.log()
    );
    // Stopping the gateway ends the program it started.
    let restarted = children(gateway.pid());
    gateway.stop();
    crate::serve::support::wait_until("the upstream ended with the gateway", || {
        restarted.iter().all(|pid| {
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "))
        })
    });
}

#[test]
fn the_official_handshake_era_server_is_reached_by_callers_of_both_eras() {
    let Some((node, script)) = crate::harness::everything() else {
        return;
    };
    let dir = TempDir::new();
    let file = dir.join("gateway.toml");
    std::fs::write(
        &file,
        format!(
            "[[upstream]]\nname = \"everything\"\ncommand = [\"{}\", \"{}\", \"stdio\"]\n",
            node.display(),
            script.display()
        ),
    )
    .unwrap();
    let gateway = start(&file, &dir.join("gw-data"), &[]);
    for era in ["modern", "legacy"] {
        let run = gateway.run(
            &[
                "call",
                "everything_echo",
                "--era",
                era,
                "--arg",
                "message=across eras",
                "--json",
            ],
            "",
        );
        run.expect_code(0);
        assert!(run.stdout.contains("across eras"), "{era}: {}", run.stdout);
    }
    // It was spoken to in the handshake era, which is all it speaks.
    assert!(
        gateway.log().contains("tools served (2025-"),
        "{}",
        gateway.log()
    );
}
