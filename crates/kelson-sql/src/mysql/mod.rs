//! The MySQL and MariaDB engine.
//!
//! Read-only is the server's doing, never a reading of the SQL:
//! - The user's text is only ever run as a prepared statement (`PREPARE` from a variable holding
//!   it as a hex literal, see [`calls`]), which holds exactly one statement: stacked statements
//!   are a syntax error. Nothing of the user's is ever part of a query's text.
//! - Every read runs inside an XA transaction started read-only (`SET TRANSACTION READ ONLY;
//!   XA START`), then ended and rolled back. Not `START TRANSACTION READ ONLY`: in that one, a
//!   statement that commits implicitly (`CREATE TABLE`, `DROP`, `TRUNCATE`, `LOCK TABLES`,
//!   `RENAME`, ...) first commits the read-only transaction and then runs outside any transaction,
//!   where it writes (verified on MariaDB 10.11: `CREATE TABLE` created its table). Inside an
//!   active XA transaction MariaDB and MySQL refuse every such statement, and `COMMIT` itself
//!   (`XAER_RMFAIL`), while the transaction's read-only mode refuses writes to every kind of
//!   table, temporary tables included, `SELECT ... FOR UPDATE`, sequences' `nextval` and writes
//!   inside stored functions (`ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION`).
//! - After every call the session is reset (`COM_RESET_CONNECTION`): temporary tables, `HANDLER`s,
//!   user-level locks (`GET_LOCK`), user variables, session settings and prepared statements are
//!   dropped, so nothing a statement set outlives its call.
//!
//! Round trips of a read: one before the caller has its rows. The limits, `SET TRANSACTION READ
//! ONLY`, `XA START`, the user's statement prepared and executed, `XA END` and `XA ROLLBACK` are
//! one multi-statement query ([`calls`]), which the server stops at the first statement that
//! fails. The reset follows after the answer, while the connection, still held by the call's pool
//! permit, is lent to nobody; one that fails to settle is closed. A read that failed midway also
//! has its transaction ended and rolled back there (see ARCHITECTURE.md).
//! - An account that holds privileges reaching past the database (`FILE`, `SUPER`, grant
//!   option, routines with another account's rights, writes to `mysql.*`) is refused at start.
//!
//! Limits: `max_statement_time` (MariaDB) or `max_execution_time` (MySQL, which applies it to
//! `SELECT` only) for time, `sql_select_limit` so that the server stops after the row limit, and
//! a backstop: past the deadline the statement is stopped with `KILL QUERY` from a side
//! connection (a statement can lift the session's limit with `SET STATEMENT ... FOR`). A client
//! cancellation is the same `KILL QUERY`.

mod calls;
mod catalog;
mod errors;
mod json;
mod options;
mod pool;
mod types;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::Conn;
use mysql_async::prelude::Queryable as _;
use tokio_util::sync::CancellationToken;

use crate::config::{DatabaseConfig, Limits, MysqlConfig};
use crate::engine::{CatalogEntry, Description};
use crate::error::{ExecError, SqlError};
use crate::output::Rows;
use crate::remote::{self, STOP_WAIT};
use crate::value::Param;
use errors::classify;
use json::JsonColumns;
use pool::{ConnectError, GetError, MyConn, MyPool};

/// How long past the call's deadline the engine waits for the server's own time limit before it
/// stops the statement itself.
const GRACE: Duration = Duration::from_secs(1);

/// Which server answers: the two differ in the name and unit of the statement time limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    MariaDb,
    MySql,
}

impl Flavor {
    fn label(self) -> &'static str {
        match self {
            Flavor::MariaDb => "MariaDB",
            Flavor::MySql => "MySQL",
        }
    }

    /// The session settings of one call: its time limit, lock waits no longer than it, UTC for
    /// TIMESTAMP values, and, for reads, the server stopping one row past the row limit.
    fn session(self, limits: Limits, read: bool) -> String {
        let ms = limits.timeout.as_millis().max(1);
        let secs = ms.div_ceil(1000);
        let time = match self {
            Flavor::MariaDb => format!("max_statement_time = {:.3}", ms as f64 / 1000.0),
            Flavor::MySql => format!("max_execution_time = {ms}"),
        };
        let rows = if read {
            format!(", SESSION sql_select_limit = {}", limits.max_rows + 1)
        } else {
            String::new()
        };
        format!(
            "SET SESSION {time}, SESSION lock_wait_timeout = {secs}, \
             SESSION innodb_lock_wait_timeout = {secs}, SESSION time_zone = '+00:00'{rows}"
        )
    }
}

/// A failed call: what to tell the model, and whether the connection is no longer fit for another
/// call.
struct Failure {
    error: ExecError,
    fatal: bool,
}

impl Failure {
    fn my(e: &mysql_async::Error, limit: Duration, flavor: Flavor) -> Failure {
        Failure {
            error: classify(e, limit, flavor.label()),
            fatal: !matches!(e, mysql_async::Error::Server(_)),
        }
    }
}

/// What becomes of a connection after a job.
#[derive(Clone, Debug, PartialEq, Eq)]
enum After {
    /// After the answer, in the background: the read's XA transaction (when one is named) ended
    /// and rolled back, then the session reset; the connection serves the next call only once
    /// both succeeded, and is closed otherwise.
    Settle(Option<String>),
    /// It is closed.
    Close,
    /// A result is still streaming from it: the statement is stopped, then it is closed.
    Kill,
}

type Done<T> = (Result<T, Failure>, After);

type Job<'c, T> = Pin<Box<dyn Future<Output = Done<T>> + Send + 'c>>;

pub(crate) struct MyDb {
    /// MariaDB's JSON columns by table, shared by both pools.
    json: Arc<JsonColumns>,
    reader: MyPool,
    writer: Option<MyPool>,
    flavor: Flavor,
}

fn pool(url: &str, name: &str, config: &MysqlConfig) -> Result<MyPool, SqlError> {
    let prepared = options::prepare(
        url,
        config.ssl_mode,
        config.ssl_root_cert.as_deref(),
        config.connect_timeout,
    )
    .map_err(|reason| SqlError::Config {
        database: name.to_owned(),
        reason,
    })?;
    Ok(MyPool::mysql(prepared, config.connections))
}

/// Connects one connection of `pool`, and refuses its account if it holds privileges that escape
/// read-only. Returns the server's flavor.
async fn check(pool: &MyPool, database: &str, allow: bool) -> Result<Flavor, SqlError> {
    let prepared = pool.prepared();
    let fail = |e| errors::setup_error(database, prepared, e);
    let mut conn = match pool.get(Duration::from_secs(60)).await {
        Ok(conn) => conn,
        Err(GetError::Connect(ConnectError::Driver(e))) => return Err(fail(e)),
        Err(e) => {
            return Err(SqlError::Catalog {
                database: database.to_owned(),
                message: format!("{}: {}", prepared.target, errors::get_error(&e, prepared)),
            });
        }
    };
    let version: Option<String> = conn
        .conn()
        .query_first("SELECT VERSION()")
        .await
        .map_err(fail)?;
    let flavor = if version.unwrap_or_default().contains("MariaDB") {
        Flavor::MariaDb
    } else {
        Flavor::MySql
    };
    let (account, privileges) = catalog::check_account(conn.conn()).await.map_err(fail)?;
    if conn.conn().reset().await.is_ok() {
        conn.finish().await;
    }
    if privileges.is_empty() {
        return Ok(flavor);
    }
    let privileges = privileges.join(", ");
    if allow {
        tracing::warn!(database, %account, %privileges, "serving MySQL through a privileged account, as configured");
        Ok(flavor)
    } else {
        Err(SqlError::PrivilegedAccount {
            database: database.to_owned(),
            account,
            privileges,
        })
    }
}

impl MyDb {
    pub(crate) fn label(&self) -> &'static str {
        self.flavor.label()
    }

    pub(crate) fn pools(&self) -> Vec<crate::database::PoolStats> {
        let mut pools = vec![self.reader.stats("read")];
        pools.extend(self.writer.as_ref().map(|w| w.stats("write")));
        pools
    }

    /// Connects the read pool (and the write pool, if writes are allowed), checking each account.
    pub(crate) async fn connect(
        name: &str,
        config: &MysqlConfig,
        db: &DatabaseConfig,
    ) -> Result<MyDb, SqlError> {
        // rustls picks its crypto provider from the process default when the driver builds its
        // TLS configuration; aws-lc-rs is the one the rest of the workspace uses.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let reader = pool(&config.url, name, config)?;
        let flavor = check(&reader, name, config.allow_privileged_account).await?;
        let writer = if db.allow_write {
            let url = config.write_url.as_deref().unwrap_or(&config.url);
            let writer = pool(url, name, config)?;
            check(&writer, name, config.allow_privileged_account).await?;
            Some(writer)
        } else {
            None
        };
        Ok(MyDb {
            json: Arc::default(),
            reader,
            writer,
            flavor,
        })
    }

    /// Lends a connection and runs `job` on it, under the call's deadline and the request's
    /// cancellation: either one stops the running statement with `KILL QUERY`.
    async fn run<T, F>(
        &self,
        pool: &MyPool,
        limits: Limits,
        cancel: &CancellationToken,
        job: F,
    ) -> Result<T, ExecError>
    where
        F: for<'c> FnOnce(&'c mut Conn) -> Job<'c, T>,
    {
        let deadline = Instant::now() + limits.timeout;
        let mut conn: MyConn = remote::acquire(pool, limits, cancel, deadline, |e| {
            errors::connect_error(e, pool.prepared())
        })
        .await?;
        let stopper = conn.start();
        let (out, stopped) =
            remote::supervise(job(conn.conn()), cancel, deadline + GRACE, &stopper).await;
        match (out, stopped) {
            (Some((result, after)), None) => {
                match after {
                    // The caller has its answer now; the connection is lent again only once
                    // settled (it holds its pool permit until then).
                    After::Settle(xid) => drop(tokio::spawn(settle(conn, xid))),
                    After::Close => conn.abandon(),
                    // The connection's own drop sends `KILL QUERY` while it is marked busy.
                    After::Kill => drop(conn),
                }
                result.map_err(|f| f.error)
            }
            // The statement was stopped, so the connection is closed rather than reused. A call
            // that finished anyway (a write that committed just before the stop) reports what
            // happened.
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
        let (flavor, json) = (self.flavor, self.json.clone());
        let prepared = self.reader.shared_prepared();
        self.run(&self.reader, limits, cancel, move |conn| {
            Box::pin(async move {
                let call = (sql.as_str(), params.as_slice());
                calls::read_call(conn, flavor, &json, &prepared, call, limits).await
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
        let (flavor, json) = (self.flavor, self.json.clone());
        self.run(writer, limits, cancel, move |conn| {
            Box::pin(async move {
                let call = (sql.as_str(), params.as_slice());
                calls::write_call(conn, flavor, &json, call, limits).await
            })
        })
        .await
    }

    pub(crate) async fn tables(
        &self,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Vec<CatalogEntry>, ExecError> {
        let flavor = self.flavor;
        self.run(&self.reader, limits, cancel, move |conn| {
            Box::pin(async move {
                let result = catalog::tables(conn).await;
                finish(result.map_err(|e| Failure::my(&e, limits.timeout, flavor)))
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
        let flavor = self.flavor;
        self.run(&self.reader, limits, cancel, move |conn| {
            Box::pin(async move {
                let result = catalog::describe(conn, schema.as_deref(), &table).await;
                finish(result.map_err(|e| Failure::my(&e, limits.timeout, flavor)))
            })
        })
        .await
    }
}

/// Ends a call that left no result streaming: the connection is settled after the answer (its
/// session reset), unless the failure left it unfit.
fn finish<T>(result: Result<T, Failure>) -> Done<T> {
    if result.as_ref().is_err_and(|f| f.fatal) {
        return (result, After::Close);
    }
    (result, After::Settle(None))
}

/// What a call leaves to do once its caller has the answer: end and roll back the read's XA
/// transaction (one round trip for both: two statements of ours in one packet), then reset the
/// session (temporary tables, handlers, locks, user variables, settings, prepared statements).
/// Nothing of it changes the answer: a read-only transaction has nothing to keep, and a
/// connection that fails to settle is closed, which rolls back and discards the session. The
/// connection holds its pool permit meanwhile, so no call can be lent it unsettled.
async fn settle(mut lent: MyConn, xid: Option<String>) {
    let conn = lent.conn();
    let work = async {
        if let Some(xid) = &xid {
            conn.query_drop(format!("XA END '{xid}'; XA ROLLBACK '{xid}'"))
                .await?;
        }
        conn.reset().await
    };
    match tokio::time::timeout(STOP_WAIT, work).await {
        Ok(Ok(true)) => lent.finish().await,
        Ok(Ok(false)) => lent.abandon(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "could not settle a MySQL session; closing it");
            lent.abandon();
        }
        Err(_) => {
            tracing::warn!("a MySQL session did not settle in time; closing it");
            lent.abandon();
        }
    }
}

/// A statement that ran for the whole time limit was stopped by the server's limit, even when it
/// ends without an error: an interrupted `SLEEP()` returns 1, and `DO SLEEP(60)` then succeeds.
fn out_of_time(started: Instant, limit: Duration) -> Result<(), Failure> {
    if started.elapsed() >= limit {
        Err(Failure {
            error: ExecError::Timeout(limit),
            fatal: false,
        })
    } else {
        Ok(())
    }
}

/// 16 random bytes in hex, for the XA transaction's id.
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source");
    let mut hex = String::with_capacity(32);
    calls::push_hex(&mut hex, &bytes);
    hex
}
