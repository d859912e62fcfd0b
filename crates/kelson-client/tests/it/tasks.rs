//! The tasks extension from the client's side, against our server's task runtime: every status a
//! task can end in seen through `call_tool` as if the call were plain, input answered by the
//! elicitation handler over `tasks/update`, cancellation by token, by timeout and by a dropped
//! future reaching the handler through `tasks/cancel`, the poll interval honoured, the explicit
//! handle API, and sessions where tasks are off or do not exist (the handshake era).

use std::collections::BTreeMap;
use std::future::IntoFuture as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kelson_client::{CancellationToken, Client, ClientBuilder, EraChoice, Error, TaskOrResult};
use kelson_server::{
    HandlerError, RequestContext, Server, ServerConfig, TaskConfig, TaskSupport, ToolDef,
    ToolResult,
};
use kelson_types::{
    BooleanSchema, CallToolResult, ElicitAction, ElicitRequestFormParams, ElicitResult,
    ElicitValue, ErrorObject, InputResponse, JsonObject, RequestedSchema, TASKS_EXTENSION,
    TaskStatus, Tool,
};
use serde_json::{Value, json};

use crate::both;
use crate::fixture::Probes;
use crate::harness::{Kind, Wire, connect, text, within};

/// The poll interval the server asks for.
const POLL: Duration = Duration::from_millis(200);

fn schema(value: Value) -> JsonObject {
    value.as_object().cloned().unwrap()
}

fn def(name: &str) -> ToolDef {
    ToolDef::from(Tool::new(name, schema(json!({"type": "object"})))).tasks(TaskSupport::Optional)
}

/// Works for `ms` milliseconds in steps of 100, reporting each step (a task's status message);
/// records its cancellation.
async fn slow(ctx: RequestContext, args: JsonObject, probes: Arc<Probes>) -> ToolResult {
    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
    probes.record("slow:start");
    let steps = ms.div_ceil(100);
    for step in 1..=steps {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
            () = ctx.cancelled() => {
                probes.record("slow:cancelled");
                return Err("cancelled".into());
            }
        }
        ctx.progress(
            step as f64,
            Some(steps as f64),
            Some(&format!("step {step} of {steps}")),
        );
    }
    Ok(CallToolResult::text(format!("done after {ms} ms")))
}

fn server(probes: Arc<Probes>) -> Server {
    let mut config = ServerConfig::default();
    let mut tasks = TaskConfig::default();
    tasks.poll_interval = POLL;
    config.tasks = tasks;
    let working = probes.clone();
    Server::builder("tasks-it", "1.0.0")
        .config(config)
        .tool_handler(def("slow"), move |ctx: RequestContext, args: JsonObject| {
            slow(ctx, args, working.clone())
        })
        .tool_handler(
            def("backend_fails"),
            |_ctx: RequestContext, _args: JsonObject| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err::<CallToolResult, _>(HandlerError::protocol(ErrorObject::internal_error(
                    "the backend failed",
                )))
            },
        )
        .tool_handler(
            def("tool_error"),
            |_ctx: RequestContext, _args: JsonObject| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err::<CallToolResult, HandlerError>("the input was refused".into())
            },
        )
        .tool_handler(
            def("confirm_delete"),
            |mut ctx: RequestContext, _args: JsonObject| async move {
                let form = ElicitRequestFormParams::new(
                    "Delete report.txt?",
                    RequestedSchema::new().required_property("confirm", BooleanSchema::new()),
                );
                let answer = ctx.elicit("confirm", form)?;
                let yes = answer.action == ElicitAction::Accept
                    && answer
                        .content
                        .as_ref()
                        .and_then(|c| c.get("confirm"))
                        .and_then(ElicitValue::as_bool)
                        == Some(true);
                Ok(CallToolResult::text(if yes { "deleted" } else { "kept" }))
            },
        )
        .tool_handler(
            Tool::new("plain", schema(json!({"type": "object"}))),
            |_ctx: RequestContext, _args: JsonObject| async move {
                Ok::<_, HandlerError>(CallToolResult::text("plain answer"))
            },
        )
        .build()
        .expect("the server builds")
}

/// A client whose elicitation handler answers `confirm` with `yes`, recording each question.
fn confirming(yes: bool, asked: Arc<Mutex<Vec<String>>>) -> ClientBuilder {
    Client::builder().on_elicit_form(move |form: ElicitRequestFormParams| {
        let asked = asked.clone();
        async move {
            asked.lock().unwrap().push(form.message);
            Ok(ElicitResult::accept(BTreeMap::from([(
                "confirm".to_owned(),
                ElicitValue::from(yes),
            )])))
        }
    })
}

fn declares_tasks(body: &Value) -> bool {
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
        .get(TASKS_EXTENSION)
        == Some(&json!({}))
}

/// The task id of the first `tools/call` answered with a task, from the first `tasks/get`.
fn polled_task(wire: &Wire) -> String {
    let gets = wire.requests("tasks/get");
    assert!(!gets.is_empty(), "no tasks/get was sent");
    gets[0].body["params"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned()
}

async fn completed_through_polling(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let served = connect(kind, server(probes.clone()), Client::builder()).await;
    let messages = Arc::new(Mutex::new(Vec::new()));
    let seen = messages.clone();
    let result = within(
        served
            .client
            .call_tool("slow", json!({"ms": 700}))
            .on_progress(move |p| seen.lock().unwrap().push(p.message.clone())),
    )
    .await
    .unwrap();
    assert_eq!(text(&result), "done after 700 ms");

    let calls = served.wire.requests("tools/call");
    assert_eq!(calls.len(), 1, "one call, then polls");
    assert!(declares_tasks(&calls[0].body), "{}", calls[0].body);
    let gets = served.wire.requests("tasks/get");
    assert!(gets.len() >= 2, "polled until done: {} polls", gets.len());
    let id = polled_task(&served.wire);
    for get in &gets {
        assert_eq!(get.body["params"]["taskId"], id.as_str());
        assert!(declares_tasks(&get.body), "{}", get.body);
        if kind == Kind::Http {
            // The task id rides in Mcp-Name on tasks/*.
            let headers = get.headers.as_ref().unwrap();
            assert_eq!(headers["mcp-name"], id.as_str());
        }
    }
    // The poll interval is honoured: never sooner than the server asked (a little slack for
    // the clock of arrival), and so no more polls than the work's length allows.
    let mut previous = calls[0].at;
    for get in &gets {
        let gap = get.at - previous;
        assert!(
            gap >= POLL - Duration::from_millis(30),
            "polled after {gap:?}"
        );
        previous = get.at;
    }
    assert!(gets.len() <= 6, "{} polls for 700 ms at 200 ms", gets.len());
    // The task's status messages came through the progress callback.
    let messages = messages.lock().unwrap().clone();
    assert!(
        messages
            .iter()
            .flatten()
            .any(|m| m.starts_with("step ") && m.ends_with(" of 7")),
        "{messages:?}"
    );
    assert_eq!(served.wire.count("tasks/cancel"), 0);
}
both!(completed, completed_through_polling);

async fn a_failed_task_is_the_calls_protocol_error(kind: Kind) {
    let served = connect(kind, server(Arc::default()), Client::builder()).await;
    let err = within(served.client.call_tool("backend_fails", json!({})))
        .await
        .unwrap_err();
    match &err {
        Error::Protocol { method, error } => {
            assert_eq!(method, "tools/call");
            assert_eq!(error.code, -32603);
            assert_eq!(error.message, "Internal error: the backend failed");
        }
        other => panic!("{other:?}"),
    }
    assert!(served.wire.count("tasks/get") >= 1);

    // A tool error (isError) is a completed task: the call's result, not an error.
    let result = within(served.client.call_tool("tool_error", json!({})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(text(&result), "the input was refused");
}
both!(failed, a_failed_task_is_the_calls_protocol_error);

async fn the_cancel_token_cancels_the_task(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let served = connect(kind, server(probes.clone()), Client::builder()).await;
    let token = CancellationToken::new();
    let call = {
        let client = served.client.clone();
        let token = token.clone();
        tokio::spawn(async move {
            client
                .call_tool("slow", json!({"ms": 20_000}))
                .cancel_token(token)
                .await
        })
    };
    // Once it is a task being polled, the caller gives up.
    served
        .wire
        .wait_for(|r| r.body["method"] == "tasks/get")
        .await;
    token.cancel();
    let err = within(call).await.unwrap().unwrap_err();
    let id = polled_task(&served.wire);
    match &err {
        Error::Cancelled { method, task_id } => {
            assert_eq!(method, "tools/call");
            assert_eq!(task_id.as_deref(), Some(id.as_str()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.kind(), kelson_client::ErrorKind::Cancelled);
    let cancels = served.wire.requests("tasks/cancel");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0].body["params"]["taskId"], id.as_str());
    // It reached the handler.
    probes.wait_for("slow:cancelled").await;
    let task = within(served.client.get_task(id.clone())).await.unwrap();
    assert_eq!(task.task.status, TaskStatus::Cancelled);
}
both!(cancel_token, the_cancel_token_cancels_the_task);

async fn a_hard_timeout_or_a_dropped_call_cancels_the_task(kind: Kind) {
    let probes = Arc::new(Probes::default());
    let served = connect(kind, server(probes.clone()), Client::builder()).await;
    let err = within(
        served
            .client
            .call_tool("slow", json!({"ms": 20_000}))
            .max_time(Duration::from_millis(500)),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, Error::Timeout { hard: true, .. }), "{err:?}");
    assert_eq!(served.wire.count("tasks/cancel"), 1);
    probes.wait_for("slow:cancelled").await;

    // A call whose future is dropped mid-task cancels it in the background.
    let dropped = tokio::time::timeout(
        Duration::from_millis(600),
        served
            .client
            .call_tool("slow", json!({"ms": 20_000}))
            .into_future(),
    )
    .await;
    assert!(dropped.is_err(), "the call outlived the timeout");
    served
        .wire
        .wait_for(|r| r.body["method"] == "tasks/cancel" && served.wire.count("tasks/cancel") == 2)
        .await;
    within(async {
        while probes.count("slow:cancelled") < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}
both!(
    timeout_and_drop,
    a_hard_timeout_or_a_dropped_call_cancels_the_task
);

async fn input_required_is_answered_by_the_elicitation_handler(kind: Kind) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let served = connect(
        kind,
        server(Arc::default()),
        confirming(true, asked.clone()),
    )
    .await;
    let result = within(served.client.call_tool("confirm_delete", json!({})))
        .await
        .unwrap();
    assert_eq!(text(&result), "deleted");
    assert_eq!(*asked.lock().unwrap(), ["Delete report.txt?"]);
    let updates = served.wire.requests("tasks/update");
    assert_eq!(updates.len(), 1, "answered once");
    let id = polled_task(&served.wire);
    assert_eq!(updates[0].body["params"]["taskId"], id.as_str());
    assert_eq!(
        updates[0].body["params"]["inputResponses"],
        json!({"confirm": {"action": "accept", "content": {"confirm": true}}})
    );
    // The input went over tasks/update, not as an MRTR retry of the call.
    assert_eq!(served.wire.count("tools/call"), 1);
}
both!(
    input_required,
    input_required_is_answered_by_the_elicitation_handler
);

async fn input_given_by_hand_with_update_task(kind: Kind) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let served = connect(
        kind,
        server(Arc::default()),
        confirming(true, asked.clone()),
    )
    .await;
    let client = &served.client;
    let TaskOrResult::Task(task) = within(client.call_tool_as_task("confirm_delete", json!({})))
        .await
        .unwrap()
    else {
        panic!("not a task")
    };
    // The caller sees the input request and answers it itself.
    let waiting = within(async {
        loop {
            let now = client.get_task(task.task_id.clone()).await.unwrap();
            if now.task.status == TaskStatus::InputRequired {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let requests = waiting.input_requests.expect("input requests");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["confirm"]);
    let no = ElicitResult::accept(BTreeMap::from([(
        "confirm".to_owned(),
        ElicitValue::from(false),
    )]));
    let responses = BTreeMap::from([("confirm".to_owned(), InputResponse::Elicit(no))]);
    within(client.update_task(task.task_id.clone(), responses))
        .await
        .unwrap();
    let result = within(client.wait_task(task.task_id.clone()))
        .await
        .unwrap();
    assert_eq!(text(&result), "kept");
    assert!(
        asked.lock().unwrap().is_empty(),
        "the handler was not asked"
    );
    assert_eq!(served.wire.count("tasks/update"), 1);
}
both!(update_task, input_given_by_hand_with_update_task);

async fn the_handle_for_callers_who_want_it(kind: Kind) {
    let served = connect(kind, server(Arc::default()), Client::builder()).await;
    let client = &served.client;
    let task = match within(client.call_tool_as_task("slow", json!({"ms": 800})))
        .await
        .unwrap()
    {
        TaskOrResult::Task(task) => task,
        other => panic!("{other:?}"),
    };
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(task.poll_interval_ms, Some(POLL.as_millis() as u64));
    assert_eq!(served.wire.count("tasks/get"), 0, "nothing waited for it");

    let now = within(client.get_task(task.task_id.clone())).await.unwrap();
    assert_eq!(now.task.task_id, task.task_id);
    assert!(now.result.is_none());
    let result = within(client.wait_task(task.task_id.clone()))
        .await
        .unwrap();
    assert_eq!(text(&result), "done after 800 ms");
    let done = within(client.get_task(task.task_id.clone())).await.unwrap();
    assert_eq!(done.task.status, TaskStatus::Completed);
    assert_eq!(
        done.result.unwrap()["content"][0]["text"],
        "done after 800 ms"
    );

    // A tool that never runs as a task answers at once.
    match within(client.call_tool_as_task("plain", json!({})))
        .await
        .unwrap()
    {
        TaskOrResult::Result(result) => assert_eq!(text(&result), "plain answer"),
        other => panic!("{other:?}"),
    }

    // A task cancelled by someone else ends the wait with TaskCancelled.
    let TaskOrResult::Task(long) = within(client.call_tool_as_task("slow", json!({"ms": 20_000})))
        .await
        .unwrap()
    else {
        panic!("not a task")
    };
    let waiter = {
        let client = client.clone();
        let id = long.task_id.clone();
        tokio::spawn(async move { client.wait_task(id).await })
    };
    within(client.cancel_task(long.task_id.clone()))
        .await
        .unwrap();
    match within(waiter).await.unwrap().unwrap_err() {
        Error::TaskCancelled { task_id, .. } => assert_eq!(task_id, long.task_id),
        other => panic!("{other:?}"),
    }
    // Cancelling a finished task is acknowledged and changes nothing.
    within(client.cancel_task(task.task_id.clone()))
        .await
        .unwrap();
    let still = within(client.get_task(task.task_id.clone())).await.unwrap();
    assert_eq!(still.task.status, TaskStatus::Completed);

    // An unknown task is the server's -32602.
    let err = within(client.get_task("no-such-task")).await.unwrap_err();
    assert_eq!(err.code(), Some(-32602), "{err:?}");
    assert!(err.to_string().contains("Task not found"), "{err}");
}
both!(handle, the_handle_for_callers_who_want_it);

async fn with_tasks_off_calls_stay_plain(kind: Kind) {
    let served = connect(kind, server(Arc::default()), Client::builder().tasks(false)).await;
    let result = within(served.client.call_tool("slow", json!({"ms": 300})))
        .await
        .unwrap();
    assert_eq!(text(&result), "done after 300 ms");
    let calls = served.wire.requests("tools/call");
    assert!(!declares_tasks(&calls[0].body), "{}", calls[0].body);
    assert_eq!(served.wire.count("tasks/get"), 0);
    // The explicit methods still declare it on their own requests.
    let answer = within(served.client.call_tool_as_task("slow", json!({"ms": 300})))
        .await
        .unwrap();
    assert!(matches!(answer, TaskOrResult::Task(_)), "{answer:?}");
}
both!(tasks_off, with_tasks_off_calls_stay_plain);

async fn the_handshake_era_has_no_tasks(kind: Kind) {
    let served = connect(
        kind,
        server(Arc::default()),
        Client::builder().era(EraChoice::Legacy),
    )
    .await;
    assert!(served.client.era().is_legacy());
    let result = within(served.client.call_tool("slow", json!({"ms": 200})))
        .await
        .unwrap();
    assert_eq!(text(&result), "done after 200 ms");
    let initialize = &served.wire.requests("initialize")[0].body;
    assert!(
        initialize["params"]["capabilities"]
            .get("extensions")
            .is_none(),
        "{initialize}"
    );
    assert_eq!(served.wire.count("tasks/get"), 0);
    let err = within(served.client.get_task("x")).await.unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err:?}");
}
both!(handshake_era, the_handshake_era_has_no_tasks);
