//! `kelson serve` as a user runs it: the real binary serving the SQL adapter (the sample database,
//! SQLite files, the local PostgreSQL and the local MariaDB) and the filesystem adapter, driven by the `kelson` client
//! commands and by `kelson-client`.

pub(crate) mod answers;
mod approvals;
mod check;
mod cluster;
mod config;
mod connections;
mod eras;
mod faults;
mod files;
mod gateway;
mod host_policy;
mod https;
mod limits;
mod mysql;
mod mysql_tls;
mod observe;
mod pg_auth;
mod pg_restart;
mod postgres;
mod postgres_tls;
mod shutdown;
mod sqlite;
mod start;
pub(crate) mod support;
mod task_store;
mod tasks;
mod traces;
mod watch;
