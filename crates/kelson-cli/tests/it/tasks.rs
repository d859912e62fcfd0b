//! Tasks through the binary against the conformance fixture's task tools (served in this
//! process over loopback HTTP, and over stdio): `kelson call --task` prints the handle, `kelson task
//! get|wait|cancel ID` follow it, a plain `kelson call` waits through a task, Ctrl-C cancels the
//! task being waited for, and bad ids and sessions without tasks get clear errors.

use crate::harness::{HttpServer, Live, Run, mcp, stdio_server};

/// The task id in `kelson call --task`'s human output (its `task` line).
fn id_of(run: &Run) -> String {
    run.stdout
        .lines()
        .find_map(|l| l.strip_prefix("task "))
        .map(|rest| rest.trim().to_owned())
        .unwrap_or_else(|| panic!("no task line:\n{}\n{}", run.stdout, run.stderr))
}

/// Starts `slow_compute` for `seconds` as a task; its id.
fn started(server: &HttpServer, seconds: &str) -> String {
    let run = server.run(
        &[
            "call",
            "--task",
            "slow_compute",
            "--arg",
            &format!("seconds={seconds}"),
        ],
        "",
    );
    run.expect_code(0);
    id_of(&run)
}

#[test]
fn call_task_prints_the_handle_and_task_wait_the_result() {
    let server = HttpServer::start();
    let run = server.run(
        &[
            "call",
            "--task",
            "slow_compute",
            "--arg",
            "seconds=1.5",
            "--arg",
            "label=report",
        ],
        "",
    );
    run.expect_code(0);
    let id = id_of(&run);
    assert!(id.len() >= 20, "an unguessable id: {id}");
    let status = run
        .stdout
        .lines()
        .find(|l| l.starts_with("status"))
        .unwrap();
    assert!(status.contains("working"), "{}", run.stdout);
    assert!(run.stdout.contains("poll      every 1 s"), "{}", run.stdout);
    assert!(
        run.stdout.contains("expires   1 h after its creation"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains(&format!("kelson task wait {id}")),
        "{}",
        run.stderr
    );

    let got = server.run(&["task", "get", &id, "--json"], "");
    got.expect_code(0);
    assert_eq!(got.json()["taskId"], id.as_str());
    assert_eq!(got.json()["resultType"], "complete");

    let waited = server.run(&["task", "wait", &id], "");
    waited.expect_code(0);
    assert_eq!(waited.stdout, "slow_compute report done after 1.5s\n");
    assert!(
        waited.stderr.contains("waiting for the task"),
        "{}",
        waited.stderr
    );

    // Once done, get shows the status and the result.
    let got = server.run(&["task", "get", &id], "");
    got.expect_code(0);
    assert!(got.stdout.contains("completed"), "{}", got.stdout);
    assert!(
        got.stdout.contains("slow_compute report done after 1.5s"),
        "{}",
        got.stdout
    );

    // --json prints the task as the server sent it.
    let run = server.run(
        &[
            "call",
            "--task",
            "slow_compute",
            "--arg",
            "seconds=1",
            "--json",
        ],
        "",
    );
    run.expect_code(0);
    let task = run.json();
    assert_eq!(task["resultType"], "task");
    assert_eq!(task["status"], "working");
    assert_eq!(task["pollIntervalMs"], 1000);
    let id = task["taskId"].as_str().unwrap();
    let waited = server.run(&["task", "wait", id, "--json"], "");
    waited.expect_code(0);
    assert_eq!(
        waited.json()["content"][0]["text"],
        "slow_compute job done after 1s"
    );
}

#[test]
fn a_plain_call_waits_through_its_task() {
    let server = HttpServer::start();
    let run = server.run(&["call", "slow_compute", "--arg", "seconds=1.2"], "");
    run.expect_code(0);
    assert_eq!(run.stdout, "slow_compute job done after 1.2s\n");
    // The task's status came through as progress (stderr is not a terminal: plain lines).
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("task ") && l.contains(" working [")),
        "{}",
        run.stderr
    );

    // Its input requests are asked in the terminal and answered over tasks/update.
    let run = server.run(
        &["call", "confirm_delete", "--arg", "filename=old.log"],
        "y\n",
    );
    run.expect_code(0);
    assert!(run.stdout.contains("Deleted old.log"), "{}", run.stdout);
    assert!(run.stderr.contains("Delete old.log?"), "{}", run.stderr);

    // A task started with --task asks when it is waited for.
    let run = server.run(
        &[
            "call",
            "--task",
            "confirm_delete",
            "--arg",
            "filename=keep.log",
        ],
        "",
    );
    run.expect_code(0);
    let id = id_of(&run);
    // The task reaches input_required as soon as its handler has run.
    let mut got = server.run(&["task", "get", &id], "");
    for _ in 0..50 {
        if got.stdout.contains("input_required") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        got = server.run(&["task", "get", &id], "");
    }
    got.expect_code(0);
    assert!(got.stdout.contains("input_required"), "{}", got.stdout);
    assert!(
        got.stdout
            .contains("waiting for input:\n  confirm: a form: Delete keep.log?"),
        "{}",
        got.stdout
    );
    assert!(
        got.stderr
            .contains(&format!("kelson task wait {id} asks for it")),
        "{}",
        got.stderr
    );
    let waited = server.run(&["task", "wait", &id], "n\n");
    waited.expect_code(0);
    assert!(
        waited
            .stdout
            .contains("Kept keep.log: the deletion was declined"),
        "{}",
        waited.stdout
    );

    // A tool error is the tool's (exit 1), a failed task the server's JSON-RPC error (exit 2).
    let run = server.run(&["call", "failing_job"], "");
    run.expect_code(1);
    assert!(run.stdout.contains("the job failed"), "{}", run.stdout);
    let run = server.run(&["call", "protocol_error_job"], "");
    run.expect_code(2);
    assert!(
        run.stderr.contains(
            "tools/call: JSON-RPC error -32603: Internal error: the job's backend failed"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn task_cancel_stops_it_and_unknown_ids_are_clear_errors() {
    let server = HttpServer::start();
    let id = started(&server, "60");
    let run = server.run(&["task", "cancel", &id], "");
    run.expect_code(0);
    assert_eq!(run.stdout, format!("cancelled the task {id}\n"));
    let got = server.run(&["task", "get", &id], "");
    got.expect_code(2);
    assert!(got.stdout.contains("cancelled"), "{}", got.stdout);
    assert!(
        got.stderr.contains(&format!("the task {id} was cancelled")),
        "{}",
        got.stderr
    );
    let waited = server.run(&["task", "wait", &id], "");
    waited.expect_code(2);
    assert!(
        waited.stderr.contains(&format!("task {id} was cancelled")),
        "{}",
        waited.stderr
    );
    // Cancelling it again changes nothing.
    let run = server.run(&["task", "cancel", &id], "");
    run.expect_code(0);
    assert!(
        run.stdout.contains("had already ended (cancelled)"),
        "{}",
        run.stdout
    );

    // An id that starts with `-` (other servers' may) is an id, not an option.
    for verb in ["get", "wait", "cancel"] {
        let run = server.run(&["task", verb, "-no-such-task"], "");
        run.expect_code(2);
        assert!(
            run.stderr.contains("Task not found"),
            "{verb}: {}",
            run.stderr
        );
    }
    for verb in ["get", "wait", "cancel"] {
        let run = server.run(&["task", verb, "no-such-task"], "");
        run.expect_code(2);
        assert!(
            run.stderr.contains("Task not found"),
            "{verb}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("no such task on this server"),
            "{verb}: {}",
            run.stderr
        );
    }
    let run = server.run(&["task", "wait"], "");
    run.expect_code(4);
    assert!(run.stderr.contains("<ID>"), "{}", run.stderr);
}

#[test]
fn ctrl_c_while_waiting_cancels_the_task() {
    let server = HttpServer::start();
    let id = started(&server, "60");
    let live = Live::start(&["task", "wait", &id, "--url", &server.url]);
    Live::wait_for(&live.stderr, "waiting for the task");
    let (status, rest) = live.interrupt();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    let rest = rest.join("\n");
    assert!(
        rest.contains(&format!(
            "interrupted: cancelled the task {id} (tasks/cancel sent)"
        )),
        "{rest}"
    );
    let got = server.run(&["task", "get", &id, "--json"], "");
    got.expect_code(2);
    assert_eq!(got.json()["status"], "cancelled");

    // A plain call waiting through its task cancels the task too.
    let live = Live::start(&[
        "call",
        "slow_compute",
        "--arg",
        "seconds=60",
        "--url",
        &server.url,
    ]);
    Live::wait_for(&live.stderr, " working [");
    let (status, rest) = live.interrupt();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    let rest = rest.join("\n");
    let id = rest
        .split("interrupted: cancelled the task ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("{rest}"));
    let got = server.run(&["task", "get", id, "--json"], "");
    got.expect_code(2);
    assert_eq!(got.json()["status"], "cancelled");
}

#[test]
fn over_stdio_and_in_the_handshake_era() {
    // Over stdio a plain call waits through the task on the same connection.
    let stdio = stdio_server();
    let run = mcp(
        &[
            "call",
            "--stdio",
            &stdio,
            "slow_compute",
            "--arg",
            "seconds=1",
        ],
        "",
    );
    run.expect_code(0);
    assert_eq!(run.stdout, "slow_compute job done after 1s\n");
    assert!(run.stderr.contains(" working ["), "{}", run.stderr);

    // A handshake-era session has no tasks: --task runs the call as a plain one and says so.
    let server = HttpServer::start();
    let run = server.run(
        &[
            "call",
            "--task",
            "slow_compute",
            "--arg",
            "seconds=0.3",
            "--era",
            "legacy",
        ],
        "",
    );
    run.expect_code(0);
    assert_eq!(run.stdout, "slow_compute job done after 0.3s\n");
    assert!(
        run.stderr.contains("a handshake-era server has no tasks"),
        "{}",
        run.stderr
    );
    let run = server.run(&["task", "get", "x", "--era", "legacy"], "");
    run.expect_code(2);
    assert!(
        run.stderr.contains("need protocol revision 2026-07-28"),
        "{}",
        run.stderr
    );
}
