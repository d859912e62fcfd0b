//! The tasks extension end to end through [`Server::handle`]: every status, input over
//! `tasks/update`, cancellation reaching the handler, expiry, limits, principals, the three ways a
//! call becomes a task, the handshake era, and `notifications/tasks`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use kelson_types::{
    CallToolResult, ElicitRequestFormParams, ElicitResult, JsonObject, RequestedSchema,
    StringSchema,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::router::{Reply, RequestIo};
use crate::{
    HandlerError, Principal, RequestContext, Server, ServerBuilder, ServerConfig, TaskConfig,
    TaskStart, TaskSupport, ToolDef,
};

const EXT: &str = kelson_types::TASKS_EXTENSION;

fn caps(tasks: bool) -> Value {
    if tasks {
        json!({"elicitation": {"form": {}}, "extensions": {EXT: {}}})
    } else {
        json!({"elicitation": {"form": {}}})
    }
}

fn body(id: u64, method: &str, mut params: Value, tasks: bool) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps(tasks),
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn io(principal: &Principal) -> RequestIo<'static> {
    RequestIo {
        principal: principal.clone(),
        cancel: CancellationToken::new(),
        sink: None,
        guard: None,
        close: None,
        probe: None,
    }
}

/// One request's response, as JSON.
async fn send(server: &Server, who: &Principal, method: &str, params: Value, tasks: bool) -> Value {
    let bytes = body(1, method, params, tasks);
    match server.handle(bytes.as_bytes(), io(who)).await {
        Some(Reply::Message(m)) => serde_json::from_slice(&m.body).expect("a JSON response"),
        other => panic!("{method}: not a single response: {other:?}"),
    }
}

fn anyone() -> Principal {
    Principal::anonymous()
}

fn alice() -> Principal {
    Principal::authenticated("alice", None, Vec::<String>::new())
}

fn bob() -> Principal {
    Principal::authenticated("bob", None, Vec::<String>::new())
}

async fn call(server: &Server, who: &Principal, tool: &str, args: Value, tasks: bool) -> Value {
    send(
        server,
        who,
        "tools/call",
        json!({"name": tool, "arguments": args}),
        tasks,
    )
    .await
}

async fn get(server: &Server, who: &Principal, task: &str) -> Value {
    send(server, who, "tasks/get", json!({"taskId": task}), true).await
}

/// Polls the task until `done` holds for it (at most five seconds).
async fn until(
    server: &Server,
    who: &Principal,
    task: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    for _ in 0..500 {
        let reply = get(server, who, task).await;
        if done(&reply["result"]) {
            return reply["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "task {task} never got there: {}",
        get(server, who, task).await
    );
}

async fn finished(server: &Server, who: &Principal, task: &str) -> Value {
    until(server, who, task, |t| {
        matches!(
            t["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        )
    })
    .await
}

fn task_id(reply: &Value) -> String {
    assert_eq!(reply["result"]["resultType"], "task", "{reply}");
    reply["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned()
}

/// What the test tools share with the test.
#[derive(Default)]
struct Seen {
    cancelled: AtomicBool,
    runs: AtomicUsize,
}

fn builder(seen: &Arc<Seen>, config: TaskConfig) -> ServerBuilder {
    let server_config = ServerConfig {
        tasks: config,
        ..ServerConfig::default()
    };
    let s1 = seen.clone();
    let s2 = seen.clone();
    let s3 = seen.clone();
    Server::builder("tasks", "1")
        .config(server_config)
        .tool_handler(
            ToolDef::new("plain").description("never a task"),
            |_: RequestContext, _: JsonObject| async { Ok(CallToolResult::text("plain")) },
        )
        .tool_handler(
            ToolDef::new("wait")
                .description("waits for ms milliseconds")
                .tasks(TaskSupport::Optional),
            move |ctx: RequestContext, args: JsonObject| {
                let seen = s1.clone();
                async move {
                    seen.runs.fetch_add(1, Ordering::SeqCst);
                    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                    ctx.progress(0.5, Some(1.0), Some("half way"));
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                        () = ctx.cancelled() => {
                            seen.cancelled.store(true, Ordering::SeqCst);
                            std::future::pending::<()>().await;
                        }
                    }
                    Ok(CallToolResult::text(format!("waited {ms} ms")))
                }
            },
        )
        .tool_handler(
            ToolDef::new("only_task")
                .description("runs only as a task")
                .tasks(TaskSupport::Required),
            |_: RequestContext, _: JsonObject| async { Ok(CallToolResult::text("done")) },
        )
        .tool_handler(
            ToolDef::new("ask")
                .description("asks two names, one after the other")
                .tasks(TaskSupport::Optional),
            move |mut ctx: RequestContext, _: JsonObject| {
                let seen = s2.clone();
                async move {
                    seen.runs.fetch_add(1, Ordering::SeqCst);
                    let first = name(ctx.elicit("first", form("First?"))?);
                    let second = name(ctx.elicit("second", form("Second?"))?);
                    let solicited = ctx.state_nonce().is_some();
                    Ok(CallToolResult::text(format!(
                        "{first} and {second} ({solicited})"
                    )))
                }
            },
        )
        .tool_handler(
            ToolDef::new("broken")
                .description("fails with a JSON-RPC error, or panics")
                .tasks(TaskSupport::Optional),
            |_: RequestContext, args: JsonObject| async move {
                if args.get("panic").is_some() {
                    panic!("the handler broke");
                }
                Err(HandlerError::protocol(kelson_jsonrpc::ErrorObject::new(
                    -32000,
                    "the backend is down",
                )))
            },
        )
        .tool_handler(
            ToolDef::new("big")
                .description("returns a large result")
                .tasks(TaskSupport::Optional),
            |_: RequestContext, _: JsonObject| async { Ok(CallToolResult::text("x".repeat(4096))) },
        )
        .tool_handler(
            ToolDef::new("later")
                .description("a task once it runs 100 ms")
                .tasks(TaskSupport::Optional)
                .task_start(TaskStart::After(Duration::from_millis(100))),
            |_: RequestContext, args: JsonObject| async move {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(CallToolResult::text(format!("later {ms}")))
            },
        )
        .tool_handler(
            ToolDef::new("confirm_then_work")
                .description("asks over MRTR, then becomes a task")
                .tasks(TaskSupport::Required)
                .task_start(TaskStart::OnRequest),
            move |mut ctx: RequestContext, _: JsonObject| {
                let seen = s3.clone();
                async move {
                    let who = name(ctx.elicit("who", form("Who?"))?);
                    assert!(ctx.task_id().is_none(), "not a task before it asks");
                    assert!(ctx.run_as_task());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    seen.runs.fetch_add(1, Ordering::SeqCst);
                    Ok(CallToolResult::text(format!(
                        "hello {who} from {}",
                        if ctx.task_id().is_some() {
                            "a task"
                        } else {
                            "a call"
                        }
                    )))
                }
            },
        )
}

fn form(message: &str) -> ElicitRequestFormParams {
    ElicitRequestFormParams::new(
        message,
        RequestedSchema::new().required_property("name", StringSchema::new()),
    )
}

fn name(answer: ElicitResult) -> String {
    answer
        .content
        .and_then(|c| c.get("name").and_then(|v| v.as_str().map(str::to_owned)))
        .unwrap_or_default()
}

fn server(seen: &Arc<Seen>) -> Server {
    builder(seen, TaskConfig::default())
        .build()
        .expect("builds")
}

fn accept(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}

#[tokio::test]
async fn a_task_goes_from_working_to_completed_with_its_result() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);

    let discover = send(&server, &anyone(), "server/discover", json!({}), false).await;
    assert_eq!(
        discover["result"]["capabilities"]["extensions"][EXT],
        json!({})
    );

    let reply = call(&server, &anyone(), "wait", json!({"ms": 300}), true).await;
    let created = &reply["result"];
    let id = task_id(&reply);
    assert_eq!(id.len(), 32, "128 random bits in hex: {id}");
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{id}"
    );
    assert_eq!(created["status"], "working");
    assert_eq!(created["ttlMs"], 3_600_000);
    assert_eq!(created["pollIntervalMs"], 1000);
    for key in [
        "result",
        "error",
        "inputRequests",
        "requestState",
        "task",
        "ttl",
    ] {
        assert!(created.get(key).is_none(), "{key} in {created}");
    }
    assert!(created["createdAt"].as_str().unwrap().ends_with('Z'));

    // Right away, the task exists; its progress is its status message.
    let working = until(&server, &anyone(), &id, |t| {
        t["statusMessage"] == "half way"
    })
    .await;
    assert_eq!(working["status"], "working");
    assert_eq!(working["resultType"], "complete");

    let done = finished(&server, &anyone(), &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "waited 300 ms");
    assert!(
        done.get("pollIntervalMs").is_none(),
        "nothing left to poll for"
    );
    assert!(done["lastUpdatedAt"].as_str() >= done["createdAt"].as_str());
    // Still there after it finished.
    assert_eq!(
        get(&server, &anyone(), &id).await["result"]["status"],
        "completed"
    );
}

#[tokio::test]
async fn the_extension_is_declared_per_request() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    // Without the extension an optional tool runs as a plain call.
    let reply = call(&server, &anyone(), "wait", json!({"ms": 1}), false).await;
    assert_eq!(reply["result"]["resultType"], "complete");
    assert_eq!(reply["result"]["content"][0]["text"], "waited 1 ms");
    // A tool without task support is never a task.
    let reply = call(&server, &anyone(), "plain", json!({}), true).await;
    assert_eq!(reply["result"]["resultType"], "complete");
    // A task-only tool is refused, before its handler runs.
    let reply = call(&server, &anyone(), "only_task", json!({}), false).await;
    assert_eq!(reply["error"]["code"], -32021, "{reply}");
    assert_eq!(
        reply["error"]["data"]["requiredCapabilities"]["extensions"][EXT],
        json!({})
    );
    // The task methods need it too, whatever the id.
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let reply = send(&server, &anyone(), method, json!({"taskId": "nope"}), false).await;
        assert_eq!(reply["error"]["code"], -32021, "{method}: {reply}");
    }
    // With it, an unknown id is invalid params, and the removed methods do not exist.
    let reply = get(&server, &anyone(), "nope").await;
    assert_eq!(reply["error"]["code"], -32602);
    for method in ["tasks/result", "tasks/list"] {
        let reply = send(&server, &anyone(), method, json!({"taskId": "nope"}), true).await;
        assert_eq!(reply["error"]["code"], -32601, "{method}");
    }
    // The handshake era's params.task is an unknown field, ignored.
    let reply = send(
        &server,
        &anyone(),
        "tools/call",
        json!({"name": "plain", "arguments": {}, "task": {"ttl": 60000}}),
        true,
    )
    .await;
    assert_eq!(reply["result"]["content"][0]["text"], "plain");
}

#[tokio::test]
async fn a_server_without_task_tools_does_not_offer_the_extension() {
    let server = Server::builder("plain", "1")
        .tool_handler(
            ToolDef::new("t"),
            |_: RequestContext, _: JsonObject| async { Ok(CallToolResult::text("t")) },
        )
        .build()
        .unwrap();
    let discover = send(&server, &anyone(), "server/discover", json!({}), true).await;
    assert!(
        discover["result"]["capabilities"]
            .get("extensions")
            .is_none()
    );
    let reply = get(&server, &anyone(), "x").await;
    assert_eq!(reply["error"]["code"], -32601);
}

#[tokio::test]
async fn input_is_asked_and_answered_through_the_task() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    let id = task_id(&call(&server, &anyone(), "ask", json!({}), true).await);

    let waiting = until(&server, &anyone(), &id, |t| t["status"] == "input_required").await;
    assert_eq!(
        waiting["inputRequests"]["first"]["method"],
        "elicitation/create"
    );
    assert!(waiting.get("requestState").is_none());

    // Keys it does not wait for are acknowledged and ignored, whatever their shape.
    let ack = send(
        &server,
        &anyone(),
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"second": accept("early"), "zzz": {"x": 1}}}),
        true,
    )
    .await;
    assert_eq!(
        ack["result"],
        json!({"resultType": "complete", "_meta": ack["result"]["_meta"]})
    );
    assert_eq!(
        get(&server, &anyone(), &id).await["result"]["status"],
        "input_required"
    );

    send(
        &server,
        &anyone(),
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"first": accept("Ada")}}),
        true,
    )
    .await;
    // The handler runs again with the answer and asks the next question.
    let waiting = until(&server, &anyone(), &id, |t| {
        t["status"] == "input_required" && t["inputRequests"].get("second").is_some()
    })
    .await;
    assert!(waiting["inputRequests"].get("first").is_none());
    send(
        &server,
        &anyone(),
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"second": accept("Grace")}}),
        true,
    )
    .await;
    let done = finished(&server, &anyone(), &id).await;
    // Answers that came through tasks/update count as solicited.
    assert_eq!(done["result"]["content"][0]["text"], "Ada and Grace (true)");
    assert_eq!(seen.runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn answers_to_several_requests_may_come_one_at_a_time() {
    let server = Server::builder("multi", "1")
        .tool_handler(
            ToolDef::new("two").tasks(TaskSupport::Optional),
            |mut ctx: RequestContext, _: JsonObject| async move {
                let a = ctx
                    .request_input("a", kelson_types::InputRequest::Elicit(form("A?").into()))?
                    .cloned();
                let b = ctx
                    .request_input("b", kelson_types::InputRequest::Elicit(form("B?").into()))?
                    .cloned();
                ctx.require_inputs()?;
                Ok(CallToolResult::text(format!(
                    "{} {}",
                    a.is_some(),
                    b.is_some()
                )))
            },
        )
        .build()
        .unwrap();
    let id = task_id(&call(&server, &anyone(), "two", json!({}), true).await);
    let both = until(&server, &anyone(), &id, |t| t["status"] == "input_required").await;
    assert_eq!(both["inputRequests"].as_object().unwrap().len(), 2);
    send(
        &server,
        &anyone(),
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"a": accept("x")}}),
        true,
    )
    .await;
    // Recorded before the acknowledgement: the next read shows only what is left.
    let left = get(&server, &anyone(), &id).await;
    assert_eq!(left["result"]["status"], "input_required");
    assert_eq!(
        left["result"]["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["b"]
    );
    send(
        &server,
        &anyone(),
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"b": accept("y")}}),
        true,
    )
    .await;
    let done = finished(&server, &anyone(), &id).await;
    assert_eq!(done["result"]["content"][0]["text"], "true true");
}

#[tokio::test]
async fn cancelling_fires_the_handlers_cancellation_and_sticks() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    let id = task_id(&call(&server, &anyone(), "wait", json!({"ms": 60_000}), true).await);
    let ack = send(
        &server,
        &anyone(),
        "tasks/cancel",
        json!({"taskId": id}),
        true,
    )
    .await;
    assert_eq!(ack["result"]["resultType"], "complete");
    assert!(ack["result"].get("status").is_none());
    let task = get(&server, &anyone(), &id).await;
    assert_eq!(task["result"]["status"], "cancelled");
    for _ in 0..100 {
        if seen.cancelled.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen.cancelled.load(Ordering::SeqCst), "the handler saw it");
    // Cancelling again, or a finished task, is acknowledged and changes nothing.
    let ack = send(
        &server,
        &anyone(),
        "tasks/cancel",
        json!({"taskId": id}),
        true,
    )
    .await;
    assert_eq!(ack["result"]["resultType"], "complete");
    let done = task_id(&call(&server, &anyone(), "wait", json!({"ms": 0}), true).await);
    finished(&server, &anyone(), &done).await;
    send(
        &server,
        &anyone(),
        "tasks/cancel",
        json!({"taskId": done}),
        true,
    )
    .await;
    assert_eq!(
        get(&server, &anyone(), &done).await["result"]["status"],
        "completed"
    );
    assert!(server.inner.tasks.local(&id).is_none(), "no longer running");
}

#[tokio::test]
async fn a_task_waiting_for_input_can_be_cancelled() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    let id = task_id(&call(&server, &anyone(), "ask", json!({}), true).await);
    until(&server, &anyone(), &id, |t| t["status"] == "input_required").await;
    send(
        &server,
        &anyone(),
        "tasks/cancel",
        json!({"taskId": id}),
        true,
    )
    .await;
    let task = get(&server, &anyone(), &id).await["result"].clone();
    assert_eq!(task["status"], "cancelled");
    assert!(task.get("inputRequests").is_none());
    // A late answer changes nothing.
    send(
        &server,
        &anyone(),
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"first": accept("late")}}),
        true,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        get(&server, &anyone(), &id).await["result"]["status"],
        "cancelled"
    );
}

#[tokio::test]
async fn failures_end_as_failed_or_as_tool_errors() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    let id = task_id(&call(&server, &anyone(), "broken", json!({}), true).await);
    let failed = finished(&server, &anyone(), &id).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], -32000);
    assert_eq!(failed["statusMessage"], "the backend is down");
    assert!(failed.get("result").is_none());

    let id = task_id(&call(&server, &anyone(), "broken", json!({"panic": true}), true).await);
    let failed = finished(&server, &anyone(), &id).await;
    assert_eq!(failed["error"]["code"], -32603, "a panic: {failed}");

    // A tool error (isError) is a completed task.
    let server = Server::builder("e", "1")
        .tool_handler(
            ToolDef::new("oops").tasks(TaskSupport::Required),
            |_: RequestContext, _: JsonObject| async { Err::<CallToolResult, _>("no luck".into()) },
        )
        .build()
        .unwrap();
    let id = task_id(&call(&server, &anyone(), "oops", json!({}), true).await);
    let done = finished(&server, &anyone(), &id).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["isError"], true);
}

#[tokio::test]
async fn only_the_creator_sees_its_task() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    let id = task_id(&call(&server, &alice(), "wait", json!({"ms": 60_000}), true).await);
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let reply = send(&server, &bob(), method, json!({"taskId": id}), true).await;
        assert_eq!(reply["error"]["code"], -32602, "{method}: {reply}");
        let reply = send(&server, &anyone(), method, json!({"taskId": id}), true).await;
        assert_eq!(
            reply["error"]["code"], -32602,
            "{method} anonymously: {reply}"
        );
    }
    assert_eq!(
        get(&server, &alice(), &id).await["result"]["status"],
        "working"
    );
    send(
        &server,
        &alice(),
        "tasks/cancel",
        json!({"taskId": id}),
        true,
    )
    .await;
}

#[tokio::test]
async fn tasks_expire_and_are_reclaimed() {
    let seen = Arc::new(Seen::default());
    let config = TaskConfig {
        ttl: Some(Duration::from_millis(300)),
        sweep_interval: Duration::from_millis(20),
        ..TaskConfig::default()
    };
    let server = builder(&seen, config).build().unwrap();
    let running = task_id(&call(&server, &anyone(), "wait", json!({"ms": 60_000}), true).await);
    let done = task_id(&call(&server, &anyone(), "wait", json!({"ms": 0}), true).await);
    let created = get(&server, &anyone(), &running).await;
    assert_eq!(created["result"]["ttlMs"], 300);
    finished(&server, &anyone(), &done).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    for id in [&running, &done] {
        let reply = get(&server, &anyone(), id).await;
        assert_eq!(reply["error"]["code"], -32602, "expired: {reply}");
    }
    assert!(
        seen.cancelled.load(Ordering::SeqCst),
        "the running one was stopped"
    );
    assert!(server.inner.tasks.local(&running).is_none());
    let store = server.inner.tasks.store.clone();
    for _ in 0..50 {
        if store
            .sweep(std::time::SystemTime::now())
            .await
            .unwrap()
            .is_empty()
            && store.get(&running).await.unwrap().is_none()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_memory_store_reclaims_expired_and_finished_tasks() {
    use super::{MemoryTaskStore, TaskChange, TaskStore, new_record};
    let store = MemoryTaskStore::new(2);
    let mut config = TaskConfig {
        ttl: Some(Duration::from_millis(1)),
        ..TaskConfig::default()
    };
    let old = new_record("o".into(), &config, "i");
    store.insert(old.clone(), 10).await.unwrap();
    std::thread::sleep(Duration::from_millis(5));
    assert!(
        store.get(&old.id).await.unwrap().is_none(),
        "expired reads as absent"
    );
    config.ttl = None;
    let a = new_record("o".into(), &config, "i");
    let b = new_record("o".into(), &config, "i");
    store.insert(a.clone(), 10).await.unwrap();
    store.insert(b.clone(), 10).await.unwrap();
    assert_eq!(store.len(), 2, "the expired one made room");
    let c = new_record("o".into(), &config, "i");
    assert_eq!(
        store.insert(c.clone(), 10).await,
        Err(super::TaskStoreError::Full(2)),
        "none finished: no room"
    );
    let now = std::time::SystemTime::now();
    store
        .change(&a.id, TaskChange::Completed(json!({})), now)
        .await
        .unwrap()
        .expect("changed");
    // A terminal task never changes again.
    assert!(
        store
            .change(&a.id, TaskChange::Cancelled, now)
            .await
            .unwrap()
            .is_none()
    );
    store.insert(c.clone(), 10).await.unwrap();
    assert!(
        store.get(&a.id).await.unwrap().is_none(),
        "the finished one made room"
    );
    assert_eq!(
        store.insert(new_record("o".into(), &config, "i"), 2).await,
        Err(super::TaskStoreError::OwnerLimit(2))
    );
}

#[tokio::test]
async fn a_principal_may_have_only_so_many_unfinished_tasks() {
    let seen = Arc::new(Seen::default());
    let config = TaskConfig {
        max_active_per_principal: 1,
        ..TaskConfig::default()
    };
    let server = builder(&seen, config).build().unwrap();
    let first = task_id(&call(&server, &alice(), "wait", json!({"ms": 60_000}), true).await);
    let refused = call(&server, &alice(), "wait", json!({"ms": 1}), true).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("1 unfinished tasks"), "{text}");
    // Someone else is not held back.
    task_id(&call(&server, &bob(), "wait", json!({"ms": 1}), true).await);
    send(
        &server,
        &alice(),
        "tasks/cancel",
        json!({"taskId": first}),
        true,
    )
    .await;
    task_id(&call(&server, &alice(), "wait", json!({"ms": 1}), true).await);
}

#[tokio::test]
async fn a_result_too_large_to_keep_fails_the_task() {
    let seen = Arc::new(Seen::default());
    let config = TaskConfig {
        max_result_bytes: 1024,
        ..TaskConfig::default()
    };
    let server = builder(&seen, config).build().unwrap();
    let id = task_id(&call(&server, &anyone(), "big", json!({}), true).await);
    let failed = finished(&server, &anyone(), &id).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], -32603);
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1024 bytes")
    );
}

#[tokio::test]
async fn a_call_becomes_a_task_only_once_it_runs_long() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    let quick = call(&server, &anyone(), "later", json!({"ms": 5}), true).await;
    assert_eq!(quick["result"]["resultType"], "complete", "{quick}");
    assert_eq!(quick["result"]["content"][0]["text"], "later 5");
    let slow = call(&server, &anyone(), "later", json!({"ms": 400}), true).await;
    let id = task_id(&slow);
    let done = finished(&server, &anyone(), &id).await;
    assert_eq!(done["result"]["content"][0]["text"], "later 400");
}

#[tokio::test]
async fn input_gathered_over_mrtr_comes_before_the_task() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    let first = call(&server, &anyone(), "confirm_then_work", json!({}), true).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    assert!(first["result"].get("taskId").is_none());
    let state = first["result"]["requestState"].clone();
    let second = send(
        &server,
        &anyone(),
        "tools/call",
        json!({"name": "confirm_then_work", "arguments": {},
               "inputResponses": {"who": accept("Lin")}, "requestState": state}),
        true,
    )
    .await;
    let id = task_id(&second);
    assert!(second["result"].get("requestState").is_none());
    assert!(second["result"].get("inputRequests").is_none());
    let done = finished(&server, &anyone(), &id).await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "hello Lin from a task"
    );
}

#[tokio::test]
async fn the_handshake_era_has_no_tasks() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    let (client, server_side) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_side);
    tokio::spawn(crate::stdio::serve_stream(
        server,
        read,
        write,
        Default::default(),
    ));
    let (read, mut write) = tokio::io::split(client);
    let mut lines = BufReader::new(read).lines();
    let mut exchange = async |message: Value| {
        write
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .expect("an answer in time")
                .unwrap()
                .expect("a line");
            let reply: Value = serde_json::from_str(&line).unwrap();
            if reply.get("id") == message.get("id") {
                return reply;
            }
        }
    };
    // Declaring the extension at initialize changes nothing in this era.
    let init = exchange(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"extensions": {EXT: {}}},
        "clientInfo": {"name": "old", "version": "1"}}}),
    )
    .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let call = |id: u64, name: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": {"ms": 1}}})
    };
    let reply = exchange(call(1, "wait")).await;
    assert_eq!(
        reply["result"]["content"][0]["text"], "waited 1 ms",
        "{reply}"
    );
    assert!(reply["result"].get("taskId").is_none());
    let reply = exchange(call(2, "only_task")).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let reply = exchange(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
                                "params": {"taskId": "x"}}))
    .await;
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
}

#[tokio::test]
async fn listeners_hear_of_their_own_tasks() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    let mine = task_id(&call(&server, &alice(), "ask", json!({}), true).await);
    let theirs = task_id(&call(&server, &bob(), "wait", json!({"ms": 60_000}), true).await);
    until(&server, &alice(), &mine, |t| {
        t["status"] == "input_required"
    })
    .await;

    let listen = body(
        7,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [mine, theirs, "unknown"]}}),
        false,
    );
    let reply = server.handle(listen.as_bytes(), io(&alice())).await;
    let Some(Reply::Message(m)) = reply else {
        panic!("expected a refusal")
    };
    let refusal: Value = serde_json::from_slice(&m.body).unwrap();
    assert_eq!(refusal["error"]["code"], -32021, "{refusal}");

    let listen = body(
        7,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [mine, theirs, "unknown"]}}),
        true,
    );
    let Some(Reply::Listen(mut stream)) = server.handle(listen.as_bytes(), io(&alice())).await
    else {
        panic!("expected a listen stream")
    };
    let ack: Value = serde_json::from_slice(&stream.next().await.unwrap()).unwrap();
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([mine]),
        "{ack}"
    );

    send(
        &server,
        &bob(),
        "tasks/cancel",
        json!({"taskId": theirs}),
        true,
    )
    .await;
    send(
        &server,
        &alice(),
        "tasks/update",
        json!({"taskId": mine, "inputResponses": {"first": accept("Ada")}}),
        true,
    )
    .await;
    let mut statuses = Vec::new();
    while statuses.last().map(String::as_str) != Some("input_required") || statuses.len() < 2 {
        let msg = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("a notification in time")
            .unwrap();
        let msg: Value = serde_json::from_slice(&msg).unwrap();
        assert_eq!(msg["method"], "notifications/tasks");
        assert_eq!(
            msg["params"]["taskId"],
            mine.as_str(),
            "only her own: {msg}"
        );
        assert_eq!(
            msg["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            7
        );
        statuses.push(msg["params"]["status"].as_str().unwrap().to_owned());
    }
    // Answered (working), then asked the next question.
    assert_eq!(statuses, ["working", "input_required"]);
}

#[tokio::test]
async fn a_task_left_by_a_stopping_server_fails() {
    let seen = Arc::new(Seen::default());
    let server = server(&seen);
    let id = task_id(&call(&server, &anyone(), "wait", json!({"ms": 60_000}), true).await);
    server.shutdown();
    let failed = finished(&server, &anyone(), &id).await;
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("server stopped")
    );
}

#[test]
fn times_are_rfc3339_in_utc() {
    use std::time::UNIX_EPOCH;
    let at = |secs: u64, ms: u64| {
        super::rfc3339(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(ms))
    };
    assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
    assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
    assert_eq!(at(1_796_386_245, 999), "2026-12-04T12:10:45.999Z");
    assert_eq!(at(4_107_542_399, 0), "2100-02-28T23:59:59.000Z");
}
