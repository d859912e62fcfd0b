//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) from the client's side: a
//! `tools/call` answered with a task is polled with `tasks/get` until it ends, its input requests
//! are answered with the installed handlers and sent with `tasks/update`, and a call given up is
//! cancelled with `tasks/cancel`. The explicit methods give the handle to callers who want it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use kelson_jsonrpc::{Id, RawValue};
use kelson_types::{
    CallToolResult, ClientCapabilities, DetailedTask, GetTaskResult, InputRequests, InputResponses,
    JsonObject, NotificationMeta, ProgressNotificationParams, TASKS_EXTENSION, Task, TaskStatus,
    method_names,
};
use serde_json::Value;

use crate::client::{Hints, Inner};
use crate::methods::{Answer, object};
use crate::request::{Options, Request};
use crate::result::{Kind, decode, result_kind};
use crate::{Client, Error, Violation};

/// The shortest wait between two polls, whatever the server asks: a server cannot make the
/// client poll in a tight loop.
pub(crate) const MIN_POLL: Duration = Duration::from_millis(100);
/// The longest wait between two polls: a server asking for hours is still asked every so often.
pub(crate) const MAX_POLL: Duration = Duration::from_secs(30);
/// The wait between polls when the server names none.
pub(crate) const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// The longest `tasks/cancel` is waited for when a call is given up.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// `capabilities` with the tasks extension declared (as `{}`).
pub(crate) fn declare(mut capabilities: ClientCapabilities) -> ClientCapabilities {
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION.to_owned(), Default::default());
    capabilities
}

/// The wait before the next poll: the server's `pollIntervalMs` within [`MIN_POLL`] and
/// [`MAX_POLL`], [`DEFAULT_POLL`] without one.
pub(crate) fn poll_interval(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_POLL, |ms| {
        Duration::from_millis(ms).clamp(MIN_POLL, MAX_POLL)
    })
}

/// What [`Client::call_tool_as_task`] got back.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TaskOrResult {
    /// The server answered the call at once (the tool does not run as a task, or finished before
    /// it became one, or the session is of the handshake era).
    Result(CallToolResult),
    /// The call became this task: poll it with [`Client::get_task`] or wait for it with
    /// [`Client::wait_task`].
    Task(Task),
}

/// What a call given up does to its task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Abort {
    /// Cancels it (`tasks/cancel`): the task was the client's business, not the caller's.
    Cancel,
    /// Leaves it running, unless the caller's token cancelled the call: the caller holds the
    /// handle.
    Leave,
}

impl Client {
    /// `tools/call` declaring the tasks extension, without waiting for a task it becomes: the
    /// result when the server answers at once, else the task's handle. Input the server asks for
    /// before the task exists is gathered with the installed handlers, as for
    /// [`call_tool`](Self::call_tool). The extension is declared on this request even when
    /// [`ClientBuilder::tasks`](crate::ClientBuilder::tasks) turned it off; on a handshake-era
    /// session the call is a plain one.
    pub fn call_tool_as_task(
        &self,
        name: impl Into<String>,
        arguments: Value,
    ) -> Request<'_, TaskOrResult> {
        let name = name.into();
        Request::new(self, move |c, mut o| {
            Box::pin(async move {
                o.declare_tasks = true;
                let arguments = object(arguments)?;
                match c
                    .inner
                    .start_tool_call(&name, arguments.as_ref(), &o)
                    .await?
                {
                    Answer::Done(result, _) => Ok(TaskOrResult::Result(result)),
                    Answer::Task(created, raw) => {
                        o.deliver_result(&raw);
                        Ok(TaskOrResult::Task(created.task))
                    }
                }
            })
        })
    }

    /// `tasks/get`: the task as it stands, with its result once completed, its error once failed
    /// and its input requests while it waits for input. An unknown (or expired, or another
    /// principal's) task is a protocol error (-32602).
    pub fn get_task(&self, task_id: impl Into<String>) -> Request<'_, DetailedTask> {
        let id = task_id.into();
        Request::new(self, move |c, o| {
            Box::pin(async move {
                c.inner.modern_only()?;
                let (task, raw) = c.inner.fetch_task(&id, &o).await?;
                o.deliver_result(&raw);
                Ok(task)
            })
        })
    }

    /// `tasks/update`: answers to the task's input requests, by key. Answers to keys the task is
    /// not waiting for are ignored by the server.
    pub fn update_task(
        &self,
        task_id: impl Into<String>,
        responses: InputResponses,
    ) -> Request<'_, ()> {
        let id = task_id.into();
        Request::new(self, move |c, o| {
            Box::pin(async move {
                c.inner.modern_only()?;
                c.inner.update_task(&id, &responses, &o).await
            })
        })
    }

    /// `tasks/cancel`: stops the task. Cancelling a finished task changes nothing and succeeds.
    pub fn cancel_task(&self, task_id: impl Into<String>) -> Request<'_, ()> {
        let id = task_id.into();
        Request::new(self, move |c, o| {
            Box::pin(async move {
                c.inner.modern_only()?;
                c.inner.cancel_task(&id, &o).await
            })
        })
    }

    /// Polls the task until it ends and returns its result as [`call_tool`](Self::call_tool)
    /// would: `completed` gives the tool's result, `failed` the JSON-RPC error as
    /// [`Error::Protocol`], `cancelled` [`Error::TaskCancelled`]. Its input requests are answered
    /// with the installed handlers; its status changes go to the progress callback
    /// ([`Request::on_progress`]: the token is the task's id, the message its status message or
    /// `task STATUS`, and `_meta` holds the status under [`TASK_STATUS_KEY`]). The call's
    /// [`cancel_token`](Request::cancel_token) cancels the task (`tasks/cancel`); a timeout ([`Request::max_time`], the hard maximum, bounds the whole
    /// wait) or a dropped future only stops waiting, and the task runs on.
    pub fn wait_task(&self, task_id: impl Into<String>) -> Request<'_, CallToolResult> {
        let id = task_id.into();
        Request::new(self, move |c, o| {
            Box::pin(async move {
                c.inner.modern_only()?;
                let (task, _) = c.inner.fetch_task(&id, &Options::for_poll(&o)).await?;
                c.inner
                    .follow(task.task, &o, Abort::Leave, method_names::TASKS_GET)
                    .await
            })
        })
    }
}

impl Options {
    /// The options of one request made while following a task: the call's idle timeout, the
    /// extension declared, and none of the call's callbacks.
    fn for_poll(options: &Options) -> Options {
        Options {
            timeout: options.timeout,
            declare_tasks: true,
            ..Options::default()
        }
    }
}

/// Cancels the task when dropped armed: a transparent call whose future was dropped mid-task.
struct CancelOnDrop {
    inner: Arc<Inner>,
    id: String,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Best effort: without a runtime (dropped while it shuts down) there is nobody to send it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let inner = self.inner.clone();
            let id = std::mem::take(&mut self.id);
            runtime.spawn(async move { inner.cancel_quietly(&id).await });
        }
    }
}

/// The `_meta` member of the progress a task's status change is reported as (see
/// [`Client::wait_task`]): the task's status, e.g. `"working"`. The notification is made by this
/// client, never sent by a server, so the key is not one of the spec's.
pub const TASK_STATUS_KEY: &str = "taskStatus";

/// The task's status and message as last reported, and how many reports were made.
#[derive(Default)]
struct Seen {
    last: Option<(TaskStatus, Option<String>)>,
    reports: f64,
}

impl Seen {
    /// Reports a change of status or message through the call's progress callback: the message,
    /// or the status when there is none. Terminal statuses are not reported: the result follows.
    fn report(&mut self, task: &Task, options: &Options) {
        let now = (task.status.clone(), task.status_message.clone());
        if self.last.as_ref() == Some(&now) || task.status.is_terminal() {
            return;
        }
        self.last = Some(now);
        let Some(callback) = &options.progress else {
            return;
        };
        self.reports += 1.0;
        let message = match &task.status_message {
            Some(message) => message.clone(),
            None => format!("task {}", task.status),
        };
        let token = Id::Str(task.task_id.as_str().into());
        let mut params = ProgressNotificationParams::new(token, self.reports).with_message(message);
        // The status too, which the message alone does not give once the task has one of its own.
        let mut meta = NotificationMeta::default();
        meta.extra
            .insert(TASK_STATUS_KEY.into(), Value::from(task.status.as_str()));
        params.meta = Some(meta);
        callback(&params);
    }
}

impl Inner {
    fn modern_only(&self) -> Result<(), Error> {
        if self.era().is_legacy() {
            return Err(Error::Unsupported(
                "tasks (they need protocol revision 2026-07-28; this session is of the handshake era)",
            ));
        }
        Ok(())
    }

    fn task_params(id: &str) -> (JsonObject, Hints) {
        let mut params = JsonObject::new();
        params.insert("taskId".into(), Value::from(id));
        // spec SEP-2663 with 2026-07-28 basic/transports/streamable-http: Mcp-Name carries the
        // task id on tasks/*.
        let hints = Hints {
            name: Some(id.to_owned()),
            param_headers: Vec::new(),
        };
        (params, hints)
    }

    /// `tasks/get`: the task, and the result as received (for [`Request::on_result`] and the
    /// completed result's own text).
    pub(crate) async fn fetch_task(
        &self,
        id: &str,
        options: &Options,
    ) -> Result<(DetailedTask, Box<RawValue>), Error> {
        let (params, hints) = Self::task_params(id);
        let options = Options {
            declare_tasks: true,
            ..options.clone()
        };
        let raw = self
            .send(method_names::TASKS_GET, params, hints, &options)
            .await?;
        result_kind(method_names::TASKS_GET, &raw, false, false)?;
        let got: GetTaskResult = decode(method_names::TASKS_GET, &raw)?;
        Ok((got.task, raw))
    }

    pub(crate) async fn update_task(
        &self,
        id: &str,
        responses: &InputResponses,
        options: &Options,
    ) -> Result<(), Error> {
        let (mut params, hints) = Self::task_params(id);
        params.insert(
            "inputResponses".into(),
            serde_json::to_value(responses).expect("input responses serialize"),
        );
        let options = Options {
            declare_tasks: true,
            ..options.clone()
        };
        let raw = self
            .send(method_names::TASKS_UPDATE, params, hints, &options)
            .await?;
        result_kind(method_names::TASKS_UPDATE, &raw, false, false)?;
        options.deliver_result(&raw);
        Ok(())
    }

    pub(crate) async fn cancel_task(&self, id: &str, options: &Options) -> Result<(), Error> {
        let (params, hints) = Self::task_params(id);
        let options = Options {
            declare_tasks: true,
            ..options.clone()
        };
        let raw = self
            .send(method_names::TASKS_CANCEL, params, hints, &options)
            .await?;
        result_kind(method_names::TASKS_CANCEL, &raw, false, false)?;
        options.deliver_result(&raw);
        Ok(())
    }

    /// `tasks/cancel` for a call given up: bounded, and its failure only logged (the call
    /// already failed for its own reason).
    async fn cancel_quietly(&self, id: &str) {
        let options = Options {
            timeout: Some(CANCEL_WAIT.min(self.config.timeout)),
            max_time: Some(CANCEL_WAIT),
            ..Options::default()
        };
        match self.cancel_task(id, &options).await {
            Ok(()) => {}
            // The server cannot be reached: the call's own error says so, and the caller
            // reports that (a warning here would repeat it in the library's words).
            Err(e) if e.kind() == crate::ErrorKind::Transport => {
                tracing::debug!(task = id, error = %e, "the task could not be cancelled");
            }
            Err(e) => tracing::warn!(task = id, error = %e, "the task could not be cancelled"),
        }
    }

    /// Waits for a `tools/call` that became `task` and returns its result as the call's.
    pub(crate) async fn drive_task(
        self: &Arc<Self>,
        task: Task,
        options: &Options,
        abort: Abort,
    ) -> Result<CallToolResult, Error> {
        let mut guard = CancelOnDrop {
            inner: self.clone(),
            id: task.task_id.clone(),
            armed: abort == Abort::Cancel,
        };
        let outcome = self
            .follow(task, options, abort, method_names::TOOLS_CALL)
            .await;
        // `follow` cancelled it already when it had to.
        guard.armed = false;
        outcome
    }

    /// Follows `task` until it ends, under the call's hard maximum and cancellation token. A
    /// wait given up cancels the task when `abort` says so, or the caller's token fired.
    async fn follow(
        &self,
        task: Task,
        options: &Options,
        abort: Abort,
        method: &'static str,
    ) -> Result<CallToolResult, Error> {
        let id = task.task_id.clone();
        let hard = options.max_time.unwrap_or(self.config.max_time);
        let waited = tokio::select! {
            outcome = self.poll(task, options) => outcome,
            () = options.cancelled() => Err(Error::Cancelled {
                method: method.to_owned(),
                task_id: Some(id.clone()),
            }),
            () = tokio::time::sleep(hard) => Err(Error::Timeout {
                method: method.to_owned(),
                after: hard,
                hard: true,
            }),
        };
        match waited {
            // The task ended, one way or another: nothing to cancel.
            Ok(ended) => ended,
            Err(e) => {
                if abort == Abort::Cancel || matches!(e, Error::Cancelled { .. }) {
                    self.cancel_quietly(&id).await;
                }
                Err(gone(e, &id))
            }
        }
    }

    /// Polls until the task ends. The outer error is a failure to follow it (the task may still
    /// run); the inner result is how the task ended.
    async fn poll(
        &self,
        task: Task,
        options: &Options,
    ) -> Result<Result<CallToolResult, Error>, Error> {
        let id = task.task_id.clone();
        let poll_options = Options::for_poll(options);
        let mut seen = Seen::default();
        seen.report(&task, options);
        let mut interval = poll_interval(task.poll_interval_ms);
        let mut status = task.status;
        // Keys answered while the task still shows them (until the server has taken the
        // answers): not asked again.
        let mut answered: HashSet<String> = HashSet::new();
        let mut updates = 0;
        loop {
            if !status.is_terminal() {
                tokio::time::sleep(interval).await;
            }
            let (detailed, raw) = self.fetch_task(&id, &poll_options).await?;
            seen.report(&detailed.task, options);
            status = detailed.task.status.clone();
            if let Some(ms) = detailed.task.poll_interval_ms {
                interval = poll_interval(Some(ms));
            }
            match &status {
                TaskStatus::Completed => return Ok(completed(&raw, options)),
                TaskStatus::Failed => {
                    return Ok(Err(match detailed.error {
                        Some(error) => Error::protocol(method_names::TOOLS_CALL, error),
                        None => Error::malformed(
                            method_names::TASKS_GET,
                            "a failed task without its error",
                        ),
                    }));
                }
                TaskStatus::Cancelled => {
                    return Ok(Err(Error::TaskCancelled {
                        task_id: id,
                        status_message: detailed.task.status_message,
                    }));
                }
                TaskStatus::InputRequired => {
                    let pending: InputRequests = detailed
                        .input_requests
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|(key, _)| !answered.contains(key))
                        .collect();
                    if pending.is_empty() {
                        continue;
                    }
                    if updates >= self.config.max_rounds {
                        return Err(Violation::TooManyRounds {
                            method: method_names::TASKS_UPDATE.to_owned(),
                            rounds: updates,
                        }
                        .into());
                    }
                    updates += 1;
                    answered.extend(pending.keys().cloned());
                    let responses = self.handlers.answer_all(pending).await?;
                    self.update_task(&id, &responses, &poll_options).await?;
                }
                TaskStatus::Working => answered.clear(),
                other => {
                    return Err(Violation::UnknownTaskStatus {
                        task_id: id,
                        status: other.to_string(),
                    }
                    .into());
                }
            }
        }
    }
}

/// A failure to follow task `id`, in words when the server stopped listening meanwhile (it shut
/// down, or was stopped, while the call ran): a refused connection to a server that created the
/// task is the server gone, not a server that was never there.
fn gone(error: Error, id: &str) -> Error {
    match &error {
        Error::Http(kelson_http::client::HttpError::Connect { reason, .. })
            if reason == "connection refused" =>
        {
            Error::disconnected(format!(
                "the server shut down while the call ran (as task {id}): {error}"
            ))
        }
        _ => error,
    }
}

/// The result of a completed task, from the text of its `tasks/get` answer (delivered as it is
/// to [`Request::on_result`]).
fn completed(raw: &RawValue, options: &Options) -> Result<CallToolResult, Error> {
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(borrow)]
        result: Option<&'a RawValue>,
    }
    let peek: Peek<'_> = serde_json::from_str(raw.get())
        .map_err(|e| Error::malformed(method_names::TASKS_GET, e))?;
    let Some(result) = peek.result else {
        return Err(Error::malformed(
            method_names::TASKS_GET,
            "a completed task without its result",
        ));
    };
    let method = method_names::TOOLS_CALL;
    if result_kind(method, result, false, false)? != Kind::Complete {
        return Err(Error::malformed(
            method,
            "a task's result that is not final",
        ));
    }
    options.deliver_result(result);
    decode(method, result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_intervals_are_bounded() {
        assert_eq!(poll_interval(None), DEFAULT_POLL);
        assert_eq!(poll_interval(Some(0)), MIN_POLL);
        assert_eq!(poll_interval(Some(250)), Duration::from_millis(250));
        assert_eq!(poll_interval(Some(u64::MAX)), MAX_POLL);
    }

    #[test]
    fn the_extension_is_declared_as_an_empty_object() {
        let caps = declare(ClientCapabilities::default().with_elicitation_form());
        let value = serde_json::to_value(&caps).unwrap();
        assert_eq!(value["extensions"][TASKS_EXTENSION], serde_json::json!({}));
        assert!(caps.supports_elicitation_form());
    }

    #[test]
    fn a_completed_result_is_read_from_the_answers_text() {
        let raw = RawValue::from_string(
            r#"{"resultType":"complete","taskId":"t","status":"completed","result":{"content":[{"type":"text","text":"hi"}],"isError":false}}"#
                .to_owned(),
        )
        .unwrap();
        let seen = Arc::new(std::sync::Mutex::new(String::new()));
        let sink = seen.clone();
        let options = Options {
            result: Some(Arc::new(move |r: &RawValue| {
                *sink.lock().unwrap() = r.get().to_owned()
            })),
            ..Options::default()
        };
        let result = completed(&raw, &options).unwrap();
        assert_eq!(result.content[0].as_text(), Some("hi"));
        assert_eq!(
            *seen.lock().unwrap(),
            r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#
        );
        let missing =
            RawValue::from_string(r#"{"taskId":"t","status":"completed"}"#.to_owned()).unwrap();
        assert!(
            completed(&missing, &Options::default())
                .unwrap_err()
                .to_string()
                .contains("without its result")
        );
    }
}
