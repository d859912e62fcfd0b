//! Running a tool call that may become a task: the request's side (answer inline, or create the
//! task and answer with it) and the runner that drives the handler to the end, through any number
//! of input rounds.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use kelson_jsonrpc::{ErrorObject, Id};
use kelson_types::{CallToolResult, CreateTaskResult, JsonObject, RequestMeta, TaskStatus};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::{Running, Settled, TaskChange, TaskLink, TaskRecord, TaskStart, TaskStoreError};
use crate::context::Mrtr;
use crate::error::InputRequired;
use crate::handler::ToolResult;
use crate::mrtr::Binding;
use crate::registry::ToolEntry;
use crate::router::NotificationSink;
use crate::router::{Outcome, ReplyMessage, RequestIo, Stopped, error_reply};
use crate::{Principal, RequestContext, Server};

/// How long a cancelled handler may go on to wind down before it is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The tool error a plain call stopped by the server's shutdown is answered with.
const SHUT_DOWN: &str = "The server is shutting down: the call was stopped before it finished.";

/// One call's handler, run by its own tokio task so that it can outlive the request.
pub(crate) struct Job {
    pub(crate) server: Server,
    pub(crate) tool: Arc<ToolEntry>,
    pub(crate) arguments: JsonObject,
    pub(crate) principal: Principal,
    pub(crate) meta: Box<RequestMeta>,
    pub(crate) request_id: Id,
    pub(crate) link: Arc<TaskLink>,
    /// The handler's cancellation: `tasks/cancel`, the task's expiry, the server's shutdown, or
    /// (before the call is a task) the request's end.
    pub(crate) cancel: CancellationToken,
    /// Woken by `tasks/update` when every input request is answered.
    pub(crate) resume: Arc<Notify>,
}

/// Forwards a plain call's notifications to its request, and drops them once the call is a task:
/// the request was answered, and progress and log messages are not sent for tasks (the task's
/// `statusMessage` carries progress instead).
struct Gate {
    inner: Arc<dyn NotificationSink>,
    link: Arc<TaskLink>,
}

impl NotificationSink for Gate {
    fn send(&self, message: Vec<u8>) {
        if self.link.is_inline() {
            self.inner.send(message);
        }
    }

    fn send_request(&self, message: Vec<u8>) {
        if self.link.is_inline() {
            self.inner.send_request(message);
        }
    }
}

impl Job {
    fn context(&self, mrtr: Mrtr, sink: Option<Arc<dyn NotificationSink>>) -> RequestContext {
        RequestContext::for_task(
            &self.server,
            self.principal.clone(),
            self.cancel.clone(),
            sink,
            self.request_id.clone(),
            self.meta.clone(),
            mrtr,
            self.link.clone(),
        )
    }

    fn running(&self) -> Running {
        Running {
            cancel: self.cancel.clone(),
            resume: self.resume.clone(),
        }
    }

    /// Runs the handler until it finishes, is cancelled, or (as a plain call) hands the request
    /// its outcome; as a task, each time it asks for input, waits for the answers and runs it again
    /// with them.
    async fn run(self, first: RequestContext) {
        let mut ctx = first;
        // Input keys asked during this task: a key is never reused once answered.
        let mut asked = HashSet::new();
        loop {
            let fut = Server::guarded(self.tool.handler.call(ctx, self.arguments.clone()), "tool");
            tokio::pin!(fut);
            let outcome = tokio::select! {
                out = &mut fut => out,
                () = self.cancel.cancelled() => {
                    self.stopped().await;
                    // The handler's cancellation fired: it gets a moment to see it and stop
                    // what it started (a statement on a database, say) before it is dropped.
                    let wound_down = tokio::time::timeout(CANCEL_GRACE, &mut fut).await.ok();
                    self.answer_shutdown(wound_down);
                    return;
                }
            };
            if self.server.inner.shutdown.is_cancelled() && self.link.is_inline() {
                // The handler saw the shutdown's cancellation and answered before the select
                // above did: it is answered as if the cancellation had been seen first.
                self.answer_shutdown(Some(outcome));
                return;
            }
            let settled = self
                .server
                .settle_tool(&self.tool, outcome.map_err(Stopped::Failed));
            let Some((task, settled)) = self.link.settle(settled) else {
                // A plain call, answered by its request.
                return;
            };
            let input = match settled {
                Settled::Input(input) => input,
                other => return self.finish(&task, other).await,
            };
            match self.await_input(&task, input, &mut asked).await {
                Some(mrtr) => ctx = self.context(mrtr, None),
                None => return self.release(&task),
            }
        }
    }

    fn store(&self) -> &dyn super::TaskStore {
        self.server.inner.tasks.store.as_ref()
    }

    /// Records `change` and tells listeners.
    async fn record(&self, task: &str, change: TaskChange) -> Option<TaskRecord> {
        match self.store().change(task, change, SystemTime::now()).await {
            Ok(changed) => {
                if let Some(record) = &changed {
                    self.server.task_changed(record);
                }
                changed
            }
            Err(e) => {
                tracing::error!(task, error = %e, "a task's state could not be recorded");
                None
            }
        }
    }

    /// The task is over for this runner.
    fn release(&self, task: &str) {
        self.server.inner.tasks.unregister(task);
        // Ends the expiry timer.
        self.cancel.cancel();
    }

    async fn finish(&self, task: &str, settled: Settled) {
        let change = match settled {
            Settled::Result(mut result, _) => {
                result.meta = None;
                let limit = self.server.inner.config.tasks.max_result_bytes;
                match serde_json::to_value(&result) {
                    Ok(value) if encoded_len(&value) <= limit => TaskChange::Completed(value),
                    Ok(_) => TaskChange::Failed(ErrorObject::internal_error(format_args!(
                        "the tool's result is larger than the {limit} bytes a task may keep"
                    ))),
                    Err(e) => TaskChange::Failed(ErrorObject::internal_error(format_args!(
                        "the tool's result could not be encoded: {e}"
                    ))),
                }
            }
            Settled::Error(e) => TaskChange::Failed(e),
            Settled::Input(_) => unreachable!("input is awaited, not recorded as an end"),
        };
        self.record(task, change).await;
        self.release(task);
    }

    /// The handler was stopped by its cancellation.
    async fn stopped(&self) {
        let Some(task) = self.link.task_id() else {
            // A plain call whose request ended: nobody waits for it.
            return;
        };
        if self.server.inner.shutdown.is_cancelled() {
            // A task left working would be polled forever.
            let e = ErrorObject::internal_error("the server stopped before the task finished");
            self.record(&task, TaskChange::Failed(e)).await;
        }
        // Otherwise it was cancelled (already recorded) or expired (deleted by the sweeper).
        self.release(&task);
    }

    /// A plain call stopped by the server's shutdown still has its request waiting: it is
    /// answered now, with a tool error saying why (the handler's own account of its stop after
    /// it), so that the client learns what happened instead of losing the connection or being
    /// handed a task that nobody will run. A result the handler finished with anyway is kept.
    fn answer_shutdown(&self, wound_down: Option<Result<ToolResult, ErrorObject>>) {
        if !self.server.inner.shutdown.is_cancelled() || !self.link.is_inline() {
            // The request ended or met its deadline (it answered itself), or the call is a task.
            return;
        }
        let settled = wound_down.map(|outcome| {
            self.server
                .settle_tool(&self.tool, outcome.map_err(Stopped::Failed))
        });
        let settled = match settled {
            Some(done @ Settled::Result(_, Outcome::Success)) => done,
            other => {
                let mut text = SHUT_DOWN.to_owned();
                if let Some(Settled::Result(result, _)) = &other
                    && let Some(said) = result.content.first().and_then(|c| c.as_text())
                {
                    text.push(' ');
                    text.push_str(said);
                }
                Settled::Result(CallToolResult::error(text), Outcome::ToolError)
            }
        };
        self.link.settle(settled);
    }

    /// Parks the task in `input_required` until every request is answered, then returns the
    /// round to run the handler with: every answer so far and the handler's state. `None` when
    /// the task ended meanwhile.
    async fn await_input(
        &self,
        task: &str,
        input: InputRequired,
        asked: &mut HashSet<String>,
    ) -> Option<Mrtr> {
        let InputRequired {
            requests,
            mut answers,
            state,
        } = input;
        let poll = self.server.inner.config.tasks.poll_interval;
        if requests.is_empty() {
            // "Try again later" (a `requestState` alone): run again after a poll interval.
            tokio::select! {
                () = tokio::time::sleep(poll) => {}
                () = self.cancel.cancelled() => { self.stopped().await; return None; }
            }
        } else {
            if let Some(key) = requests.keys().find(|k| asked.contains(*k)) {
                let e = ErrorObject::internal_error(format_args!(
                    "the tool asked again for the input {key:?}, which was already answered"
                ));
                self.record(task, TaskChange::Failed(e)).await;
                return None;
            }
            asked.extend(requests.keys().cloned());
            self.record(task, TaskChange::InputRequired(requests))
                .await?;
            loop {
                tokio::select! {
                    () = self.resume.notified() => {}
                    // A store shared with other instances takes answers there: look now and then.
                    () = tokio::time::sleep(poll) => {}
                    () = self.cancel.cancelled() => { self.stopped().await; return None; }
                }
                match self.store().get(task).await {
                    Ok(Some(record)) if record.status == TaskStatus::Working => break,
                    Ok(Some(record)) if !record.status.is_terminal() => {}
                    Ok(_) => return None,
                    Err(e) => tracing::warn!(task, error = %e, "a task could not be read"),
                }
            }
            match self.store().take_answers(task).await {
                Ok(taken) => answers.extend(taken),
                Err(e) => {
                    let e = ErrorObject::internal_error(format_args!(
                        "the task's answers could not be read: {e}"
                    ));
                    self.record(task, TaskChange::Failed(e)).await;
                    return None;
                }
            }
        }
        Some(Mrtr {
            answers,
            pending: Default::default(),
            state,
            // Answers that came through tasks/update were asked for by this server, for this
            // principal's task: as good as a verified requestState.
            nonce: Some(super::random_id()),
        })
    }
}

fn encoded_len(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// What a tool call that may run as a task needs from `tools/call`.
pub(crate) struct TaskCall<'a> {
    pub(crate) id: &'a Id,
    pub(crate) tool: Arc<ToolEntry>,
    pub(crate) arguments: JsonObject,
    pub(crate) meta: Box<RequestMeta>,
    pub(crate) mrtr: Mrtr,
    pub(crate) binding: &'a Binding<'a>,
}

impl Server {
    /// Serves a `tools/call` that may become a task.
    pub(crate) async fn call_as_task(
        &self,
        call: TaskCall<'_>,
        io: &RequestIo<'_>,
    ) -> ReplyMessage {
        let TaskCall {
            id,
            tool,
            arguments,
            meta,
            mrtr,
            binding,
        } = call;
        let tasks = &self.inner.tasks;
        let config = &self.inner.config.tasks;
        let start = tool.tasks.start;
        let cancel = self.inner.shutdown.child_token();
        let owner = io.principal.id();

        if start == TaskStart::Immediately {
            if self.stopping() {
                return self.tool_reply(
                    id,
                    CallToolResult::error(format!(
                        "The tool {} was not started: the server is shutting down.",
                        tool.def.name
                    )),
                    Outcome::ToolError,
                );
            }
            let record = super::new_record(owner, config, &tasks.instance);
            if let Err(e) = tasks
                .store
                .insert(record.clone(), config.max_active_per_principal)
                .await
            {
                return self.no_task(id, &tool, e);
            }
            let job = Job {
                server: self.clone(),
                tool,
                arguments,
                principal: io.principal.clone(),
                meta,
                request_id: id.clone(),
                link: Arc::new(TaskLink::task(record.id.clone())),
                cancel,
                resume: Arc::new(Notify::new()),
            };
            let ctx = job.context(mrtr, None);
            tasks.register(&record.id, job.running());
            self.launch(&record, job.running());
            tokio::spawn(job.run(ctx));
            return self.task_reply(id, &record);
        }

        let (reply, mut settled) = oneshot::channel();
        let link = Arc::new(TaskLink::inline(reply));
        let job = Job {
            server: self.clone(),
            tool,
            arguments,
            principal: io.principal.clone(),
            meta,
            request_id: id.clone(),
            link: link.clone(),
            cancel: cancel.clone(),
            resume: Arc::new(Notify::new()),
        };
        let running = job.running();
        let sink = io.sink.clone().map(|inner| {
            Arc::new(Gate {
                inner,
                link: link.clone(),
            }) as Arc<dyn NotificationSink>
        });
        let ctx = job.context(mrtr, sink);
        let tool = job.tool.clone();
        tokio::spawn(job.run(ctx));
        // Until the call is a task, dropping the request (the client left) stops the handler.
        let stop_inline = cancel.clone().drop_guard();
        let deadline = self.inner.config.handler_timeout;
        let past_deadline = async {
            match deadline {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(past_deadline);
        let detach = async {
            match start {
                TaskStart::After(after) => tokio::select! {
                    () = tokio::time::sleep(after) => {}
                    () = link.detach.notified() => {}
                },
                _ => link.detach.notified().await,
            }
        };
        tokio::select! {
            done = &mut settled => return self.inline_reply(id, binding, done),
            () = detach => {}
            () = &mut past_deadline => return self.inline_deadline(id, &tool, &cancel),
        }

        // A stopping server makes no task: the call is answered when it ends, or when the
        // shutdown stops it (`Job::answer_shutdown`).
        let record = super::new_record(owner, config, &tasks.instance);
        let inserted = if self.stopping() {
            None
        } else {
            Some(
                tasks
                    .store
                    .insert(record.clone(), config.max_active_per_principal)
                    .await,
            )
        };
        match inserted {
            None => {}
            Some(Ok(())) => {
                tasks.register(&record.id, running.clone());
                // Looked at again: the shutdown may have begun while the store was written.
                if !self.stopping() && link.become_task(&record.id) {
                    stop_inline.disarm();
                    self.launch(&record, running);
                    return self.task_reply(id, &record);
                }
                // The handler finished first.
                tasks.unregister(&record.id);
                if let Err(e) = tasks.store.remove(&record.id).await {
                    tracing::warn!(error = %e, "an unused task could not be deleted");
                }
            }
            Some(Err(e)) => {
                tracing::info!(tool = %tool.def.name, error = %e, "the call stays a plain call");
            }
        }
        tokio::select! {
            done = &mut settled => self.inline_reply(id, binding, done),
            () = &mut past_deadline => self.inline_deadline(id, &tool, &cancel),
        }
    }

    /// From now on no call becomes a task: calls in flight that could have become tasks are
    /// answered when they end, and a tool that starts every call as a task refuses new calls
    /// with a tool error. A server that is about to stop calls this first (before a grace period
    /// in which it still serves), so that no client is handed a task that the stopping server
    /// would abandon; [`shutdown`](Self::shutdown) implies it. Tasks that exist already run on
    /// until the shutdown stops them.
    pub fn stop_new_tasks(&self) {
        self.inner
            .tasks
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the server has begun to stop: no new tasks.
    fn stopping(&self) -> bool {
        self.inner.shutdown.is_cancelled()
            || self
                .inner
                .tasks
                .closing
                .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Starts the expiry timer of a task registered as running here, and the sweeper.
    fn launch(&self, record: &TaskRecord, running: Running) {
        let tasks = &self.inner.tasks;
        if let Some(ttl) = record.ttl {
            let cancel = running.cancel;
            tokio::spawn(async move {
                tokio::select! {
                    () = tokio::time::sleep(ttl) => cancel.cancel(),
                    () = cancel.cancelled() => {}
                }
            });
        }
        tasks.start_sweeper(self);
    }

    fn inline_reply(
        &self,
        id: &Id,
        binding: &Binding<'_>,
        done: Result<Settled, oneshot::error::RecvError>,
    ) -> ReplyMessage {
        match done {
            Ok(settled) => self.settled_reply(id, binding, settled),
            // The runner ended without an outcome: only a bug does that.
            Err(_) => error_reply(
                Some(id),
                &ErrorObject::internal_error("the tool stopped without an answer"),
                false,
            ),
        }
    }

    fn inline_deadline(
        &self,
        id: &Id,
        tool: &ToolEntry,
        cancel: &CancellationToken,
    ) -> ReplyMessage {
        cancel.cancel();
        let limit = self.inner.config.handler_timeout.unwrap_or(Duration::ZERO);
        tracing::warn!(handler = "tool", limit = ?limit, "handler stopped at its deadline");
        let settled = self.settle_tool(tool, Err(Stopped::Deadline(limit)));
        match settled {
            Settled::Result(result, outcome) => self.tool_reply(id, result, outcome),
            Settled::Error(e) => error_reply(Some(id), &e, false),
            Settled::Input(_) => unreachable!("a deadline settles as a result"),
        }
    }

    /// The answer when no task could be created for a call that must start as one.
    fn no_task(&self, id: &Id, tool: &ToolEntry, e: TaskStoreError) -> ReplyMessage {
        match e {
            TaskStoreError::Unavailable(_) => {
                tracing::error!(tool = %tool.def.name, error = %e, "no task could be created");
                error_reply(
                    Some(id),
                    &ErrorObject::internal_error("the task could not be created"),
                    false,
                )
            }
            // The model can wait or cancel one: a tool error it can read.
            limit => self.tool_reply(
                id,
                CallToolResult::error(format!(
                    "The tool {} was not started: {limit}.",
                    tool.def.name
                )),
                Outcome::ToolError,
            ),
        }
    }

    fn task_reply(&self, id: &Id, record: &TaskRecord) -> ReplyMessage {
        let mut result = CreateTaskResult::new(super::view(record));
        result.meta = Some(self.result_meta());
        self.result_reply(id, &result, Outcome::Success)
    }
}
