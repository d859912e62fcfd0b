//! MySQL errors in words: setup errors with the address they were about, and statement errors
//! sorted into what the model is told.

use std::time::Duration;

use super::options::Prepared;
use super::pool::{ConnectError, GetError};
use crate::error::{ExecError, SqlError};

/// Server error codes the engine tells apart.
pub(crate) mod code {
    /// ER_EMPTY_QUERY.
    pub(crate) const EMPTY_QUERY: u16 = 1065;
    /// ER_PARSE_ERROR.
    pub(crate) const PARSE_ERROR: u16 = 1064;
    /// ER_WRONG_ARGUMENTS: `EXECUTE` given a count of values other than the placeholders'.
    pub(crate) const WRONG_ARGUMENTS: u16 = 1210;
    /// ER_UNSUPPORTED_PS: the statement cannot be prepared.
    pub(crate) const UNSUPPORTED_PS: u16 = 1295;
    /// ER_QUERY_INTERRUPTED (`KILL QUERY`).
    pub(crate) const QUERY_INTERRUPTED: u16 = 1317;
    /// ER_XAER_RMFAIL: the statement would end the XA transaction (COMMIT, DDL, LOCK TABLES...).
    pub(crate) const XAER_RMFAIL: u16 = 1399;
    /// ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION.
    pub(crate) const READ_ONLY_TRANSACTION: u16 = 1792;
    /// MariaDB's ER_STATEMENT_TIMEOUT (`max_statement_time`).
    pub(crate) const STATEMENT_TIMEOUT: u16 = 1969;
    /// MySQL's ER_QUERY_TIMEOUT (`max_execution_time`).
    pub(crate) const QUERY_TIMEOUT: u16 = 3024;
    /// ER_DBACCESS_DENIED_ERROR, ER_ACCESS_DENIED_ERROR, ER_TABLEACCESS_DENIED_ERROR,
    /// ER_COLUMNACCESS_DENIED_ERROR, ER_SPECIFIC_ACCESS_DENIED_ERROR, ER_PROCACCESS_DENIED_ERROR.
    pub(crate) const ACCESS_DENIED: [u16; 6] = [1044, 1045, 1142, 1143, 1227, 1370];
    /// ER_OPTION_PREVENTS_STATEMENT (`--read-only`, `--secure-file-priv`...).
    pub(crate) const OPTION_PREVENTS_STATEMENT: u16 = 1290;
}

/// A setup error ([`SqlError::Mysql`]) for the database `database`.
pub(crate) fn setup_error(
    database: &str,
    prepared: &Prepared,
    source: mysql_async::Error,
) -> SqlError {
    SqlError::Mysql {
        database: database.to_owned(),
        target: format!("{} ", prepared.target),
        message: describe(&source, prepared),
        source: Box::new(source),
    }
}

/// A connection that was not lent, in words.
pub(crate) fn get_error(error: &GetError, prepared: &Prepared) -> String {
    match error {
        GetError::Busy { connections } => {
            format!("all {connections} connections were busy")
        }
        GetError::Connect(e) => connect_error(e, prepared),
    }
}

/// A failed connect, in words.
pub(crate) fn connect_error(error: &ConnectError, prepared: &Prepared) -> String {
    match error {
        ConnectError::Driver(e) => describe(e, prepared),
        ConnectError::Timeout(limit) => format!(
            "no answer from {} within the connect timeout ({} s)",
            address(prepared),
            limit.as_secs_f64()
        ),
    }
}

fn address(prepared: &Prepared) -> String {
    format!(
        "{}:{}",
        prepared.opts.ip_or_hostname(),
        prepared.opts.tcp_port()
    )
}

/// What went wrong, from the server's message when it sent one, else from the connection's own
/// error, with the address it tried.
pub(crate) fn describe(error: &mysql_async::Error, prepared: &Prepared) -> String {
    let at = address(prepared);
    match error {
        mysql_async::Error::Server(e) => format!("{} (error {})", e.message, e.code),
        mysql_async::Error::Io(mysql_async::IoError::Io(io))
            if !io.to_string().contains("peer certificate") =>
        {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    format!("connection refused at {at}: is MySQL running there?")
                }
                std::io::ErrorKind::TimedOut => format!("no answer from {at} (timed out)"),
                _ => format!("cannot connect to {at}: {io}"),
            }
        }
        // rustls's verdict reaches the driver as an I/O error of the handshake.
        mysql_async::Error::Io(io) => {
            let mut text = format!("TLS with {at}: {io}");
            if text.contains("UnknownIssuer") {
                text.push_str(
                    " (the server's certificate is not signed by a trusted CA: the CA file given \
                     with sslrootcert, else the system's CA certificates)",
                );
            } else if text.contains("NotValidForName") || text.contains("not valid for name") {
                text.push_str(&format!(
                    " (the certificate is not for the host name {}: connect by a name it \
                     holds, or use sslmode verify-ca)",
                    prepared.opts.ip_or_hostname()
                ));
            }
            text
        }
        mysql_async::Error::Driver(e) => {
            let text = e.to_string();
            if text.contains("SSL") || text.contains("TLS") {
                format!(
                    "{text} ({at}: the server does not offer TLS; set sslmode disable to \
                     connect without it)"
                )
            } else {
                format!("{text} ({at})")
            }
        }
        other => format!("{other} ({at})"),
    }
}

/// Turns a driver or server error from a user statement into what the model is told.
pub(crate) fn classify(e: &mysql_async::Error, limit: Duration, engine: &str) -> ExecError {
    let mysql_async::Error::Server(server) = e else {
        return match e {
            mysql_async::Error::Io(_) => {
                ExecError::Unavailable(format!("the connection to {engine} failed: {e}"))
            }
            other => ExecError::Sql(other.to_string()),
        };
    };
    let message = &server.message;
    match server.code {
        code::READ_ONLY_TRANSACTION => ExecError::ReadOnly(format!(
            "`query` runs in a read-only transaction, and {engine} refused this statement ({message})"
        )),
        code::XAER_RMFAIL => ExecError::ReadOnly(format!(
            "`query` runs in a read-only transaction that statements which commit, change the \
             schema or lock tables cannot end, and {engine} refused this one ({message})"
        )),
        code::STATEMENT_TIMEOUT | code::QUERY_TIMEOUT | code::QUERY_INTERRUPTED => {
            ExecError::Timeout(limit)
        }
        code::EMPTY_QUERY => ExecError::Empty,
        code::UNSUPPORTED_PS => ExecError::Refused(format!(
            "every call runs its statement as a prepared statement, one statement per call, and \
             {engine} cannot prepare this one ({message})"
        )),
        code::OPTION_PREVENTS_STATEMENT => ExecError::Refused(format!(
            "the server's configuration forbids this ({message})"
        )),
        c if code::ACCESS_DENIED.contains(&c) => {
            ExecError::Refused(format!("the database account may not do this ({message})"))
        }
        c => ExecError::Sql(format!("{message} (error {c}, SQLSTATE {})", server.state)),
    }
}

/// Whether a syntax error is the server meeting a second statement: a prepared statement holds one
/// statement, and the server stops at the `;` that ends it, quoting the text after it (`near
/// 'DELETE FROM t'`). Only the error's wording is read here, to say so in words; refusing the
/// second statement is the server's doing.
pub(crate) fn second_statement(e: &mysql_async::Error, sql: &str) -> bool {
    let mysql_async::Error::Server(server) = e else {
        return false;
    };
    if server.code != code::PARSE_ERROR {
        return false;
    }
    let Some((_, near)) = server.message.split_once("near '") else {
        return false;
    };
    let near = near.rsplit_once("' at line").map_or(near, |(n, _)| n);
    if near.trim_start().starts_with(';') {
        return true;
    }
    !near.is_empty()
        && sql
            .rfind(near)
            .is_some_and(|at| sql[..at].trim_end().ends_with(';'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(code: u16, message: &str) -> mysql_async::Error {
        mysql_async::Error::Server(mysql_async::ServerError {
            code,
            message: message.to_owned(),
            state: "HY000".to_owned(),
        })
    }

    #[test]
    fn statement_errors_are_sorted() {
        let limit = Duration::from_secs(2);
        let c = |code, m| classify(&server(code, m), limit, "MariaDB");
        assert!(matches!(c(1792, "read only"), ExecError::ReadOnly(_)));
        assert!(matches!(c(1399, "XAER_RMFAIL"), ExecError::ReadOnly(_)));
        assert_eq!(c(1969, "timeout"), ExecError::Timeout(limit));
        assert_eq!(c(1065, "Query was empty"), ExecError::Empty);
        assert!(matches!(c(1142, "denied"), ExecError::Refused(_)));
        assert!(matches!(c(1146, "no table"), ExecError::Sql(m) if m.contains("error 1146")));
    }

    #[test]
    fn a_second_statement_is_told_from_other_syntax_errors() {
        let near = |rest: &str| {
            server(
                1064,
                &format!(
                    "You have an error in your SQL syntax; check the manual ... near '{rest}' at line 1"
                ),
            )
        };
        assert!(second_statement(
            &near("DELETE FROM t"),
            "COMMIT; DELETE FROM t"
        ));
        assert!(second_statement(
            &near("DROP TABLE t"),
            "SELECT 1;\n DROP TABLE t"
        ));
        assert!(!second_statement(&near("1"), "SELEC 1"));
        assert!(!second_statement(&near("FROM"), "SELECT FROM"));
        assert!(!second_statement(&server(1146, "near 'x'"), "a; x"));
    }
}
