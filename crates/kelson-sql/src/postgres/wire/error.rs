//! What can go wrong on one of the adapter's own connections: the server's error (its fields as
//! sent), or the connection itself.

use std::{fmt, io};

use fallible_iterator::FallibleIterator as _;
use postgres_protocol::message::backend::ErrorResponseBody;
use tokio_postgres::error::SqlState;

/// An error the server reported (an `ErrorResponse`), with the fields the adapter shows.
#[derive(Debug)]
pub(crate) struct DbError {
    pub(crate) severity: String,
    pub(crate) code: SqlState,
    pub(crate) message: String,
    pub(crate) detail: Option<String>,
    pub(crate) hint: Option<String>,
    /// Where in the statement, in characters from 1.
    pub(crate) position: Option<u32>,
}

impl DbError {
    pub(crate) fn parse(body: &ErrorResponseBody) -> io::Result<DbError> {
        let mut error = DbError {
            severity: String::new(),
            code: SqlState::INTERNAL_ERROR,
            message: String::new(),
            detail: None,
            hint: None,
            position: None,
        };
        let mut fields = body.fields();
        while let Some(field) = fields.next()? {
            let value = || String::from_utf8_lossy(field.value_bytes()).into_owned();
            match field.type_() {
                b'S' if error.severity.is_empty() => error.severity = value(),
                // The untranslated severity, when the server sends it, wins.
                b'V' => error.severity = value(),
                b'C' => error.code = SqlState::from_code(&value()),
                b'M' => error.message = value(),
                b'D' => error.detail = Some(value()),
                b'H' => error.hint = Some(value()),
                b'P' => error.position = value().parse().ok(),
                _ => {}
            }
        }
        Ok(error)
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.message)?;
        if let Some(detail) = &self.detail {
            write!(f, " ({detail})")?;
        }
        Ok(())
    }
}

/// A failure on a connection.
#[derive(Debug)]
pub(crate) enum WireError {
    /// The server reported an error; the connection is in a known state.
    Db(Box<DbError>),
    /// Reading or writing failed.
    Io(io::Error),
    /// The server closed the connection.
    Closed,
    /// The server sent what the protocol does not allow at that point.
    Protocol(String),
    /// The TLS negotiation or handshake failed, in words.
    Tls(String),
    /// The server asked for an authentication this adapter cannot give, or the connection string
    /// lacks what it needs.
    Auth(String),
    /// No server answered within the connect timeout.
    Timeout,
    /// A result row larger than the call may receive (its length in bytes): the connection is
    /// given up rather than the row read.
    Oversized(usize),
    /// A `COPY` started a data exchange with the client, which calls do not take part in.
    Copy,
    /// Work sent earlier on this connection (the reset after the previous call) failed, so the
    /// session may hold the previous call's state: the call's own answers are not used.
    Unclean(Box<DbError>),
}

impl WireError {
    /// The server's error, when there is one.
    pub(crate) fn db(&self) -> Option<&DbError> {
        match self {
            WireError::Db(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            WireError::Closed
        } else {
            WireError::Io(e)
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Db(e) => write!(f, "{e}"),
            WireError::Io(e) => write!(f, "{e}"),
            WireError::Closed => f.write_str("the connection to PostgreSQL closed"),
            WireError::Protocol(what) => write!(f, "unexpected message from PostgreSQL: {what}"),
            WireError::Tls(what) | WireError::Auth(what) => f.write_str(what),
            WireError::Timeout => f.write_str("no answer within the connect timeout"),
            WireError::Oversized(len) => write!(f, "a result row of {len} bytes"),
            WireError::Copy => f.write_str("COPY to or from the client"),
            WireError::Unclean(e) => write!(f, "the session reset failed: {e}"),
        }
    }
}

impl std::error::Error for WireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WireError::Io(e) => Some(e),
            _ => None,
        }
    }
}
