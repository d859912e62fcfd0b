//! Long work: `count` reports progress at every step and stops as soon as the client cancels
//! (over stdio a `notifications/cancelled`, over HTTP a closed response).
//! `cargo run -p mcp --example progress [-- --http ADDR]`.
use std::time::Duration;

use mcp::prelude::*;

/// Counts to `to`, one step every `step_ms` milliseconds, reporting progress.
#[tool(read_only)]
async fn count(ctx: RequestContext, to: u32, step_ms: Option<u64>) -> Result<String, HandlerError> {
    let step = Duration::from_millis(step_ms.unwrap_or(100));
    for i in 1..=to {
        tokio::select! {
            () = ctx.cancelled() => return Err(format!("cancelled at {i} of {to}").into()),
            () = tokio::time::sleep(step) => {}
        }
        ctx.progress(
            f64::from(i),
            Some(f64::from(to)),
            Some(&format!("{i} of {to}")),
        );
    }
    Ok(format!("counted to {to}"))
}

fn main() -> mcp::Result<()> {
    mcp::run(Server::builder("progress", "1.0.0").route(count_tool()))
}
