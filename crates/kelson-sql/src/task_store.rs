//! Tasks in a PostgreSQL table, shared by every instance that connects to it: the store of the
//! tasks extension for servers behind a load balancer.
//!
//! Any instance answers `tasks/get`, `tasks/update` and `tasks/cancel` for a task another instance
//! runs: the record is in the table, and the running instance finds cancellations and answers there
//! at its next heartbeat ([`TaskStore::heartbeat`]). Each running instance refreshes its tasks'
//! heartbeat; a task whose heartbeat is older than the runner timeout is reported `failed` ("the
//! instance running the task stopped") the next time anyone reads it, instead of staying `working`
//! forever.
//!
//! Every operation runs in a transaction that locks the task's row, and applies the runtime's rules
//! ([`apply`], [`accept`]) to the record as it is then, so that two instances never overwrite each
//! other's change. Times that decide (expiry, heartbeats) are the database's clock, not the
//! instances'.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use kelson_server::BoxFuture;
use kelson_server::tasks::{TaskChange, TaskRecord, TaskStore, TaskStoreError, accept, apply};
use kelson_types::{ErrorObject, JsonObject};
use tokio::sync::Mutex;
use tokio::sync::MutexGuard;
use tokio_postgres::{Client, Config, Transaction};

use crate::error::SqlError;
use crate::postgres::PgTls;

/// The table tasks are kept in.
pub const TASKS_TABLE: &str = "mcp_tasks";

/// How long connecting may take before an operation gives up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The default [`PgTaskStore::runner_timeout`].
const RUNNER_TIMEOUT: Duration = Duration::from_secs(30);

/// Tasks in a PostgreSQL table ([`TASKS_TABLE`]), shared by the instances that use the same
/// database. Give it to [`ServerBuilder::task_store`](kelson_server::ServerBuilder::task_store).
#[derive(Clone)]
pub struct PgTaskStore {
    shared: Arc<Shared>,
}

struct Shared {
    config: Config,
    tls: PgTls,
    client: Mutex<Option<Client>>,
    runner_timeout: Duration,
}

impl std::fmt::Debug for PgTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTaskStore")
            .field("runner_timeout", &self.shared.runner_timeout)
            .finish_non_exhaustive()
    }
}

impl PgTaskStore {
    /// Connects to the database at `url` (`postgres://...`; TLS settings as for the adapter's
    /// databases: `sslmode` and `sslrootcert` in the URL, verify-full by default off loopback) and
    /// creates the table if it is missing, so that a bad URL or a missing privilege is reported
    /// at start.
    pub async fn connect(url: &str) -> Result<PgTaskStore, SqlError> {
        const NAME: &str = "task store";
        let prepared = crate::postgres::prepare(url, NAME, None, None)?;
        let shared = Shared {
            config: prepared.config,
            tls: prepared.tls,
            client: Mutex::new(None),
            runner_timeout: RUNNER_TIMEOUT,
        };
        let client = shared
            .open()
            .await
            .map_err(|e| crate::postgres::errors::setup_error(NAME, Some(&shared.config), e))?;
        *shared.client.lock().await = Some(client);
        Ok(PgTaskStore {
            shared: Arc::new(shared),
        })
    }

    /// How long a running instance may go without a heartbeat before its unfinished tasks are
    /// reported failed. Keep it several times the servers'
    /// [`TaskConfig::heartbeat_interval`](kelson_server::tasks::TaskConfig). Default: 30 seconds.
    ///
    /// # Panics
    ///
    /// If another clone of this store exists already (set it right after connecting).
    #[must_use]
    pub fn runner_timeout(mut self, timeout: Duration) -> Self {
        Arc::get_mut(&mut self.shared)
            .expect("runner_timeout is set before the store is shared")
            .runner_timeout = timeout;
        self
    }
}

/// Why an operation failed: the database, or a record that does not decode.
#[derive(Debug)]
enum Fail {
    Db(tokio_postgres::Error),
    Record(String),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Fail::Db(e)
    }
}

impl From<Fail> for TaskStoreError {
    fn from(f: Fail) -> Self {
        match f {
            Fail::Db(e) => TaskStoreError::Unavailable(e.to_string()),
            Fail::Record(e) => {
                TaskStoreError::Unavailable(format!("a task record is unreadable: {e}"))
            }
        }
    }
}

fn encode(record: &TaskRecord) -> Result<String, Fail> {
    serde_json::to_string(record).map_err(|e| Fail::Record(e.to_string()))
}

fn decode(text: &str) -> Result<TaskRecord, Fail> {
    serde_json::from_str(text).map_err(|e| Fail::Record(e.to_string()))
}

/// The error of a task whose instance stopped heartbeating.
fn runner_gone() -> ErrorObject {
    ErrorObject::internal_error("the instance running the task stopped before it finished")
}

impl Shared {
    async fn open(&self) -> Result<Client, tokio_postgres::Error> {
        // `active`: not in a terminal state. `record`: the whole record as JSON, read and written
        // under the row's lock.
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {TASKS_TABLE} (\
               id text PRIMARY KEY, \
               owner text NOT NULL, \
               active boolean NOT NULL, \
               runner text NOT NULL, \
               heartbeat_at timestamptz NOT NULL DEFAULT clock_timestamp(), \
               expires_at timestamptz, \
               record text NOT NULL); \
             CREATE INDEX IF NOT EXISTS {TASKS_TABLE}_owner ON {TASKS_TABLE} (owner) WHERE active; \
             CREATE INDEX IF NOT EXISTS {TASKS_TABLE}_expires ON {TASKS_TABLE} (expires_at)"
        );
        crate::postgres::open_own_table(
            &self.config,
            &self.tls,
            CONNECT_TIMEOUT,
            &create,
            "task store",
        )
        .await
    }
}

impl Shared {
    /// The store's connection, opened again if it was lost.
    async fn connected(&self) -> Result<MutexGuard<'_, Option<Client>>, Fail> {
        let mut slot = self.client.lock().await;
        if slot.as_ref().is_none_or(Client::is_closed) {
            *slot = None;
            *slot = Some(self.open().await?);
        }
        Ok(slot)
    }

    /// Task `id`, locked for the rest of the transaction, unless it is gone or expired. A task
    /// whose runner stopped heartbeating is failed first.
    async fn load(&self, tx: &Transaction<'_>, id: &str) -> Result<Option<TaskRecord>, Fail> {
        let sql = format!(
            "SELECT record, active AND heartbeat_at < clock_timestamp() - make_interval(secs => $2) \
             FROM {TASKS_TABLE} \
             WHERE id = $1 AND (expires_at IS NULL OR expires_at > clock_timestamp()) FOR UPDATE"
        );
        let timeout = self.runner_timeout.as_secs_f64();
        let Some(row) = tx.query_opt(&sql, &[&id, &timeout]).await? else {
            return Ok(None);
        };
        let mut record = decode(row.get(0))?;
        if row.get::<_, bool>(1) {
            apply(
                &mut record,
                TaskChange::Failed(runner_gone()),
                SystemTime::now(),
            );
            save(tx, &record).await?;
        }
        Ok(Some(record))
    }

    async fn insert(&self, record: TaskRecord, max_active: usize) -> Result<(), TaskStoreError> {
        let mut slot = self.connected().await?;
        let client = slot.as_mut().expect("connected");
        let tx = client.transaction().await.map_err(Fail::from)?;
        // One owner's inserts are serialised, across instances, so that the limit holds.
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&record.owner],
        )
        .await
        .map_err(Fail::from)?;
        let count = format!(
            "SELECT count(*) FROM {TASKS_TABLE} WHERE owner = $1 AND active \
             AND (expires_at IS NULL OR expires_at > clock_timestamp()) \
             AND heartbeat_at >= clock_timestamp() - make_interval(secs => $2)"
        );
        let timeout = self.runner_timeout.as_secs_f64();
        let active: i64 = tx
            .query_one(&count, &[&record.owner, &timeout])
            .await
            .map_err(Fail::from)?
            .get(0);
        if usize::try_from(active).unwrap_or(usize::MAX) >= max_active {
            return Err(TaskStoreError::OwnerLimit(max_active));
        }
        let insert = format!(
            "INSERT INTO {TASKS_TABLE} (id, owner, active, runner, expires_at, record) \
             VALUES ($1, $2, $3, $4, clock_timestamp() + make_interval(secs => $5), $6)"
        );
        let ttl = record.ttl.map(|t| t.as_secs_f64());
        tx.execute(
            &insert,
            &[
                &record.id,
                &record.owner,
                &!record.status.is_terminal(),
                &record.runner,
                &ttl,
                &encode(&record)?,
            ],
        )
        .await
        .map_err(Fail::from)?;
        tx.commit().await.map_err(Fail::from)?;
        Ok(())
    }

    async fn get(&self, id: String) -> Result<Option<TaskRecord>, Fail> {
        let mut slot = self.connected().await?;
        let tx = slot.as_mut().expect("connected").transaction().await?;
        let record = self.load(&tx, &id).await?;
        tx.commit().await?;
        Ok(record)
    }

    async fn change(&self, id: String, change: TaskChange) -> Result<Option<TaskRecord>, Fail> {
        let mut slot = self.connected().await?;
        let tx = slot.as_mut().expect("connected").transaction().await?;
        let mut changed = None;
        if let Some(mut record) = self.load(&tx, &id).await?
            && apply(&mut record, change, SystemTime::now())
        {
            save(&tx, &record).await?;
            changed = Some(record);
        }
        tx.commit().await?;
        Ok(changed)
    }

    async fn answer(&self, id: String, responses: JsonObject) -> Result<Option<TaskRecord>, Fail> {
        let mut slot = self.connected().await?;
        let tx = slot.as_mut().expect("connected").transaction().await?;
        let mut found = self.load(&tx, &id).await?;
        if let Some(record) = &mut found
            && accept(record, responses, SystemTime::now())
        {
            save(&tx, record).await?;
        }
        tx.commit().await?;
        Ok(found)
    }

    async fn take_answers(&self, id: String) -> Result<JsonObject, Fail> {
        let mut slot = self.connected().await?;
        let tx = slot.as_mut().expect("connected").transaction().await?;
        let mut taken = JsonObject::new();
        if let Some(mut record) = self.load(&tx, &id).await?
            && !record.answers.is_empty()
        {
            taken = std::mem::take(&mut record.answers);
            save(&tx, &record).await?;
        }
        tx.commit().await?;
        Ok(taken)
    }

    async fn remove(&self, id: String) -> Result<(), Fail> {
        let slot = self.connected().await?;
        let sql = format!("DELETE FROM {TASKS_TABLE} WHERE id = $1");
        slot.as_ref()
            .expect("connected")
            .execute(&sql, &[&id])
            .await?;
        Ok(())
    }

    async fn sweep(&self) -> Result<Vec<String>, Fail> {
        let slot = self.connected().await?;
        let sql =
            format!("DELETE FROM {TASKS_TABLE} WHERE expires_at <= clock_timestamp() RETURNING id");
        let rows = slot.as_ref().expect("connected").query(&sql, &[]).await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn heartbeat(&self, runner: String, ids: Vec<String>) -> Result<Vec<TaskRecord>, Fail> {
        let mut slot = self.connected().await?;
        let tx = slot.as_mut().expect("connected").transaction().await?;
        let beat = format!(
            "UPDATE {TASKS_TABLE} SET heartbeat_at = clock_timestamp() \
             WHERE id = ANY($1) AND runner = $2 AND active"
        );
        tx.execute(&beat, &[&ids, &runner]).await?;
        let mut records = Vec::with_capacity(ids.len());
        for id in &ids {
            if let Some(record) = self.load(&tx, id).await? {
                records.push(record);
            }
        }
        tx.commit().await?;
        Ok(records)
    }
}

/// Writes `record` back to its row.
async fn save(tx: &Transaction<'_>, record: &TaskRecord) -> Result<(), Fail> {
    let sql = format!("UPDATE {TASKS_TABLE} SET record = $2, active = $3 WHERE id = $1");
    tx.execute(
        &sql,
        &[&record.id, &encode(record)?, &!record.status.is_terminal()],
    )
    .await?;
    Ok(())
}

impl TaskStore for PgTaskStore {
    fn insert(
        &self,
        record: TaskRecord,
        max_active_per_owner: usize,
    ) -> BoxFuture<Result<(), TaskStoreError>> {
        let shared = self.shared.clone();
        Box::pin(async move { shared.insert(record, max_active_per_owner).await })
    }

    fn get(&self, id: &str) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>> {
        let (shared, id) = (self.shared.clone(), id.to_owned());
        Box::pin(async move { Ok(shared.get(id).await?) })
    }

    fn change(
        &self,
        id: &str,
        change: TaskChange,
        _now: SystemTime,
    ) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>> {
        let (shared, id) = (self.shared.clone(), id.to_owned());
        Box::pin(async move { Ok(shared.change(id, change).await?) })
    }

    fn answer(
        &self,
        id: &str,
        responses: JsonObject,
    ) -> BoxFuture<Result<Option<TaskRecord>, TaskStoreError>> {
        let (shared, id) = (self.shared.clone(), id.to_owned());
        Box::pin(async move { Ok(shared.answer(id, responses).await?) })
    }

    fn take_answers(&self, id: &str) -> BoxFuture<Result<JsonObject, TaskStoreError>> {
        let (shared, id) = (self.shared.clone(), id.to_owned());
        Box::pin(async move { Ok(shared.take_answers(id).await?) })
    }

    fn remove(&self, id: &str) -> BoxFuture<Result<(), TaskStoreError>> {
        let (shared, id) = (self.shared.clone(), id.to_owned());
        Box::pin(async move { Ok(shared.remove(id).await?) })
    }

    fn sweep(&self, _now: SystemTime) -> BoxFuture<Result<Vec<String>, TaskStoreError>> {
        let shared = self.shared.clone();
        Box::pin(async move { Ok(shared.sweep().await?) })
    }

    fn heartbeat(
        &self,
        runner: &str,
        ids: Vec<String>,
    ) -> BoxFuture<Result<Vec<TaskRecord>, TaskStoreError>> {
        let (shared, runner) = (self.shared.clone(), runner.to_owned());
        Box::pin(async move { Ok(shared.heartbeat(runner, ids).await?) })
    }
}
