//! One named database: its engine, its policy, and the table resources registered for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kelson_server::UriTemplate;

use crate::config::{DatabaseConfig, MysqlConfig, PostgresConfig, SqliteConfig, check_name};
use crate::engine::Engine;
use crate::error::SqlError;

/// The URI scheme of table resources: `sql://{database}/{schema}/{table}`.
pub const URI_SCHEME: &str = "sql";

/// A connection pool of a database, as it is now: for metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolStats {
    /// `"read"` (`query`, `list_tables`, `describe_table`, resources) or `"write"` (`execute`).
    pub pool: &'static str,
    /// The most connections the pool holds.
    pub size: usize,
    /// Connections lent to calls now.
    pub in_use: usize,
    /// Calls waiting for a connection now.
    pub waiting: usize,
    /// Times calls waited for the database server, since the pool was made: a PostgreSQL read
    /// of one batch of rows waits once. Always 0 for SQLite, which runs in the process.
    pub round_trips: u64,
}

/// A named SQL database the adapter serves: an SQLite file, a PostgreSQL server or a MySQL or
/// MariaDB server, with its limits
/// and write policy. Cloning is cheap; clones share the connections.
#[derive(Clone)]
pub struct Database {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) name: String,
    pub(crate) config: DatabaseConfig,
    pub(crate) engine: Engine,
    /// `sql://<name>/{schema}/{table}`, with this database's name in place.
    pub(crate) template: UriTemplate,
    /// The table resources registered on the server, by URI, with each table's fingerprint.
    pub(crate) registered: tokio::sync::Mutex<BTreeMap<String, String>>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("name", &self.inner.name)
            .field("engine", &self.engine())
            .field("allow_write", &self.inner.config.allow_write)
            .finish_non_exhaustive()
    }
}

impl Database {
    fn new(name: &str, config: DatabaseConfig, engine: Engine) -> Result<Database, SqlError> {
        let template = UriTemplate::parse(&format!("{URI_SCHEME}://{name}/{{schema}}/{{table}}"))
            .map_err(kelson_server::BuildError::from)?;
        Ok(Database {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                config,
                engine,
                template,
                registered: tokio::sync::Mutex::default(),
            }),
        })
    }

    fn validate(name: &str, config: &DatabaseConfig) -> Result<(), SqlError> {
        check_name(name)?;
        config.limits.validate().map_err(|reason| SqlError::Config {
            database: name.to_owned(),
            reason: reason.to_owned(),
        })
    }

    /// Opens an SQLite database file: a pool of read-only connections and, when writes are
    /// allowed, one read-write connection. Opening touches the file system, briefly. Without the
    /// `sqlite` feature this is [`SqlError::EngineNotCompiled`].
    pub fn sqlite(
        name: &str,
        sqlite: impl Into<SqliteConfig>,
        config: DatabaseConfig,
    ) -> Result<Database, SqlError> {
        Self::validate(name, &config)?;
        let mut sqlite = sqlite.into();
        if sqlite.read_connections == 0
            || sqlite.read_connections > SqliteConfig::MAX_READ_CONNECTIONS
        {
            return Err(SqlError::Config {
                database: name.to_owned(),
                reason: format!(
                    "read_connections must be between 1 and {}",
                    SqliteConfig::MAX_READ_CONNECTIONS
                ),
            });
        }
        // An empty read-only database would serve nothing; only a writable one is created.
        sqlite.create_if_missing &= config.allow_write;
        let engine = Engine::sqlite(&sqlite, &config)?;
        Self::new(name, config, engine)
    }

    /// Connects to a PostgreSQL database and checks the role (see
    /// [`PostgresConfig::allow_privileged_role`]). Without the `postgres` feature this is
    /// [`SqlError::EngineNotCompiled`].
    pub async fn postgres(
        name: &str,
        postgres: impl Into<PostgresConfig>,
        config: DatabaseConfig,
    ) -> Result<Database, SqlError> {
        Self::validate(name, &config)?;
        let postgres = postgres.into();
        if postgres.connections == 0 || postgres.connections > 64 {
            return Err(SqlError::Config {
                database: name.to_owned(),
                reason: "connections must be between 1 and 64".into(),
            });
        }
        let engine = Engine::postgres(name, &postgres, &config).await?;
        Self::new(name, config, engine)
    }

    /// Connects to a MySQL or MariaDB database and checks the account (see
    /// [`MysqlConfig::allow_privileged_account`]). Without the `mysql` feature this is
    /// [`SqlError::EngineNotCompiled`].
    pub async fn mysql(
        name: &str,
        mysql: impl Into<MysqlConfig>,
        config: DatabaseConfig,
    ) -> Result<Database, SqlError> {
        Self::validate(name, &config)?;
        let mysql = mysql.into();
        if mysql.connections == 0 || mysql.connections > 64 {
            return Err(SqlError::Config {
                database: name.to_owned(),
                reason: "connections must be between 1 and 64".into(),
            });
        }
        let engine = Engine::mysql(name, &mysql, &config).await?;
        Self::new(name, config, engine)
    }

    /// The name tools and URIs use for this database.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// `"SQLite"`, `"PostgreSQL"`, `"MySQL"` or `"MariaDB"`.
    pub fn engine(&self) -> &'static str {
        self.inner.engine.label()
    }

    /// Whether `execute` may change this database.
    pub fn allows_write(&self) -> bool {
        self.inner.config.allow_write
    }

    /// What the operator said the database holds.
    pub fn description(&self) -> Option<&str> {
        self.inner.config.description.as_deref()
    }

    /// The policy the database was opened with.
    pub fn config(&self) -> &DatabaseConfig {
        &self.inner.config
    }

    /// Its connection pools now: how many connections are in use and how many calls wait.
    pub fn pools(&self) -> Vec<PoolStats> {
        self.inner.engine.pools()
    }

    /// Whether the database answers now: runs `SELECT 1` on a read connection within `timeout`
    /// (for readiness checks). The error says why not, in the words a tool error would use.
    pub async fn ping(&self, timeout: std::time::Duration) -> Result<(), String> {
        let limits = crate::Limits {
            max_rows: 1,
            max_bytes: 1024,
            timeout,
            connection_wait: timeout,
        };
        let cancel = tokio_util::sync::CancellationToken::new();
        self.inner
            .engine
            .query("SELECT 1".to_owned(), Vec::new(), limits, &cancel)
            .await
            .map(drop)
            .map_err(|e| e.message("query", false))
    }

    /// The SQLite file, for an SQLite database.
    pub fn sqlite_path(&self) -> Option<&Path> {
        self.inner.engine.sqlite_path()
    }

    /// The URI of a table's schema resource: `sql://{database}/{schema}/{table}`, each part
    /// percent-encoded.
    pub fn table_uri(&self, schema: &str, table: &str) -> String {
        let vars = BTreeMap::from([
            ("schema".to_owned(), schema.to_owned()),
            ("table".to_owned(), table.to_owned()),
        ]);
        self.inner.template.expand(&vars)
    }

    /// The resource template for this database's tables.
    pub fn uri_template(&self) -> &str {
        self.inner.template.as_str()
    }
}

impl From<PathBuf> for SqliteConfig {
    fn from(path: PathBuf) -> Self {
        SqliteConfig::new(path)
    }
}

impl From<&Path> for SqliteConfig {
    fn from(path: &Path) -> Self {
        SqliteConfig::new(path)
    }
}

impl From<&str> for SqliteConfig {
    fn from(path: &str) -> Self {
        SqliteConfig::new(path)
    }
}

impl From<String> for SqliteConfig {
    fn from(path: String) -> Self {
        SqliteConfig::new(path)
    }
}

impl From<&str> for PostgresConfig {
    fn from(url: &str) -> Self {
        PostgresConfig::new(url)
    }
}

impl From<String> for PostgresConfig {
    fn from(url: String) -> Self {
        PostgresConfig::new(url)
    }
}

impl From<&str> for MysqlConfig {
    fn from(url: &str) -> Self {
        MysqlConfig::new(url)
    }
}

impl From<String> for MysqlConfig {
    fn from(url: String) -> Self {
        MysqlConfig::new(url)
    }
}
