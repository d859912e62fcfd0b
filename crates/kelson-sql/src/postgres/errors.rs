//! PostgreSQL errors in words a user can act on.
//!
//! tokio-postgres displays its errors by kind only ("db error", "error connecting to server") and
//! keeps what happened in the source: the server's own message, or the I/O error of the connect.
//! An operator starting `kelson serve` needs that message, and the address it was about.

use std::error::Error as _;

use tokio_postgres::config::Host;
use tokio_postgres::{Config, error::SqlState};

use super::wire::WireError;
use crate::error::SqlError;

/// A setup error ([`SqlError::Postgres`]) for the database named `database` (by the adapter), with
/// the configuration it used when there was one.
pub(crate) fn setup_error(
    database: &str,
    config: Option<&Config>,
    source: tokio_postgres::Error,
) -> SqlError {
    let (target, message) = match config {
        Some(config) => (format!("{} ", target(config)), describe(&source, config)),
        None => {
            let mut message = source.to_string();
            let mut cause = source.source();
            while let Some(e) = cause {
                message.push_str(&format!(": {e}"));
                cause = e.source();
            }
            (String::new(), message)
        }
    };
    SqlError::Postgres {
        database: database.to_owned(),
        target,
        message,
        source: Box::new(source),
    }
}

/// A setup error ([`SqlError::Postgres`]) from one of the adapter's own connections.
pub(crate) fn wire_setup_error(database: &str, config: &Config, source: WireError) -> SqlError {
    SqlError::Postgres {
        database: database.to_owned(),
        target: format!("{} ", target(config)),
        message: describe_wire(&source, config),
        source: Box::new(source),
    }
}

/// What went wrong on one of the adapter's own connections, in the same words as [`describe`].
pub(crate) fn describe_wire(error: &WireError, config: &Config) -> String {
    let at = address(config);
    match error {
        WireError::Db(db) => server_words(
            &db.code,
            &db.message,
            db.detail.as_deref(),
            db.hint.as_deref(),
        ),
        WireError::Io(io) => io_words(io, &at),
        WireError::Timeout => format!("no answer from {at} within the connect timeout"),
        WireError::Tls(why) => format!("TLS with {at}: {why}"),
        WireError::Closed => format!("the server at {at} closed the connection"),
        other => format!("{other} ({at})"),
    }
}

/// The server's message, with its detail, and what to do about it when the code says.
fn server_words(
    code: &SqlState,
    message: &str,
    detail: Option<&str>,
    hint: Option<&str>,
) -> String {
    let mut text = message.to_owned();
    if let Some(detail) = detail {
        text.push_str(&format!(" ({detail})"));
    }
    if *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        && (text.contains("no encryption") || text.contains("SSL off"))
    {
        text.push_str(
            "; the server accepts only encrypted (TLS) connections for this role and \
             database, and this connection is not encrypted",
        );
    } else if let Some(hint) = hint {
        text.push_str(&format!("; hint: {hint}"));
    }
    text
}

fn io_words(io: &std::io::Error, at: &str) -> String {
    match io.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            format!("connection refused at {at}: is PostgreSQL running there?")
        }
        std::io::ErrorKind::TimedOut => format!("no answer from {at} (timed out)"),
        _ => format!("cannot connect to {at}: {io}"),
    }
}

/// `user@host:port/dbname` of a connection configuration, without the password.
pub(crate) fn target(config: &Config) -> String {
    let user = config.get_user().unwrap_or("");
    let db = config.get_dbname().unwrap_or(user);
    let user = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    format!("{user}{}/{db}", address(config))
}

/// The first host and port a configuration names, as the connect tries them.
fn address(config: &Config) -> String {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match config.get_hosts().first() {
        Some(Host::Tcp(host)) if host.contains(':') => format!("[{host}]:{port}"),
        Some(Host::Tcp(host)) => format!("{host}:{port}"),
        Some(Host::Unix(dir)) => format!("{}/.s.PGSQL.{port}", dir.display()),
        None => format!("localhost:{port}"),
    }
}

/// What went wrong, from the server's message when it sent one (role or database missing,
/// password refused, an encrypted connection required), else from the connection's own error,
/// with the address it tried.
pub(crate) fn describe(error: &tokio_postgres::Error, config: &Config) -> String {
    if let Some(db) = error.as_db_error() {
        return server_words(db.code(), db.message(), db.detail(), db.hint());
    }
    let at = address(config);
    let mut cause = error.source();
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return io_words(io, &at);
        }
        cause = e.source();
    }
    let mut text = error.to_string();
    if text == "timeout waiting for server" {
        return format!("no answer from {at} within the connect timeout");
    }
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(&format!(": {e}"));
        cause = e.source();
    }
    if let Some(why) = text.strip_prefix("error performing TLS handshake: ") {
        return format!("TLS with {at}: {why}");
    }
    if text.starts_with("error connecting") || text.starts_with("error communicating") {
        text.push_str(&format!(" ({at})"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_leave_the_password_out() {
        let config: Config = "postgres://ada:secret@db.example:6543/sales"
            .parse()
            .unwrap();
        assert_eq!(target(&config), "ada@db.example:6543/sales");
        let config: Config = "postgres://ada@[::1]/x".parse().unwrap();
        assert_eq!(target(&config), "ada@[::1]:5432/x");
        let config: Config = "host=/run/postgresql user=ada".parse().unwrap();
        assert_eq!(target(&config), "ada@/run/postgresql/.s.PGSQL.5432/ada");
    }
}
