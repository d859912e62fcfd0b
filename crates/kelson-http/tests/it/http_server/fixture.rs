//! The servers the tests talk to, and the probes their handlers report to.
//!
//! Handlers record what happened to them (`started:TAG`, `cancelled:TAG`, `finished:TAG`) in
//! [`Probes`], so a test waits for an event instead of sleeping and hoping.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kelson_server::{HandlerError, RequestContext, Server, ServerBuilder};
use kelson_types::{
    CallToolResult, CreateMessageRequestParams, GetPromptResult, JsonObject, LoggingLevel, Prompt,
    PromptMessage, Resource, ResourceContents, SamplingMessage, TextResourceContents, Tool,
};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

/// How long a test waits for anything the server should do "promptly". Generous, because the
/// machine running the tests may be busy; a healthy run never gets near it.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A non-ASCII prompt name: tool names must be ASCII, prompt names need not be.
pub const UNICODE_PROMPT: &str = "grüße";

/// A non-ASCII resource URI.
pub const UNICODE_URI: &str = "test://docs/Zürich";

/// Events reported by handlers, in order.
#[derive(Default)]
pub struct Probes {
    seen: Mutex<Vec<String>>,
    changed: Notify,
}

impl Probes {
    /// Records that `what` happened and wakes every waiter.
    pub fn record(&self, what: impl Into<String>) {
        self.seen.lock().unwrap().push(what.into());
        self.changed.notify_waiters();
    }

    /// Whether `what` has happened.
    pub fn saw(&self, what: &str) -> bool {
        self.seen.lock().unwrap().iter().any(|s| s == what)
    }

    /// Waits until `what` has happened, for as long as it takes: for handlers, which must not
    /// panic just because a test never opens their gate.
    pub async fn until(&self, what: &str) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Register before checking, so an event recorded in between is not missed.
            changed.as_mut().enable();
            if self.saw(what) {
                return;
            }
            changed.await;
        }
    }

    /// Waits until `what` has happened, failing the test after [`PATIENCE`].
    pub async fn wait_for(&self, what: &str) {
        self.wait_for_within(what, PATIENCE).await;
    }

    /// Waits until `what` has happened, failing the test after `bound`.
    pub async fn wait_for_within(&self, what: &str, bound: Duration) {
        let waited = tokio::time::timeout(bound, self.until(what)).await;
        if waited.is_err() {
            // Copy first: panicking with the lock held would poison it for every later `record`.
            let seen = self.seen.lock().unwrap().clone();
            panic!("waited {bound:?} for {what:?}; saw {seen:?}");
        }
    }
}

fn schema(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("a schema must be an object, not {other}"),
    }
}

fn text_arg<'a>(args: &'a JsonObject, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn int_arg(args: &JsonObject, key: &str) -> u64 {
    args.get(key).and_then(Value::as_u64).unwrap_or_default()
}

/// `echo {text}`: answers at once with the text.
fn echo_tool() -> Tool {
    Tool::new(
        "echo",
        schema(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": false
        })),
    )
    .with_description("Echoes its text")
}

/// `slow {tag, steps, stepMs, gate?}`: reports progress `1..=steps` with a pause of `stepMs` after
/// each; with a `gate`, it waits after the first step until the probe event `gate` is recorded. It
/// watches for cancellation throughout and records `cancelled:TAG` when it sees it.
fn slow_tool() -> Tool {
    Tool::new(
        "slow",
        schema(json!({
            "type": "object",
            "properties": {
                "tag": {"type": "string"},
                "steps": {"type": "integer", "minimum": 1},
                "stepMs": {"type": "integer", "minimum": 0},
                "gate": {"type": "string"}
            },
            "required": ["tag", "steps", "stepMs"]
        })),
    )
    .with_description("Works slowly, reporting progress and honouring cancellation")
}

/// Records `stopped:TAG` when the handler ends, however it ends: by returning, or by being
/// dropped, which is how a runtime may stop a cancelled handler.
struct Stopped(Arc<Probes>, String);

impl Drop for Stopped {
    fn drop(&mut self) {
        self.0.record(format!("stopped:{}", self.1));
    }
}

async fn run_slow(probes: Arc<Probes>, ctx: RequestContext, args: JsonObject) -> CallToolResult {
    let tag = text_arg(&args, "tag").to_owned();
    let steps = int_arg(&args, "steps");
    let pause = Duration::from_millis(int_arg(&args, "stepMs"));
    let gate = args.get("gate").and_then(Value::as_str).map(str::to_owned);
    let _stopped = Stopped(probes.clone(), tag.clone());
    probes.record(format!("started:{tag}"));

    // A transport may stop a cancelled handler by dropping its future, so the handler could never
    // see its own `ctx.cancelled()` fire. A watcher that shares the context outlives the handler
    // and observes the cancellation either way; it stands for the clean-up work a real handler
    // would hand the context (or its token) to.
    let ctx = Arc::new(ctx);
    let (finished, finished_rx) = oneshot::channel::<()>();
    tokio::spawn({
        let ctx = ctx.clone();
        let probes = probes.clone();
        let tag = tag.clone();
        async move {
            tokio::select! {
                () = ctx.cancelled() => {
                    assert!(ctx.is_cancelled());
                    probes.record(format!("cancelled:{tag}"));
                }
                // Only an explicit "finished" ends the watch; a dropped handler does not.
                Ok(()) = finished_rx => {}
            }
        }
    });

    for step in 1..=steps {
        ctx.progress(
            step as f64,
            Some(steps as f64),
            Some(&format!("step {step}")),
        );
        let wait = async {
            if step == 1
                && let Some(gate) = &gate
            {
                probes.until(gate).await;
            }
            tokio::time::sleep(pause).await;
        };
        tokio::select! {
            () = ctx.cancelled() => {
                probes.record(format!("cancelled:{tag}"));
                // Whatever a handler does after cancellation must never reach the client.
                ctx.progress(1e9, None, Some("after-cancel"));
                return CallToolResult::text(format!("late {tag}"));
            }
            () = wait => {}
        }
    }
    let _ = finished.send(());
    probes.record(format!("finished:{tag}"));
    CallToolResult::text(format!("slow {tag} done"))
}

/// `region {region, count?}`: both arguments are mirrored into `Mcp-Param-*` headers.
fn region_tool() -> Tool {
    Tool::new(
        "region",
        schema(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "count": {"type": "integer", "x-mcp-header": "Count"}
            },
            "required": ["region"]
        })),
    )
    .with_description("Reports the region and count it was called with")
}

/// `sample`: asks the client's model for a completion, so it needs the `sampling` capability.
fn sample_tool() -> Tool {
    Tool::without_arguments("sample").with_description("Asks the client's model to say hello")
}

/// `chatty`: logs one message at each of debug, info, warning and error.
fn chatty_tool() -> Tool {
    Tool::without_arguments("chatty").with_description("Logs at four levels")
}

/// A registry with a tool for every HTTP rule under test: `echo`, `slow`, `region`, `sample`,
/// `chatty`, a prompt with a non-ASCII name and a resource with a non-ASCII URI.
pub fn full_server(probes: Arc<Probes>) -> Server {
    full_builder(probes)
        .build()
        .expect("the fixture server builds")
}

/// [`full_server`] serving 2026-07-28 only (`initialize` is refused with -32022).
pub fn modern_only_server(probes: Arc<Probes>) -> Server {
    full_builder(probes)
        .config({
            let mut edited = kelson_server::ServerConfig::default();
            edited.eras = kelson_server::Eras::ModernOnly;
            edited
        })
        .build()
        .expect("the fixture server builds")
}

/// [`full_server`]'s builder, for tests that add to it.
pub fn full_builder(probes: Arc<Probes>) -> ServerBuilder {
    let slow_probes = probes.clone();
    Server::builder("http-it", "0.0.1")
        .tool_handler(
            echo_tool(),
            |_ctx: RequestContext, args: JsonObject| async move {
                Ok(CallToolResult::text(text_arg(&args, "text")))
            },
        )
        .tool_handler(slow_tool(), move |ctx: RequestContext, args: JsonObject| {
            let probes = slow_probes.clone();
            async move { Ok(run_slow(probes, ctx, args).await) }
        })
        .tool_handler(
            region_tool(),
            |_ctx: RequestContext, args: JsonObject| async move {
                let count = args
                    .get("count")
                    .map_or("none".to_owned(), Value::to_string);
                Ok(CallToolResult::text(format!(
                    "region={} count={count}",
                    text_arg(&args, "region")
                )))
            },
        )
        .tool_handler(
            sample_tool(),
            |mut ctx: RequestContext, _args: JsonObject| async move {
                let params = CreateMessageRequestParams::new(
                    vec![SamplingMessage::user_text("Say hello")],
                    16,
                );
                let answer = ctx.create_message("hello", params)?;
                Ok(CallToolResult::text(format!("the model said {answer:?}")))
            },
        )
        .tool_handler(
            chatty_tool(),
            |ctx: RequestContext, _args: JsonObject| async move {
                for (level, line) in [
                    (LoggingLevel::Debug, "debug-line"),
                    (LoggingLevel::Info, "info-line"),
                    (LoggingLevel::Warning, "warning-line"),
                    (LoggingLevel::Error, "error-line"),
                ] {
                    ctx.log(level, Some("chatty"), line);
                }
                Ok(CallToolResult::text("logged"))
            },
        )
        .prompt_handler(
            Prompt::new(UNICODE_PROMPT).with_description("Greets in German"),
            |_ctx: RequestContext, _args| async move {
                Ok::<_, HandlerError>(GetPromptResult::new(vec![PromptMessage::user_text(
                    "Grüße!",
                )]))
            },
        )
        .resource_handler(
            Resource::new(UNICODE_URI, "zurich").with_description("A page about Zürich"),
            |_ctx: RequestContext, uri: String, _vars| async move {
                Ok::<_, HandlerError>(vec![ResourceContents::from(TextResourceContents::new(
                    uri, "Zürich",
                ))])
            },
        )
}

/// Only tools (`echo` and `slow`): a listen request for prompt or resource changes is not honoured.
pub fn tools_only_server(probes: Arc<Probes>) -> Server {
    Server::builder("http-it-tools", "0.0.1")
        .tool_handler(
            echo_tool(),
            |_ctx: RequestContext, args: JsonObject| async move {
                Ok(CallToolResult::text(text_arg(&args, "text")))
            },
        )
        .tool_handler(slow_tool(), move |ctx: RequestContext, args: JsonObject| {
            let probes = probes.clone();
            async move { Ok(run_slow(probes, ctx, args).await) }
        })
        .build()
        .expect("the tools-only server builds")
}
