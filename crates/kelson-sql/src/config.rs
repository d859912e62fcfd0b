//! What an operator configures: per-call limits, the write policy, and engine connection settings.
//!
//! All of it exists whatever engines are compiled in: it is plain data, read from configuration
//! before anything is opened, and an engine that is missing is reported where it is opened.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use kelson_server::Scopes;

/// Per-call limits, applied to every tool call on a database.
///
/// A result is cut at whichever of `max_rows` and `max_bytes` comes first and flagged
/// `truncated: true`; a statement that runs longer than `timeout` is stopped by the engine (SQLite's
/// progress handler and interrupt, PostgreSQL's `statement_timeout`) and reported to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The most rows a result carries.
    pub max_rows: usize,
    /// The most bytes of row data (as compact JSON) a result carries.
    pub max_bytes: usize,
    /// The longest a statement may run.
    pub timeout: Duration,
    /// The longest a call waits for a free connection when all are in use. It counts toward
    /// `timeout`; a call that waited this long is refused with a tool error saying the database
    /// is busy, rather than left queued behind slow statements for its whole time limit.
    pub connection_wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rows: 1000,
            max_bytes: 512 * 1024,
            timeout: Duration::from_secs(10),
            connection_wait: Duration::from_secs(5),
        }
    }
}

impl Limits {
    /// The largest `max_rows` accepted; above it a single result would not fit in a model's context.
    pub const MAX_ROWS_CEILING: usize = 100_000;

    /// The smallest [`value_cap`](Self::value_cap), whatever `max_bytes` says: room for the
    /// intermediate values of ordinary queries (a `group_concat`, a `printf`) under a small budget.
    pub const MIN_VALUE_CAP: usize = 1024 * 1024;

    /// The most bytes one value may take: four times `max_bytes`, and at least
    /// [`MIN_VALUE_CAP`](Self::MIN_VALUE_CAP). A value that large could never be returned (it
    /// would not fit in `max_bytes`), so a read refuses to build or receive a larger one rather
    /// than spend the memory and time first: SQLite's length limit stops it as it is built,
    /// PostgreSQL's is refused as it is decoded. The headroom lets a query compute with values
    /// somewhat larger than it returns (`length(x)` of a long text, say).
    pub fn value_cap(&self) -> usize {
        self.max_bytes.saturating_mul(4).max(Self::MIN_VALUE_CAP)
    }

    /// Checks that every limit is usable: at least one row and 1024 bytes, a non-zero timeout and
    /// connection wait, and `max_rows` at most [`MAX_ROWS_CEILING`](Self::MAX_ROWS_CEILING).
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.max_rows == 0 || self.max_rows > Self::MAX_ROWS_CEILING {
            return Err("max_rows must be between 1 and 100000");
        }
        if self.max_bytes < 1024 {
            return Err("max_bytes must be at least 1024");
        }
        if self.timeout.is_zero() {
            return Err("timeout must be more than zero");
        }
        if self.timeout > Duration::from_secs(24 * 3600) {
            return Err("timeout must be at most 24 hours");
        }
        if self.connection_wait.is_zero() {
            return Err("connection_wait must be more than zero");
        }
        Ok(())
    }
}

/// The engine-independent policy of one database.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct DatabaseConfig {
    /// Per-call limits.
    pub limits: Limits,
    /// Whether the `execute` tool may run changes on this database (each one approved by the user).
    /// Off by default: the database is then only ever read.
    pub allow_write: bool,
    /// A sentence for the model about what the database holds; shown by `list_tables` and in the
    /// server instructions.
    pub description: Option<String>,
    /// The scopes an authenticated caller needs to read the database: `list_tables`,
    /// `describe_table`, `query` and its table resources. None by default (see
    /// [`kelson_server::Scopes`]: anonymous callers, served without an auth layer, are never
    /// restricted).
    pub read_scopes: Scopes,
    /// The scopes an authenticated caller needs to run `execute` on the database. None by
    /// default.
    pub write_scopes: Scopes,
}

/// How to open an SQLite database.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SqliteConfig {
    /// The database file. It must exist unless `create_if_missing` is set (and writes are allowed).
    pub path: PathBuf,
    /// How many read-only connections serve reads in parallel (default:
    /// [`default_read_connections`](Self::default_read_connections)).
    pub read_connections: usize,
    /// Create an empty database when the file does not exist. Only honoured when writes are
    /// allowed: a read-only adapter over an empty file would serve nothing.
    pub create_if_missing: bool,
}

impl SqliteConfig {
    /// The most read connections a database may have.
    pub const MAX_READ_CONNECTIONS: usize = 64;

    /// An existing database file, with the default number of read connections.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SqliteConfig {
            path: path.into(),
            read_connections: Self::default_read_connections(),
            create_if_missing: false,
        }
    }

    /// One read connection per CPU the process may use, between 4 and 16. At least 4 because a
    /// read does not always keep a CPU busy (it waits for the disk, or for a lock), and so that
    /// two slow statements never hold up every other call; at most 16 because each connection
    /// keeps a page cache of its own (up to 2 MiB).
    pub fn default_read_connections() -> usize {
        std::thread::available_parallelism()
            .map_or(4, usize::from)
            .clamp(4, 16)
    }
}

/// The most connections a PostgreSQL or MySQL pool opens by default: four per CPU the process may
/// use, between 4 and 16. Connections are opened only as calls need them, so an idle server holds
/// few. Measured on 2 CPUs with the server and the database on the same machine, 16 calls in
/// flight (`kelson bench --stdio`, a one-row read): 8 connections served 8-13 % more reads than 4
/// on PostgreSQL and as many on MariaDB, 16 fewer than 8 on both; a call spends part of its time
/// waiting for the database, which more connections than CPUs cover.
pub fn default_connections() -> usize {
    std::thread::available_parallelism()
        .map_or(4, |n| usize::from(n).saturating_mul(4))
        .clamp(4, 16)
}

/// How to connect to a PostgreSQL database.
///
/// TLS follows libpq's `sslmode` (in the URL, or [`ssl_mode`](Self::ssl_mode), which wins): a
/// server on a loopback address or a Unix socket is reached without TLS unless a mode is set, and
/// any other server with `verify-full` (a certificate from a trusted CA for the host name
/// connected to). `require` encrypts without checking the certificate, so a man in the middle
/// goes unnoticed. The trusted CAs are those of the CA file (`sslrootcert` in the URL, or
/// [`ssl_root_cert`](Self::ssl_root_cert)), else the system's.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PostgresConfig {
    /// A `postgres://user@host:port/db` URL or a `host=... user=... dbname=...` string. Reads run
    /// as this role; it should be a least-privilege role (see the crate documentation).
    pub url: String,
    /// A second connection string for writes (`execute`), so that reads can run as a role that
    /// cannot write at all. Defaults to `url`.
    pub write_url: Option<String>,
    /// The most connections opened to the server (reads and writes each get their own pool).
    pub connections: usize,
    /// Accept a role that is a superuser or may read or write server files or run programs
    /// (`pg_read_server_files`, `pg_write_server_files`, `pg_execute_server_program`). Such a
    /// role can escape a read-only transaction (`COPY ... TO PROGRAM`), so the adapter refuses it
    /// unless this is set.
    pub allow_privileged_role: bool,
    /// How long to wait for a connection to the server.
    pub connect_timeout: Duration,
    /// TLS for both URLs, over any `sslmode` they carry.
    pub ssl_mode: Option<SslMode>,
    /// The CA certificates (PEM) the server's certificate must come from, over any `sslrootcert`
    /// the URLs carry; without either, the system's.
    pub ssl_root_cert: Option<PathBuf>,
}

impl PostgresConfig {
    /// A connection string with default settings: [`default_connections`] per pool, no
    /// privileged role, 10 s connect timeout.
    pub fn new(url: impl Into<String>) -> Self {
        PostgresConfig {
            url: url.into(),
            write_url: None,
            connections: default_connections(),
            allow_privileged_role: false,
            connect_timeout: Duration::from_secs(10),
            ssl_mode: None,
            ssl_root_cert: None,
        }
    }
}

/// How to connect to a MySQL or MariaDB server.
///
/// TLS takes the same settings as PostgreSQL's ([`SslMode`], in the URL as `sslmode` or MySQL's
/// `ssl-mode`, or [`ssl_mode`](Self::ssl_mode), which wins): a server on a loopback address is
/// reached without TLS unless a mode is set, and any other server with `verify-full`. Two modes
/// are not supported for MySQL and are refused with a message: `prefer` (the driver cannot fall
/// back to cleartext) and `verify-ca` (it cannot check the issuer while forgiving the host name);
/// `require` with a CA file checks the whole certificate, name included. The trusted CAs are those of the CA file (`sslrootcert` or `ssl-ca` in the URL, or
/// [`ssl_root_cert`](Self::ssl_root_cert)), else the system's.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MysqlConfig {
    /// A `mysql://user:password@host:port/db` (or `mariadb://...`) URL. Reads run as this
    /// account; it should be a least-privilege account (see the crate documentation).
    pub url: String,
    /// A second URL for writes (`execute`), so that reads can run as an account that cannot
    /// write at all. Defaults to `url`.
    pub write_url: Option<String>,
    /// The most connections opened to the server (reads and writes each get their own pool).
    pub connections: usize,
    /// Accept an account holding privileges that escape a read-only transaction (`SUPER`,
    /// `FILE`, grant option, routine creation, definer-rights routines, writes to `mysql.*`,
    /// ...). The adapter refuses such an account unless this is set.
    pub allow_privileged_account: bool,
    /// How long to wait for a connection to the server.
    pub connect_timeout: Duration,
    /// TLS for both URLs, over any mode they carry.
    pub ssl_mode: Option<SslMode>,
    /// The CA certificates (PEM) the server's certificate must come from, over any CA file the
    /// URLs carry; without either, the system's.
    pub ssl_root_cert: Option<PathBuf>,
}

impl MysqlConfig {
    /// A URL with default settings: [`default_connections`] per pool, no privileged account,
    /// 10 s connect timeout.
    pub fn new(url: impl Into<String>) -> Self {
        MysqlConfig {
            url: url.into(),
            write_url: None,
            connections: default_connections(),
            allow_privileged_account: false,
            connect_timeout: Duration::from_secs(10),
            ssl_mode: None,
            ssl_root_cert: None,
        }
    }
}

/// How a connection uses TLS: libpq's `sslmode` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS if the server offers it, without checking its certificate; else none.
    Prefer,
    /// TLS, without checking the server's certificate: encrypted, but a man in the middle is not
    /// noticed. With a CA file given, it is checked as `verify-ca` does (as libpq does).
    Require,
    /// TLS, with a certificate issued by a trusted CA, for whatever host name.
    VerifyCa,
    /// TLS, with a certificate issued by a trusted CA for the host name connected to.
    VerifyFull,
}

impl FromStr for SslMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "unknown sslmode {other:?}: expected disable, prefer, require, verify-ca or \
                     verify-full"
                ));
            }
        })
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        })
    }
}

/// The characters a database name may use: it appears in resource URIs and in the `database`
/// argument of every tool.
pub(crate) fn check_name(name: &str) -> Result<(), crate::SqlError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.as_bytes()[0].is_ascii_lowercase()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(crate::SqlError::InvalidName(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pool_is_four_connections_per_cpu_within_bounds() {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let n = default_connections();
        assert_eq!(n, (cpus * 4).clamp(4, 16));
        assert_eq!(PostgresConfig::new("postgres://x").connections, n);
        assert_eq!(MysqlConfig::new("mysql://x").connections, n);
    }

    #[test]
    fn names() {
        for good in ["main", "sample", "db-2", "a_b"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Main", "2db", "a b", "a/b", "a.b", &"x".repeat(64)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limits() {
        assert!(Limits::default().validate().is_ok());
        let zero_rows = Limits {
            max_rows: 0,
            ..Limits::default()
        };
        assert!(zero_rows.validate().is_err());
        let no_time = Limits {
            timeout: Duration::ZERO,
            ..Limits::default()
        };
        assert!(no_time.validate().is_err());
    }
}
