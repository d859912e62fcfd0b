//! The test server: tools, resources, templates, prompts and completions, plus probes that let a
//! test see what the server saw.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kelson_server::{
    Completions, HandlerError, RequestContext, Server, ServerBuilder, ServerConfig,
};
use kelson_types::{
    CacheScope, CallToolResult, ElicitAction, ElicitRequestFormParams, GetPromptResult, JsonObject,
    LoggingLevel, Prompt, PromptArgument, PromptMessage, RequestedSchema, Resource,
    ResourceContents, ResourceTemplate, StringSchema, TextResourceContents, Tool,
};
use serde_json::json;
use tokio::sync::Notify;

/// What handlers report: events in order, and a wake-up for tests waiting on them.
#[derive(Default)]
pub struct Probes {
    events: Mutex<Vec<String>>,
    changed: Notify,
}

impl Probes {
    pub fn record(&self, event: impl Into<String>) {
        self.events.lock().unwrap().push(event.into());
        self.changed.notify_waiters();
    }

    pub fn saw(&self, event: &str) -> bool {
        self.events.lock().unwrap().iter().any(|e| e == event)
    }

    pub fn count(&self, prefix: &str) -> usize {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.starts_with(prefix))
            .count()
    }

    /// Waits until `event` was recorded.
    pub async fn wait_for(&self, event: &str) {
        crate::harness::within(async {
            loop {
                let changed = self.changed.notified();
                if self.saw(event) {
                    return;
                }
                changed.await;
            }
        })
        .await;
    }
}

/// Records an event when dropped.
struct OnDrop(Arc<Probes>, String);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.record(std::mem::take(&mut self.1));
    }
}

pub fn config() -> ServerConfig {
    {
        let mut edited = ServerConfig::default();
        edited.page_size = 2;
        edited
    }
}

fn schema(value: serde_json::Value) -> JsonObject {
    value.as_object().cloned().unwrap()
}

fn text_arg(args: &JsonObject, key: &str) -> String {
    args.get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The server every test starts from; `config` sets paging and cache hints.
pub fn builder(probes: Arc<Probes>, config: ServerConfig) -> ServerBuilder {
    let p = probes.clone();
    let slow = probes.clone();
    let waiting = probes.clone();
    let asking = probes.clone();
    let reading = probes.clone();
    Server::builder("client-it", "1.0.0")
        .config(config)
        .tool_handler(
            Tool::new(
                "echo",
                schema(json!({"type": "object", "properties": {"text": {"type": "string"}}})),
            ),
            |_ctx: RequestContext, args: JsonObject| async move {
                Ok(CallToolResult::text(text_arg(&args, "text")))
            },
        )
        .tool_handler(
            Tool::new(
                "progress",
                schema(json!({"type": "object", "properties": {
                    "steps": {"type": "integer"}, "stepMs": {"type": "integer"}}})),
            ),
            move |ctx: RequestContext, args: JsonObject| {
                let probes = slow.clone();
                async move {
                    let steps = args.get("steps").and_then(|v| v.as_u64()).unwrap_or(3);
                    let step = args.get("stepMs").and_then(|v| v.as_u64()).unwrap_or(0);
                    for i in 1..=steps {
                        if step > 0 {
                            // The server's own pace, which the timeout tests measure against.
                            tokio::time::sleep(Duration::from_millis(step)).await;
                        }
                        ctx.progress(i as f64, Some(steps as f64), Some(&format!("step {i}")));
                    }
                    probes.record("progress:done");
                    Ok(CallToolResult::text("done"))
                }
            },
        )
        .tool_handler(
            Tool::without_arguments("log"),
            |ctx: RequestContext, _args: JsonObject| async move {
                ctx.log(LoggingLevel::Debug, Some("it"), "debug line");
                ctx.log(LoggingLevel::Warning, Some("it"), "warning line");
                Ok(CallToolResult::text("logged"))
            },
        )
        .tool_handler(
            Tool::new(
                "wait",
                schema(json!({"type": "object", "properties": {"tag": {"type": "string"}}})),
            ),
            move |ctx: RequestContext, args: JsonObject| {
                let probes = waiting.clone();
                async move {
                    let tag = text_arg(&args, "tag");
                    probes.record(format!("started:{tag}"));
                    // The runtime may drop the handler when the request is cancelled, or wake it:
                    // either way the guard records the cancellation.
                    let _cancelled = OnDrop(probes.clone(), format!("cancelled:{tag}"));
                    ctx.cancelled().await;
                    Ok(CallToolResult::text("cancelled"))
                }
            },
        )
        .tool_handler(
            Tool::without_arguments("ask_name"),
            move |mut ctx: RequestContext, _args: JsonObject| {
                let probes = asking.clone();
                async move {
                    probes.record("ask_name:round");
                    let form = ElicitRequestFormParams::new(
                        "What is your name?",
                        RequestedSchema::new().required_property("name", StringSchema::new()),
                    );
                    let answer = ctx.elicit("name", form)?;
                    if answer.action != ElicitAction::Accept {
                        return Ok(CallToolResult::text("no name"));
                    }
                    let name = answer
                        .content
                        .as_ref()
                        .and_then(|c| c.get("name"))
                        .and_then(|v| v.as_str())
                        .unwrap_or_default()
                        .to_owned();
                    Ok(CallToolResult::text(format!("hello {name}")))
                }
            },
        )
        .tool_handler(
            Tool::without_arguments("ask_forever"),
            |mut ctx: RequestContext, _args: JsonObject| async move {
                for round in 0.. {
                    let form = ElicitRequestFormParams::new(
                        format!("question {round}"),
                        RequestedSchema::new().property("x", StringSchema::new()),
                    );
                    ctx.elicit(&format!("q{round}"), form)?;
                }
                Ok(CallToolResult::text("unreachable"))
            },
        )
        .resource_handler(
            Resource::new("mem://a", "a").with_mime_type("text/plain"),
            move |_ctx: RequestContext, uri: String, _vars| {
                let probes = reading.clone();
                async move {
                    probes.record(format!("read:{uri}"));
                    Ok(vec![ResourceContents::Text(TextResourceContents::new(
                        uri, "alpha",
                    ))])
                }
            },
        )
        .resource_handler(
            Resource::new("mem://secret", "secret"),
            |mut ctx: RequestContext, uri: String, _vars| async move {
                let form = ElicitRequestFormParams::new(
                    "Unlock?",
                    RequestedSchema::new().required_property("pin", StringSchema::new()),
                );
                ctx.elicit("pin", form)?;
                Ok(vec![ResourceContents::Text(TextResourceContents::new(
                    uri, "unlocked",
                ))])
            },
        )
        .template_handler(
            ResourceTemplate::new("mem://t/{id}", "t"),
            |_ctx: RequestContext, uri: String, vars: kelson_server::TemplateVars| async move {
                let id = vars.get("id").cloned().unwrap_or_default();
                Ok(vec![ResourceContents::Text(TextResourceContents::new(
                    uri,
                    format!("item {id}"),
                ))])
            },
        )
        .prompt(
            Prompt::new("greet").with_argument(PromptArgument::new("name").required()),
            |_ctx: RequestContext, args: BTreeMap<String, String>| async move {
                let name = args.get("name").cloned().unwrap_or_default();
                Ok::<_, HandlerError>(GetPromptResult::new(vec![PromptMessage::user_text(
                    format!("Say hello to {name}"),
                )]))
            },
        )
        .completion(
            move |_ctx: RequestContext, params: kelson_types::CompleteRequestParams| {
                let probes = p.clone();
                async move {
                    probes.record("complete");
                    Ok(Completions::filter_prefix(
                        ["alice", "albert", "bob"],
                        &params.argument.value,
                    ))
                }
            },
        )
}

pub fn server(probes: Arc<Probes>) -> Server {
    builder(probes, config())
        .build()
        .expect("the test server builds")
}

/// A server whose cacheable results carry a long `ttlMs` with `scope`.
pub fn caching_server(probes: Arc<Probes>, scope: CacheScope, ttl: Duration) -> Server {
    builder(probes, {
        let mut edited = config();
        edited.discover_ttl = ttl;
        edited.list_ttl = ttl;
        edited.read_ttl = ttl;
        edited.cache_scope = scope;
        edited
    })
    .build()
    .expect("the test server builds")
}

/// The names of the tools the test server registers.
pub const TOOLS: &[&str] = &["ask_forever", "ask_name", "echo", "log", "progress", "wait"];
