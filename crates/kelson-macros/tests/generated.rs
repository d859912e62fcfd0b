//! What the macros generate, registered and called: names, descriptions, schemas, hints, scopes,
//! headers, extractors in any order, prompts, resources, templates and a toolbox.

use kelson_macros::{prompt, resource, tool, tools};
use kelson_server::transport::{Reply, RequestIo};
use kelson_server::{HandlerError, Json, RequestContext, Server, State, ToolDef, Uri};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Repeats a word.
///
/// Twice by default.
#[tool(read_only, idempotent, title = "Repeat")]
async fn repeat(
    /// The word to repeat.
    word: String,
    /// How many times.
    #[serde(default = "two")]
    times: usize,
) -> String {
    word.repeat(times)
}

fn two() -> usize {
    2
}

#[derive(Serialize, JsonSchema)]
struct Quotient {
    quotient: i64,
    remainder: i64,
}

/// Divides with remainder.
#[tool(name = "divide", scopes("math"))]
async fn division(ctx: RequestContext, a: i64, b: i64) -> Result<Json<Quotient>, HandlerError> {
    let _ = ctx.method();
    if b == 0 {
        return Err("division by zero".into());
    }
    Ok(Json(Quotient {
        quotient: a / b,
        remainder: a % b,
    }))
}

struct Prefix {
    text: String,
}

/// Labels a value for a tenant.
#[tool(destructive = false, open_world = false)]
async fn label(#[header("Tenant")] tenant: String, prefix: State<Prefix>, value: String) -> String {
    format!("{}{tenant}:{value}", prefix.text)
}

#[derive(Deserialize, JsonSchema)]
struct Whole {
    x: i32,
}

/// Takes its arguments whole.
#[tool]
async fn whole(#[args] Whole { x }: Whole) -> String {
    (x * 2).to_string()
}

/// Greets someone by name.
#[prompt]
async fn greet(
    /// Who to greet.
    name: String,
    /// How many exclamation marks.
    #[serde(default)]
    excitement: Option<u8>,
) -> String {
    format!(
        "Hello, {name}{}",
        "!".repeat(excitement.unwrap_or(1).into())
    )
}

/// The read-me.
#[resource("docs://readme", mime_type = "text/markdown")]
async fn readme() -> &'static str {
    "# Read me"
}

/// One row of a table.
#[resource("db://{table}/{id}", name = "row")]
async fn row(table: String, id: u32, uri: Uri) -> Option<Json<Value>> {
    (id > 0).then(|| Json(json!({"table": table, "id": id, "uri": uri.0})))
}

struct Notes {
    prefix: String,
}

#[tools]
impl Notes {
    /// Writes a note.
    #[tool]
    async fn note(&self, text: String) -> String {
        format!("{}{text}", self.prefix)
    }

    /// Shouts a note.
    #[tool(name = "shout")]
    async fn loud(&self, text: String) -> String {
        format!("{}{}", self.prefix, text.to_uppercase())
    }

    /// Counts the notes (a method without `self`).
    #[tool]
    async fn zero() -> String {
        "0".to_owned()
    }

    #[allow(dead_code)]
    fn helper(&self) -> usize {
        self.prefix.len()
    }
}

fn server() -> Server {
    Server::builder("macros", "1.0.0")
        .state(Prefix { text: "> ".into() })
        .routes([
            repeat_tool(),
            division_tool(),
            label_tool(),
            whole_tool(),
            greet_prompt(),
            readme_resource(),
            row_resource(),
        ])
        .toolbox(Notes {
            prefix: "note: ".into(),
        })
        .build()
        .expect("builds")
}

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

#[test]
fn definitions_come_from_the_functions() {
    let server = server();
    let tools = server.tools();
    let find = |name: &str| tools.iter().find(|t| t.name == name).unwrap().clone();

    let repeat = find("repeat");
    assert_eq!(
        repeat.description.as_deref(),
        Some("Repeats a word.\n\nTwice by default.")
    );
    assert_eq!(repeat.title.as_deref(), Some("Repeat"));
    let hints = repeat.annotations.as_ref().unwrap();
    assert!(hints.is_read_only() && hints.is_idempotent());
    let word = &repeat.input_schema["properties"]["word"];
    assert_eq!(word["description"], "The word to repeat.");
    assert_eq!(repeat.input_schema["required"], json!(["word"]));
    assert_eq!(repeat.input_schema["properties"]["times"]["default"], 2);

    let divide = find("divide");
    assert!(divide.output_schema.is_some());
    assert_eq!(divide.input_schema["required"], json!(["a", "b"]));

    let label = find("label");
    assert_eq!(
        label.input_schema["properties"]["tenant"]["x-mcp-header"],
        "Tenant"
    );
    assert_eq!(
        label.annotations.as_ref().unwrap().destructive_hint,
        Some(false)
    );
    assert_eq!(
        label.annotations.as_ref().unwrap().open_world_hint,
        Some(false)
    );

    assert_eq!(find("whole").input_schema["required"], json!(["x"]));
    assert!(tools.iter().any(|t| t.name == "note"));
    assert!(tools.iter().any(|t| t.name == "shout"));
    assert!(tools.iter().any(|t| t.name == "zero"));

    // The same definition through the function API.
    let by_hand = Server::builder("s", "1")
        .tool(
            ToolDef::new("repeat")
                .title("Repeat")
                .description("Repeats a word.\n\nTwice by default.")
                .read_only(true)
                .idempotent(true),
            |args: RepeatArgs| async move { args.word.repeat(args.times) },
        )
        .build()
        .unwrap();
    let expected = by_hand.tools()[0].clone();
    // Neither schema carries the Rust type's name as its title.
    assert_eq!(expected.input_schema.get("title"), None);
    assert_eq!(repeat, expected);
}

/// Repeats a word.
///
/// Twice by default.
#[derive(Deserialize, JsonSchema)]
struct RepeatArgs {
    /// The word to repeat.
    word: String,
    /// How many times.
    #[serde(default = "two")]
    times: usize,
}

#[tokio::test]
async fn the_generated_handlers_serve_calls() {
    let server = server();
    assert_eq!(
        text(&call(&server, "repeat", json!({"word": "ab"})).await),
        "abab"
    );
    let reply = call(&server, "divide", json!({"a": 7, "b": 2})).await;
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"quotient": 3, "remainder": 1})
    );
    let reply = call(&server, "divide", json!({"a": 7, "b": 0})).await;
    assert_eq!(reply["result"]["isError"], true);
    assert_eq!(text(&reply), "division by zero");
    let reply = call(&server, "label", json!({"tenant": "acme", "value": "v"})).await;
    assert_eq!(text(&reply), "> acme:v");
    assert_eq!(text(&call(&server, "whole", json!({"x": 21})).await), "42");
    assert_eq!(
        text(&call(&server, "note", json!({"text": "milk"})).await),
        "note: milk"
    );
    assert_eq!(
        text(&call(&server, "shout", json!({"text": "milk"})).await),
        "note: MILK"
    );
    assert_eq!(text(&call(&server, "zero", json!({})).await), "0");
}

#[tokio::test]
async fn prompts_and_resources_are_generated_too() {
    let server = server();
    let list = ask(&server, "prompts/list", json!({})).await;
    let greet = &list["result"]["prompts"][0];
    assert_eq!(greet["name"], "greet");
    assert_eq!(greet["description"], "Greets someone by name.");
    let reply = ask(
        &server,
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": "Ada", "excitement": "3"}}),
    )
    .await;
    assert_eq!(
        reply["result"]["messages"][0]["content"]["text"],
        "Hello, Ada!!!"
    );

    let reply = ask(&server, "resources/read", json!({"uri": "docs://readme"})).await;
    assert_eq!(reply["result"]["contents"][0]["mimeType"], "text/markdown");
    assert_eq!(reply["result"]["contents"][0]["text"], "# Read me");

    let templates = ask(&server, "resources/templates/list", json!({})).await;
    let template = &templates["result"]["resourceTemplates"][0];
    assert_eq!(template["name"], "row");
    assert_eq!(template["description"], "One row of a table.");
    let reply = ask(&server, "resources/read", json!({"uri": "db://users/3"})).await;
    let row: Value =
        serde_json::from_str(reply["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        row,
        json!({"table": "users", "id": 3, "uri": "db://users/3"})
    );
    let reply = ask(&server, "resources/read", json!({"uri": "db://users/0"})).await;
    assert_eq!(reply["error"]["code"], -32602);
}

#[test]
fn compile_errors_point_at_the_mistake() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
