//! The tasks extension (`io.modelcontextprotocol/tasks`, [SEP-2663]): a `tools/call` answered with
//! a task handle instead of its result, for work that outlasts an HTTP request.
//!
//! A tool opts in at registration ([`ToolDef::tasks`](crate::ToolDef::tasks)): never (the default),
//! optionally, or only as a task, and says when a call becomes one ([`TaskStart`]): at once, once
//! it has run for a while, or when its handler asks ([`RequestContext::run_as_task`]). A call
//! becomes a task only when the request declares the extension in its own client capabilities;
//! otherwise an optional tool runs as a plain call and a task-only tool is refused with -32021.
//!
//! The handler is the same function either way. Its input requests (elicitation, sampling, roots)
//! are answered over MRTR before the task exists and over `tasks/update` after: the runtime runs
//! the handler again with every answer gathered, exactly as for an MRTR retry. Its cancellation
//! fires on `tasks/cancel`, and its progress messages become the task's `statusMessage`.
//!
//! Tasks live in a [`TaskStore`] ([`MemoryTaskStore`] unless the builder is given another),
//! bounded per principal and in total, and are deleted once their time to live has passed. A
//! task is visible only to the principal that created it: to anyone else it does not exist.
//!
//! [SEP-2663]: https://github.com/modelcontextprotocol/modelcontextprotocol/blob/main/seps/2663-tasks-extension.md
//! [`RequestContext::run_as_task`]: crate::RequestContext::run_as_task

mod methods;
pub(crate) mod runner;
#[cfg(test)]
mod shutdown_tests;
mod store;
mod sweep;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kelson_types::{CallToolResult, Task, TaskStatus};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

pub(crate) use methods::undeclared;
pub use store::{
    MemoryTaskStore, TaskChange, TaskRecord, TaskStore, TaskStoreError, accept, apply,
};

use crate::error::InputRequired;
use crate::router::Outcome;

/// Whether a tool's calls may run as tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never: every call is answered with its result.
    #[default]
    Never,
    /// When the request declares the extension; otherwise the call runs as a plain call.
    Optional,
    /// Only as a task: a request that does not declare the extension is refused with -32021.
    Required,
}

/// When a call that may run as a task becomes one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskStart {
    /// Before the handler runs: the request is answered with the task at once.
    #[default]
    Immediately,
    /// When the handler is still running after this long. A call that finishes sooner (or asks
    /// for input sooner, over MRTR) is answered like a plain call.
    After(Duration),
    /// When the handler calls [`RequestContext::run_as_task`](crate::RequestContext::run_as_task);
    /// until then the call is a plain call (its MRTR rounds included).
    OnRequest,
}

/// A tool's task settings, given with [`ToolDef::tasks`](crate::ToolDef::tasks) and
/// [`ToolDef::task_start`](crate::ToolDef::task_start).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskPolicy {
    /// Whether calls may, or must, run as tasks.
    pub support: TaskSupport,
    /// When they become tasks.
    pub start: TaskStart,
}

/// Tunables of the tasks extension, in [`ServerConfig::tasks`](crate::ServerConfig::tasks).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskConfig {
    /// How long a task is kept after its creation (`ttlMs`), finished or not: a task still
    /// running then is stopped, and an expired task is deleted (`tasks/get` no longer finds it).
    /// `None`: kept until the server stops. Default: one hour.
    pub ttl: Option<Duration>,
    /// How often clients are asked to poll (`pollIntervalMs`). Default: one second.
    pub poll_interval: Duration,
    /// How many unfinished tasks one principal may have; a call past it is answered with a tool
    /// error saying so. Default: 100.
    pub max_active_per_principal: usize,
    /// The largest result a task keeps, encoded; a larger one fails the task with -32603.
    /// Default: 16 MiB.
    pub max_result_bytes: usize,
    /// How often expired tasks are deleted from the store. Default: one minute.
    pub sweep_interval: Duration,
    /// How often the instance tells the store that the tasks it runs are alive, and looks there
    /// for cancellations and answers that reached another instance
    /// ([`TaskStore::heartbeat`]). Default: two seconds.
    pub heartbeat_interval: Duration,
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            ttl: Some(Duration::from_secs(3600)),
            poll_interval: Duration::from_secs(1),
            max_active_per_principal: 100,
            max_result_bytes: 16 << 20,
            sweep_interval: Duration::from_secs(60),
            heartbeat_interval: Duration::from_secs(2),
        }
    }
}

/// The server's side of the extension: the store, and the tasks this instance runs.
pub(crate) struct TaskRuntime {
    pub(crate) store: Arc<dyn TaskStore>,
    /// The tasks running here, by id: how to stop them and wake them when input arrives.
    running: Mutex<HashMap<String, Running>>,
    /// This instance, as [`TaskRecord::runner`].
    pub(crate) instance: String,
    /// Whether the sweeper runs.
    sweeping: std::sync::atomic::AtomicBool,
    /// Set when the server begins to stop ([`Server::stop_new_tasks`](crate::Server::stop_new_tasks)):
    /// no call becomes a task from then on.
    pub(crate) closing: std::sync::atomic::AtomicBool,
}

#[derive(Clone)]
pub(crate) struct Running {
    pub(crate) cancel: CancellationToken,
    pub(crate) resume: Arc<Notify>,
}

impl TaskRuntime {
    pub(crate) fn new(store: Arc<dyn TaskStore>) -> Self {
        TaskRuntime {
            store,
            running: Mutex::new(HashMap::new()),
            instance: random_id(),
            sweeping: std::sync::atomic::AtomicBool::new(false),
            closing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn register(&self, id: &str, running: Running) {
        self.running().insert(id.to_owned(), running);
    }

    pub(crate) fn unregister(&self, id: &str) {
        self.running().remove(id);
    }

    pub(crate) fn local(&self, id: &str) -> Option<Running> {
        self.running().get(id).cloned()
    }
}

impl std::fmt::Debug for TaskRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRuntime")
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

/// What a handler's run came to, before it is answered inline or recorded in its task.
pub(crate) enum Settled {
    /// A result (`isError` included) and how it counts.
    Result(CallToolResult, Outcome),
    /// A JSON-RPC error.
    Error(kelson_jsonrpc::ErrorObject),
    /// Input requests (MRTR before the task exists, `input_required` after).
    Input(InputRequired),
}

/// Where a call that may become a task stands, shared by the request, the handler's context and
/// the runner.
pub(crate) struct TaskLink {
    phase: Mutex<Phase>,
    /// Fired by [`RequestContext::run_as_task`](crate::RequestContext::run_as_task).
    pub(crate) detach: Notify,
}

enum Phase {
    /// Still a plain call: the handler's outcome goes to the request through this.
    Inline(Option<oneshot::Sender<Settled>>),
    /// A task with this id.
    Task(String),
    /// A plain call that was answered.
    Done,
}

impl TaskLink {
    pub(crate) fn inline(reply: oneshot::Sender<Settled>) -> Self {
        TaskLink {
            phase: Mutex::new(Phase::Inline(Some(reply))),
            detach: Notify::new(),
        }
    }

    pub(crate) fn task(id: String) -> Self {
        TaskLink {
            phase: Mutex::new(Phase::Task(id)),
            detach: Notify::new(),
        }
    }

    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The task's id, once the call is one.
    pub(crate) fn task_id(&self) -> Option<String> {
        match &*self.phase() {
            Phase::Task(id) => Some(id.clone()),
            _ => None,
        }
    }

    /// Whether the call is still a plain call whose request waits for it.
    pub(crate) fn is_inline(&self) -> bool {
        matches!(&*self.phase(), Phase::Inline(_))
    }

    /// Turns the plain call into task `id`; false when the handler finished first.
    pub(crate) fn become_task(&self, id: &str) -> bool {
        let mut phase = self.phase();
        match &*phase {
            Phase::Inline(_) => {
                *phase = Phase::Task(id.to_owned());
                true
            }
            _ => false,
        }
    }

    /// Hands the handler's outcome to the waiting request, if the call is still a plain one;
    /// otherwise returns it with the task's id.
    pub(crate) fn settle(&self, settled: Settled) -> Option<(String, Settled)> {
        let mut phase = self.phase();
        match &mut *phase {
            Phase::Inline(reply) => {
                if let Some(reply) = reply.take() {
                    // The request may be gone (the client left): nothing to answer then.
                    let _ = reply.send(settled);
                }
                *phase = Phase::Done;
                None
            }
            Phase::Task(id) => Some((id.clone(), settled)),
            Phase::Done => None,
        }
    }
}

/// 128 random bits in 32 lowercase hex digits: a task id nobody can guess, and one that is safe
/// everywhere a person may paste it (base64url could start with `-`, which command lines read as
/// an option).
pub(crate) fn random_id() -> String {
    use std::fmt::Write as _;
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    bytes.iter().fold(String::with_capacity(32), |mut id, b| {
        let _ = write!(id, "{b:02x}");
        id
    })
}

/// `time` as RFC 3339 in UTC with milliseconds: `2026-12-04T10:30:00.123Z`.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        since.subsec_millis()
    )
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// The task as every view shows it.
pub(crate) fn view(record: &TaskRecord) -> Task {
    let mut task = Task::new(
        record.id.clone(),
        record.status.clone(),
        rfc3339(record.created_at),
        record.ttl.map(millis),
    );
    task.last_updated_at = rfc3339(record.updated_at);
    task.status_message.clone_from(&record.status_message);
    task.poll_interval_ms = record
        .poll_interval
        .filter(|_| !record.status.is_terminal())
        .map(millis);
    task
}

/// A new working task for `owner`.
pub(crate) fn new_record(owner: String, config: &TaskConfig, instance: &str) -> TaskRecord {
    let now = SystemTime::now();
    TaskRecord {
        id: random_id(),
        owner,
        status: TaskStatus::Working,
        status_message: None,
        created_at: now,
        updated_at: now,
        ttl: config.ttl,
        poll_interval: Some(config.poll_interval),
        input_requests: Default::default(),
        answers: Default::default(),
        result: None,
        error: None,
        runner: instance.to_owned(),
    }
}
