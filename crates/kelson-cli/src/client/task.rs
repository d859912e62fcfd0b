//! Tasks (the `io.modelcontextprotocol/tasks` extension): `kelson call --task`, which prints the
//! handle and returns, and `kelson task get|wait|cancel ID`; and Ctrl-C during a call, which cancels
//! the request or the task it became.

use std::future::IntoFuture as _;

use kelson_client::{CancellationToken, Client, Request, TaskOrResult};
use kelson_types::{
    CallToolResult, DetailedTask, ElicitRequestParams, InputRequest, JsonObject, Task, TaskStatus,
};
use serde_json::Value;

use super::connect::stderr_style;
use super::media::Media;
use super::output::clean_line;
use super::progress::Progress;
use super::verbs::{Interrupt, Out, show_result};
use super::{CliError, TaskAction, TaskIdArgs, TaskWaitArgs};

/// Runs `kelson task ...`.
pub(super) async fn run(
    client: &Client,
    out: &Out,
    media: &mut Media,
    progress: &Progress,
    action: TaskAction,
) -> Result<(), CliError> {
    match action {
        TaskAction::Get(args) => get(client, out, media, args).await,
        TaskAction::Wait(args) => wait(client, out, media, progress, args).await,
        TaskAction::Cancel(args) => cancel(client, out, args).await,
    }
}

/// Watches for Ctrl-C from now on.
pub(super) fn watch_interrupt() -> Result<Interrupt, CliError> {
    Interrupt::new().map_err(|e| CliError::usage(format!("cannot watch for Ctrl-C: {e}")))
}

/// Awaits `request`; Ctrl-C (`interrupt`, watched since before anything was said about it) fires
/// `cancel` (the request's token) and waits for the request to wind down (a task it follows is
/// cancelled with tasks/cancel), then fails as interrupted.
pub(super) async fn until_interrupted<'c, T: Send + 'c>(
    request: Request<'c, T>,
    cancel: &CancellationToken,
    progress: &Progress,
    mut interrupt: Interrupt,
) -> Result<T, CliError> {
    let future = request.into_future();
    tokio::pin!(future);
    tokio::select! {
        result = &mut future => return result.map_err(CliError::from),
        () = interrupt.wait() => {}
    }
    cancel.cancel();
    match future.await {
        Err(kelson_client::Error::Cancelled { task_id, .. }) => {
            Err(interrupted(progress, task_id.as_deref()))
        }
        other => other.map_err(CliError::from),
    }
}

/// The error of a command Ctrl-C stopped.
fn interrupted(progress: &Progress, task: Option<&str>) -> CliError {
    progress.finish();
    CliError::Interrupted(match task {
        Some(id) => format!(
            "interrupted: cancelled the task {} (tasks/cancel sent)",
            clean_line(id)
        ),
        None => "interrupted: the call was cancelled".to_owned(),
    })
}

/// `kelson call NAME --task`: the handle, or the result when the server answered at once.
pub(super) async fn start(
    client: &Client,
    out: &Out,
    media: &mut Media,
    name: &str,
    arguments: JsonObject,
    structured: bool,
) -> Result<(), CliError> {
    let answer = out
        .keep(client.call_tool_as_task(name, Value::Object(arguments)))
        .await?;
    let task = match answer {
        TaskOrResult::Task(task) => task,
        TaskOrResult::Result(result) => {
            let note = stderr_style().dim(&if client.era().is_legacy() {
                "(a handshake-era server has no tasks: the call ran as a plain one)".to_owned()
            } else {
                "(the server answered at once, without a task)".to_owned()
            });
            eprintln!("{note}");
            return show_result(out, media, name, &tool(name), &result, structured);
        }
        _ => {
            return Err(CliError::Protocol(
                "an answer kelson does not know".to_owned(),
            ));
        }
    };
    if out.json {
        out.json_result(&task);
    } else {
        out.print(&describe(out, &task));
        let id = clean_line(&task.task_id);
        let note = stderr_style().dim(&format!(
            "follow it with: kelson task wait {id} (or get, cancel), with the same server options"
        ));
        eprintln!("{note}");
    }
    Ok(())
}

/// `the tool "NAME"`, for messages.
fn tool(name: &str) -> String {
    format!("the tool {:?}", clean_line(name))
}

/// The task's lines, labelled: id, status (and message), poll interval, lifetime, times.
fn describe(out: &Out, task: &Task) -> String {
    let s = &out.style;
    let mut text = String::new();
    let mut line = |label: &str, value: String| {
        text.push_str(&format!("{}  {value}\n", s.bold(&format!("{label:<8}"))));
    };
    line("task", clean_line(&task.task_id).into_owned());
    let status = clean_line(task.status.as_str()).into_owned();
    let status = match task.status {
        TaskStatus::Completed => s.green(&status),
        TaskStatus::Failed | TaskStatus::Cancelled => s.red(&status),
        TaskStatus::InputRequired => s.yellow(&status),
        _ => status,
    };
    match &task.status_message {
        Some(message) => line("status", format!("{status}: {}", clean_line(message))),
        None => line("status", status),
    }
    if let Some(ms) = task.poll_interval_ms {
        line("poll", format!("every {}", millis(ms)));
    }
    line(
        "expires",
        match task.ttl_ms {
            Some(ms) => format!("{} after its creation", millis(ms)),
            None => "never (kept until the server stops)".to_owned(),
        },
    );
    line("created", clean_line(&task.created_at).into_owned());
    line("updated", clean_line(&task.last_updated_at).into_owned());
    text
}

/// `500 ms`, `1.5 s`, `2 min`, `1 h`: a duration in milliseconds as people write it.
fn millis(ms: u64) -> String {
    const MINUTE: u64 = 60_000;
    const HOUR: u64 = 60 * MINUTE;
    let trim = |value: f64, unit: &str| {
        let text = format!("{value:.1}");
        format!("{} {unit}", text.trim_end_matches(".0"))
    };
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..MINUTE => trim(ms as f64 / 1000.0, "s"),
        MINUTE..HOUR => trim(ms as f64 / MINUTE as f64, "min"),
        _ => trim(ms as f64 / HOUR as f64, "h"),
    }
}

/// What a task waits for, one line per input request.
fn input_lines(task: &DetailedTask) -> String {
    let mut text = String::new();
    for (key, request) in task.input_requests.iter().flatten() {
        let what = match request {
            InputRequest::Elicit(ElicitRequestParams::Form(form)) => {
                format!("a form: {}", clean_line(&form.message))
            }
            InputRequest::Elicit(ElicitRequestParams::Url(url)) => format!(
                "a URL to open: {} ({})",
                clean_line(&url.message),
                clean_line(&url.url)
            ),
            InputRequest::CreateMessage(_) => "a sampling request".to_owned(),
            InputRequest::ListRoots(_) => "the client's roots".to_owned(),
        };
        text.push_str(&format!("  {}: {what}\n", clean_line(key)));
    }
    text
}

/// `kelson task get ID`.
async fn get(
    client: &Client,
    out: &Out,
    media: &mut Media,
    args: TaskIdArgs,
) -> Result<(), CliError> {
    let task = out.keep(client.get_task(args.id.clone())).await?;
    if out.json {
        out.json_result(&task);
    } else {
        out.print(&describe(out, &task.task));
    }
    let id = clean_line(&args.id).into_owned();
    match &task.task.status {
        TaskStatus::Completed => {
            if out.json {
                // The result is in the task as printed; only the exit status is left.
                let result: Option<CallToolResult> =
                    task.result.and_then(|r| serde_json::from_value(r).ok());
                return match result {
                    Some(r) if r.is_error == Some(true) => Err(CliError::ToolError),
                    _ => Ok(()),
                };
            }
            let Some(result) = task.result else {
                return Err(CliError::Protocol(format!(
                    "the task {id} completed without its result"
                )));
            };
            let result: CallToolResult = serde_json::from_value(result).map_err(|e| {
                CliError::Protocol(format!("the result of the task {id} is malformed: {e}"))
            })?;
            out.print(&format!("{}\n", out.style.dim("result:")));
            show_result(
                out,
                media,
                "task",
                &format!("the task {id}"),
                &result,
                false,
            )
        }
        TaskStatus::Failed => {
            let error = task.error.map_or_else(
                || "no error given".to_owned(),
                |e| format!("JSON-RPC error {}: {}", e.code, e.message),
            );
            Err(CliError::Protocol(format!("the task {id} failed: {error}")))
        }
        TaskStatus::Cancelled => Err(CliError::Protocol(format!("the task {id} was cancelled"))),
        TaskStatus::InputRequired if !out.json => {
            out.print(&format!(
                "{}\n{}",
                out.style.dim("waiting for input:"),
                input_lines(&task)
            ));
            let note = stderr_style().dim(&format!(
                "kelson task wait {id} asks for it (--no-input declines)"
            ));
            eprintln!("{note}");
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `kelson task wait ID`.
async fn wait(
    client: &Client,
    out: &Out,
    media: &mut Media,
    progress: &Progress,
    args: TaskWaitArgs,
) -> Result<(), CliError> {
    let id = clean_line(&args.id).into_owned();
    let bar = progress.clone();
    let cancel = CancellationToken::new();
    let request = out
        .keep(client.wait_task(args.id.clone()))
        .on_progress(move |p| bar.update(p))
        .cancel_token(cancel.clone());
    let interrupt = watch_interrupt()?;
    let note = stderr_style().dim(&format!("waiting for the task {id} (Ctrl-C cancels it)"));
    eprintln!("{note}");
    progress.watch(&format!("the task {id}"));
    let result = match until_interrupted(request, &cancel, progress, interrupt).await {
        Ok(result) => result,
        Err(CliError::Client(e)) if e.kind() == kelson_client::ErrorKind::Timeout => {
            return Err(CliError::Explained {
                error: Box::new(CliError::Client(e)),
                hint: Some(format!(
                    "the task {id} still runs: kelson task wait {id} again, or kelson task cancel {id}"
                )),
                stderr: None,
            });
        }
        Err(e) => return Err(e),
    };
    progress.finish();
    show_result(
        out,
        media,
        "task",
        &format!("the task {id}"),
        &result,
        args.structured,
    )
}

/// `kelson task cancel ID`.
async fn cancel(client: &Client, out: &Out, args: TaskIdArgs) -> Result<(), CliError> {
    let id = clean_line(&args.id).into_owned();
    // A task that already ended is left as it is (the server would acknowledge the cancel and
    // change nothing); saying so needs its status from before.
    let before = if out.json {
        None
    } else {
        Some(client.get_task(args.id.clone()).await?)
    };
    if let Some(before) = &before
        && before.task.status.is_terminal()
    {
        let status = clean_line(before.task.status.as_str()).into_owned();
        out.print(&format!(
            "the task {id} had already ended ({status}); nothing to cancel\n"
        ));
        return Ok(());
    }
    out.keep(client.cancel_task(args.id.clone())).await?;
    if out.json {
        out.json_result(&serde_json::json!({}));
        return Ok(());
    }
    let after = client.get_task(args.id.clone()).await?;
    let status = clean_line(after.task.status.as_str()).into_owned();
    let text = match after.task.status {
        TaskStatus::Cancelled => format!("cancelled the task {id}"),
        ref s if s.is_terminal() => {
            format!("the task {id} ended ({status}) before it could be cancelled")
        }
        _ => format!("asked the task {id} to stop; it is {status} for now"),
    };
    out.print(&format!("{text}\n"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(millis(500), "500 ms");
        assert_eq!(millis(1_000), "1 s");
        assert_eq!(millis(1_500), "1.5 s");
        assert_eq!(millis(120_000), "2 min");
        assert_eq!(millis(3_600_000), "1 h");
    }
}
