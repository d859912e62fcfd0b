//! Where tasks live: the [`TaskStore`] interface and the in-memory store every server starts with.
//!
//! The runtime owns the rules (who may see a task, which transitions are allowed, when a task
//! expires); a store keeps records and applies changes atomically, so that a shared store (one
//! database behind several instances) gives every instance the same answer.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use kelson_jsonrpc::ErrorObject;
use kelson_types::{InputRequests, JsonObject, TaskStatus};
use serde_json::Value;

use crate::handler::BoxFuture;

/// One task as a store keeps it.
///
/// Its serde form (JSON, say) is a complete copy: a store kept outside the process can save
/// records that way and read them back.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task's identifier: 128 random bits.
    pub id: String,
    /// The principal that created it ([`Principal::id`](crate::Principal::id)); only it may see
    /// the task.
    pub owner: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// A line for people about the status (the last progress message, say).
    pub status_message: Option<String>,
    /// When it was created.
    pub created_at: SystemTime,
    /// When its status or message last changed.
    pub updated_at: SystemTime,
    /// How long after its creation it is kept; `None`: until the server stops.
    pub ttl: Option<Duration>,
    /// How often clients should poll it.
    pub poll_interval: Option<Duration>,
    /// The input requests still unanswered (`input_required`).
    pub input_requests: InputRequests,
    /// Answers accepted by `tasks/update` that the runner has not taken yet.
    pub answers: JsonObject,
    /// The tool's result, as JSON (`completed`).
    pub result: Option<Value>,
    /// The JSON-RPC error (`failed`).
    pub error: Option<ErrorObject>,
    /// The instance running the task ([`TaskStore`]s shared by instances use it to tell a task
    /// whose instance died).
    pub runner: String,
}

impl TaskRecord {
    /// Whether the task's time to live has passed at `now`.
    pub fn expired(&self, now: SystemTime) -> bool {
        self.ttl.is_some_and(|ttl| now >= self.created_at + ttl)
    }
}

/// A change of a task's state, applied by [`TaskStore::change`] only to a task that is not in a
/// terminal state: `completed`, `failed` and `cancelled` never change again.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TaskChange {
    /// Back to work (after input arrived).
    Working,
    /// Waiting for the client's answers to these requests.
    InputRequired(InputRequests),
    /// A new status message; the status stays.
    Message(String),
    /// Finished with this result.
    Completed(Value),
    /// Failed with this JSON-RPC error.
    Failed(ErrorObject),
    /// Cancelled.
    Cancelled,
}

/// Why a store refused an operation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The caller already has as many unfinished tasks as it may.
    #[error(
        "you already have {0} unfinished tasks, the most allowed; wait for one to finish or cancel one"
    )]
    OwnerLimit(usize),
    /// The store holds as many tasks as it may, and none of them may make room: none is
    /// finished, or the finished ones belong to principals that do not hold more than their
    /// share.
    #[error("the server holds {0} tasks, the most it keeps; try again later")]
    Full(usize),
    /// The store could not be reached or failed.
    #[error("the task store failed: {0}")]
    Unavailable(String),
}

/// Keeps tasks. Every operation is atomic: a change is applied to the record as it is when the
/// operation runs, never to a copy read earlier.
///
/// Records past their time to live are never returned: [`get`](Self::get) treats them as absent,
/// and [`sweep`](Self::sweep) deletes them.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task, unless its owner already has `max_active_per_owner` unfinished tasks
    /// (or the store is full).
    fn insert(
        &self,
        record: TaskRecord,
        max_active_per_owner: usize,
    ) -> BoxFuture<Result<(), TaskStoreError>>;

    /// The task `id`, unless it does not exist or has expired.
    fn get(&self, id: &str) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>>;

    /// Applies `change` to task `id` at `now`, unless the task is gone or terminal; returns the
    /// task as changed, or `None` when nothing changed.
    fn change(
        &self,
        id: &str,
        change: TaskChange,
        now: SystemTime,
    ) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>>;

    /// Records `responses` to the input requests task `id` is waiting for and removes those
    /// requests from its `inputRequests`; responses to anything else are ignored. Returns the
    /// task as it is afterwards (`None` if it is gone).
    fn answer(
        &self,
        id: &str,
        responses: JsonObject,
    ) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>>;

    /// Takes the answers recorded for task `id`, leaving none.
    fn take_answers(&self, id: &str) -> BoxFuture<Result<JsonObject, TaskStoreError>>;

    /// Deletes task `id`.
    fn remove(&self, id: &str) -> BoxFuture<Result<(), TaskStoreError>>;

    /// Deletes every task expired at `now`; returns their ids.
    fn sweep(&self, now: SystemTime) -> BoxFuture<Result<Vec<String>, TaskStoreError>>;

    /// Records that instance `runner` is still running the tasks `ids`, and returns each of them
    /// as it is now (a task that is gone or expired is left out).
    ///
    /// The runtime calls it every [`TaskConfig::heartbeat_interval`](super::TaskConfig) for the
    /// unfinished tasks it runs. It is how a runner learns that one of its tasks was cancelled or
    /// answered through another instance, and how a store shared by instances tells a task whose
    /// instance died: one whose heartbeat stopped is reported `failed` instead of `working`
    /// forever. A store used by one process only (like [`MemoryTaskStore`]) has nothing to record.
    fn heartbeat(
        &self,
        runner: &str,
        ids: Vec<String>,
    ) -> BoxFuture<Result<Vec<TaskRecord>, TaskStoreError>>;
}

/// The store every server starts with: tasks in this process's memory, at most `capacity` of them.
///
/// When it is full, a finished task makes room for a new one, chosen fairly between principals:
/// each has an equal share of the capacity (divided among the principals holding tasks, the new
/// task's owner counted), and a principal at or over its share makes room among its own finished
/// tasks only, so that one principal creating tasks without end cannot push out another's
/// results before that one has fetched them. A principal under its share takes the place of the
/// oldest finished task of the principal furthest over its share. When no finished task may
/// make room, the new task is refused ([`TaskStoreError::Full`]).
#[derive(Debug)]
pub struct MemoryTaskStore {
    tasks: Mutex<HashMap<String, TaskRecord>>,
    capacity: usize,
}

impl MemoryTaskStore {
    /// A store of at most `capacity` tasks.
    pub fn new(capacity: usize) -> Self {
        MemoryTaskStore {
            tasks: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// How many tasks it holds, expired ones not yet swept included.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds no task.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskRecord>> {
        // A panic while holding the lock leaves whole records (every write replaces or edits a
        // record in place without unwinding points), so the map stays usable.
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Default for MemoryTaskStore {
    /// 10,000 tasks.
    fn default() -> Self {
        MemoryTaskStore::new(10_000)
    }
}

fn ready<T: Send + 'static>(value: T) -> BoxFuture<T> {
    Box::pin(std::future::ready(value))
}

/// Applies `change` to `record` unless it is terminal; returns whether it changed. For stores
/// that keep records whole, so that every store applies the same rules.
pub fn apply(record: &mut TaskRecord, change: TaskChange, now: SystemTime) -> bool {
    if record.status.is_terminal() {
        return false;
    }
    match change {
        TaskChange::Working => {
            record.status = TaskStatus::Working;
            record.input_requests.clear();
        }
        TaskChange::InputRequired(requests) => {
            record.status = TaskStatus::InputRequired;
            record.input_requests = requests;
        }
        TaskChange::Message(message) => {
            if record.status_message.as_deref() == Some(message.as_str()) {
                return false;
            }
            record.status_message = Some(message);
        }
        TaskChange::Completed(result) => {
            record.status = TaskStatus::Completed;
            record.result = Some(result);
        }
        TaskChange::Failed(error) => {
            record.status = TaskStatus::Failed;
            record.status_message = Some(error.message.to_string());
            record.error = Some(error);
        }
        TaskChange::Cancelled => {
            record.status = TaskStatus::Cancelled;
            record.status_message = Some("The task was cancelled.".to_owned());
        }
    }
    if record.status.is_terminal() {
        record.input_requests.clear();
        record.answers.clear();
    }
    record.updated_at = now;
    true
}

/// Moves the answers to outstanding requests from `responses` into `record`; once none is
/// outstanding the task is working again. Returns whether anything changed.
pub fn accept(record: &mut TaskRecord, responses: JsonObject, now: SystemTime) -> bool {
    if record.status != TaskStatus::InputRequired {
        return false;
    }
    let mut changed = false;
    for (key, value) in responses {
        if record.input_requests.remove(&key).is_some() {
            record.answers.insert(key, value);
            changed = true;
        }
    }
    if changed {
        if record.input_requests.is_empty() {
            record.status = TaskStatus::Working;
        }
        record.updated_at = now;
    }
    changed
}

/// The finished task that makes room for a new task of `owner` in a full store, if one may.
///
/// Every principal holding tasks (and `owner`) has an equal share of `capacity`. Taking from
/// another principal is what lets a newcomer in once someone filled the store, so it is allowed
/// only to an owner under its share and only from a principal over its share (the one holding
/// the most first, its oldest finished task): a principal never loses a task, within its time to
/// live, to one that already holds as much as it. Otherwise the owner's own oldest finished task
/// makes room, if it has one.
fn evictable(tasks: &HashMap<String, TaskRecord>, owner: &str, capacity: usize) -> Option<String> {
    /// What one principal holds: how many tasks, and its oldest finished one.
    #[derive(Default)]
    struct Held<'a> {
        count: usize,
        oldest_finished: Option<&'a TaskRecord>,
    }
    let mut held: HashMap<&str, Held<'_>> = HashMap::new();
    for task in tasks.values() {
        let entry = held.entry(task.owner.as_str()).or_default();
        entry.count += 1;
        if task.status.is_terminal()
            && entry
                .oldest_finished
                .is_none_or(|t| task.updated_at < t.updated_at)
        {
            entry.oldest_finished = Some(task);
        }
    }
    let mine = held.get(owner).map_or(0, |h| h.count);
    let principals = held.len() + usize::from(mine == 0);
    let share = (capacity / principals).max(1);
    if mine < share {
        let over = held
            .iter()
            .filter(|(who, h)| **who != owner && h.count > share)
            .filter_map(|(_, h)| Some((h.count, h.oldest_finished?)))
            // The most held first; between equals, the task finished longest ago.
            .max_by(|(a, x), (b, y)| a.cmp(b).then(y.updated_at.cmp(&x.updated_at)));
        if let Some((_, task)) = over {
            return Some(task.id.clone());
        }
    }
    held.get(owner)
        .and_then(|h| h.oldest_finished)
        .map(|t| t.id.clone())
}

impl TaskStore for MemoryTaskStore {
    fn insert(
        &self,
        record: TaskRecord,
        max_active_per_owner: usize,
    ) -> BoxFuture<Result<(), TaskStoreError>> {
        let mut tasks = self.lock();
        let now = SystemTime::now();
        let active = tasks
            .values()
            .filter(|t| t.owner == record.owner && !t.status.is_terminal() && !t.expired(now))
            .count();
        if active >= max_active_per_owner {
            return ready(Err(TaskStoreError::OwnerLimit(max_active_per_owner)));
        }
        if tasks.len() >= self.capacity {
            tasks.retain(|_, t| !t.expired(now));
        }
        if tasks.len() >= self.capacity {
            match evictable(&tasks, &record.owner, self.capacity) {
                Some(id) => {
                    tasks.remove(&id);
                }
                None => return ready(Err(TaskStoreError::Full(self.capacity))),
            }
        }
        tasks.insert(record.id.clone(), record);
        ready(Ok(()))
    }

    fn get(&self, id: &str) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>> {
        let now = SystemTime::now();
        let found = self.lock().get(id).filter(|t| !t.expired(now)).cloned();
        ready(Ok(found))
    }

    fn change(
        &self,
        id: &str,
        change: TaskChange,
        now: SystemTime,
    ) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>> {
        let mut tasks = self.lock();
        let changed = match tasks.get_mut(id) {
            Some(record) if !record.expired(now) => {
                apply(record, change, now).then(|| record.clone())
            }
            _ => None,
        };
        ready(Ok(changed))
    }

    fn answer(
        &self,
        id: &str,
        responses: JsonObject,
    ) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>> {
        let now = SystemTime::now();
        let mut tasks = self.lock();
        let found = match tasks.get_mut(id) {
            Some(record) if !record.expired(now) => {
                accept(record, responses, now);
                Some(record.clone())
            }
            _ => None,
        };
        ready(Ok(found))
    }

    fn take_answers(&self, id: &str) -> BoxFuture<Result<JsonObject, TaskStoreError>> {
        let taken = self
            .lock()
            .get_mut(id)
            .map(|t| std::mem::take(&mut t.answers))
            .unwrap_or_default();
        ready(Ok(taken))
    }

    fn remove(&self, id: &str) -> BoxFuture<Result<(), TaskStoreError>> {
        self.lock().remove(id);
        ready(Ok(()))
    }

    fn sweep(&self, now: SystemTime) -> BoxFuture<Result<Vec<String>, TaskStoreError>> {
        let mut tasks = self.lock();
        let expired: Vec<String> = tasks
            .values()
            .filter(|t| t.expired(now))
            .map(|t| t.id.clone())
            .collect();
        for id in &expired {
            tasks.remove(id);
        }
        ready(Ok(expired))
    }

    fn heartbeat(
        &self,
        _runner: &str,
        ids: Vec<String>,
    ) -> BoxFuture<Result<Vec<TaskRecord>, TaskStoreError>> {
        let now = SystemTime::now();
        let tasks = self.lock();
        let found = ids
            .iter()
            .filter_map(|id| tasks.get(id))
            .filter(|t| !t.expired(now))
            .cloned()
            .collect();
        ready(Ok(found))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use serde_json::json;

    use super::{MemoryTaskStore, TaskChange, TaskStore, TaskStoreError};
    use crate::tasks::{TaskConfig, TaskRecord, new_record};

    /// A task of `owner` kept until the server stops.
    fn task(owner: &str) -> TaskRecord {
        let config = TaskConfig {
            ttl: None,
            ..TaskConfig::default()
        };
        new_record(owner.into(), &config, "here")
    }

    /// Stores a task of `owner` and, if `finish`, completes it; returns its id.
    async fn add(
        store: &MemoryTaskStore,
        owner: &str,
        finish: bool,
    ) -> Result<String, TaskStoreError> {
        let record = task(owner);
        store.insert(record.clone(), 100).await?;
        if finish {
            let done = TaskChange::Completed(json!({"content": []}));
            store
                .change(&record.id, done, SystemTime::now())
                .await
                .unwrap()
                .expect("completed");
        }
        Ok(record.id)
    }

    async fn present(store: &MemoryTaskStore, ids: &[String]) -> usize {
        let mut n = 0;
        for id in ids {
            n += usize::from(store.get(id).await.unwrap().is_some());
        }
        n
    }

    #[tokio::test]
    async fn one_principal_filling_the_store_does_not_evict_anothers_finished_tasks() {
        let store = MemoryTaskStore::new(10);
        let mut bobs = Vec::new();
        for _ in 0..2 {
            bobs.push(add(&store, "bob", true).await.unwrap());
        }
        // Alice's finished tasks are newer than Bob's, so "the oldest finished" is always Bob's.
        std::thread::sleep(Duration::from_millis(2));
        let mut alices = Vec::new();
        for _ in 0..50 {
            alices.push(add(&store, "alice", true).await.unwrap());
        }
        assert_eq!(
            present(&store, &bobs).await,
            2,
            "Bob's results, not yet fetched and within their time to live, are kept"
        );
        assert_eq!(store.len(), 10);
        assert_eq!(
            present(&store, &alices).await,
            8,
            "Alice made room among her own: her newest eight are kept"
        );
        assert_eq!(present(&store, &alices[42..]).await, 8);
    }

    #[tokio::test]
    async fn a_newcomer_takes_the_place_of_the_finished_tasks_of_whoever_holds_more_than_its_share()
    {
        let store = MemoryTaskStore::new(10);
        let mut alices = Vec::new();
        for _ in 0..10 {
            alices.push(add(&store, "alice", true).await.unwrap());
        }
        // Two principals: five tasks each. Bob's first five push out Alice's oldest five.
        let mut bobs = Vec::new();
        for _ in 0..5 {
            bobs.push(add(&store, "bob", true).await.unwrap());
        }
        assert_eq!(present(&store, &alices[..5]).await, 0);
        assert_eq!(present(&store, &alices[5..]).await, 5);
        // At his share, Bob makes room among his own.
        let sixth = add(&store, "bob", true).await.unwrap();
        assert!(store.get(&sixth).await.unwrap().is_some());
        assert_eq!(
            present(&store, &alices[5..]).await,
            5,
            "Alice keeps her share"
        );
        assert_eq!(present(&store, &bobs).await, 4, "Bob's oldest made room");
        assert!(store.get(&bobs[0]).await.unwrap().is_none());
        // A third principal's share is three: it takes from both, the one holding most first.
        for _ in 0..3 {
            add(&store, "carol", false).await.unwrap();
        }
        assert_eq!(store.len(), 10);
        assert_eq!(present(&store, &alices).await, 3);
        let bobs_left = present(&store, &bobs).await + present(&store, &[sixth]).await;
        assert_eq!(bobs_left, 4);
    }

    #[tokio::test]
    async fn a_principal_over_its_share_with_nothing_finished_is_refused_not_given_anothers_place()
    {
        let store = MemoryTaskStore::new(4);
        let bobs = [
            add(&store, "bob", true).await.unwrap(),
            add(&store, "bob", true).await.unwrap(),
        ];
        add(&store, "alice", false).await.unwrap();
        add(&store, "alice", false).await.unwrap();
        assert_eq!(
            add(&store, "alice", false).await,
            Err(TaskStoreError::Full(4)),
            "Alice holds her share, none of it finished"
        );
        assert_eq!(present(&store, &bobs).await, 2);
        // Nobody holds more than a share of one: a newcomer is refused too.
        let store = MemoryTaskStore::new(2);
        let firsts = [
            add(&store, "alice", true).await.unwrap(),
            add(&store, "bob", true).await.unwrap(),
        ];
        assert_eq!(
            add(&store, "carol", false).await,
            Err(TaskStoreError::Full(2))
        );
        assert_eq!(present(&store, &firsts).await, 2);
        assert_eq!(
            TaskStoreError::Full(2).to_string(),
            "the server holds 2 tasks, the most it keeps; try again later"
        );
    }

    #[tokio::test]
    async fn expired_tasks_make_room_before_anything_is_taken() {
        let store = MemoryTaskStore::new(2);
        let config = TaskConfig {
            ttl: Some(Duration::from_millis(1)),
            ..TaskConfig::default()
        };
        let old = new_record("alice".into(), &config, "here");
        store.insert(old.clone(), 100).await.unwrap();
        let bobs = add(&store, "bob", true).await.unwrap();
        std::thread::sleep(Duration::from_millis(5));
        // Alice's expired task goes, not Bob's finished one.
        add(&store, "carol", false).await.unwrap();
        assert!(store.get(&bobs).await.unwrap().is_some());
        assert_eq!(store.len(), 2);
    }
}
