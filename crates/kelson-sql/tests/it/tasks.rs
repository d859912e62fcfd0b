//! The tasks extension with the shared PostgreSQL store ([`PgTaskStore`]): instances behind a load
//! balancer stand in as servers in this process on one store, and a killed instance as a server
//! whose runtime is dropped without a shutdown. Then the SQL adapter's long calls as tasks, with
//! cancellation reaching PostgreSQL.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kelson_server::tasks::TaskConfig;
use kelson_server::transport::{Reply, RequestIo};
use kelson_server::{Principal, RequestContext, Server, ServerConfig, TaskSupport, ToolDef};
use kelson_sql::{DatabaseConfig, PgTaskStore, SqlAdapter};
use kelson_types::{
    CallToolResult, ElicitRequestFormParams, JsonObject, RequestedSchema, StringSchema,
};
use serde_json::{Value, json};

use crate::support;

const EXT: &str = kelson_types::TASKS_EXTENSION;

fn pg_store_url() -> String {
    // The store connects with a URL; the tests' server is reached as `postgres` (or `root`).
    let base = std::env::var("KELSON_SQL_TEST_PG")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 dbname=test".into());
    let mut host = "127.0.0.1".to_owned();
    let mut port = "5432".to_owned();
    let mut db = "test".to_owned();
    for part in base.split_whitespace() {
        if let Some((k, v)) = part.split_once('=') {
            match k {
                "host" => host = v.to_owned(),
                "port" => port = v.to_owned(),
                "dbname" => db = v.to_owned(),
                _ => {}
            }
        }
    }
    format!("postgres://{}@{host}:{port}/{db}", pg_user())
}

fn pg_user() -> &'static str {
    static USER: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    USER.get_or_init(|| {
        // The same administrative user the other PostgreSQL tests use.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let user = std::thread::spawn(move || rt.block_on(async { support::pg_admin().await.1 }))
            .join()
            .unwrap();
        Box::leak(user.into_boxed_str())
    })
}

async fn store(runner_timeout: Duration) -> PgTaskStore {
    PgTaskStore::connect(&pg_store_url())
        .await
        .expect("the task store connects")
        .runner_timeout(runner_timeout)
}

fn config(heartbeat: Duration) -> ServerConfig {
    let mut tasks = TaskConfig::default();
    tasks.heartbeat_interval = heartbeat;
    tasks.poll_interval = Duration::from_millis(50);
    let mut config = ServerConfig::default();
    config.tasks = tasks;
    config
}

#[derive(Default)]
struct Seen {
    cancelled: AtomicBool,
}

/// An instance: `work` sleeps for `ms` (or until cancelled), `ask` asks for a name first,
/// `forever` never ends.
fn instance(store: PgTaskStore, seen: Arc<Seen>, heartbeat: Duration) -> Server {
    Server::builder("tasks-pg", "1")
        .config(config(heartbeat))
        .task_store(store)
        .tool_handler(
            ToolDef::new("work")
                .description("works for ms milliseconds")
                .tasks(TaskSupport::Required),
            move |ctx: RequestContext, args: JsonObject| {
                let seen = seen.clone();
                async move {
                    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                        () = ctx.cancelled() => {
                            seen.cancelled.store(true, Ordering::SeqCst);
                            return Ok(CallToolResult::error("cancelled"));
                        }
                    }
                    Ok(CallToolResult::text(format!("worked {ms} ms")))
                }
            },
        )
        .tool_handler(
            ToolDef::new("ask")
                .description("asks for a name")
                .tasks(TaskSupport::Required),
            |mut ctx: RequestContext, _: JsonObject| async move {
                let schema = RequestedSchema::new().required_property("name", StringSchema::new());
                let answer =
                    ctx.elicit("name", ElicitRequestFormParams::new("Your name?", schema))?;
                let name = answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("name"))
                    .and_then(|v| v.as_str())
                    .unwrap_or("?")
                    .to_owned();
                Ok(CallToolResult::text(format!("hello {name}")))
            },
        )
        .tool_handler(
            ToolDef::new("forever")
                .description("never ends")
                .tasks(TaskSupport::Required),
            |_: RequestContext, _: JsonObject| async {
                std::future::pending::<()>().await;
                Ok(CallToolResult::text("unreachable"))
            },
        )
        .build()
        .expect("the server builds")
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "extensions": {EXT: {}}},
    })
}

async fn send(server: &Server, who: &Principal, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut io = RequestIo::plain(server);
    io.principal = who.clone();
    match server.handle(body.to_string().as_bytes(), io).await {
        Some(Reply::Message(m)) => serde_json::from_slice(&m.body).expect("JSON"),
        _ => panic!("{method}: not a single response"),
    }
}

fn alice() -> Principal {
    Principal::authenticated("alice", None, Vec::<String>::new())
}

async fn start(server: &Server, tool: &str, args: Value) -> String {
    let reply = send(
        server,
        &alice(),
        "tools/call",
        json!({"name": tool, "arguments": args}),
    )
    .await;
    assert_eq!(reply["result"]["resultType"], "task", "{reply}");
    reply["result"]["taskId"].as_str().unwrap().to_owned()
}

async fn get(server: &Server, task: &str) -> Value {
    send(server, &alice(), "tasks/get", json!({"taskId": task})).await
}

/// Polls `server` until the task's status is `status` (ten seconds at most).
async fn until(server: &Server, task: &str, status: &str) -> Value {
    for _ in 0..1000 {
        let reply = get(server, task).await;
        if reply["result"]["status"] == status {
            return reply["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "task {task} never became {status}: {}",
        get(server, task).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_run_by_one_instance_is_answered_by_another() {
    if !support::postgres() {
        return;
    }
    let beat = Duration::from_millis(100);
    let a = instance(store(Duration::from_secs(30)).await, Arc::default(), beat);
    let b = instance(store(Duration::from_secs(30)).await, Arc::default(), beat);
    let task = start(&a, "work", json!({"ms": 300})).await;
    // B sees it working, then completed with A's result.
    let working = get(&b, &task).await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    let done = until(&b, &task, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "worked 300 ms",
        "{done}"
    );
    // Another principal does not see it on either instance.
    let bob = Principal::authenticated("bob", None, Vec::<String>::new());
    for server in [&a, &b] {
        let refused = send(server, &bob, "tasks/get", json!({"taskId": task})).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }
}

/// A name no other run of the tests uses.
fn fresh(prefix: &str) -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{nanos}-{n}", std::process::id())
}

/// A finished task of `owner`, kept until the server stops, as a store receives it.
fn finished_record(owner: &str) -> kelson_server::tasks::TaskRecord {
    let now = serde_json::to_value(std::time::SystemTime::now()).unwrap();
    serde_json::from_value(json!({
        "id": fresh("task"), "owner": owner, "status": "completed",
        "status_message": null, "created_at": now, "updated_at": now, "ttl": null,
        "poll_interval": null, "input_requests": {}, "answers": {}, "result": {"content": []},
        "error": null, "runner": "elsewhere",
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_principal_creating_many_tasks_never_removes_anothers() {
    use kelson_server::tasks::TaskStore;
    if !support::postgres() {
        return;
    }
    // The shared store has no capacity of its own: a task leaves it when its time to live ends
    // (or it is deleted), never to make room, so nobody's tasks go for another's.
    let store = store(Duration::from_secs(30)).await;
    let (alice, bob) = (fresh("alice"), fresh("bob"));
    let bobs = [finished_record(&bob), finished_record(&bob)];
    for record in &bobs {
        store.insert(record.clone(), 100).await.unwrap();
    }
    let mut alices = Vec::new();
    for _ in 0..300 {
        let record = finished_record(&alice);
        store.insert(record.clone(), 100).await.unwrap();
        alices.push(record.id);
    }
    for record in &bobs {
        assert_eq!(
            store.get(&record.id).await.unwrap().as_ref(),
            Some(record),
            "Bob's finished task is kept"
        );
    }
    for id in bobs.iter().map(|r| &r.id).chain(&alices) {
        store.remove(id).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_through_another_instance_reaches_the_handler() {
    if !support::postgres() {
        return;
    }
    let beat = Duration::from_millis(100);
    let seen = Arc::new(Seen::default());
    let a = instance(store(Duration::from_secs(30)).await, seen.clone(), beat);
    let b = instance(store(Duration::from_secs(30)).await, Arc::default(), beat);
    let task = start(&a, "work", json!({"ms": 60_000})).await;
    let ack = send(&b, &alice(), "tasks/cancel", json!({"taskId": task})).await;
    assert!(ack.get("result").is_some(), "{ack}");
    assert_eq!(until(&a, &task, "cancelled").await["status"], "cancelled");
    support::wait_until(Duration::from_secs(5), "A's handler is cancelled", || {
        seen.cancelled.load(Ordering::SeqCst)
    })
    .await;
    // The handler's own ending does not overwrite the cancellation.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(get(&b, &task).await["result"]["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_given_through_another_instance_resumes_the_task() {
    if !support::postgres() {
        return;
    }
    let beat = Duration::from_millis(100);
    let a = instance(store(Duration::from_secs(30)).await, Arc::default(), beat);
    let b = instance(store(Duration::from_secs(30)).await, Arc::default(), beat);
    let task = start(&a, "ask", json!({})).await;
    let waiting = until(&b, &task, "input_required").await;
    let (key, request) = waiting["inputRequests"]
        .as_object()
        .and_then(|m| m.iter().next())
        .expect("one input request");
    assert_eq!(request["method"], "elicitation/create", "{waiting}");
    let answer = json!({key.clone(): {"action": "accept", "content": {"name": "Ada"}}});
    let ack = send(
        &b,
        &alice(),
        "tasks/update",
        json!({"taskId": task, "inputResponses": answer}),
    )
    .await;
    assert!(ack.get("result").is_some(), "{ack}");
    let done = until(&a, &task, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "hello Ada", "{done}");
}

#[test]
fn a_task_whose_instance_died_is_reported_failed() {
    if !support::postgres() {
        return;
    }
    // Instance A runs on a runtime of its own, dropped without a shutdown: its handlers and its
    // heartbeat stop mid-task, as when the process is killed.
    let a_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let task = a_runtime.block_on(async {
        let a = instance(
            store(Duration::from_secs(1)).await,
            Arc::default(),
            Duration::from_millis(100),
        );
        let task = start(&a, "forever", json!({})).await;
        // Alive while its heartbeat runs.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(get(&a, &task).await["result"]["status"], "working");
        std::mem::forget(a);
        task
    });
    a_runtime.shutdown_background();

    let b_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    b_runtime.block_on(async {
        let b = instance(
            store(Duration::from_secs(1)).await,
            Arc::default(),
            Duration::from_millis(100),
        );
        let failed = until(&b, &task, "failed").await;
        assert_eq!(failed["error"]["code"], -32603, "{failed}");
        assert!(
            failed["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("instance running the task stopped")),
            "{failed}"
        );
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_query_becomes_a_task_and_cancelling_it_cancels_the_statement() {
    if !support::postgres() {
        return;
    }
    let db = support::PgFixture::new("").await;
    let mut config = DatabaseConfig::default();
    config.limits.timeout = Duration::from_secs(60);
    let adapter = SqlAdapter::postgres(db.reader_url().as_str(), config)
        .await
        .expect("the adapter connects")
        .tasks_after(Some(Duration::from_millis(300)));
    let server = adapter
        .register(Server::builder("sql-tasks", "1").config(config_for_sql()))
        .await
        .expect("registers")
        .build()
        .expect("builds");
    // A quick query is answered as usual.
    let quick = send(
        &server,
        &alice(),
        "tools/call",
        json!({"name": "query", "arguments": {"sql": "SELECT 1 AS one"}}),
    )
    .await;
    assert_eq!(quick["result"]["resultType"], "complete", "{quick}");
    // A slow one becomes a task whose result is the rows.
    let marker = support::unique("mcp_task_query");
    let slow_sql = format!("SELECT pg_sleep(1), '{marker}' AS marker");
    let task = start(&server, "query", json!({"sql": slow_sql})).await;
    let done = until(&server, &task, "completed").await;
    assert_eq!(
        done["result"]["structuredContent"]["rows"][0][1], marker,
        "{done}"
    );
    // A very slow one, cancelled: the statement stops on the server.
    let marker = support::unique("mcp_task_cancel");
    let slow_sql = format!("SELECT pg_sleep(60), '{marker}' AS marker");
    let task = start(&server, "query", json!({"sql": slow_sql})).await;
    let (admin, _) = support::pg_admin().await;
    let running = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%{marker}%' AND state = 'active' AND pid <> pg_backend_pid()"
    );
    async fn count(admin: &tokio_postgres::Client, running: &str) -> i64 {
        admin
            .query_one(running, &[])
            .await
            .unwrap()
            .get::<_, i64>(0)
    }
    assert_eq!(count(&admin, &running).await, 1, "the statement runs");
    let ack = send(&server, &alice(), "tasks/cancel", json!({"taskId": task})).await;
    assert!(ack.get("result").is_some(), "{ack}");
    for _ in 0..200 {
        if count(&admin, &running).await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        count(&admin, &running).await,
        0,
        "the statement was cancelled on the server"
    );
    assert_eq!(get(&server, &task).await["result"]["status"], "cancelled");
}

fn config_for_sql() -> ServerConfig {
    config(Duration::from_millis(100))
}
