//! Long statements as tasks through the binary against a real `kelson serve --task-after 500ms`: on
//! the local PostgreSQL (`pg_sleep`), `kelson call --task` prints the handle, `kelson task wait` the
//! rows, `kelson task cancel` stops the statement on the engine, and a plain `kelson call` waits
//! through the task; on the SQLite sample, a runaway query started as a task and cancelled stops
//! burning CPU.

use std::time::{Duration, Instant};

use super::support::{Pg, Serve, TempDir, cpu_ticks, pg_url, wait_until};
use crate::harness::Run;

/// The id in `kelson call --task --json`'s output.
fn task_id(run: &Run) -> String {
    run.expect_code(0);
    let task = run.json();
    assert_eq!(task["resultType"], "task", "{}", run.stdout);
    task["taskId"].as_str().expect("a task id").to_owned()
}

#[test]
fn slow_postgres_queries_run_as_tasks() {
    if !kelson_testenv::postgres() {
        return;
    }
    let pg = Pg::new("");
    let data = TempDir::new();
    let url = format!("pg={}", pg_url(&pg.reader));
    let serve = Serve::start(
        data.path(),
        &[
            "--db",
            &url,
            "--task-after",
            "500ms",
            "--query-timeout",
            "5m",
        ],
    );

    // --task: the handle comes back once the statement has run past the threshold.
    let started = Instant::now();
    let run = serve.run(
        &[
            "call",
            "--task",
            "query",
            "--arg",
            "sql=select 42 as answer from pg_sleep(3)",
            "--json",
        ],
        "",
    );
    let id = task_id(&run);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the handle waited for the statement: {:?}",
        started.elapsed()
    );
    assert_eq!(run.json()["status"], "working");
    let got = serve.run(&["task", "get", &id], "");
    got.expect_code(0);
    assert!(got.stdout.contains("working"), "{}", got.stdout);
    let waited = serve.run(&["task", "wait", &id], "");
    waited.expect_code(0);
    assert!(waited.stdout.contains("answer"), "{}", waited.stdout);
    assert!(waited.stdout.contains("42"), "{}", waited.stdout);

    // A plain call on a slow statement waits through the task it becomes.
    let run = serve.run(
        &[
            "call",
            "query",
            "--arg",
            "sql=select 7 as seven from pg_sleep(2)",
        ],
        "",
    );
    run.expect_code(0);
    assert!(run.stdout.contains("seven"), "{}", run.stdout);
    assert!(run.stderr.contains(" working ["), "{}", run.stderr);

    // Cancelling the task cancels the statement on the engine.
    let run = serve.run(
        &[
            "call",
            "--task",
            "query",
            "--arg",
            "sql=select 1 from pg_sleep(600)",
            "--json",
        ],
        "",
    );
    let id = task_id(&run);
    let active = || {
        pg.scalar(&format!(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = '{}' AND state = 'active' \
             AND query LIKE '%pg_sleep(600)%'",
            pg.reader
        ))
    };
    assert_eq!(active(), "1", "the statement runs");
    let run = serve.run(&["task", "cancel", &id], "");
    run.expect_code(0);
    assert_eq!(run.stdout, format!("cancelled the task {id}\n"));
    wait_until("the statement is gone", || active() == "0");
    let got = serve.run(&["task", "get", &id, "--json"], "");
    got.expect_code(2);
    assert_eq!(got.json()["status"], "cancelled");

    let run = serve.run(&["task", "get", "AAAAAAAAAAAAAAAAAAAAAA"], "");
    run.expect_code(2);
    assert!(run.stderr.contains("Task not found"), "{}", run.stderr);
}

#[test]
fn a_runaway_sqlite_query_as_a_task_is_cancelled_on_the_engine() {
    let data = TempDir::new();
    let serve = Serve::start(
        data.path(),
        &["--task-after", "500ms", "--query-timeout", "5m"],
    );
    // Counts to a billion: minutes of CPU unless stopped.
    let sql = "sql=with recursive c(x) as (select 1 union all select x + 1 from c where x < 1000000000) select count(*) from c";
    let run = serve.run(&["call", "--task", "query", "--arg", sql, "--json"], "");
    let id = task_id(&run);
    let got = serve.run(&["task", "get", &id, "--json"], "");
    got.expect_code(0);
    assert_eq!(got.json()["status"], "working");
    let run = serve.run(&["task", "cancel", &id], "");
    run.expect_code(0);
    assert!(run.stdout.contains("cancelled the task"), "{}", run.stdout);
    // The server stops burning CPU: the statement was interrupted.
    let pid = serve.pid();
    let ticks_per_s = 100; // USER_HZ on Linux
    wait_until("the server goes idle", || {
        let before = cpu_ticks(pid);
        std::thread::sleep(Duration::from_millis(500));
        cpu_ticks(pid) - before < ticks_per_s / 5
    });
    let run = serve.run(&["task", "wait", &id], "");
    run.expect_code(2);
    assert!(run.stderr.contains("was cancelled"), "{}", run.stderr);
}
