//! The PostgreSQL engine: every call in a transaction of its own, `READ ONLY` for reads, with
//! its time limits set for the transaction; one statement per call through the extended protocol
//! (whose Parse message refuses more than one); parameters bound in text format; cancellation
//! through the server's cancel request.
//!
//! Calls run on the adapter's own connections ([`wire`]), which send everything a call needs in
//! one write: a one-row read is one round trip to the server.

mod calls;
mod catalog;
pub(crate) mod errors;
mod pool;
mod tls;
mod types;
mod wire;

pub(crate) use tls::PgTls;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;
use tokio_util::sync::CancellationToken;

use crate::config::{DatabaseConfig, Limits, PostgresConfig, SslMode};
use crate::engine::{CatalogEntry, Description};
use crate::error::{ExecError, SqlError};
use crate::output::Rows;
use crate::remote;
use crate::value::Param;
use catalog::{check_role, describe, tables};
use pool::{PgConn, PgPool};
use wire::{Wire, WireError};

/// How long past the call's deadline the adapter waits for the server's own `statement_timeout`
/// before it sends a cancel request itself.
const GRACE: Duration = Duration::from_secs(2);

/// A failed call: what to tell the model, whether the connection is no longer fit for another
/// call, and whether a read may run again on another connection.
struct Failure {
    error: ExecError,
    fatal: bool,
    /// The connection turned out unusable before the statement's answer was read (the previous
    /// call's reset failed): a read is run once more, on another connection.
    retry: bool,
}

impl Failure {
    fn wire(e: &WireError, limit: Duration) -> Failure {
        // Anything but an error the server reported leaves the protocol state unknown, and a
        // FATAL one ends the session.
        let fatal = e
            .db()
            .is_none_or(|db| db.severity == "FATAL" || db.severity == "PANIC");
        let retry = matches!(e, WireError::Unclean(_));
        Failure {
            error: classify(e, limit),
            fatal,
            retry,
        }
    }

    /// An error the server reported for the statement: the connection stays usable.
    fn sql(error: ExecError) -> Failure {
        Failure {
            error,
            fatal: false,
            retry: false,
        }
    }
}

/// What a job produced, and whether its connection may serve another call.
type Done<T> = (Result<T, Failure>, bool);

type Job<'c, T> = Pin<Box<dyn Future<Output = Done<T>> + Send + 'c>>;

/// A job's result: the connection is reusable unless the failure says otherwise.
fn done<T>(result: Result<T, Failure>) -> Done<T> {
    let reusable = result.as_ref().map_or_else(|f| !f.fatal, |_| true);
    (result, reusable)
}

pub(crate) struct PgDb {
    reader: PgPool,
    writer: Option<PgPool>,
    /// The types met in results that are not built in (enums, domains, arrays of them), looked
    /// up once.
    types: Arc<calls::TypeCache>,
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
    Ok(PgPool::postgres(
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
        Ok(PgDb {
            reader,
            writer,
            types: Arc::default(),
        })
    }

    /// Lends a connection and runs `job` on it, under the call's deadline and the request's
    /// cancellation: either one sends PostgreSQL a cancel request for the running statement.
    /// A job that found its connection unusable before its statement's answer runs once more on
    /// another connection when `retry` allows it (reads).
    async fn run<T, F>(
        &self,
        pool: &PgPool,
        limits: Limits,
        cancel: &CancellationToken,
        retry: bool,
        job: F,
    ) -> Result<T, ExecError>
    where
        F: for<'c> Fn(&'c mut Wire) -> Job<'c, T>,
    {
        let deadline = Instant::now() + limits.timeout;
        let mut tries = if retry { 2 } else { 1 };
        loop {
            tries -= 1;
            match self.run_once(pool, limits, cancel, deadline, &job).await {
                Err(f) if f.retry && tries > 0 => continue,
                result => return result.map_err(|f| f.error),
            }
        }
    }

    async fn run_once<T, F>(
        &self,
        pool: &PgPool,
        limits: Limits,
        cancel: &CancellationToken,
        deadline: Instant,
        job: &F,
    ) -> Result<T, Failure>
    where
        F: for<'c> Fn(&'c mut Wire) -> Job<'c, T>,
    {
        let stop = |error| Failure {
            error,
            fatal: false,
            retry: false,
        };
        let mut conn: PgConn =
            remote::acquire(pool, limits, cancel, deadline, |e| pool.describe(e))
                .await
                .map_err(stop)?;
        let key = conn.start();
        let (out, stopped) =
            remote::supervise(job(conn.wire()), cancel, deadline + GRACE, &key).await;
        match (out, stopped) {
            (Some((result, reusable)), None) => {
                if reusable {
                    conn.finish().await;
                } else {
                    conn.abandon();
                }
                result
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
                Err(stop(error(limits.timeout)))
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
        let sql: Arc<str> = sql.into();
        let params: Arc<[Option<String>]> = params.iter().map(Param::to_text).collect();
        let types = self.types.clone();
        self.run(&self.reader, limits, cancel, true, move |wire| {
            let (sql, params, types) = (sql.clone(), params.clone(), types.clone());
            Box::pin(async move { calls::read(wire, &sql, &params, limits, &types).await })
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
        let sql: Arc<str> = sql.into();
        let params: Arc<[Option<String>]> = params.iter().map(Param::to_text).collect();
        let types = self.types.clone();
        self.run(writer, limits, cancel, false, move |wire| {
            let (sql, params, types) = (sql.clone(), params.clone(), types.clone());
            Box::pin(async move { calls::write(wire, &sql, &params, limits, &types).await })
        })
        .await
    }

    pub(crate) async fn tables(
        &self,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Vec<CatalogEntry>, ExecError> {
        self.run(&self.reader, limits, cancel, true, |wire| {
            Box::pin(async move { done(tables(wire, limits.timeout).await) })
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
        self.run(&self.reader, limits, cancel, true, move |wire| {
            let (schema, table) = (schema.clone(), table.clone());
            Box::pin(async move {
                done(describe(wire, schema.as_deref(), &table, limits.timeout).await)
            })
        })
        .await
    }
}

/// Turns a server or connection error into what the model is told.
fn classify(e: &WireError, limit: Duration) -> ExecError {
    let db = match e {
        WireError::Db(db) => db,
        WireError::Copy => {
            return ExecError::Refused(
                "the statement needs a protocol exchange this adapter does not allow (COPY to or from the client); select the rows instead".into(),
            );
        }
        WireError::Closed => {
            return ExecError::Unavailable("the connection to PostgreSQL closed".into());
        }
        other => {
            return ExecError::Unavailable(format!("the connection to PostgreSQL failed: {other}"));
        }
    };
    let mut message = db.message.clone();
    if let Some(detail) = &db.detail {
        message.push_str("\nDetail: ");
        message.push_str(detail);
    }
    if let Some(hint) = &db.hint {
        message.push_str("\nHint: ");
        message.push_str(hint);
    }
    let code = &db.code;
    if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
        ExecError::ReadOnly(format!(
            "`query` runs in a read-only transaction, and PostgreSQL refused this statement ({message})"
        ))
    } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
        ExecError::Refused(format!("the database role may not do this ({message})"))
    } else if *code == SqlState::QUERY_CANCELED {
        ExecError::Timeout(limit)
    } else if *code == SqlState::SYNTAX_ERROR && db.message.contains("multiple commands") {
        ExecError::MultipleStatements
    } else if *code == SqlState::ACTIVE_SQL_TRANSACTION
        || *code == SqlState::NO_ACTIVE_SQL_TRANSACTION
    {
        ExecError::Refused(format!(
            "{message}: every call runs inside a transaction of its own"
        ))
    } else {
        if let Some(at) = db.position {
            message.push_str(&format!("\nAt character {at} of the statement."));
        }
        ExecError::Sql(format!("{message} (SQLSTATE {})", code.code()))
    }
}
