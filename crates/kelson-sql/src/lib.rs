//! A policy-enforcing SQL adapter for MCP servers: SQLite, PostgreSQL, MySQL and MariaDB behind
//! read-only tools,
//! per-call limits, and writes the user approves one statement at a time.
//!
//! The adapter is not the database: it puts SQL policy in front of an existing driver and answers
//! in MCP terms. It registers on an [`kelson_server::ServerBuilder`]:
//!
//! | tool | does | annotations |
//! |---|---|---|
//! | `list_tables` | tables and views, with their resource URIs | read-only, idempotent, closed world |
//! | `describe_table` | columns, primary key, foreign keys, indexes | read-only, idempotent, closed world |
//! | `query` | one read-only statement, rows as `structuredContent` plus a text table | read-only, idempotent, closed world |
//! | `execute` | one approved change, in a transaction (only when a database allows writes) | destructive, not idempotent |
//!
//! Every table's schema is also a resource, `sql://{database}/{schema}/{table}` (one resource
//! template per database; SQLite's schema is `main`), listed by `resources/list` and kept up to date
//! after writes.
//!
//! # Enforcement
//!
//! Read-only access is enforced by the engine, never by reading the SQL text:
//! - **SQLite**: reads run on connections opened `SQLITE_OPEN_READ_ONLY` with `PRAGMA query_only`,
//!   defensive mode, no attached databases (limit zero) and an authorizer that allows only reads:
//!   no writes of any kind, no `ATTACH`/`DETACH`, no pragma but a few that read the schema, no
//!   temporary objects, no transaction control, and no function that loads code or touches files
//!   (`load_extension`, `readfile`, `writefile`, `edit`, `fts3_tokenizer`, ...). SQLite must also
//!   report the prepared statement read-only (`sqlite3_stmt_readonly`, which catches `VACUUM INTO`).
//!   Exactly one statement per call: the text after the first statement is prepared with every
//!   action refused and must turn out to be empty.
//! - **PostgreSQL**: every read runs in `START TRANSACTION READ ONLY` with `SET LOCAL
//!   statement_timeout`, through the extended protocol (whose Parse message refuses more than one
//!   statement), and is rolled back; `DISCARD ALL` then clears any session state it left. A role
//!   that is a superuser or may touch server files or run programs is refused at connection time
//!   (it could escape with `COPY ... TO PROGRAM`) unless explicitly allowed.
//! - **MySQL and MariaDB**: the statement is only ever prepared (one statement; it travels as a
//!   hex literal in a variable, never as query text),
//!   inside an XA transaction started read-only (`SET TRANSACTION READ ONLY; XA START`) that is
//!   ended and rolled back; inside it, statements that would commit (`COMMIT`, DDL, `LOCK
//!   TABLES`) are refused, which a plain `START TRANSACTION READ ONLY` does not do. The session is
//!   reset after every call (`COM_RESET_CONNECTION`). An account holding privileges that reach
//!   past the database (`FILE`, `SUPER`, grant option, routine privileges, definer-rights
//!   routines, writes to `mysql.*`, directly or through roles) is refused at connection time
//!   unless explicitly allowed ([`MysqlConfig::allow_privileged_account`]).
//!
//! Parameters are always bound (`params`, JSON primitives), never interpolated. Each call has a row
//! limit, a byte limit (both flag `truncated`) and a time limit; a read refuses a single value over
//! [`Limits::value_cap`] (SQLite's length limit, checked before it allocates; PostgreSQL values
//! before they are decoded); a client cancellation stops the running statement (SQLite's
//! interrupt, PostgreSQL's cancel request, MySQL's `KILL QUERY` from a second connection).
//!
//! Writes go through `execute`, which asks the user through MRTR elicitation to approve the exact
//! statement and parameters (a client without form elicitation gets -32021). The approval rides on
//! the sealed `requestState`, which binds it to these arguments; an answer sent without that state
//! is never accepted; and the state's nonce is recorded before the statement runs (until the state
//! expires: in bounded memory; with [`SqlAdapter::with_approvals_file`] in an SQLite file that
//! outlives restarts; or with [`SqlAdapter::with_shared_approvals`] in a PostgreSQL table that
//! instances sharing a state key use together), so a retried or replayed request cannot run the
//! write twice. The
//! write runs in a transaction of its own, reports the rows it changed, and refreshes the table
//! resources.
//!
//! # Several databases
//!
//! One [`SqlAdapter`] serves any number of named [`Database`]s with one tool set: every tool takes
//! a `database` argument, an enum of the names, required when there is more than one (`execute`'s
//! lists only the databases that allow writes). Register one adapter per server.
//!
//! # Example
//!
//! ```
//! use kelson_server::Server;
//! use kelson_sql::{DatabaseConfig, SqlAdapter, create_sample_database};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("mcp-sql-doc-{}", std::process::id()));
//! let path = dir.join("sample.db");
//! create_sample_database(&path)?;
//! let adapter = SqlAdapter::sqlite(path.as_path(), DatabaseConfig::default())?;
//! let server = adapter
//!     .register(Server::builder("sql", "1.0.0").instructions(adapter.instructions()))
//!     .await?
//!     .build()?;
//! assert!(server.tools().iter().any(|t| t.name == "query"));
//! // Serve it: `kelson_server::stdio::serve_stdio(server, Default::default()).await`.
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Least-privilege PostgreSQL roles
//!
//! Connect as a role that can read what the model may see and nothing else:
//!
//! ```sql
//! CREATE ROLE mcp_reader LOGIN PASSWORD 'change-me'
//!     NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT 8;
//! ALTER ROLE mcp_reader SET default_transaction_read_only = on;
//! ALTER ROLE mcp_reader SET statement_timeout = '30s';
//! GRANT CONNECT ON DATABASE app TO mcp_reader;
//! REVOKE TEMPORARY ON DATABASE app FROM PUBLIC;
//! GRANT USAGE ON SCHEMA public TO mcp_reader;
//! GRANT SELECT ON ALL TABLES IN SCHEMA public TO mcp_reader;
//! ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO mcp_reader;
//! -- With writes enabled, give `execute` its own role through `write_url`:
//! CREATE ROLE mcp_writer LOGIN PASSWORD 'change-me' NOSUPERUSER NOCREATEDB NOCREATEROLE;
//! GRANT CONNECT ON DATABASE app TO mcp_writer;
//! GRANT USAGE ON SCHEMA public TO mcp_writer;
//! GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO mcp_writer;
//! ```
//!
//! # Least-privilege MySQL and MariaDB accounts
//!
//! ```sql
//! CREATE USER 'mcp_reader'@'%' IDENTIFIED BY 'change-me' WITH MAX_USER_CONNECTIONS 8;
//! GRANT SELECT, SHOW VIEW ON app.* TO 'mcp_reader'@'%';
//! -- With writes enabled, give `execute` its own account through `write_url`:
//! CREATE USER 'mcp_writer'@'%' IDENTIFIED BY 'change-me';
//! GRANT SELECT, INSERT, UPDATE, DELETE ON app.* TO 'mcp_writer'@'%';
//! ```
//!
//! MySQL takes the same TLS settings ([`MysqlConfig::ssl_mode`], [`MysqlConfig::ssl_root_cert`],
//! or `sslmode`/`ssl-mode` and `sslrootcert`/`ssl-ca` in the URL), except `prefer` and
//! `verify-ca`, which the driver cannot do and which are refused; `require` with a CA file checks
//! the whole certificate, name included.
//!
//! PostgreSQL is reached over TLS with rustls, as libpq's `sslmode` says ([`SslMode`], in the URL
//! or [`PostgresConfig::ssl_mode`]): `verify-full` by default for a server that is not on a
//! loopback address or a Unix socket (those keep cleartext unless a mode is set), against the CA
//! file of `sslrootcert` ([`PostgresConfig::ssl_root_cert`]) or the system's CA certificates.
//! `require` encrypts without checking the certificate: a man in the middle is not noticed.
//!
//! # Features
//!
//! Each engine is a cargo feature, and all are on by default:
//!
//! | feature | engine | also brings |
//! |---|---|---|
//! | `sqlite` | SQLite files through rusqlite, which compiles SQLite's C source | the approvals file ([`SqlAdapter::with_approvals_file`]) and the sample database ([`create_sample_database`]) |
//! | `postgres` | PostgreSQL through tokio-postgres, over TLS with rustls and aws-lc-rs | the shared approval ledger ([`SqlAdapter::with_shared_approvals`]) |
//! | `mysql` | MySQL and MariaDB through mysql_async, over TLS with rustls and aws-lc-rs | |
//!
//! A program that needs one engine builds only that one:
//! `kelson-sql = { version = "0.1", default-features = false, features = ["sqlite"] }`.
//!
//! The API does not change with the features. The configuration types ([`SqliteConfig`],
//! [`PostgresConfig`], [`MysqlConfig`], [`SslMode`]) and every constructor exist in every build, because a program
//! that reads its configuration (a file path, a URL) cannot test this crate's features with `cfg`:
//! had they vanished, each such program would have to forward the features itself. An engine that
//! was left out is an error where it is named, never a panic: [`Database::sqlite`],
//! [`Database::postgres`], [`Database::mysql`], [`SqlAdapter::sqlite`], [`SqlAdapter::postgres`],
//! [`SqlAdapter::mysql`],
//! [`SqlAdapter::with_approvals_file`], [`SqlAdapter::with_shared_approvals`] and
//! [`create_sample_database`] then return [`SqlError::EngineNotCompiled`] ("PostgreSQL support is
//! not compiled in: build kelson-sql with the `postgres` feature"). Used approvals are always recorded
//! in memory unless a ledger is chosen. A feature adds only what carries its driver's types: the
//! error variants `SqlError::Sqlite` (a `rusqlite::Error`), `SqlError::Postgres` (the
//! boxed error of its driver or connection) and `SqlError::Mysql` (a `mysql_async::Error`). [`SqlError`] is `#[non_exhaustive]` so that this stays additive: a
//! match written against one set of features still compiles when another crate in the build turns
//! on more.
//!
//! With no engine feature the crate still compiles, though nothing can be opened (every constructor
//! above returns the error, and [`SqlAdapter::new`] needs a database). That costs one lint
//! allowance for the code the engines share, while a `compile_error!` would break
//! `cargo check --no-default-features` and feature-powerset checks for no gain in safety: the
//! error at the first constructor says what to turn on.

// Without an engine nothing can be opened: the code the engines share (row collection, most tool
// errors) has no caller, and the engine methods leave their arguments unused. That build only has
// to compile, so its dead code is allowed rather than gated item by item.
#![cfg_attr(
    not(any(feature = "sqlite", feature = "postgres", feature = "mysql")),
    allow(dead_code, unused_variables)
)]

mod adapter;
mod approval;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod calendar;
mod config;
mod database;
mod engine;
mod error;
mod ledger;
#[cfg(feature = "mysql")]
mod mysql;
mod output;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod remote;
mod sample;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "postgres")]
mod task_store;
mod tools;
mod value;

pub use adapter::{DEFAULT_DATABASE, SqlAdapter};
pub use config::{
    DatabaseConfig, Limits, MysqlConfig, PostgresConfig, SqliteConfig, SslMode, default_connections,
};
pub use database::{Database, PoolStats, URI_SCHEME};
pub use error::SqlError;
pub use ledger::LEDGER_TABLE;
pub use sample::{SAMPLE_TABLES, SAMPLE_VIEWS, SampleOutcome, create_sample_database};
#[cfg(feature = "postgres")]
pub use task_store::{PgTaskStore, TASKS_TABLE};
