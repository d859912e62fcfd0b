//! The function API in process: extraction in any order, state, results of every kind, errors
//! through `?`, typed prompt arguments and template variables, and the registration errors.

use std::sync::atomic::{AtomicUsize, Ordering};

use kelson_types::{CallToolResult, ContentBlock, JsonObject, Resource, ResourceTemplate};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::transport::{Reply, RequestIo};
use crate::{
    BuildError, HandlerError, Json, Principal, RequestContext, Route, Server, State, ToolDef,
    Toolbox, Uri,
};

async fn ask(server: &Server, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    match server
        .handle(body.to_string().as_bytes(), RequestIo::plain(server))
        .await
    {
        Some(Reply::Message(m)) => serde_json::from_slice(&m.body).expect("JSON"),
        other => panic!("{method}: {other:?}"),
    }
}

async fn call(server: &Server, name: &str, arguments: Value) -> Value {
    ask(
        server,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {reply}"))
}

/// Repeats a word.
#[derive(Deserialize, JsonSchema)]
struct Repeat {
    /// The word.
    word: String,
    /// How many times.
    times: usize,
}

struct Counter {
    calls: AtomicUsize,
}

async fn repeat(Repeat { word, times }: Repeat) -> String {
    word.repeat(times)
}

// The context first, the state last, the arguments between: order does not matter.
async fn counted(ctx: RequestContext, args: Repeat, counter: State<Counter>) -> String {
    let n = counter.calls.fetch_add(1, Ordering::SeqCst) + 1;
    format!("{} {} #{n}", ctx.method(), args.word)
}

async fn no_arguments(principal: Principal) -> String {
    format!("anonymous: {}", principal.is_anonymous())
}

#[derive(Serialize, JsonSchema)]
struct Total {
    total: i64,
}

#[derive(Deserialize, JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

async fn add(Pair { a, b }: Pair) -> Json<Total> {
    Json(Total { total: a + b })
}

async fn checked_add(Pair { a, b }: Pair) -> Result<Json<Total>, HandlerError> {
    let total = a.checked_add(b).ok_or("the sum overflows")?;
    Ok(Json(Total { total }))
}

async fn read_missing() -> Result<String, HandlerError> {
    let text = std::fs::read_to_string("/this/file/does/not/exist")?;
    Ok(text)
}

async fn io_result() -> Result<String, std::io::Error> {
    Err(std::io::Error::other("the disk is on fire"))
}

async fn refuse() -> Result<String, HandlerError> {
    Err(HandlerError::protocol(kelson_jsonrpc::ErrorObject::new(
        -32042,
        "refused on purpose",
    )))
}

async fn parse_json(args: JsonObject) -> Result<String, HandlerError> {
    let raw = args.get("raw").and_then(Value::as_str).unwrap_or_default();
    let value: Value = serde_json::from_str(raw)?;
    Ok(value.to_string())
}

async fn blocks() -> Vec<ContentBlock> {
    vec![ContentBlock::text("one"), ContentBlock::text("two")]
}

fn server() -> Server {
    Server::builder("functions", "1.0.0")
        .tool("repeat", repeat)
        .tool(ToolDef::new("counted").read_only(true), counted)
        .tool("who", no_arguments)
        .tool("add", add)
        .tool("checked_add", checked_add)
        .tool("read_missing", read_missing)
        .tool("io_result", io_result)
        .tool("refuse", refuse)
        .tool("parse_json", parse_json)
        .tool("blocks", blocks)
        .tool("nothing", || async {})
        .state(Counter {
            calls: AtomicUsize::new(0),
        })
        .build()
        .expect("builds")
}

#[tokio::test]
async fn schemas_and_descriptions_come_from_the_types() {
    let server = server();
    let tools = server.tools();
    let repeat = tools.iter().find(|t| t.name == "repeat").unwrap();
    assert_eq!(repeat.description.as_deref(), Some("Repeats a word."));
    assert_eq!(repeat.input_schema["type"], "object");
    assert_eq!(
        repeat.input_schema["properties"]["word"]["description"],
        "The word."
    );
    assert_eq!(repeat.input_schema["required"], json!(["word", "times"]));
    assert!(repeat.output_schema.is_none());

    let add = tools.iter().find(|t| t.name == "add").unwrap();
    let output = add
        .output_schema
        .as_ref()
        .expect("Json<Total> declares one");
    assert_eq!(output["properties"]["total"]["type"], "integer");
    let checked = tools.iter().find(|t| t.name == "checked_add").unwrap();
    assert_eq!(checked.output_schema, add.output_schema);

    let who = tools.iter().find(|t| t.name == "who").unwrap();
    assert_eq!(
        Value::Object(who.input_schema.clone()),
        json!({"type": "object"})
    );

    let counted = tools.iter().find(|t| t.name == "counted").unwrap();
    assert!(counted.annotations.as_ref().unwrap().is_read_only());
}

#[tokio::test]
async fn parameters_are_extracted_in_any_order() {
    let server = server();
    let first = call(&server, "counted", json!({"word": "hi", "times": 1})).await;
    assert_eq!(text(&first), "tools/call hi #1");
    let second = call(&server, "counted", json!({"word": "yo", "times": 1})).await;
    assert_eq!(text(&second), "tools/call yo #2");
    let reply = call(&server, "repeat", json!({"word": "ab", "times": 3})).await;
    assert_eq!(text(&reply), "ababab");
    let reply = call(&server, "who", json!({})).await;
    assert_eq!(text(&reply), "anonymous: true");
}

#[tokio::test]
async fn results_of_every_kind() {
    let server = server();
    let reply = call(&server, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(reply["result"]["structuredContent"], json!({"total": 5}));
    assert_eq!(text(&reply), r#"{"total":5}"#);
    let reply = call(&server, "blocks", json!({})).await;
    assert_eq!(reply["result"]["content"][1]["text"], "two");
    let reply = call(&server, "nothing", json!({})).await;
    assert_eq!(reply["result"]["content"], json!([]));
    assert!(reply["result"].get("isError").is_none(), "{reply}");
}

#[tokio::test]
async fn errors_become_error_results_and_protocol_errors_stay_protocol_errors() {
    let server = server();
    let reply = call(&server, "checked_add", json!({"a": i64::MAX, "b": 1})).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(text(&reply), "the sum overflows");

    let reply = call(&server, "read_missing", json!({})).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(text(&reply).contains("No such file"), "{reply}");

    let reply = call(&server, "io_result", json!({})).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(text(&reply), "the disk is on fire");

    let reply = call(&server, "parse_json", json!({"raw": "{nope"})).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(text(&reply).contains("key must be a string"), "{reply}");
    let reply = call(&server, "parse_json", json!({"raw": "[1, 2]"})).await;
    assert_eq!(text(&reply), "[1,2]");

    let reply = call(&server, "refuse", json!({})).await;
    assert_eq!(reply["error"]["code"], -32042, "{reply}");
    assert_eq!(reply["error"]["message"], "refused on purpose");
}

#[tokio::test]
async fn arguments_that_break_the_schema_are_refused_before_the_handler() {
    let server = server();
    let reply = call(&server, "repeat", json!({"word": "ab", "times": "three"})).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
}

#[test]
fn a_missing_state_is_a_build_error() {
    let err = Server::builder("s", "1")
        .tool("counted", counted)
        .build()
        .expect_err("no Counter was given");
    match err {
        BuildError::MissingState { item, type_name } => {
            assert_eq!(item, r#"tool "counted""#);
            assert!(type_name.ends_with("Counter"), "{type_name}");
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn a_tool_added_at_run_time_needs_its_state_too() {
    let server = Server::builder("s", "1").build().unwrap();
    let err = server.add_tool("counted", counted).expect_err("no state");
    assert!(matches!(err, BuildError::MissingState { .. }), "{err}");
    server.add_tool("repeat", repeat).expect("needs no state");
    let reply = call(&server, "repeat", json!({"word": "x", "times": 2})).await;
    assert_eq!(text(&reply), "xx");
}

#[test]
fn a_hand_written_schema_wins_and_headers_are_declared() {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert(
        "properties".into(),
        json!({"word": {"type": "string"}, "times": {"type": "integer"}}),
    );
    let server = Server::builder("s", "1")
        .tool(
            ToolDef::new("repeat")
                .input_schema(schema)
                .header("word", "Word"),
            repeat,
        )
        .build()
        .unwrap();
    let tool = &server.tools()[0];
    assert_eq!(
        tool.input_schema["properties"]["word"]["x-mcp-header"],
        "Word"
    );
    assert!(tool.input_schema.get("required").is_none());

    let err = Server::builder("s", "1")
        .tool(ToolDef::new("repeat").header("nope", "Nope"), repeat)
        .build()
        .expect_err("no such property");
    assert!(matches!(err, BuildError::ParamHeader { .. }), "{err}");
}

/// Greets someone.
#[derive(Deserialize, JsonSchema)]
struct Greeting {
    /// Who to greet.
    name: String,
    /// How many exclamation marks.
    #[serde(default)]
    excitement: Option<u8>,
    /// Whether to shout.
    #[serde(default)]
    loud: bool,
}

async fn greet(
    Greeting {
        name,
        excitement,
        loud,
    }: Greeting,
) -> String {
    let text = format!(
        "Hello, {name}{}",
        "!".repeat(excitement.unwrap_or(0).into())
    );
    if loud { text.to_uppercase() } else { text }
}

#[derive(Deserialize, JsonSchema)]
struct Row {
    table: String,
    id: u32,
}

async fn row(Row { table, id }: Row, uri: Uri) -> Option<Json<Value>> {
    (id < 10).then(|| Json(json!({"table": table, "id": id, "uri": &*uri})))
}

async fn readme() -> &'static str {
    "# Hello"
}

#[tokio::test]
async fn prompts_take_typed_arguments() {
    let server = Server::builder("s", "1")
        .prompt("greet", greet)
        .build()
        .unwrap();
    let list = ask(&server, "prompts/list", json!({})).await;
    let prompt = &list["result"]["prompts"][0];
    assert_eq!(prompt["description"], "Greets someone.");
    let arguments = prompt["arguments"].as_array().unwrap();
    let name = arguments.iter().find(|a| a["name"] == "name").unwrap();
    assert_eq!(name["required"], true);
    assert_eq!(name["description"], "Who to greet.");
    let loud = arguments.iter().find(|a| a["name"] == "loud").unwrap();
    assert!(loud.get("required").is_none(), "{loud}");

    let reply = ask(
        &server,
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": "Ada", "excitement": "2", "loud": "true"}}),
    )
    .await;
    assert_eq!(
        reply["result"]["messages"][0]["content"]["text"],
        "HELLO, ADA!!"
    );
    let reply = ask(
        &server,
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": "Ada", "excitement": "lots"}}),
    )
    .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}

#[tokio::test]
async fn resources_and_templates_take_typed_variables() {
    let server = Server::builder("s", "1")
        .resource(
            Resource::new("docs://readme", "readme").with_mime_type("text/markdown"),
            readme,
        )
        .resource_template(ResourceTemplate::new("db://{table}/{id}", "row"), row)
        .build()
        .unwrap();
    let reply = ask(&server, "resources/read", json!({"uri": "docs://readme"})).await;
    let contents = &reply["result"]["contents"][0];
    assert_eq!(contents["text"], "# Hello");
    assert_eq!(contents["mimeType"], "text/markdown");
    assert_eq!(contents["uri"], "docs://readme");

    let reply = ask(&server, "resources/read", json!({"uri": "db://users/7"})).await;
    let contents = &reply["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "application/json");
    let row: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        row,
        json!({"table": "users", "id": 7, "uri": "db://users/7"})
    );

    let reply = ask(&server, "resources/read", json!({"uri": "db://users/12"})).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert_eq!(reply["error"]["data"]["uri"], "db://users/12");

    let reply = ask(&server, "resources/read", json!({"uri": "db://users/x"})).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}

#[test]
fn a_template_must_bind_every_required_variable() {
    let err = Server::builder("s", "1")
        .resource_template(ResourceTemplate::new("db://{table}", "row"), row)
        .build()
        .expect_err("id is not a variable");
    match err {
        BuildError::TemplateVariable { variable, .. } => assert_eq!(variable, "id"),
        other => panic!("{other}"),
    }
}

struct Notes {
    prefix: String,
}

impl Toolbox for Notes {
    fn routes() -> Vec<Route> {
        vec![Route::tool(
            "note",
            |notes: State<Notes>, args: Repeat| async move {
                CallToolResult::text(format!("{}{}", notes.prefix, args.word))
            },
        )]
    }
}

#[tokio::test]
async fn a_toolbox_registers_its_routes_with_itself_as_state() {
    let server = Server::builder("s", "1")
        .toolbox(Notes {
            prefix: "note: ".into(),
        })
        .build()
        .unwrap();
    let reply = call(&server, "note", json!({"word": "milk", "times": 1})).await;
    assert_eq!(text(&reply), "note: milk");
}

#[test]
fn prompt_strings_become_the_types_the_schema_names() {
    let schema = crate::schema_object::<Greeting>();
    let strings = [("excitement", "3"), ("loud", "false"), ("name", "42")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let typed = super::func::typed_strings(strings, Some(&schema));
    assert_eq!(
        Value::Object(typed),
        json!({"excitement": 3, "loud": false, "name": "42"})
    );
}

#[derive(Serialize, JsonSchema)]
struct Point {
    x: i64,
}

#[tokio::test]
async fn structured_output_that_is_not_an_object_goes_under_result_in_schema_and_result() {
    let server = Server::builder("t", "1")
        .tool("half", |Repeat { times, .. }: Repeat| async move {
            Json(times as f64 / 2.0)
        })
        .tool("points", |Repeat { times, .. }: Repeat| async move {
            Ok::<_, HandlerError>(Json(
                (0..times as i64).map(|x| Point { x }).collect::<Vec<_>>(),
            ))
        })
        .build()
        .expect("builds");
    let tools = server.tools();
    let half = tools.iter().find(|t| t.name == "half").unwrap();
    let schema = Value::Object(half.output_schema.clone().expect("an output schema"));
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["result"]));
    assert_eq!(schema["properties"]["result"]["type"], "number");
    let reply = call(&server, "half", json!({"word": "w", "times": 3})).await;
    assert_eq!(reply["result"]["structuredContent"], json!({"result": 1.5}));
    assert_eq!(text(&reply), "1.5");

    // A list of structs: the item type stays in `$defs` at the root, where its reference points,
    // and the result validates against the schema (the server checks every output).
    let points = tools.iter().find(|t| t.name == "points").unwrap();
    let schema = Value::Object(points.output_schema.clone().unwrap());
    assert_eq!(schema["properties"]["result"]["type"], "array");
    assert!(schema["$defs"]["Point"].is_object(), "{schema}");
    let reply = call(&server, "points", json!({"word": "w", "times": 2})).await;
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"result": [{"x": 0}, {"x": 1}]}),
        "{reply}"
    );
    assert_eq!(reply["result"].get("isError"), None, "{reply}");
}

#[tokio::test]
async fn a_handler_past_the_deadline_is_stopped_and_answered() {
    use std::sync::atomic::AtomicBool;
    let saw_stop = std::sync::Arc::new(AtomicBool::new(false));
    let seen = saw_stop.clone();
    let config = crate::ServerConfig {
        handler_timeout: Some(std::time::Duration::from_millis(100)),
        ..Default::default()
    };
    let server = Server::builder("t", "1")
        .config(config)
        .tool("hang", move |ctx: RequestContext| {
            let seen = seen.clone();
            async move {
                // Work on a task of its own learns of the deadline through the context.
                let watcher = tokio::spawn({
                    let token = ctx.cancellation_token();
                    async move {
                        token.cancelled().await;
                        seen.store(true, Ordering::SeqCst);
                    }
                });
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                watcher.abort();
                "finished"
            }
        })
        .tool("quick", || async { "quick" })
        .resource(Resource::new("test://slow", "slow"), || async {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            "never"
        })
        .build()
        .expect("builds");
    let started = std::time::Instant::now();
    let reply = call(&server, "hang", json!({})).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(
        text(&reply),
        "The tool hang did not finish within 100 ms and was stopped."
    );
    for _ in 0..100 {
        if saw_stop.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(saw_stop.load(Ordering::SeqCst), "the handler's token fired");
    // Other methods: -32603 with the same words.
    let read = ask(&server, "resources/read", json!({"uri": "test://slow"})).await;
    assert_eq!(read["error"]["code"], -32603, "{read}");
    assert!(
        read["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not finish within 100 ms"),
        "{read}"
    );
    // A handler within the deadline is not touched.
    assert_eq!(text(&call(&server, "quick", json!({})).await), "quick");
}
