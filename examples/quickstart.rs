//! Three tools with the macros: typed arguments, application state, structured output. Serve it
//! on stdio with `cargo run --example quickstart`, or add `-- --http 127.0.0.1:8080`.
use std::sync::atomic::{AtomicU64, Ordering};

use kelson::prelude::*;

/// Returns the text unchanged.
#[tool(read_only)]
async fn echo(text: String) -> String {
    text
}

/// Counts the calls of this tool.
#[tool]
async fn hits(count: State<AtomicU64>) -> String {
    (count.fetch_add(1, Ordering::Relaxed) + 1).to_string()
}

/// Adds two numbers.
#[tool(read_only)]
async fn add(a: f64, b: f64) -> Json<f64> {
    Json(a + b)
}

fn main() -> kelson::Result<()> {
    let server = Server::builder("quickstart", "1.0.0").state(AtomicU64::new(0));
    kelson::run(server.routes([echo_tool(), hits_tool(), add_tool()]))
}
