//! A small pool of SQLite connections, each used by one blocking task at a time.
//!
//! The pool crates pin older rusqlite versions, so this is our own: a semaphore counts free
//! connections and a mutex holds them. A job takes a connection into `spawn_blocking`, and the
//! connection comes back to the pool only once the caller has the job's result (or has gone away),
//! so an interrupt sent on behalf of one call can never reach the next call's statement.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, InterruptHandle, OpenFlags};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::policy::{Mode, Policy};
use crate::database::PoolStats;
use crate::error::ExecError;

/// One pooled connection and the authorizer state installed on it.
pub(crate) struct Slot {
    pub(crate) conn: Connection,
    pub(crate) policy: Policy,
    /// The length limit set from the byte budget (reads), so that hitting it can be explained.
    value_cap: Option<usize>,
}

impl Slot {
    /// Opens a connection to `path` and locks it down for `mode`.
    pub(crate) fn open(
        path: &Path,
        mode: Mode,
        create: bool,
        busy: Duration,
        max_value_bytes: usize,
    ) -> rusqlite::Result<Slot> {
        use rusqlite::config::DbConfig;
        use rusqlite::limits::Limit;

        debug_assert!(mode == Mode::Write || max_value_bytes > 0);

        // Never SQLITE_OPEN_URI: the path is a file name, not a URI whose query could change the
        // open mode.
        let flags = match mode {
            Mode::Read => OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            Mode::Write if create => {
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_CREATE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX
            }
            Mode::Write => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        };
        let mut conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(busy)?;
        // Defensive mode forbids writable_schema tricks and raw page writes; an untrusted schema
        // cannot run functions with side effects from views or triggers; nothing may attach a
        // database (the limit of attached databases is zero), create one or open one for writing.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, false)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_ATTACH_CREATE, false)?;
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_ATTACH_WRITE, false)?;
        conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
        let value_cap = match mode {
            Mode::Read => {
                conn.pragma_update(None, "query_only", true)?;
                // No single value larger than this may be built (randomblob(1e9), a string
                // doubled in a recursive query): SQLite checks the size before it allocates, so
                // such a statement fails at once instead of after seconds and gigabytes.
                let cap = i32::try_from(max_value_bytes).unwrap_or(i32::MAX);
                conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, cap)?;
                Some(usize::try_from(cap).unwrap_or(usize::MAX))
            }
            Mode::Write => {
                // An approved write may store values of any size the engine allows.
                conn.pragma_update(None, "foreign_keys", true)?;
                None
            }
        };
        // Installed last: the setup pragmas above would be refused by it.
        let policy = Policy::new(mode);
        policy.install(&mut conn)?;
        Ok(Slot {
            conn,
            policy,
            value_cap,
        })
    }
}

struct Shared {
    idle: Mutex<Vec<Slot>>,
    permits: Arc<Semaphore>,
    /// How many connections the pool holds.
    size: usize,
    /// Calls waiting for a free connection now.
    waiting: AtomicUsize,
}

/// A fixed set of connections to one database file.
#[derive(Clone)]
pub(crate) struct Pool {
    shared: Arc<Shared>,
}

/// A connection taken from the pool; dropping it puts the connection back.
struct Lease {
    slot: Option<Slot>,
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            // A job that panicked inside the adapter's transaction must not hand it on.
            if !slot.conn.is_autocommit() {
                let _ = slot.policy.internal(|| slot.conn.execute_batch("ROLLBACK"));
            }
            self.shared.idle.lock().expect("pool lock").push(slot);
        }
    }
}

/// What a running job checks between steps: the deadline, the client's cancellation, and whether
/// its caller went away.
#[derive(Clone)]
pub(crate) struct Control {
    deadline: Instant,
    cancel: CancellationToken,
    abandoned: Arc<AtomicBool>,
    value_cap: Option<usize>,
}

impl Control {
    fn should_stop(&self) -> bool {
        self.cancel.is_cancelled()
            || self.abandoned.load(Ordering::Relaxed)
            || Instant::now() >= self.deadline
    }

    /// Turns an SQLite error into what the model is told.
    pub(crate) fn classify(
        &self,
        err: rusqlite::Error,
        policy: &Policy,
        limit: Duration,
    ) -> ExecError {
        // A denial by the authorizer fails the statement, but not always with SQLITE_AUTH (a
        // refused function is reported as a plain error): what the authorizer recorded decides.
        if let Some(denial) = policy.take_denial() {
            return if denial.write {
                ExecError::ReadOnly(denial.why)
            } else {
                ExecError::Refused(denial.why)
            };
        }
        if let (Some(ErrorCode::TooBig), Some(cap)) = (err.sqlite_error_code(), self.value_cap) {
            return ExecError::TooBig(cap);
        }
        match err.sqlite_error_code() {
            Some(ErrorCode::OperationInterrupted) => {
                if self.cancel.is_cancelled() || self.abandoned.load(Ordering::Relaxed) {
                    ExecError::Cancelled
                } else {
                    ExecError::Timeout(limit)
                }
            }
            Some(ErrorCode::AuthorizationForStatementDenied) => {
                ExecError::Refused("the statement is not allowed".to_owned())
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => ExecError::Sql(
                "the database is locked by another writer; try again in a moment".to_owned(),
            ),
            Some(ErrorCode::ReadOnly) => {
                ExecError::ReadOnly("the statement would write to a read-only database".to_owned())
            }
            _ => match err {
                rusqlite::Error::SqliteFailure(_, Some(message)) => ExecError::Sql(message),
                rusqlite::Error::MultipleStatement => ExecError::MultipleStatements,
                rusqlite::Error::InvalidParameterCount(given, expected) => ExecError::Sql(format!(
                    "the statement has {expected} parameter placeholder(s) but {given} value(s) were given in `params`"
                )),
                other => ExecError::Sql(other.to_string()),
            },
        }
    }
}

/// Interrupts the job's statement when the caller is cancelled or dropped, until disarmed.
struct Interrupter {
    handle: InterruptHandle,
    abandoned: Arc<AtomicBool>,
    armed: bool,
}

impl Interrupter {
    fn fire(&self) {
        self.abandoned.store(true, Ordering::Relaxed);
        self.handle.interrupt();
    }
}

impl Drop for Interrupter {
    fn drop(&mut self) {
        // The caller's future was dropped mid-statement (the stdio transport does this on
        // `notifications/cancelled`): stop the statement rather than let it run to its deadline.
        if self.armed {
            self.fire();
        }
    }
}

impl Pool {
    /// A pool over already opened connections.
    pub(crate) fn new(slots: Vec<Slot>) -> Pool {
        let size = slots.len();
        Pool {
            shared: Arc::new(Shared {
                idle: Mutex::new(slots),
                permits: Arc::new(Semaphore::new(size)),
                size,
                waiting: AtomicUsize::new(0),
            }),
        }
    }

    /// The pool's state now: its size, the connections in use and the calls waiting for one.
    pub(crate) fn stats(&self, pool: &'static str) -> PoolStats {
        let shared = &self.shared;
        PoolStats {
            pool,
            size: shared.size,
            in_use: shared
                .size
                .saturating_sub(shared.permits.available_permits()),
            waiting: shared.waiting.load(Ordering::Relaxed),
            round_trips: 0,
        }
    }

    /// Takes a connection's permit, waiting at most `wait` for one to come free.
    async fn acquire(
        &self,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> Result<OwnedSemaphorePermit, ExecError> {
        let closed = || ExecError::Unavailable("the connection pool is closed".into());
        match self.shared.permits.clone().try_acquire_owned() {
            Ok(permit) => return Ok(permit),
            Err(tokio::sync::TryAcquireError::Closed) => return Err(closed()),
            Err(tokio::sync::TryAcquireError::NoPermits) => {}
        }
        let _waiting = crate::engine::Waiting::new(&self.shared.waiting);
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ExecError::Cancelled),
            () = tokio::time::sleep(wait) => Err(ExecError::Busy {
                connections: self.shared.size,
                waited: wait,
            }),
            permit = self.shared.permits.clone().acquire_owned() => permit.map_err(|_| closed()),
        }
    }

    /// Runs `job` on a pooled connection in a blocking task, under a deadline of `limit` and the
    /// request's cancellation token. Waiting for a free connection counts toward the deadline and
    /// lasts at most `wait` (and at most `limit`), after which the call is refused as busy.
    pub(crate) async fn run<T, F>(
        &self,
        (limit, wait): (Duration, Duration),
        cancel: &CancellationToken,
        job: F,
    ) -> Result<T, ExecError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Slot, &Control) -> Result<T, ExecError> + Send + 'static,
    {
        let deadline = Instant::now() + limit;
        let permit = self.acquire(wait.min(limit), cancel).await?;
        let slot = self
            .shared
            .idle
            .lock()
            .expect("pool lock")
            .pop()
            .expect("a permit stands for an idle connection");
        let abandoned = Arc::new(AtomicBool::new(false));
        let mut interrupter = Interrupter {
            handle: slot.conn.get_interrupt_handle(),
            abandoned: abandoned.clone(),
            armed: true,
        };
        let lease = Lease {
            slot: Some(slot),
            shared: self.shared.clone(),
            _permit: permit,
        };
        let control = Control {
            deadline,
            cancel: cancel.clone(),
            abandoned,
            value_cap: lease.slot.as_ref().and_then(|s| s.value_cap),
        };
        let task = tokio::task::spawn_blocking(move || {
            let mut lease = lease;
            let slot = lease
                .slot
                .as_mut()
                .expect("a lease holds its slot until dropped");
            let watch = control.clone();
            // Called every 1000 virtual-machine steps: returning true interrupts the statement.
            // Without it there would be no time limit, so a failure to install it stops the job.
            let out = match slot
                .conn
                .progress_handler(1000, Some(move || watch.should_stop()))
            {
                Ok(()) => job(slot, &control),
                Err(e) => Err(ExecError::Unavailable(format!(
                    "could not install the time limit: {e}"
                ))),
            };
            let _ = slot.conn.progress_handler(0, None::<fn() -> bool>);
            // The lease travels back with the result, so the connection rejoins the pool only
            // after the caller disarmed its interrupter.
            (out, lease)
        });
        tokio::pin!(task);
        let joined = tokio::select! {
            joined = &mut task => joined,
            () = cancel.cancelled() => {
                interrupter.fire();
                (&mut task).await
            }
        };
        interrupter.armed = false;
        match joined {
            Ok((out, lease)) => {
                drop(lease);
                out
            }
            Err(e) => {
                tracing::error!(error = %e, "an SQLite job failed");
                Err(ExecError::Unavailable(
                    "the database worker failed; see the server log".into(),
                ))
            }
        }
    }
}
