//! `tasks/get`, `tasks/update` and `tasks/cancel`.

use std::time::SystemTime;

use kelson_jsonrpc::ErrorObject;
use kelson_types::{
    DetailedTask, GetTaskResult, JsonObject, Method, ResultType, TASKS_EXTENSION, TaskIdParams,
    UpdateTaskParams,
};
use serde_json::json;

use super::{TaskChange, TaskRecord, TaskStatus};
use crate::router::{Outcome, Prepared, ReplyMessage, RequestIo, error_reply};
use crate::{Principal, Server};

/// The acknowledgement of `tasks/update` and `tasks/cancel`: an empty result.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Ack {
    result_type: ResultType,
}

/// The error for a request about tasks that did not declare the extension.
pub(crate) fn undeclared(method: &str) -> ErrorObject {
    ErrorObject::missing_client_capability(
        json!({"extensions": {TASKS_EXTENSION: {}}}),
        format_args!(
            "{method} needs the {TASKS_EXTENSION} extension, which this request does not declare"
        ),
    )
}

fn not_found() -> ErrorObject {
    ErrorObject::invalid_params("Failed to retrieve task: Task not found")
}

/// The task's detailed view, as `tasks/get` and `notifications/tasks` show it.
pub(crate) fn detailed(record: &TaskRecord) -> DetailedTask {
    let mut task = DetailedTask::new(super::view(record));
    task.input_requests =
        (record.status == TaskStatus::InputRequired).then(|| record.input_requests.clone());
    task.result = (record.status == TaskStatus::Completed)
        .then(|| record.result.clone())
        .flatten();
    task.error = (record.status == TaskStatus::Failed)
        .then(|| record.error.clone())
        .flatten();
    task
}

impl Server {
    /// Serves `tasks/get`, `tasks/update` and `tasks/cancel`.
    pub(crate) async fn task_method(&self, req: Prepared<'_>, io: RequestIo<'_>) -> ReplyMessage {
        let id = req.id.clone();
        let reply = match req.method {
            Method::GetTask => self.get_task(&req, &io.principal).await,
            Method::UpdateTask => self.update_task(&req, &io.principal).await,
            _ => self.cancel_task(&req, &io.principal).await,
        };
        reply.unwrap_or_else(|e| error_reply(Some(&id), &e, false))
    }

    /// The task `id` if `principal` created it: another principal's task does not exist for it.
    async fn owned_task(&self, id: &str, principal: &Principal) -> Result<TaskRecord, ErrorObject> {
        match self.inner.tasks.store.get(id).await {
            Ok(Some(record)) if record.owner == principal.id() => Ok(record),
            Ok(_) => Err(not_found()),
            Err(e) => {
                tracing::error!(task = id, error = %e, "the task store failed");
                Err(ErrorObject::internal_error("the task store failed"))
            }
        }
    }

    async fn get_task(
        &self,
        req: &Prepared<'_>,
        principal: &Principal,
    ) -> Result<ReplyMessage, ErrorObject> {
        let params: TaskIdParams = crate::methods::params(req)?;
        let record = self.owned_task(&params.task_id, principal).await?;
        let result = GetTaskResult::new(detailed(&record));
        Ok(self.result_reply_with_info(&req.id, &result, Outcome::Success))
    }

    async fn update_task(
        &self,
        req: &Prepared<'_>,
        principal: &Principal,
    ) -> Result<ReplyMessage, ErrorObject> {
        let params: UpdateTaskParams = crate::methods::params(req)?;
        let record = self.owned_task(&params.task_id, principal).await?;
        // Answers to anything the task is not waiting for are ignored, whatever their shape.
        if record.status == TaskStatus::InputRequired {
            let responses: JsonObject = params.input_responses.into_iter().collect();
            match self.inner.tasks.store.answer(&record.id, responses).await {
                Ok(Some(after)) => {
                    if after.status != record.status
                        || after.input_requests != record.input_requests
                    {
                        self.task_changed(&after);
                    }
                    if after.status == TaskStatus::Working
                        && let Some(running) = self.inner.tasks.local(&record.id)
                    {
                        running.resume.notify_one();
                    }
                }
                Ok(None) => return Err(not_found()),
                Err(e) => {
                    tracing::error!(task = %record.id, error = %e, "the task store failed");
                    return Err(ErrorObject::internal_error("the task store failed"));
                }
            }
        }
        Ok(self.ack(&req.id))
    }

    async fn cancel_task(
        &self,
        req: &Prepared<'_>,
        principal: &Principal,
    ) -> Result<ReplyMessage, ErrorObject> {
        let params: TaskIdParams = crate::methods::params(req)?;
        let record = self.owned_task(&params.task_id, principal).await?;
        // Cancelling a finished task changes nothing, and is acknowledged all the same.
        if !record.status.is_terminal() {
            let changed = self
                .inner
                .tasks
                .store
                .change(&record.id, TaskChange::Cancelled, SystemTime::now())
                .await
                .map_err(|e| {
                    tracing::error!(task = %record.id, error = %e, "the task store failed");
                    ErrorObject::internal_error("the task store failed")
                })?;
            if let Some(changed) = changed {
                self.task_changed(&changed);
            }
            if let Some(running) = self.inner.tasks.local(&record.id) {
                running.cancel.cancel();
            }
        }
        Ok(self.ack(&req.id))
    }

    fn ack(&self, id: &kelson_jsonrpc::Id) -> ReplyMessage {
        self.result_reply_with_info(
            id,
            &Ack {
                result_type: ResultType::Complete,
            },
            Outcome::Success,
        )
    }

    /// Sets a task's status message, in the background (a handler reporting progress does not
    /// wait for the store).
    pub(crate) fn task_message(&self, task: String, message: String) {
        let server = self.clone();
        tokio::spawn(async move {
            let change = TaskChange::Message(message);
            match server
                .inner
                .tasks
                .store
                .change(&task, change, SystemTime::now())
                .await
            {
                Ok(Some(record)) => server.task_changed(&record),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(task, error = %e, "a task's message could not be recorded")
                }
            }
        });
    }

    /// Tells listeners that a task changed.
    pub(crate) fn task_changed(&self, record: &TaskRecord) {
        self.inner
            .emit(crate::hub::HubEvent::TaskChanged(std::sync::Arc::new(
                crate::hub::TaskNotice {
                    id: record.id.clone(),
                    owner: record.owner.clone(),
                    task: detailed(record),
                },
            )));
    }
}
