//! Errors: [`SqlError`] for setting the adapter up, [`ExecError`] for one tool call.

use std::path::PathBuf;
use std::time::Duration;

/// Why the adapter could not be set up (opened, connected or registered).
///
/// Non-exhaustive: the variants that carry a driver's error exist only with that driver's feature,
/// and a match written without one of them must keep compiling when another crate in the build
/// turns that feature on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    /// A database name breaks the naming rule.
    #[error(
        "invalid database name {0:?}: use 1 to 63 characters from a-z, 0-9, '_' and '-', starting with a letter"
    )]
    InvalidName(String),
    /// Two databases share a name.
    #[error("two databases are named {0:?}")]
    DuplicateName(String),
    /// The adapter was given no database.
    #[error("no database configured")]
    NoDatabase,
    /// A configuration value is out of range.
    #[error("database {database:?}: {reason}")]
    Config {
        /// The database.
        database: String,
        /// What is wrong.
        reason: String,
    },
    /// The configuration names an engine this build of the crate leaves out: a PostgreSQL URL
    /// without the `postgres` feature, a MySQL URL without the `mysql` feature, an SQLite file (or the approvals file, or the sample
    /// database) without the `sqlite` feature.
    #[error("{engine} support is not compiled in: build kelson-sql with the `{feature}` feature")]
    EngineNotCompiled {
        /// `"SQLite"`, `"PostgreSQL"` or `"MySQL"`.
        engine: &'static str,
        /// The cargo feature that brings it in: `"sqlite"`, `"postgres"` or `"mysql"`.
        feature: &'static str,
    },
    /// An SQLite database could not be opened or prepared.
    #[cfg(feature = "sqlite")]
    #[error("SQLite database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// The path of an SQLite database names something that is not one: a directory, or a file
    /// that does not begin with SQLite's header. Found before SQLite opens it, which would report
    /// a directory as a disk I/O error and such a file only at its first read.
    #[error("{} {reason}", path.display())]
    NotSqlite {
        /// The path given.
        path: PathBuf,
        /// What it is instead, after the path: "is a directory, ...".
        reason: &'static str,
    },
    /// A file operation failed (creating the sample database, say).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A PostgreSQL connection or catalog query failed.
    #[cfg(feature = "postgres")]
    #[error("PostgreSQL {target}(database {database:?}): {message}")]
    Postgres {
        /// The database name given to the adapter.
        database: String,
        /// `user@host:port/dbname` as configured (never the password), followed by a space; empty
        /// when the URL itself could not be read.
        target: String,
        /// What the server said (role or database missing, password refused, ...), or what the
        /// connection met (refused at an address, timed out), in words.
        message: String,
        /// What the driver, the connection or the server said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A MySQL or MariaDB connection or catalog query failed.
    #[cfg(feature = "mysql")]
    #[error("MySQL {target}(database {database:?}): {message}")]
    Mysql {
        /// The database name given to the adapter.
        database: String,
        /// `user@host:port/db` as configured (never the password), followed by a space.
        target: String,
        /// What the server said, or what the connection met, in words.
        message: String,
        /// What the driver or server said (boxed: the driver's error is large).
        #[source]
        source: Box<mysql_async::Error>,
    },
    /// The MySQL or MariaDB account holds privileges that escape a read-only transaction.
    #[error(
        "MySQL database {database:?}: account {account} holds {privileges}, which can escape a read-only \
         transaction (server files, server settings, other accounts, code that runs with other rights); \
         connect as a least-privilege account (SELECT only; see kelson's docs/serve/databases.md), or set allow_privileged_account"
    )]
    PrivilegedAccount {
        /// The database name given to the adapter.
        database: String,
        /// The account connected as (`'user'@'host'`).
        account: String,
        /// What makes it privileged, each named.
        privileges: String,
    },
    /// The PostgreSQL role may escape a read-only transaction.
    #[error(
        "PostgreSQL database {database:?}: role {role:?} is {privileges}, which can escape a read-only transaction \
         (for example with COPY ... TO PROGRAM); connect as a least-privilege role, or set allow_privileged_role"
    )]
    PrivilegedRole {
        /// The database name given to the adapter.
        database: String,
        /// The role connected as.
        role: String,
        /// What makes it privileged.
        privileges: String,
    },
    /// Reading the catalog failed while registering tables as resources.
    #[error("database {database:?}: {message}")]
    Catalog {
        /// The database name.
        database: String,
        /// What failed.
        message: String,
    },
    /// The server refused a registration.
    #[error(transparent)]
    Build(#[from] kelson_server::BuildError),
}

/// Why one statement did not produce a result. Every variant becomes a tool error (`isError:
/// true`) whose text tells the model what happened and what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExecError {
    /// A read-only call refused a statement because it would write; nothing changed.
    ReadOnly(String),
    /// The policy refused the statement (on any tool); nothing changed.
    Refused(String),
    /// The statement holds more than one statement.
    MultipleStatements,
    /// The SQL text holds no statement at all.
    Empty,
    /// The database reported an error (syntax, missing table, constraint, ...).
    Sql(String),
    /// A value would have been larger than the cap derived from the byte limit
    /// ([`Limits::value_cap`](crate::Limits::value_cap)), so it was not built or not decoded.
    TooBig(usize),
    /// Every connection stayed in use for as long as the call may wait for one; nothing ran.
    Busy {
        /// The connections of the pool the call waited on.
        connections: usize,
        /// How long it waited.
        waited: Duration,
    },
    /// The statement ran longer than the limit and was stopped.
    Timeout(Duration),
    /// The client cancelled the request and the statement was stopped.
    Cancelled,
    /// The database could not be reached or the adapter failed.
    Unavailable(String),
}

impl ExecError {
    /// A short name of the kind of failure, for traces (`error.type`).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            ExecError::ReadOnly(_) => "read_only",
            ExecError::Refused(_) => "refused",
            ExecError::MultipleStatements => "multiple_statements",
            ExecError::Empty => "empty",
            ExecError::Sql(_) => "sql_error",
            ExecError::TooBig(_) => "too_big",
            ExecError::Busy { .. } => "busy",
            ExecError::Timeout(_) => "timeout",
            ExecError::Cancelled => "cancelled",
            ExecError::Unavailable(_) => "unavailable",
        }
    }

    /// The message shown to the model. `writes` says whether `execute` exists for this database,
    /// so a refused read can point at it.
    pub(crate) fn message(&self, tool: &str, writes: bool) -> String {
        match self {
            ExecError::ReadOnly(why) => {
                let next = if writes {
                    "Nothing was changed. To change data, use the `execute` tool, which asks the user to approve the exact statement."
                } else {
                    "Nothing was changed. This database is read-only for this server: writes go through the `execute` tool, which its operator enables with allow_write (`kelson serve --allow-write`)."
                };
                format!("Refused: {why}. {next}")
            }
            ExecError::Refused(why) => {
                let next = if tool == "execute" {
                    "Nothing was run; this is not allowed through `execute` either."
                } else {
                    "Nothing was changed."
                };
                format!("Refused: {why}. {next}")
            }
            ExecError::MultipleStatements => "Refused: send exactly one SQL statement per call; the text holds more than one. Nothing was run. Split it and call the tool once per statement.".to_owned(),
            ExecError::Empty => "The SQL text holds no statement (only whitespace or comments).".to_owned(),
            ExecError::Sql(message) => format!("SQL error: {message}"),
            ExecError::TooBig(cap) => format!(
                "Refused: a single value would be larger than {cap} bytes, the most one value may take \
                 here (four times the byte limit of a result, max_bytes; `kelson serve --max-bytes`). \
                 Nothing was returned. Select a part of it (substr), its length, or an aggregate instead."
            ),
            ExecError::Busy { connections, waited } => format!(
                "The database is busy: all {connections} connections this call could use were taken \
                 by other calls, and none came free within {} (the longest a call waits for one, \
                 connection_wait; `kelson serve --connection-wait`). Nothing was run. Try again in a \
                 moment.",
                human_duration(*waited)
            ),
            ExecError::Timeout(limit) => format!(
                "The statement was stopped after {} (the time limit for one call){}. Make it cheaper: filter with WHERE on indexed columns, add a LIMIT, or aggregate.",
                human_duration(*limit),
                if tool == "execute" { "; its changes were rolled back" } else { "" }
            ),
            ExecError::Cancelled => {
                if tool == "execute" {
                    "The request was cancelled and the statement stopped; its changes were rolled back.".to_owned()
                } else {
                    "The request was cancelled and the statement stopped.".to_owned()
                }
            }
            ExecError::Unavailable(message) => format!("The database is unavailable: {message}"),
        }
    }
}

pub(crate) fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_point_at_the_right_next_step() {
        let e = ExecError::ReadOnly("the statement writes to table \"t\" (INSERT)".into());
        assert!(e.message("query", true).contains("use the `execute` tool"));
        assert!(
            e.message("query", false)
                .contains("read-only for this server")
        );
        assert!(e.message("query", false).ends_with(
            "which its operator enables with allow_write (`kelson serve --allow-write`)."
        ));
        let e = ExecError::Refused("ATTACH is not allowed".into());
        assert!(!e.message("query", true).contains("execute"));
        assert!(
            e.message("execute", true)
                .contains("not allowed through `execute` either")
        );
        assert!(
            ExecError::Timeout(Duration::from_millis(1500))
                .message("query", false)
                .contains("1500 ms")
        );
        let busy = ExecError::Busy {
            connections: 4,
            waited: Duration::from_millis(250),
        }
        .message("query", false);
        assert!(
            busy.contains("busy") && busy.contains("all 4") && busy.contains("250 ms"),
            "{busy}"
        );
        assert!(
            ExecError::Timeout(Duration::from_secs(2))
                .message("execute", true)
                .contains("rolled back")
        );
    }
}
