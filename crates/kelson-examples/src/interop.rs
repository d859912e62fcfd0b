//! The interop profile: the small server every interop test speaks to, whichever SDK implements it.
//!
//! `peers/interop/` holds the same profile written with the official TypeScript and Python SDKs,
//! and client scripts that exercise it; this is our implementation, served by the `interop-server`
//! binary so that the official clients can be tested against kelson. The profile:
//!
//! - tool `add` (`a`, `b` numbers): the sum as text;
//! - tool `count_with_progress` (`steps`, default 3): one progress notification per step, then
//!   `counted to N`;
//! - tool `ask_name`: asks for `name` through elicitation (MRTR, input key `user`), then
//!   `Hello, NAME!`;
//! - tool `change_tools`: a tools list change (a tool `toggled_tool` comes or goes), announced on
//!   every listen stream;
//! - resource `interop://greeting` (text/plain): [`GREETING_TEXT`];
//! - prompt `greet` (argument `name`, required): `Please greet NAME.`
//!
//! ```
//! let server = kelson_examples::interop::build_server().expect("the profile is valid");
//! assert!(server.tools().iter().any(|t| t.name == "ask_name"));
//! ```

use std::time::Duration;

use kelson_server::{BuildError, HandlerError, RequestContext, Server};
use kelson_types::{
    ElicitAction, ElicitRequestFormParams, Prompt, PromptArgument, RequestedSchema, Resource,
    StringSchema, Tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::conformance::{no_arguments, object};

/// The name the server reports in `serverInfo`.
pub const SERVER_NAME: &str = "kelson-interop-server";

/// The URI of the profile's one resource.
pub const GREETING_URI: &str = "interop://greeting";

/// The text of the profile's one resource.
pub const GREETING_TEXT: &str = "Hello from the interop fixture";

/// Builds the interop server.
pub fn build_server() -> Result<Server, BuildError> {
    Server::builder(SERVER_NAME, env!("CARGO_PKG_VERSION"))
        .tool(
            Tool::new(
                "add",
                object(json!({
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"]
                })),
            )
            .with_description("Adds two numbers"),
            add,
        )
        .tool(
            Tool::new(
                "count_with_progress",
                object(json!({
                    "type": "object",
                    "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 20}}
                })),
            )
            .with_description("Counts to `steps` (default 3), reporting progress at each step"),
            count_with_progress,
        )
        .tool(
            Tool::new("ask_name", no_arguments()).with_description(
                "Asks the user's name through elicitation (MRTR, key `user`), then greets them",
            ),
            ask_name,
        )
        .tool(
            Tool::new("change_tools", no_arguments())
                .with_description("Announces a tools list change to every listen stream"),
            change_tools,
        )
        .resource(
            Resource::new(GREETING_URI, "greeting")
                .with_description("A fixed greeting")
                .with_mime_type("text/plain"),
            greeting,
        )
        .prompt(
            Prompt::new("greet")
                .with_description("Asks to greet someone")
                .with_argument(PromptArgument::new("name").required()),
            greet,
        )
        .build()
}

/// A number as the other SDKs print it: `5`, not `5.0`.
fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

/// The arguments of `add`; the registration keeps its hand-written schema, the one the other
/// SDKs' versions of the profile declare.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: f64,
    b: f64,
}

async fn add(AddArgs { a, b }: AddArgs) -> String {
    number_text(a + b)
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    #[serde(default = "three")]
    steps: u64,
}

fn three() -> u64 {
    3
}

async fn count_with_progress(
    ctx: RequestContext,
    CountArgs { steps }: CountArgs,
) -> Result<String, HandlerError> {
    for i in 1..=steps {
        ctx.progress(
            i as f64,
            Some(steps as f64),
            Some(&format!("step {i} of {steps}")),
        );
        tokio::select! {
            () = ctx.cancelled() => return Err("cancelled".into()),
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
    }
    Ok(format!("counted to {steps}"))
}

async fn ask_name(mut ctx: RequestContext) -> Result<String, HandlerError> {
    let answer = ctx.elicit(
        "user",
        ElicitRequestFormParams::new(
            "What is your name?",
            RequestedSchema::new().required_property("name", StringSchema::new()),
        ),
    )?;
    let name = (answer.action == ElicitAction::Accept)
        .then(|| answer.content.as_ref()?.get("name")?.as_str())
        .flatten();
    Ok(match name {
        Some(name) => format!("Hello, {name}!"),
        None => format!(
            "No name given ({})",
            json!(answer.action).as_str().unwrap_or("?")
        ),
    })
}

/// The tool `change_tools` adds and removes in turn.
const TOGGLED: &str = "toggled_tool";

async fn change_tools(ctx: RequestContext) -> Result<&'static str, HandlerError> {
    // One real registry change per call (the toggled tool comes or goes), so each call sends one
    // notification, through the path any other change takes.
    if !ctx.server().remove_tool(TOGGLED) {
        let tool = Tool::new(TOGGLED, no_arguments()).with_description("Toggled by change_tools");
        ctx.server().add_tool(tool, || async { "toggled" })?;
    }
    Ok("tools changed")
}

async fn greeting() -> &'static str {
    GREETING_TEXT
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    name: String,
}

async fn greet(GreetArgs { name }: GreetArgs) -> String {
    format!("Please greet {name}.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_builds() {
        let server = build_server().unwrap();
        let mut names: Vec<_> = server.tools().into_iter().map(|t| t.name).collect();
        names.sort();
        assert_eq!(
            names,
            ["add", "ask_name", "change_tools", "count_with_progress"]
        );
        assert_eq!(number_text(5.0), "5");
        assert_eq!(number_text(2.5), "2.5");
    }
}
