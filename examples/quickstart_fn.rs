//! The quickstart without macros: each tool is a plain async function; its arguments are a struct
//! whose JSON Schema is generated. `cargo run --example quickstart_fn [-- --http ADDR]`.
use std::sync::atomic::{AtomicU64, Ordering};

use kelson::prelude::*;

/// Returns the text unchanged.
#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

/// Adds two numbers.
#[derive(Deserialize, JsonSchema)]
struct Add {
    a: f64,
    b: f64,
}

fn main() -> kelson::Result<()> {
    let server = Server::builder("quickstart", "1.0.0")
        .state(AtomicU64::new(0))
        .tool(
            ToolDef::new("echo").read_only(true),
            |Echo { text }: Echo| async { text },
        )
        .tool("hits", |n: State<AtomicU64>| async move {
            (n.fetch_add(1, Ordering::Relaxed) + 1).to_string()
        })
        .tool("add", |Add { a, b }: Add| async move { Json(a + b) });
    kelson::run(server)
}
