//! Long work: `count` reports progress at every step and stops as soon as the client cancels
//! (over stdio a `notifications/cancelled`, over HTTP a closed response), saying so on stderr.
//! `cargo run --example progress [-- --http ADDR]`.
use std::time::Duration;

use kelson::prelude::*;

/// Counts to `to`, one step every `step_ms` milliseconds, reporting progress.
#[tool(read_only)]
async fn count(ctx: RequestContext, to: u32, step_ms: Option<u64>) -> Result<String, HandlerError> {
    let step = Duration::from_millis(step_ms.unwrap_or(100));
    // A cancelled call's future is dropped at its next await. Work on a task of its own outlives
    // that, so it watches the request's cancellation to stop as well.
    let work = tokio::spawn(async move {
        for i in 1..=to {
            tokio::select! {
                () = ctx.cancelled() => {
                    eprintln!("count: cancelled at {i} of {to}");
                    return Err(format!("cancelled at {i} of {to}"));
                }
                () = tokio::time::sleep(step) => {}
            }
            let message = format!("{i} of {to}");
            ctx.progress(f64::from(i), Some(f64::from(to)), Some(&message));
        }
        Ok(format!("counted to {to}"))
    });
    Ok(work.await??)
}

fn main() -> kelson::Result<()> {
    kelson::run(Server::builder("progress", "1.0.0").route(count_tool()))
}
