//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a `tools/call` answered with a
//! durable task handle instead of its result, which the client polls with `tasks/get`, feeds with
//! `tasks/update` when the task asks for input, and stops with `tasks/cancel`.

use std::collections::BTreeMap;

use kelson_jsonrpc::ErrorObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::open_string_enum;
use crate::{InputRequests, RequestMeta, ResultMeta, ResultType};

/// The extension's identifier, in `capabilities.extensions` of both sides.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

open_string_enum! {
    /// Where a task stands. `completed`, `failed` and `cancelled` are terminal: a task that
    /// reached one never changes again.
    pub enum TaskStatus {
        /// The work is in progress.
        Working = "working",
        /// The work waits for the client's answers to `inputRequests` (`tasks/update`).
        InputRequired = "input_required",
        /// The work finished; `result` is what the request would have returned at once (a tool
        /// error, `isError`, included).
        Completed = "completed",
        /// The request failed with a JSON-RPC error, in `error`.
        Failed = "failed",
        /// The task was cancelled.
        Cancelled = "cancelled",
    }
}

impl TaskStatus {
    /// Whether the status is terminal.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// What every view of a task carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Task {
    /// The task's identifier: unguessable.
    pub task_id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// A line for people about the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created, RFC 3339.
    pub created_at: String,
    /// When its status last changed, RFC 3339.
    pub last_updated_at: String,
    /// How long after its creation it is kept, in milliseconds; `null`: without limit. The key
    /// is always present.
    pub ttl_ms: Option<u64>,
    /// How often to poll, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

impl Task {
    /// A task in `status` created and last updated at `now`.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        now: impl Into<String>,
        ttl_ms: Option<u64>,
    ) -> Self {
        let now = now.into();
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: now.clone(),
            last_updated_at: now,
            ttl_ms,
            poll_interval_ms: None,
        }
    }
}

/// The result of a request answered with a task (`resultType: "task"`): the task, flat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateTaskResult {
    /// `"task"`.
    pub result_type: ResultType,
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

impl CreateTaskResult {
    /// The result announcing `task`.
    pub fn new(task: Task) -> Self {
        CreateTaskResult {
            result_type: ResultType::Task,
            task,
            meta: None,
        }
    }
}

/// A task with what its status brings: `inputRequests` while it waits for input, `result` once
/// completed, `error` once failed. The `tasks/get` result and the `notifications/tasks` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DetailedTask {
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// Every input request still unanswered (`input_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// What the request returned (`completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error the request failed with (`failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

/// The result of `tasks/get`: the detailed task, `resultType: "complete"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetTaskResult {
    /// Always `complete`.
    pub result_type: ResultType,
    /// The task.
    #[serde(flatten)]
    pub task: DetailedTask,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

impl GetTaskResult {
    /// The result showing `task`.
    pub fn new(task: DetailedTask) -> Self {
        GetTaskResult {
            result_type: ResultType::Complete,
            task,
            meta: None,
        }
    }
}

impl DetailedTask {
    /// `task` with nothing its status brings.
    pub fn new(task: Task) -> Self {
        DetailedTask {
            task,
            input_requests: None,
            result: None,
            error: None,
        }
    }
}

/// The params of `tasks/get` and `tasks/cancel`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// The request's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
}

/// The params of `tasks/update`: answers to the task's `inputRequests`, by key. The values are
/// kept as JSON: answers to keys the task is not waiting for are ignored, whatever their shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// The answers.
    #[serde(default)]
    pub input_responses: BTreeMap<String, Value>,
    /// The request's `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_created_task_is_flat_and_has_no_keys_of_other_statuses() {
        let mut task = Task::new(
            "t1",
            TaskStatus::Working,
            "2026-12-04T10:00:00Z",
            Some(60_000),
        );
        task.poll_interval_ms = Some(500);
        let value = serde_json::to_value(CreateTaskResult::new(task.clone())).unwrap();
        assert_eq!(
            value,
            json!({"resultType": "task", "taskId": "t1", "status": "working",
                   "createdAt": "2026-12-04T10:00:00Z", "lastUpdatedAt": "2026-12-04T10:00:00Z",
                   "ttlMs": 60000, "pollIntervalMs": 500})
        );
        // Without a limit the key stays, null.
        task.ttl_ms = None;
        let value = serde_json::to_value(&task).unwrap();
        assert_eq!(value["ttlMs"], Value::Null);
        assert!(value.as_object().unwrap().contains_key("ttlMs"));
    }

    #[test]
    fn detailed_tasks_carry_only_what_their_status_brings() {
        let task = Task::new("t", TaskStatus::Completed, "x", None);
        let done = DetailedTask {
            task,
            input_requests: None,
            result: Some(json!({"content": []})),
            error: None,
        };
        let value = serde_json::to_value(&done).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert!(
            keys.contains(&"result")
                && !keys.contains(&"error")
                && !keys.contains(&"inputRequests")
        );
        assert!(TaskStatus::Completed.is_terminal() && !TaskStatus::InputRequired.is_terminal());
        let update: UpdateTaskParams = serde_json::from_value(
            json!({"taskId": "t", "inputResponses": {"unknown": {"ignored": true}}}),
        )
        .unwrap();
        assert_eq!(update.input_responses["unknown"], json!({"ignored": true}));
    }
}
