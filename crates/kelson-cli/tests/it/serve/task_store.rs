//! Two `kelson serve` processes sharing a PostgreSQL task store, as instances behind a load balancer:
//! a long query started on one is a task the other answers for, and when the first is killed
//! (SIGKILL, nothing cleaned up) the other reports its task failed once its heartbeat is overdue.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{Pg, Serve, TempDir, admin_role, pg_url, post};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// `_meta` declaring the tasks extension.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
    })
}

fn instance(scratch: &TempDir, name: &str, pg: &Pg) -> Serve {
    Serve::start(
        &scratch.join(name),
        &[
            "--db",
            &pg_url(&pg.reader),
            "--task-store",
            &pg_url(&admin_role()),
            "--task-after",
            "200ms",
            "--task-runner-timeout",
            "5s",
            "--query-timeout",
            "2m",
        ],
    )
}

fn task(serve: &Serve, id: &str) -> Value {
    post(
        &serve.url,
        "tasks/get",
        Some(id),
        json!({"taskId": id, "_meta": meta()}),
    )
}

fn start_query(serve: &Serve, sql: &str) -> String {
    let reply = post(
        &serve.url,
        "tools/call",
        Some("query"),
        json!({"name": "query", "arguments": {"sql": sql}, "_meta": meta()}),
    );
    assert_eq!(reply["result"]["resultType"], "task", "{reply}");
    reply["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned()
}

/// Polls `serve` until the task has `status` (at most `limit`).
fn until(serve: &Serve, id: &str, status: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let reply = task(serve, id);
        if reply["result"]["status"] == status {
            return reply["result"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "task {id} never became {status}: {reply}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn instances_share_tasks_and_a_killed_instances_task_is_reported_failed() {
    if !kelson_testenv::postgres() {
        return;
    }
    let pg = Pg::new("CREATE TABLE t (x int); INSERT INTO t VALUES (7);");
    let scratch = TempDir::new();
    let a = instance(&scratch, "a", &pg);
    let mut b = instance(&scratch, "b", &pg);

    // A query that outlasts --task-after, started on A, finished there and read from B.
    let id = start_query(&a, "SELECT pg_sleep(1)::text AS slept, x FROM t");
    assert_eq!(task(&b, &id)["result"]["status"], "working");
    let done = until(&b, &id, "completed", Duration::from_secs(20));
    assert_eq!(
        done["result"]["structuredContent"]["rows"],
        json!([["", 7]]),
        "{done}"
    );

    // A query that would run for a minute, then A is killed outright.
    let id = start_query(&a, "SELECT pg_sleep(60)");
    assert_eq!(task(&b, &id)["result"]["status"], "working");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &a.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let started = Instant::now();
    let failed = until(&b, &id, "failed", Duration::from_secs(20));
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "reported failed before its heartbeat was overdue"
    );
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("instance running the task stopped")),
        "{failed}"
    );
    // The survivor stops cleanly.
    assert!(b.stop().expect("B stops").success(), "{}", b.log());
}
