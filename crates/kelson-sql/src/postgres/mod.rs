//! The PostgreSQL engine: every call in a transaction of its own, `READ ONLY` for reads, with
//! `SET LOCAL statement_timeout`; one statement per call through the extended protocol (whose Parse
//! message refuses more than one); parameters bound in text format; cancellation through the
//! server's cancel request.

mod catalog;
pub(crate) mod errors;
mod pool;
mod tls;
mod types;

pub(crate) use tls::PgTls;

use std::future::Future;
use std::pin::{Pin, pin};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use serde_json::Value;
use tokio_postgres::error::{ErrorPosition, SqlState};
use tokio_postgres::{CancelToken, Client, Row, SimpleQueryMessage, Statement};
use tokio_util::sync::CancellationToken;

use crate::config::{DatabaseConfig, Limits, PostgresConfig, SslMode};
use crate::engine::{CatalogEntry, Description};
use crate::error::{ExecError, SqlError};
use crate::output::{Column, Rows};
use crate::value::{Collector, Param, Truncation};
use catalog::{TABLES, check_role, describe};
use pool::{GetError, PgConn, PgPool};
use types::{RawValue, TextParam, decode};

/// How long past the call's deadline the adapter waits for the server's own `statement_timeout`
/// before it sends a cancel request itself.
const GRACE: Duration = Duration::from_secs(2);
/// How long a cancelled statement may take to stop before its connection is abandoned.
const STOP_WAIT: Duration = Duration::from_secs(5);
/// Rows fetched per round trip from a read's portal, so that the byte limit can stop a read early.
const FETCH: usize = 256;

/// A failed call: what to tell the model, and whether the connection is no longer fit for another
/// call.
struct Failure {
    error: ExecError,
    fatal: bool,
}

impl Failure {
    fn pg(e: &tokio_postgres::Error, limit: Duration) -> Failure {
        // Anything but an error the server reported leaves the protocol state unknown. A missing
        // prepared statement means the statements this driver caches were deallocated (a user's
        // `DEALLOCATE ALL`), which would break every later call on the connection.
        let fatal =
            e.as_db_error().is_none() || e.code() == Some(&SqlState::INVALID_SQL_STATEMENT_NAME);
        Failure {
            error: classify(e, limit),
            fatal,
        }
    }
}

/// What a job produced, and whether its connection may serve another call.
type Done<T> = (Result<T, Failure>, bool);

type Job<'c, T> = Pin<Box<dyn Future<Output = Done<T>> + Send + 'c>>;

/// A job's result on a connection it did not change: reusable unless the failure says otherwise.
fn plain<T>(result: Result<T, Failure>) -> Done<T> {
    let reusable = result.as_ref().map_or_else(|f| !f.fatal, |_| true);
    (result, reusable)
}

pub(crate) struct PgDb {
    reader: PgPool,
    writer: Option<PgPool>,
}

/// Connects for one of the adapter's own tables (the approval ledger, the task store): within
/// `timeout`, the connection driven by a task of its own (its end logged as `what`'s), then `ddl`
/// run to create the table if it is missing. Two instances creating it at once is not an error.
pub(crate) async fn open_own_table(
    config: &tokio_postgres::Config,
    tls: &PgTls,
    timeout: Duration,
    ddl: &str,
    what: &'static str,
) -> Result<Client, tokio_postgres::Error> {
    let mut config = config.clone();
    config.connect_timeout(timeout);
    let (client, connection) = config.connect(tls.clone()).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "the {what}'s connection ended");
        }
    });
    // "already exists, skipping" notices are not worth a log line at every start.
    let ddl = format!("SET client_min_messages TO warning; {ddl}");
    if let Err(e) = client.batch_execute(&ddl).await {
        // The loser of a race between two instances creating the table sees one of these.
        let raced = e.code().is_some_and(|c| {
            *c == SqlState::UNIQUE_VIOLATION
                || *c == SqlState::DUPLICATE_TABLE
                || *c == SqlState::DUPLICATE_OBJECT
        });
        if !raced {
            return Err(e);
        }
    }
    Ok(client)
}

/// A connection string and the TLS settings laid over it, made ready to connect with.
pub(crate) fn prepare(
    url: &str,
    database: &str,
    ssl_mode: Option<SslMode>,
    ssl_root_cert: Option<&std::path::Path>,
) -> Result<tls::Prepared, SqlError> {
    match tls::prepare(url, ssl_mode, ssl_root_cert) {
        Ok(Ok(prepared)) => Ok(prepared),
        Ok(Err(source)) => Err(errors::setup_error(database, None, source)),
        Err(reason) => Err(SqlError::Config {
            database: database.to_owned(),
            reason,
        }),
    }
}

fn pool(url: &str, name: &str, config: &PostgresConfig) -> Result<PgPool, SqlError> {
    let prepared = prepare(url, name, config.ssl_mode, config.ssl_root_cert.as_deref())?;
    Ok(PgPool::new(
        prepared.config,
        prepared.tls,
        config.connections,
        config.connect_timeout,
    ))
}

impl PgDb {
    /// The read pool's state, and the write pool's when writes are allowed.
    pub(crate) fn pools(&self) -> Vec<crate::database::PoolStats> {
        let mut pools = vec![self.reader.stats("read")];
        pools.extend(self.writer.as_ref().map(|w| w.stats("write")));
        pools
    }

    /// Connects the read pool (and the write pool, if writes are allowed), checking that each role
    /// cannot escape a transaction through server files or programs.
    pub(crate) async fn connect(
        name: &str,
        config: &PostgresConfig,
        db: &DatabaseConfig,
    ) -> Result<PgDb, SqlError> {
        let reader = pool(&config.url, name, config)?;
        check_role(&reader, name, config.allow_privileged_role).await?;
        let writer = if db.allow_write {
            let url = config.write_url.as_deref().unwrap_or(&config.url);
            let writer = pool(url, name, config)?;
            check_role(&writer, name, config.allow_privileged_role).await?;
            Some(writer)
        } else {
            None
        };
        Ok(PgDb { reader, writer })
    }

    /// Lends a connection and runs `job` on it, under the call's deadline and the request's
    /// cancellation: either one sends PostgreSQL a cancel request for the running statement.
    async fn run<T, F>(
        &self,
        pool: &PgPool,
        limits: Limits,
        cancel: &CancellationToken,
        job: F,
    ) -> Result<T, ExecError>
    where
        F: for<'c> FnOnce(&'c mut Client) -> Job<'c, T>,
    {
        let deadline = Instant::now() + limits.timeout;
        let wait = limits.connection_wait.min(limits.timeout);
        let mut conn: PgConn = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ExecError::Cancelled),
            () = tokio::time::sleep_until(deadline.into()) => return Err(ExecError::Timeout(limits.timeout)),
            conn = pool.get(wait) => conn.map_err(|e| match e {
                GetError::Busy { connections } => ExecError::Busy { connections, waited: wait },
                GetError::Connect(e) => ExecError::Unavailable(pool.describe(&e)),
            })?,
        };
        let token = conn.client().cancel_token();
        conn.start();
        let (out, stopped) = supervise(
            job(conn.client()),
            cancel,
            deadline + GRACE,
            &token,
            pool.tls(),
        )
        .await;
        match (out, stopped) {
            (Some((result, reusable)), None) => {
                if reusable {
                    conn.finish();
                } else {
                    conn.abandon();
                }
                result.map_err(|f| f.error)
            }
            // A cancel request was sent, so the connection is dropped rather than reused: a late
            // cancel could otherwise hit the next call's statement. A call that finished anyway
            // (a write that committed just before the cancel arrived) reports what happened.
            (Some((Ok(value), _)), Some(_)) => {
                conn.abandon();
                Ok(value)
            }
            (_, Some(error)) => {
                conn.abandon();
                Err(error(limits.timeout))
            }
            (None, None) => unreachable!("supervise returns an output unless it stopped the work"),
        }
    }

    pub(crate) async fn query(
        &self,
        sql: String,
        params: Vec<Param>,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Rows, ExecError> {
        self.run(&self.reader, limits, cancel, move |client| {
            Box::pin(async move {
                let result = read_in_tx(client, &sql, &params, limits).await;
                finish_call(client, result).await
            })
        })
        .await
    }

    pub(crate) async fn execute(
        &self,
        sql: String,
        params: Vec<Param>,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Rows, ExecError> {
        let Some(writer) = &self.writer else {
            return Err(ExecError::Refused(
                "writes are not enabled on this database".into(),
            ));
        };
        self.run(writer, limits, cancel, move |client| {
            Box::pin(async move {
                let result = write_in_tx(client, &sql, &params, limits).await;
                finish_call(client, result).await
            })
        })
        .await
    }

    pub(crate) async fn tables(
        &self,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Vec<CatalogEntry>, ExecError> {
        let timeout = limits.timeout;
        self.run(&self.reader, limits, cancel, move |client| {
            Box::pin(async move {
                let rows = client.query(TABLES, &[]).await;
                plain(
                    rows.and_then(|rows| {
                        rows.iter()
                            .map(|r| {
                                Ok(CatalogEntry {
                                    schema: r.try_get(0)?,
                                    name: r.try_get(1)?,
                                    kind: r.try_get(2)?,
                                    fingerprint: r.try_get(3)?,
                                })
                            })
                            .collect()
                    })
                    .map_err(|e| Failure::pg(&e, timeout)),
                )
            })
        })
        .await
    }

    pub(crate) async fn describe(
        &self,
        schema: Option<String>,
        table: String,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Option<Description>, ExecError> {
        let timeout = limits.timeout;
        self.run(&self.reader, limits, cancel, move |client| {
            Box::pin(async move {
                plain(
                    describe(client, schema.as_deref(), &table)
                        .await
                        .map_err(|e| Failure::pg(&e, timeout)),
                )
            })
        })
        .await
    }
}

/// Runs `work` until it finishes, the request is cancelled, or `backstop` passes; in the latter two
/// cases sends a cancel request and waits a little for the statement to stop. The second value is
/// the error to report when the call was stopped.
async fn supervise<T>(
    work: impl Future<Output = T>,
    cancel: &CancellationToken,
    backstop: Instant,
    token: &CancelToken,
    tls: &PgTls,
) -> (Option<T>, Option<fn(Duration) -> ExecError>) {
    let mut work = pin!(work);
    let stopped: fn(Duration) -> ExecError = tokio::select! {
        biased;
        out = &mut work => return (Some(out), None),
        () = cancel.cancelled() => |_| ExecError::Cancelled,
        () = tokio::time::sleep_until(backstop.into()) => ExecError::Timeout,
    };
    if let Err(e) = token.cancel_query(tls.clone()).await {
        tracing::warn!(error = %e, "could not send PostgreSQL a cancel request");
    }
    let out = tokio::time::timeout(STOP_WAIT, &mut work).await.ok();
    (out, Some(stopped))
}

/// The per-transaction limits, set with `SET LOCAL` so that they end with the transaction. The
/// closing `SELECT` takes the transaction's first snapshot, after which PostgreSQL refuses to switch
/// it to read-write (`SET TRANSACTION READ WRITE`, `set_config('transaction_read_only', ...)`).
fn session_limits(timeout: Duration) -> String {
    let ms = timeout.as_millis().max(1);
    format!(
        "SET LOCAL statement_timeout = {ms}; SET LOCAL lock_timeout = {ms}; \
         SET LOCAL idle_in_transaction_session_timeout = {}; SELECT 1",
        ms + 60_000
    )
}

fn check_params(stmt: &Statement, params: &[Param]) -> Result<Vec<TextParam>, Failure> {
    let expected = stmt.params().len();
    if expected != params.len() {
        return Err(Failure {
            error: ExecError::Sql(format!(
                "the statement has {expected} parameter placeholder(s) ($1, $2, ...) but {} value(s) were given in `params`",
                params.len()
            )),
            fatal: false,
        });
    }
    Ok(params.iter().map(|p| TextParam(p.to_text())).collect())
}

fn columns(stmt: &Statement) -> Vec<Column> {
    stmt.columns()
        .iter()
        .map(|c| Column {
            name: c.name().to_owned(),
            ty: Some(c.type_().name().to_owned()),
        })
        .collect()
}

/// A row's values as JSON, or `None` when one of them is larger than `cap` bytes on the wire:
/// such a value could never be returned, so it is not decoded (a 60 MB text would otherwise be
/// copied into a string, then serialized to be measured). The driver has already received the row
/// by then; PostgreSQL has no setting that stops the server building a large value.
fn values(row: &Row, limit: Duration, cap: usize) -> Result<Option<Vec<Value>>, Failure> {
    let mut out = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let raw = row
            .try_get::<_, RawValue<'_>>(i)
            .map_err(|e| Failure::pg(&e, limit))?;
        out.push(match raw.0 {
            None => Value::Null,
            Some(bytes) if bytes.len() > cap => return Ok(None),
            Some(bytes) => decode(column.type_(), bytes),
        });
    }
    Ok(Some(out))
}

/// A statement prepared in a transaction of its own, under the call's time limit.
struct Prepared<'c> {
    tx: tokio_postgres::Transaction<'c>,
    stmt: Statement,
    bound: Vec<TextParam>,
    columns: Vec<Column>,
}

/// Starts a `READ ONLY` (or `READ WRITE`) transaction with the session limits, prepares `sql` and
/// checks `params` against it.
async fn prepare_in_tx<'c>(
    client: &'c mut Client,
    read_only: bool,
    sql: &str,
    params: &[Param],
    limit: Duration,
) -> Result<Prepared<'c>, Failure> {
    let fail = |e: tokio_postgres::Error| Failure::pg(&e, limit);
    let tx = client
        .build_transaction()
        .read_only(read_only)
        .start()
        .await
        .map_err(fail)?;
    // The limits and the statement's Parse go out together (one round trip instead of two); the
    // server runs them in order, so the statement is parsed under the limits, after the snapshot.
    let limits = session_limits(limit);
    let (limited, prepared) = tokio::join!(tx.batch_execute(&limits), tx.prepare(sql));
    limited.map_err(fail)?;
    let stmt = prepared.map_err(fail)?;
    let bound = check_params(&stmt, params)?;
    let columns = columns(&stmt);
    Ok(Prepared {
        tx,
        stmt,
        bound,
        columns,
    })
}

/// A read: one statement in a `READ ONLY` transaction, fetched through a portal a batch at a time
/// so that no more than the row limit (plus one, to detect truncation) ever leaves the server.
async fn read_in_tx(
    client: &mut Client,
    sql: &str,
    params: &[Param],
    limits: Limits,
) -> Result<Rows, Failure> {
    let limit = limits.timeout;
    let fail = |e: tokio_postgres::Error| Failure::pg(&e, limit);
    let Prepared {
        tx,
        stmt,
        bound,
        columns,
    } = prepare_in_tx(client, true, sql, params, limit).await?;
    let portal = tx.bind_raw(&stmt, bound.iter()).await.map_err(fail)?;
    let cap = limits.value_cap();
    let mut collector = Collector::new(limits.max_rows, limits.max_bytes);
    'fetch: loop {
        let want = (limits.max_rows + 1 - collector.rows.len()).min(FETCH);
        let batch = i32::try_from(want).unwrap_or(i32::MAX);
        let mut stream = pin!(tx.query_portal_raw(&portal, batch).await.map_err(fail)?);
        let mut got = 0;
        while let Some(row) = stream.next().await {
            let row = row.map_err(fail)?;
            got += 1;
            let Some(values) = values(&row, limit, cap)? else {
                return Err(Failure {
                    error: ExecError::TooBig(cap),
                    fatal: false,
                });
            };
            if !collector.push(values) {
                break 'fetch;
            }
        }
        if got < want {
            // The portal is done. Only an empty query (whitespace or comments) ends without a
            // command tag.
            if got == 0 && columns.is_empty() && stream.rows_affected().is_none() {
                return Err(Failure {
                    error: ExecError::Empty,
                    fatal: false,
                });
            }
            break;
        }
    }
    // Dropping the transaction rolls it back.
    Ok(Rows {
        columns,
        rows: collector.rows,
        truncated: collector.truncated,
        rows_affected: None,
    })
}

/// An approved write: one statement in a `READ WRITE` transaction, committed when it succeeds and
/// rolled back otherwise. Returned rows (`RETURNING`) are kept up to the limits, but the statement
/// always runs to completion.
async fn write_in_tx(
    client: &mut Client,
    sql: &str,
    params: &[Param],
    limits: Limits,
) -> Result<Rows, Failure> {
    let limit = limits.timeout;
    let fail = |e: tokio_postgres::Error| Failure::pg(&e, limit);
    let Prepared {
        tx,
        stmt,
        bound,
        columns,
    } = prepare_in_tx(client, false, sql, params, limit).await?;
    let mut collector = Collector::new(limits.max_rows, limits.max_bytes);
    let mut stream = pin!(tx.query_raw(&stmt, bound.iter()).await.map_err(fail)?);
    while let Some(row) = stream.next().await {
        let row = row.map_err(fail)?;
        // An approved write runs to completion whatever it returns: a returned value over the
        // cap only ends the rows kept, as the byte limit does.
        if collector.wants_more() {
            match values(&row, limit, limits.value_cap())? {
                Some(values) => {
                    collector.push(values);
                }
                None => collector.cut(Truncation::MaxBytes),
            }
        }
    }
    let affected = stream.rows_affected();
    tx.commit().await.map_err(fail)?;
    Ok(Rows {
        columns,
        rows: collector.rows,
        truncated: collector.truncated,
        rows_affected: Some(affected.unwrap_or(0)),
    })
}

/// Clears the session state a statement can leave behind its rolled-back (or, for `execute`,
/// committed) transaction: session advisory locks, cursors, `LISTEN`, settings and roles,
/// temporary tables, sequence state. `DISCARD ALL` would also deallocate the statements this
/// driver caches for type lookups, so statements prepared in SQL are counted instead: a connection
/// that has any is not reused.
const RESET_SESSION: &str = "SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL; \
                             RESET ROLE; SET SESSION AUTHORIZATION DEFAULT; DISCARD TEMP; \
                             DISCARD SEQUENCES; \
                             SELECT count(*) FROM pg_prepared_statements WHERE from_sql";

/// Ends a user statement's call: resets the session, and says whether the connection may serve
/// another call.
async fn finish_call<T>(client: &mut Client, result: Result<T, Failure>) -> Done<T> {
    if result.as_ref().is_err_and(|f| f.fatal) {
        return (result, false);
    }
    let clean = match client.simple_query(RESET_SESSION).await {
        Ok(messages) => messages
            .iter()
            .any(|m| matches!(m, SimpleQueryMessage::Row(row) if row.get(0) == Some("0"))),
        Err(e) => {
            tracing::warn!(error = %e, "could not reset a PostgreSQL session; closing it");
            false
        }
    };
    (result, clean)
}

/// Turns a driver or server error into what the model is told.
fn classify(e: &tokio_postgres::Error, limit: Duration) -> ExecError {
    let Some(db) = e.as_db_error() else {
        if e.is_closed() {
            return ExecError::Unavailable("the connection to PostgreSQL closed".into());
        }
        let text = e.to_string();
        if text.contains("unexpected message") {
            return ExecError::Refused(
                "the statement needs a protocol exchange this adapter does not allow (COPY to or from the client); select the rows instead".into(),
            );
        }
        return ExecError::Sql(text);
    };
    let mut message = db.message().to_owned();
    if let Some(detail) = db.detail() {
        message.push_str("\nDetail: ");
        message.push_str(detail);
    }
    if let Some(hint) = db.hint() {
        message.push_str("\nHint: ");
        message.push_str(hint);
    }
    let code = db.code();
    if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
        ExecError::ReadOnly(format!(
            "`query` runs in a read-only transaction, and PostgreSQL refused this statement ({message})"
        ))
    } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
        ExecError::Refused(format!("the database role may not do this ({message})"))
    } else if *code == SqlState::QUERY_CANCELED {
        ExecError::Timeout(limit)
    } else if *code == SqlState::SYNTAX_ERROR && db.message().contains("multiple commands") {
        ExecError::MultipleStatements
    } else if *code == SqlState::ACTIVE_SQL_TRANSACTION
        || *code == SqlState::NO_ACTIVE_SQL_TRANSACTION
    {
        ExecError::Refused(format!(
            "{message}: every call runs inside a transaction of its own"
        ))
    } else {
        if let Some(ErrorPosition::Original(at)) = db.position() {
            message.push_str(&format!("\nAt character {at} of the statement."));
        }
        ExecError::Sql(format!("{message} (SQLSTATE {})", code.code()))
    }
}
