//! A call's statements, ours and the user's, sent as one multi-statement query: one round trip.
//!
//! The user's text is never part of the query's text. It travels as a hex literal assigned to a
//! user variable (hex digits cannot end a literal or start a statement), is prepared from that
//! variable (`PREPARE` takes exactly one statement, as `COM_STMT_PREPARE` does) and executed by
//! name with its values, also literals in variables. The server runs a multi-statement query's
//! statements in order and stops at the first that fails, answering with its error: a refused
//! limit, `SET TRANSACTION READ ONLY` or `XA START` means the user's statement never runs, and a
//! statement that fails is never followed by ours. So everything a read needs goes out together:
//!
//! ```text
//! SET SESSION <limits>, @kelson_sql = CONVERT(X'…' USING utf8mb4), @kelson_p1 = …;
//! SET TRANSACTION READ ONLY; XA START '<xid>';
//! PREPARE kelson_stmt FROM @kelson_sql; EXECUTE kelson_stmt USING @kelson_p1, …;
//! XA END '<xid>'; XA ROLLBACK '<xid>'
//! ```
//!
//! and the session reset (`COM_RESET_CONNECTION`, which also drops the variables and the
//! prepared statement) follows the answer. A write sends the same up to its `EXECUTE`, inside
//! `START TRANSACTION READ WRITE`, and commits in a second trip, once its result was checked.
//!
//! The answers come in the text protocol, so values arrive as the server writes them (see
//! [`super::types`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable as _;
use mysql_async::{Conn, QueryResult, TextProtocol};

use super::json::{self, JsonColumns, Via};
use super::options::Prepared;
use super::{After, Done, Failure, Flavor, errors, types};
use crate::config::Limits;
use crate::error::ExecError;
use crate::output::Rows;
use crate::value::{Collector, Param, Truncation};

/// The name the user's statement is prepared under; the session reset drops it.
const STMT: &str = "kelson_stmt";

/// One call's query, with where the user's statement stands in it.
pub(super) struct Script {
    text: String,
    /// The statements before the user's `EXECUTE`: the `PREPARE` is the last of them.
    before: usize,
}

/// Appends `bytes` to `out` in lowercase hex.
pub(super) fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
}

/// `s` as a string literal that nothing in `s` can end: its UTF-8 bytes in hex.
fn text_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2 + 28);
    out.push_str("CONVERT(X'");
    push_hex(&mut out, s.as_bytes());
    out.push_str("' USING utf8mb4)");
    out
}

/// A value as a literal of its type: integers, doubles (`e` notation, which MySQL reads as a
/// DOUBLE, not a DECIMAL), text in hex.
fn literal(p: &Param) -> String {
    match p {
        Param::Null => "NULL".into(),
        Param::Bool(b) => if *b { "1" } else { "0" }.into(),
        Param::Int(i) => i.to_string(),
        // JSON has no NaN or infinity.
        Param::Float(f) if f.is_finite() => format!("{f:e}"),
        Param::Float(_) => "NULL".into(),
        Param::Text(s) => text_literal(s),
    }
}

/// The variables of the user's statement (`, @kelson_sql = …, @kelson_p1 = …`, to follow a
/// `SET`), its `PREPARE` and its `EXECUTE`.
fn statement(sql: &str, params: &[Param]) -> (String, String, String) {
    let mut vars = format!(", @kelson_sql = {}", text_literal(sql));
    let mut using = String::new();
    for (i, p) in params.iter().enumerate() {
        vars.push_str(&format!(", @kelson_p{} = {}", i + 1, literal(p)));
        using.push_str(if i == 0 { " USING " } else { ", " });
        using.push_str(&format!("@kelson_p{}", i + 1));
    }
    (
        vars,
        format!("PREPARE {STMT} FROM @kelson_sql"),
        format!("EXECUTE {STMT}{using}"),
    )
}

impl Script {
    /// A read: the limits, a read-only XA transaction around the statement, ended and rolled back.
    pub(super) fn read(
        flavor: Flavor,
        limits: Limits,
        xid: &str,
        sql: &str,
        params: &[Param],
    ) -> Script {
        let (vars, prepare, execute) = statement(sql, params);
        Script {
            text: format!(
                "{}{vars}; SET TRANSACTION READ ONLY; XA START '{xid}'; {prepare}; {execute}; \
                 XA END '{xid}'; XA ROLLBACK '{xid}'",
                flavor.session(limits, true)
            ),
            before: 4,
        }
    }

    /// A write: the limits and a read-write transaction around the statement, left open for the
    /// caller to commit or roll back.
    pub(super) fn write(flavor: Flavor, limits: Limits, sql: &str, params: &[Param]) -> Script {
        let (vars, prepare, execute) = statement(sql, params);
        Script {
            text: format!(
                "{}{vars}; START TRANSACTION READ WRITE; {prepare}; {execute}",
                flavor.session(limits, false)
            ),
            before: 3,
        }
    }
}

/// Where a call's query stopped: the statement that failed (counted from 0) and its error.
struct Stopped {
    at: usize,
    error: mysql_async::Error,
}

/// Sends `script` and steps over the answers of the statements before the user's `EXECUTE`
/// (each answers with an OK alone), leaving the `EXECUTE`'s answer pending.
///
/// The driver reads the answer of a statement when it steps over the one before, and keeps an
/// error there for the step after: an error met at step `n` is statement `n - 1`'s.
async fn start<'c>(
    conn: &'c mut Conn,
    script: Script,
) -> Result<QueryResult<'c, 'static, TextProtocol>, Stopped> {
    let before = script.before;
    let mut result = conn
        .query_iter(script.text)
        .await
        .map_err(|error| Stopped { at: 0, error })?;
    let stopped = |at, what: &str| Stopped {
        at,
        error: std::io::Error::other(format!("the server {what}")).into(),
    };
    for at in 1..=before {
        match result.next().await {
            Ok(None) => {}
            Ok(Some(_)) => {
                return Err(stopped(
                    at - 1,
                    "answered a statement of the adapter's with rows",
                ));
            }
            Err(error) => return Err(Stopped { at: at - 1, error }),
        }
    }
    // The `EXECUTE`'s answer is pending, unless it was an error (kept for the next step) or the
    // answer ended early (a server that does not run multi-statement queries).
    if result.columns().is_none() {
        return Err(match result.next().await {
            Err(error) => Stopped { at: before, error },
            Ok(_) => stopped(before, "ended its answer before the call's statements did"),
        });
    }
    Ok(result)
}

/// The user's statement failed at `PREPARE` or `EXECUTE`: the model is told in words. A count of
/// values that does not match the placeholders fails `EXECUTE` with "Incorrect arguments"; the
/// statement is then prepared alone (it does not run) to say how many it has.
async fn user_failure(
    conn: &mut Conn,
    flavor: Flavor,
    e: mysql_async::Error,
    sql: &str,
    params: usize,
    limit: Duration,
) -> Failure {
    if errors::second_statement(&e, sql) {
        return Failure {
            error: ExecError::MultipleStatements,
            fatal: false,
        };
    }
    if matches!(&e, mysql_async::Error::Server(s) if s.code == errors::code::WRONG_ARGUMENTS)
        && let Ok(stmt) = conn.prep(sql).await
        && usize::from(stmt.num_params()) != params
    {
        return Failure {
            error: ExecError::Sql(format!(
                "the statement has {} parameter placeholder(s) (?) but {params} value(s) were given in `params`",
                stmt.num_params()
            )),
            fatal: false,
        };
    }
    Failure::my(&e, limit, flavor)
}

/// A read: one query, rows up to the limits, then the session reset.
pub(super) async fn read_call(
    conn: &mut Conn,
    flavor: Flavor,
    known: &JsonColumns,
    prepared: &Prepared,
    (sql, params): (&str, &[Param]),
    limits: Limits,
) -> Done<Rows> {
    let limit = limits.timeout;
    let xid = format!("mcp-sql-{}", super::random_hex());
    let script = Script::read(flavor, limits, &xid, sql, params);
    let started = Instant::now();
    let mut result = match start(conn, script).await {
        Ok(result) => result,
        Err(Stopped { at, error }) => {
            let fatal = !matches!(error, mysql_async::Error::Server(_));
            // Up to `XA START` (the third statement) no transaction was begun: the
            // connection is closed rather than trusted.
            if fatal || at < 3 {
                return (Err(Failure::my(&error, limit, flavor)), After::Close);
            }
            let failure = user_failure(conn, flavor, error, sql, params.len(), limit).await;
            let after = if failure.fatal {
                After::Close
            } else {
                After::Settle(Some(xid))
            };
            return (Err(failure), after);
        }
    };
    let fail = |e: &mysql_async::Error| Failure::my(e, limit, flavor);
    let columns = result.columns().unwrap_or_else(|| Vec::new().into());
    let lookup = json::lookup(flavor, known, &columns);
    let kinds = types::kinds(&columns, lookup.found());
    let cap = limits.value_cap();
    let mut collector = Collector::new(limits.max_rows, limits.max_bytes);
    let mut rest = Rest::Drain;
    loop {
        let row = match result.next().await {
            Ok(Some(row)) => row,
            // The result set ended (the next one's answer is pending).
            Ok(None) => break,
            Err(e) => return (Err(fail(&e)), settle_or_close(&e, xid)),
        };
        let Some(values) = types::values(row, &kinds, cap) else {
            // The rest of the result is still coming.
            rest = Rest::Kill(Err(Failure {
                error: ExecError::TooBig(cap),
                fatal: true,
            }));
            break;
        };
        if !collector.push(values) {
            // The server stops one row past the row limit (`sql_select_limit`), so the result
            // ends here unless a statement lifted the limit.
            if collector.truncated == Some(Truncation::MaxRows) {
                match result.next().await {
                    Ok(None) => {}
                    Ok(Some(_)) => rest = Rest::Kill(Ok(())),
                    Err(e) => return (Err(fail(&e)), settle_or_close(&e, xid)),
                }
            } else {
                rest = Rest::Kill(Ok(()));
            }
            break;
        }
    }
    let drained = match rest {
        // Further result sets (a procedure's) are read and dropped, then the transaction's end
        // and rollback.
        Rest::Drain => result.drop_result().await,
        Rest::Kill(out) => {
            drop(result);
            // The connection is stopped and closed: the JSON columns are looked up elsewhere.
            let rows = match out {
                Ok(()) => lookup
                    .finish(Via::Side(prepared), known, &columns, collector)
                    .await
                    .map_err(|e| fail(&e)),
                Err(f) => Err(f),
            };
            return (rows, After::Kill);
        }
    };
    if let Err(e) = drained {
        return (Err(fail(&e)), settle_or_close(&e, xid));
    }
    if let Err(f) = super::out_of_time(started, limit) {
        // The transaction was rolled back by the query itself.
        return (Err(f), After::Settle(None));
    }
    match lookup
        .finish(Via::Conn(conn), known, &columns, collector)
        .await
    {
        Ok(rows) => (Ok(rows), After::Settle(None)),
        Err(e) => (Err(fail(&e)), settle_or_close(&e, None)),
    }
}

/// What is left of a result once the caller stopped reading it.
enum Rest {
    /// Nothing but the end: it is read.
    Drain,
    /// Rows are still coming: the statement is stopped and the connection closed, with this
    /// outcome.
    Kill(Result<(), Failure>),
}

/// After an error past the start: a server error leaves a session to settle (its transaction
/// ended, when `xid` names one still open); any other leaves a connection to close.
fn settle_or_close(e: &mysql_async::Error, xid: impl Into<Option<String>>) -> After {
    if matches!(e, mysql_async::Error::Server(_)) {
        After::Settle(xid.into())
    } else {
        After::Close
    }
}

/// An approved write: one query up to the user's statement inside a read-write transaction,
/// then, once its result was read, `COMMIT` (or `ROLLBACK` when it failed or ran out of time).
/// Returned rows (`RETURNING`, a procedure's result) are kept up to the limits, but the
/// statement always runs to completion.
pub(super) async fn write_call(
    conn: &mut Conn,
    flavor: Flavor,
    known: &JsonColumns,
    (sql, params): (&str, &[Param]),
    limits: Limits,
) -> Done<Rows> {
    let limit = limits.timeout;
    let fail = |e: mysql_async::Error| Failure::my(&e, limit, flavor);
    let script = Script::write(flavor, limits, sql, params);
    let started = Instant::now();
    let result = match start(conn, script).await {
        Err(Stopped { at, error }) => {
            let fatal = !matches!(error, mysql_async::Error::Server(_));
            // Before the `PREPARE` (the third statement) nothing of the user's was sent.
            if fatal || at < 2 {
                return (Err(fail(error)), After::Close);
            }
            Err(user_failure(conn, flavor, error, sql, params.len(), limit).await)
        }
        Ok(result) => match write_rows(result, flavor, known, limits).await {
            Err(f) => Err(f),
            Ok((columns, lookup, collector, affected)) => {
                async {
                    super::out_of_time(started, limit)?;
                    let rows = lookup
                        .finish(Via::Conn(&mut *conn), known, &columns, collector)
                        .await
                        .map_err(fail)?;
                    Ok(Rows {
                        rows_affected: Some(affected),
                        ..rows
                    })
                }
                .await
            }
        },
    };
    let result = match result {
        Ok(rows) => match conn.query_drop("COMMIT").await {
            Ok(()) => Ok(rows),
            Err(e) => Err(fail(e)),
        },
        Err(f) => {
            if !f.fatal && conn.query_drop("ROLLBACK").await.is_err() {
                return (Err(f), After::Close);
            }
            Err(f)
        }
    };
    super::finish(result)
}

/// The user's write's result: its columns, their JSON lookup, the rows kept and how many rows it
/// changed.
async fn write_rows(
    mut result: QueryResult<'_, 'static, TextProtocol>,
    flavor: Flavor,
    known: &JsonColumns,
    limits: Limits,
) -> Result<(Arc<[mysql_async::Column]>, json::Lookup, Collector, u64), Failure> {
    let fail = |e: mysql_async::Error| Failure::my(&e, limits.timeout, flavor);
    let columns = result.columns().unwrap_or_else(|| Vec::new().into());
    let lookup = json::lookup(flavor, known, &columns);
    let kinds = types::kinds(&columns, lookup.found());
    let cap = limits.value_cap();
    let mut collector = Collector::new(limits.max_rows, limits.max_bytes);
    // An OK answer's count is the statement's; read before the result moves on.
    let ok_count = result.affected_rows();
    let mut seen: u64 = 0;
    while let Some(row) = result.next().await.map_err(fail)? {
        seen += 1;
        if collector.wants_more() {
            match types::values(row, &kinds, cap) {
                Some(values) => {
                    collector.push(values);
                }
                None => collector.cut(Truncation::MaxBytes),
            }
        }
    }
    // A statement that returns rows (`INSERT ... RETURNING`, `DELETE ... RETURNING`) ends with no
    // count of its own: each returned row is a row it changed.
    let affected = if columns.is_empty() {
        ok_count
    } else {
        match result.affected_rows() {
            0 => seen,
            n => n,
        }
    };
    // Further result sets (a procedure's) are read and dropped.
    result.drop_result().await.map_err(fail)?;
    Ok((columns, lookup, collector, affected))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_text_and_values_are_literals_nothing_can_end() {
        let (vars, prepare, execute) = statement(
            "SELECT ?'; DROP TABLE t; -- ",
            &[
                Param::Text("x'); DROP TABLE t; --".into()),
                Param::Int(-7),
                Param::Float(0.25),
                Param::Bool(true),
                Param::Null,
            ],
        );
        assert!(!vars.contains("DROP"), "{vars}");
        assert!(vars.starts_with(", @kelson_sql = CONVERT(X'53454c454354203f27"));
        assert!(vars.ends_with(
            ", @kelson_p2 = -7, @kelson_p3 = 2.5e-1, @kelson_p4 = 1, @kelson_p5 = NULL"
        ));
        assert_eq!(prepare, "PREPARE kelson_stmt FROM @kelson_sql");
        assert_eq!(
            execute,
            "EXECUTE kelson_stmt USING @kelson_p1, @kelson_p2, @kelson_p3, @kelson_p4, @kelson_p5"
        );
        let (_, _, bare) = statement("SELECT 1", &[]);
        assert_eq!(bare, "EXECUTE kelson_stmt");
        assert_eq!(text_literal(""), "CONVERT(X'' USING utf8mb4)");
        assert_eq!(text_literal("é"), "CONVERT(X'c3a9' USING utf8mb4)");
    }

    #[test]
    fn the_users_statement_sits_between_the_transactions_start_and_end() {
        let read = Script::read(Flavor::MariaDb, Limits::default(), "x1", "SELECT 1", &[]);
        let parts: Vec<&str> = read.text.split("; ").collect();
        assert_eq!(parts.len(), 7, "{}", read.text);
        assert!(parts[0].starts_with("SET SESSION max_statement_time"));
        assert_eq!(
            parts[1..],
            [
                "SET TRANSACTION READ ONLY",
                "XA START 'x1'",
                "PREPARE kelson_stmt FROM @kelson_sql",
                "EXECUTE kelson_stmt",
                "XA END 'x1'",
                "XA ROLLBACK 'x1'",
            ]
        );
        assert!(parts[read.before].starts_with("EXECUTE"));
        let write = Script::write(Flavor::MySql, Limits::default(), "DELETE FROM t", &[]);
        let parts: Vec<&str> = write.text.split("; ").collect();
        assert_eq!(parts[1], "START TRANSACTION READ WRITE");
        assert!(parts[write.before].starts_with("EXECUTE"));
        assert_eq!(parts.len(), write.before + 1);
    }
}
