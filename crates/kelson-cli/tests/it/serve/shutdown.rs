//! Ctrl-C (SIGINT) on `kelson serve` while a long query runs, through the real binaries: the call is
//! stopped and answered with a tool error saying so, every time, and never handed to the client
//! as a task, also when it runs past `--task-after` during `--shutdown-grace`; a call that was a
//! task before the signal ends with the client saying the server shut down, without a library
//! warning.

use std::process::{Command, ExitStatus};
use std::thread::JoinHandle;

use super::support::{Serve, TempDir, http, wait_until};
use crate::harness::{Run, mcp};

/// Counts to a billion: minutes of CPU unless stopped.
const RUNAWAY: &str = "sql=with recursive c(x) as (select 1 union all select x + 1 from c \
                       where x < 1000000000) select count(*) from c";

/// What the call is answered with when the shutdown stops it.
const STOPPED: &str = "The server is shutting down: the call was stopped before it finished.";

/// The sample's read connections in use, from the metrics.
fn reads_in_use(metrics: &str) -> i64 {
    let body = http(metrics, "GET", &[], "").body;
    let series = "mcp_sql_pool_connections_in_use{database=\"sample\",pool=\"read\"} ";
    body.lines()
        .find_map(|l| l.strip_prefix(series))
        .unwrap_or_else(|| panic!("no {series} in\n{body}"))
        .parse()
        .expect("a number")
}

/// `kelson call query` on the runaway statement, in a thread of its own.
fn call_runaway(url: &str) -> JoinHandle<Run> {
    let url = url.to_owned();
    std::thread::spawn(move || mcp(&["call", "query", "--arg", RUNAWAY, "--url", &url], ""))
}

/// Sends SIGINT, as Ctrl-C in the server's terminal does, and returns the server's exit status.
fn interrupt(serve: &mut Serve) -> Option<ExitStatus> {
    let pid = serve.pid();
    let sent = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    // Exited (a zombie until waited for) or gone; `stop` then only collects its status.
    wait_until("the server exits", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'))
        })
    });
    serve.stop()
}

/// Starts the server with `flags`, starts the runaway query, waits until it runs on a read
/// connection, interrupts the server; the call's run and the server's log and exit status.
fn interrupted_call(data: &TempDir, flags: &[&str]) -> (Run, String, Option<ExitStatus>) {
    let mut args = vec!["--metrics", "--query-timeout", "5m"];
    args.extend_from_slice(flags);
    let mut serve = Serve::start(data.path(), &args);
    let metrics = serve.metrics_url().expect("the metrics URL");
    let call = call_runaway(&serve.url);
    wait_until("the query runs", || reads_in_use(&metrics) == 1);
    let status = interrupt(&mut serve);
    let run = call.join().expect("the call's thread");
    (run, serve.log(), status)
}

/// No task was made: the client followed none, and the server was asked nothing about one.
#[track_caller]
fn assert_no_task(run: &Run, log: &str) {
    assert!(!log.contains("tasks/get"), "a task was polled; log:\n{log}");
    assert!(
        !run.stderr.contains("task "),
        "the client followed a task:\n{}",
        run.stderr
    );
}

#[test]
fn ctrl_c_during_a_long_query_stops_the_call_every_time_and_makes_no_task() {
    let data = TempDir::new();
    for round in 1..=5 {
        let (run, log, status) = interrupted_call(&data, &["--task-after", "3s"]);
        let context = format!(
            "round {round}\nstdout:\n{}\nstderr:\n{}\nlog:\n{log}",
            run.stdout, run.stderr
        );
        // A tool error (exit 1) saying why, with the handler's own account of its stop.
        assert_eq!(run.code, Some(1), "{context}");
        assert!(run.stdout.contains(STOPPED), "{context}");
        assert!(run.stdout.contains("the statement stopped"), "{context}");
        assert!(!run.stderr.contains("WARN"), "{context}");
        assert_no_task(&run, &log);
        assert!(
            log.contains("method=\"tools/call\" tool=\"query\" outcome=\"tool_error\""),
            "{context}"
        );
        // A stop asked for is a clean stop.
        assert!(status.is_some_and(|s| s.success()), "{status:?}: {context}");
    }
}

#[test]
fn a_call_that_runs_past_task_after_during_the_grace_period_stays_a_call() {
    let data = TempDir::new();
    // The signal comes as the query starts: the call passes --task-after while the server still
    // serves (the grace period), and is stopped when the grace ends.
    let (run, log, status) =
        interrupted_call(&data, &["--task-after", "500ms", "--shutdown-grace", "2s"]);
    let context = format!(
        "stdout:\n{}\nstderr:\n{}\nlog:\n{log}",
        run.stdout, run.stderr
    );
    assert!(log.contains("stopping in 2000 ms"), "{context}");
    assert_eq!(run.code, Some(1), "{context}");
    assert!(run.stdout.contains(STOPPED), "{context}");
    assert_no_task(&run, &log);
    assert!(status.is_some_and(|s| s.success()), "{status:?}: {context}");
}

#[test]
fn a_task_whose_server_shuts_down_ends_with_the_client_saying_so() {
    let data = TempDir::new();
    let mut serve = Serve::start(
        data.path(),
        &["--task-after", "300ms", "--query-timeout", "5m"],
    );
    let call = call_runaway(&serve.url);
    // The call became a task before the signal: the client follows it with tasks/get.
    wait_until("the client polls its task", || {
        serve.log().contains("tasks/get")
    });
    let status = interrupt(&mut serve);
    let run = call.join().expect("the call's thread");
    let context = format!(
        "stdout:\n{}\nstderr:\n{}\nlog:\n{}",
        run.stdout,
        run.stderr,
        serve.log()
    );
    // A transport error (exit 3) in the CLI's words, and no warning of the library's. (A poll
    // that reached the server in the instant between the signal and its exit would learn the
    // same from the task itself, failed: a protocol error.)
    let told = match run.code {
        Some(3) => run
            .stderr
            .contains("the server shut down while the call ran"),
        Some(2) => run
            .stderr
            .contains("the server stopped before the task finished"),
        _ => false,
    };
    assert!(told, "{context}");
    assert!(!run.stderr.contains("WARN"), "{context}");
    assert!(!run.stderr.contains("could not be cancelled"), "{context}");
    assert!(status.is_some_and(|s| s.success()), "{status:?}: {context}");
}
