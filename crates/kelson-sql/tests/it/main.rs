//! Integration tests of the SQL adapter, driven through a real `kelson_server::Server` in process with
//! JSON-RPC request bytes, on SQLite files, on the local PostgreSQL server (127.0.0.1:5432,
//! database `test`, trust authentication; `KELSON_SQL_TEST_PG` overrides the connection string) and on
//! the local MariaDB server (127.0.0.1:3306, `root` without a password; `KELSON_SQL_TEST_MYSQL`
//! overrides `mysql://host:port`). Each PostgreSQL test works in a schema and roles of its own, and
//! each MariaDB test in a database and accounts of its own, dropped at the end. A test that needs a
//! server asks `support::postgres()` or `support::mariadb()` first and, when the server does not
//! answer, passes without running after one line on the terminal (or fails, with
//! `KELSON_REQUIRE_ALL` set).

mod cancel;
mod my_session;
mod mysql;
mod pg_session;
mod pool;
mod postgres;
mod proxy;
mod resources;
mod sample;
mod scopes;
mod sqlite;
mod support;
mod tasks;
mod writes;
