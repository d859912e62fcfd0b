//! The two engines behind one interface.

use tokio_util::sync::CancellationToken;

use crate::config::Limits;
use crate::error::ExecError;
use crate::output::{ColumnDef, ForeignKey, IndexDef, Rows};
use crate::postgres::PgDb;
use crate::sqlite::SqliteDb;
use crate::value::Param;

/// One table or view of the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CatalogEntry {
    pub(crate) schema: String,
    pub(crate) name: String,
    pub(crate) kind: String,
    /// Changes whenever the definition changes (columns, keys, indexes, view query).
    pub(crate) fingerprint: String,
}

/// A table's full description, before the adapter adds the database name and URI.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Description {
    pub(crate) schema: String,
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) columns: Vec<ColumnDef>,
    pub(crate) primary_key: Vec<String>,
    pub(crate) foreign_keys: Vec<ForeignKey>,
    pub(crate) indexes: Vec<IndexDef>,
    pub(crate) definition: Option<String>,
}

pub(crate) enum Engine {
    Sqlite(SqliteDb),
    Postgres(PgDb),
}

impl Engine {
    /// The engine's name, for the model.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Engine::Sqlite(_) => "SQLite",
            Engine::Postgres(_) => "PostgreSQL",
        }
    }

    pub(crate) async fn query(
        &self,
        sql: String,
        params: Vec<Param>,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Rows, ExecError> {
        match self {
            Engine::Sqlite(db) => db.query(sql, params, limits, cancel).await,
            Engine::Postgres(db) => db.query(sql, params, limits, cancel).await,
        }
    }

    pub(crate) async fn execute(
        &self,
        sql: String,
        params: Vec<Param>,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Rows, ExecError> {
        match self {
            Engine::Sqlite(db) => db.execute(sql, params, limits, cancel).await,
            Engine::Postgres(db) => db.execute(sql, params, limits, cancel).await,
        }
    }

    pub(crate) async fn tables(
        &self,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Vec<CatalogEntry>, ExecError> {
        match self {
            Engine::Sqlite(db) => db.tables(limits, cancel).await,
            Engine::Postgres(db) => db.tables(limits, cancel).await,
        }
    }

    pub(crate) async fn describe(
        &self,
        schema: Option<String>,
        table: String,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Option<Description>, ExecError> {
        match self {
            Engine::Sqlite(db) => db.describe(schema, table, limits, cancel).await,
            Engine::Postgres(db) => db.describe(schema, table, limits, cancel).await,
        }
    }
}
