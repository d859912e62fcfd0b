//! The conformance fixture: the tools, resources, prompts and completions the official MCP
//! conformance suite (`modelcontextprotocol/conformance`, 2026-07-28 requirements) calls, registered
//! on the ordinary kelson API.
//!
//! Names, arguments, texts and error codes follow what the suite's server scenarios check
//! (`src/scenarios/server/` in that repository). A few fixtures exist for our own integration
//! tests and are described as robustness fixtures: `test_slow` (a request that stays in flight
//! until it is cancelled or its time is up) and `test_panic` (a handler that panics).
//!
//! ```
//! let server = kelson_examples::conformance::build_server().expect("the fixture is valid");
//! assert!(server.tools().iter().any(|t| t.name == "test_simple_text"));
//! ```

mod asks;
mod mrtr;
mod prompts;
mod resources;
mod tasks;
mod tools;

use kelson_server::{BuildError, Server};
use kelson_types::{Implementation, JsonObject};
use serde_json::{Value, json};

/// The name the fixture reports in `serverInfo`.
pub const SERVER_NAME: &str = "kelson-conformance-server";

/// A 1x1 PNG, base64: the image of the image fixtures.
pub const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// The smallest WAV file, base64: the audio of the audio fixture.
pub const WAV_MIN: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Builds the fixture server: every tool, resource, template, prompt and the completion handler.
pub fn build_server() -> Result<Server, BuildError> {
    let builder = Server::builder(SERVER_NAME, env!("CARGO_PKG_VERSION"))
        .info(
            Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
                .with_title("kelson conformance fixture")
                .with_description("The fixture server of the MCP conformance suite, on kelson"),
        )
        .instructions(
            "A test fixture: every tool, resource and prompt exists for the MCP conformance suite.",
        );
    let builder = tools::register(builder);
    let builder = mrtr::register(builder);
    let builder = asks::register(builder);
    let builder = resources::register(builder);
    let builder = prompts::register(builder);
    let builder = tasks::register(builder);
    builder.build()
}

/// The input schema of a tool without parameters, as the spec recommends it.
pub(crate) fn no_arguments() -> JsonObject {
    object(json!({"type": "object", "additionalProperties": false}))
}

/// The object inside a `json!` literal that is known to be one.
pub(crate) fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => unreachable!("a JSON object literal, not {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_builds_and_describes_everything() {
        let server = build_server().expect("fixture builds");
        let tools = server.tools();
        assert!(tools.len() >= 20, "{} tools", tools.len());
        for tool in &tools {
            assert!(
                tool.description.as_deref().is_some_and(|d| !d.is_empty()),
                "{} has no description",
                tool.name
            );
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        }
    }
}
