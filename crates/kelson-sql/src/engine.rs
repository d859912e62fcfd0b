//! The engines behind one interface, each there only with its cargo feature.
//!
//! Every match on [`Engine`] is here, on `*self` with `ref` bindings: without any engine the enum
//! has no variant, and only a match on the place itself (not on a reference to it) may then have
//! no arm at all.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::config::{DatabaseConfig, Limits, MysqlConfig, PostgresConfig, SqliteConfig};
use crate::database::PoolStats;
use crate::error::{ExecError, SqlError};
#[cfg(feature = "mysql")]
use crate::mysql::MyDb;
use crate::output::{ColumnDef, ForeignKey, IndexDef, Rows};
#[cfg(feature = "postgres")]
use crate::postgres::PgDb;
#[cfg(feature = "sqlite")]
use crate::sqlite::SqliteDb;
use crate::value::Param;

/// The error for an SQLite file in a build without the `sqlite` feature.
#[cfg(not(feature = "sqlite"))]
pub(crate) fn no_sqlite() -> SqlError {
    SqlError::EngineNotCompiled {
        engine: "SQLite",
        feature: "sqlite",
    }
}

/// The error for a PostgreSQL URL in a build without the `postgres` feature.
#[cfg(not(feature = "postgres"))]
pub(crate) fn no_postgres() -> SqlError {
    SqlError::EngineNotCompiled {
        engine: "PostgreSQL",
        feature: "postgres",
    }
}

/// The error for a MySQL URL in a build without the `mysql` feature.
#[cfg(not(feature = "mysql"))]
pub(crate) fn no_mysql() -> SqlError {
    SqlError::EngineNotCompiled {
        engine: "MySQL",
        feature: "mysql",
    }
}

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
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteDb),
    #[cfg(feature = "postgres")]
    Postgres(PgDb),
    #[cfg(feature = "mysql")]
    Mysql(MyDb),
}

impl Engine {
    /// Opens an SQLite file, or says that this build cannot.
    pub(crate) fn sqlite(
        sqlite: &SqliteConfig,
        config: &DatabaseConfig,
    ) -> Result<Engine, SqlError> {
        #[cfg(feature = "sqlite")]
        {
            Ok(Engine::Sqlite(SqliteDb::open(sqlite, config)?))
        }
        #[cfg(not(feature = "sqlite"))]
        {
            let _ = (sqlite, config);
            Err(no_sqlite())
        }
    }

    /// Connects to a PostgreSQL database, or says that this build cannot.
    pub(crate) async fn postgres(
        name: &str,
        postgres: &PostgresConfig,
        config: &DatabaseConfig,
    ) -> Result<Engine, SqlError> {
        #[cfg(feature = "postgres")]
        {
            Ok(Engine::Postgres(
                PgDb::connect(name, postgres, config).await?,
            ))
        }
        #[cfg(not(feature = "postgres"))]
        {
            let _ = (name, postgres, config);
            Err(no_postgres())
        }
    }

    /// Connects to a MySQL or MariaDB database, or says that this build cannot.
    pub(crate) async fn mysql(
        name: &str,
        mysql: &MysqlConfig,
        config: &DatabaseConfig,
    ) -> Result<Engine, SqlError> {
        #[cfg(feature = "mysql")]
        {
            Ok(Engine::Mysql(MyDb::connect(name, mysql, config).await?))
        }
        #[cfg(not(feature = "mysql"))]
        {
            let _ = (name, mysql, config);
            Err(no_mysql())
        }
    }

    /// The engine's name, for the model.
    pub(crate) fn label(&self) -> &'static str {
        match *self {
            #[cfg(feature = "sqlite")]
            Engine::Sqlite(_) => "SQLite",
            #[cfg(feature = "postgres")]
            Engine::Postgres(_) => "PostgreSQL",
            #[cfg(feature = "mysql")]
            Engine::Mysql(ref db) => db.label(),
        }
    }

    /// The engine as OpenTelemetry names it (`db.system.name`).
    pub(crate) fn system_name(&self) -> &'static str {
        match *self {
            #[cfg(feature = "sqlite")]
            Engine::Sqlite(_) => "sqlite",
            #[cfg(feature = "postgres")]
            Engine::Postgres(_) => "postgresql",
            #[cfg(feature = "mysql")]
            Engine::Mysql(ref db) => {
                if db.label() == "MariaDB" {
                    "mariadb"
                } else {
                    "mysql"
                }
            }
        }
    }

    /// The connection pools' state.
    pub(crate) fn pools(&self) -> Vec<PoolStats> {
        match *self {
            #[cfg(feature = "sqlite")]
            Engine::Sqlite(ref db) => db.pools(),
            #[cfg(feature = "postgres")]
            Engine::Postgres(ref db) => db.pools(),
            #[cfg(feature = "mysql")]
            Engine::Mysql(ref db) => db.pools(),
        }
    }

    /// The file of an SQLite database.
    pub(crate) fn sqlite_path(&self) -> Option<&Path> {
        match *self {
            #[cfg(feature = "sqlite")]
            Engine::Sqlite(ref db) => Some(db.path()),
            #[cfg(feature = "postgres")]
            Engine::Postgres(_) => None,
            #[cfg(feature = "mysql")]
            Engine::Mysql(_) => None,
        }
    }

    pub(crate) async fn query(
        &self,
        sql: String,
        params: Vec<Param>,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Rows, ExecError> {
        match *self {
            #[cfg(feature = "sqlite")]
            Engine::Sqlite(ref db) => db.query(sql, params, limits, cancel).await,
            #[cfg(feature = "postgres")]
            Engine::Postgres(ref db) => db.query(sql, params, limits, cancel).await,
            #[cfg(feature = "mysql")]
            Engine::Mysql(ref db) => db.query(sql, params, limits, cancel).await,
        }
    }

    pub(crate) async fn execute(
        &self,
        sql: String,
        params: Vec<Param>,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Rows, ExecError> {
        match *self {
            #[cfg(feature = "sqlite")]
            Engine::Sqlite(ref db) => db.execute(sql, params, limits, cancel).await,
            #[cfg(feature = "postgres")]
            Engine::Postgres(ref db) => db.execute(sql, params, limits, cancel).await,
            #[cfg(feature = "mysql")]
            Engine::Mysql(ref db) => db.execute(sql, params, limits, cancel).await,
        }
    }

    pub(crate) async fn tables(
        &self,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Vec<CatalogEntry>, ExecError> {
        match *self {
            #[cfg(feature = "sqlite")]
            Engine::Sqlite(ref db) => db.tables(limits, cancel).await,
            #[cfg(feature = "postgres")]
            Engine::Postgres(ref db) => db.tables(limits, cancel).await,
            #[cfg(feature = "mysql")]
            Engine::Mysql(ref db) => db.tables(limits, cancel).await,
        }
    }

    pub(crate) async fn describe(
        &self,
        schema: Option<String>,
        table: String,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Option<Description>, ExecError> {
        match *self {
            #[cfg(feature = "sqlite")]
            Engine::Sqlite(ref db) => db.describe(schema, table, limits, cancel).await,
            #[cfg(feature = "postgres")]
            Engine::Postgres(ref db) => db.describe(schema, table, limits, cancel).await,
            #[cfg(feature = "mysql")]
            Engine::Mysql(ref db) => db.describe(schema, table, limits, cancel).await,
        }
    }
}

// These run only in builds that leave an engine out (`--no-default-features`): there, naming it
// must be an error that says which feature to turn on, never a panic.
/// Counts a call as waiting for a pool's connection for as long as it lives (the call's future may
/// be dropped mid-wait): every engine's pool reports the count in its [`PoolStats`](crate::PoolStats).
pub(crate) struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Waiting<'a> {
    pub(crate) fn new(count: &'a std::sync::atomic::AtomicUsize) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    #[cfg(not(feature = "postgres"))]
    #[tokio::test]
    async fn a_postgres_url_without_the_postgres_feature_is_refused_in_words() {
        let expected =
            "PostgreSQL support is not compiled in: build kelson-sql with the `postgres` feature";
        let url = "postgres://ada@db.example/sales";
        let config = crate::DatabaseConfig::default();
        let db = crate::Database::postgres("sales", url, config.clone()).await;
        assert_eq!(db.unwrap_err().to_string(), expected);
        let adapter = crate::SqlAdapter::postgres(url, config).await;
        assert_eq!(adapter.unwrap_err().to_string(), expected);
    }

    #[cfg(not(feature = "mysql"))]
    #[tokio::test]
    async fn a_mysql_url_without_the_mysql_feature_is_refused_in_words() {
        let expected =
            "MySQL support is not compiled in: build kelson-sql with the `mysql` feature";
        let url = "mysql://ada@db.example/sales";
        let config = crate::DatabaseConfig::default();
        let db = crate::Database::mysql("sales", url, config.clone()).await;
        assert_eq!(db.unwrap_err().to_string(), expected);
        let adapter = crate::SqlAdapter::mysql(url, config).await;
        assert_eq!(adapter.unwrap_err().to_string(), expected);
    }

    #[cfg(not(feature = "sqlite"))]
    #[test]
    fn an_sqlite_file_without_the_sqlite_feature_is_refused_in_words() {
        let expected =
            "SQLite support is not compiled in: build kelson-sql with the `sqlite` feature";
        let path = std::env::temp_dir().join("mcp-sql-never-created.db");
        let db = crate::Database::sqlite("main", path.as_path(), crate::DatabaseConfig::default());
        assert_eq!(db.unwrap_err().to_string(), expected);
        let sample = crate::create_sample_database(&path);
        assert_eq!(sample.unwrap_err().to_string(), expected);
        assert!(!path.exists());
    }

    /// With one engine, the ledger of the other is refused when it is asked for.
    #[cfg(all(feature = "sqlite", not(feature = "postgres")))]
    #[tokio::test]
    async fn the_shared_ledger_without_the_postgres_feature_is_refused() {
        let dir = std::env::temp_dir().join(format!("mcp-sql-engine-{}", std::process::id()));
        let path = dir.join("sample.db");
        crate::create_sample_database(&path).unwrap();
        let adapter =
            crate::SqlAdapter::sqlite(path.as_path(), crate::DatabaseConfig::default()).unwrap();
        let refused = adapter
            .with_shared_approvals("postgres://ada@db.example/ledger")
            .await;
        assert!(matches!(
            refused,
            Err(crate::SqlError::EngineNotCompiled {
                feature: "postgres",
                ..
            })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
