//! The SQLite engine: read-only connections guarded by `query_only` and an authorizer, one write
//! connection for approved changes, all run on blocking threads.

mod exec;
mod policy;
mod pool;

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use crate::config::{DatabaseConfig, Limits, SqliteConfig};
use crate::database::PoolStats;
use crate::engine::{CatalogEntry, Description};
use crate::error::{ExecError, SqlError};
use crate::output::Rows;
use crate::value::Param;
use policy::Mode;
use pool::{Pool, Slot};

pub(crate) struct SqliteDb {
    path: PathBuf,
    readers: Pool,
    writer: Option<Pool>,
}

/// The 16 bytes every SQLite database file begins with (the file format's header string).
const HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Refuses `path` when it is not an SQLite database: a directory, or a file that does not begin
/// with SQLite's header. A missing file, an empty file (an empty database) and anything that
/// cannot be read here are left to SQLite, whose own error is then the one to report.
fn check_file(path: &std::path::Path) -> Result<(), SqlError> {
    use std::io::Read as _;
    let refuse = |reason| {
        Err(SqlError::NotSqlite {
            path: path.to_path_buf(),
            reason,
        })
    };
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if meta.is_dir() {
        return refuse("is a directory, not an SQLite database file");
    }
    if !meta.is_file() || meta.len() == 0 {
        return Ok(());
    }
    let mut header = [0u8; 16];
    let read = std::fs::File::open(path).and_then(|mut file| file.read_exact(&mut header));
    match read {
        Ok(()) if &header == HEADER => Ok(()),
        Ok(()) => refuse("is not an SQLite database: it does not begin with SQLite's header"),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            refuse("is not an SQLite database: it is shorter than SQLite's header")
        }
        Err(_) => Ok(()),
    }
}

impl SqliteDb {
    /// Opens the connections. The write connection is opened first so that it can create the file.
    pub(crate) fn open(config: &SqliteConfig, db: &DatabaseConfig) -> Result<SqliteDb, SqlError> {
        let path = config.path.clone();
        let fail = |source| SqlError::Sqlite {
            path: path.clone(),
            source,
        };
        check_file(&path)?;
        let busy = db.limits.timeout;
        let writer = if db.allow_write {
            let slot =
                Slot::open(&path, Mode::Write, config.create_if_missing, busy, 0).map_err(fail)?;
            Some(Pool::new(vec![slot]))
        } else {
            None
        };
        // Reads never build a value they could not return (`Limits::value_cap`). The per-call
        // `max_rows` may only lower the row limit, so the byte limit is fixed per database.
        let cap = db.limits.value_cap();
        let readers = (0..config.read_connections.max(1))
            .map(|_| Slot::open(&path, Mode::Read, false, busy, cap))
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        Ok(SqliteDb {
            path,
            readers: Pool::new(readers),
            writer,
        })
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The read pool's state, and the write connection's when writes are allowed.
    pub(crate) fn pools(&self) -> Vec<PoolStats> {
        let mut pools = vec![self.readers.stats("read")];
        pools.extend(self.writer.as_ref().map(|w| w.stats("write")));
        pools
    }

    pub(crate) async fn query(
        &self,
        sql: String,
        params: Vec<Param>,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Rows, ExecError> {
        let timeout = limits.timeout;
        self.readers
            .run(
                (timeout, limits.connection_wait),
                cancel,
                move |slot, control| {
                    exec::read(
                        slot,
                        control,
                        &sql,
                        &params,
                        (limits.max_rows, limits.max_bytes),
                        timeout,
                    )
                },
            )
            .await
    }

    pub(crate) async fn execute(
        &self,
        sql: String,
        params: Vec<Param>,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Rows, ExecError> {
        let Some(writer) = &self.writer else {
            return Err(ExecError::Refused(
                "writes are not enabled on this database".into(),
            ));
        };
        let timeout = limits.timeout;
        writer
            .run(
                (timeout, limits.connection_wait),
                cancel,
                move |slot, control| {
                    exec::write(
                        slot,
                        control,
                        &sql,
                        &params,
                        (limits.max_rows, limits.max_bytes),
                        timeout,
                    )
                },
            )
            .await
    }

    pub(crate) async fn tables(
        &self,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Vec<CatalogEntry>, ExecError> {
        let timeout = limits.timeout;
        self.readers
            .run(
                (timeout, limits.connection_wait),
                cancel,
                move |slot, control| {
                    let entries = exec::tables(slot)
                        .map_err(|e| control.classify(e, &slot.policy, timeout))?;
                    Ok(entries
                        .into_iter()
                        .map(|e| CatalogEntry {
                            schema: "main".into(),
                            name: e.name,
                            kind: e.kind,
                            fingerprint: e.fingerprint,
                        })
                        .collect())
                },
            )
            .await
    }

    pub(crate) async fn describe(
        &self,
        schema: Option<String>,
        table: String,
        limits: Limits,
        cancel: &CancellationToken,
    ) -> Result<Option<Description>, ExecError> {
        // One schema only: attaching is disabled, and temporary objects cannot be created.
        if schema.as_deref().is_some_and(|s| s != "main") {
            return Ok(None);
        }
        let timeout = limits.timeout;
        self.readers
            .run(
                (timeout, limits.connection_wait),
                cancel,
                move |slot, control| {
                    let found = exec::describe(slot, &table)
                        .map_err(|e| control.classify(e, &slot.policy, timeout))?;
                    Ok(found.map(|d| Description {
                        schema: "main".into(),
                        name: table,
                        kind: d.kind,
                        columns: d.columns,
                        primary_key: d.primary_key,
                        foreign_keys: d.foreign_keys,
                        indexes: d.indexes,
                        definition: d.definition,
                    }))
                },
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder of this test's own.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcp-sql-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn reason(path: &std::path::Path) -> Option<&'static str> {
        match check_file(path) {
            Ok(()) => None,
            Err(SqlError::NotSqlite { reason, path: p }) => {
                assert_eq!(p, path);
                Some(reason)
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }

    #[test]
    fn what_is_not_an_sqlite_database_is_named_before_sqlite_opens_it() {
        let dir = scratch("check-file");
        assert_eq!(
            reason(&dir),
            Some("is a directory, not an SQLite database file")
        );
        let text = dir.join("notes.txt");
        std::fs::write(&text, "not a database, but long enough for a header\n").unwrap();
        assert!(
            reason(&text)
                .unwrap()
                .contains("does not begin with SQLite's header")
        );
        let short = dir.join("short.db");
        std::fs::write(&short, "SQLite").unwrap();
        assert!(
            reason(&short)
                .unwrap()
                .contains("shorter than SQLite's header")
        );
        // Left to SQLite: an empty file (an empty database), a missing one, a real one.
        let empty = dir.join("empty.db");
        std::fs::write(&empty, "").unwrap();
        assert_eq!(reason(&empty), None);
        assert_eq!(reason(&dir.join("missing.db")), None);
        let real = dir.join("real.db");
        rusqlite::Connection::open(&real)
            .unwrap()
            .execute_batch("CREATE TABLE t (a)")
            .unwrap();
        assert_eq!(reason(&real), None);
        // And through the public constructor, with the path in the message.
        let Err(e) = crate::Database::sqlite("main", SqliteConfig::new(&text), Default::default())
        else {
            panic!("a text file was opened as a database");
        };
        assert_eq!(
            e.to_string(),
            format!(
                "{} is not an SQLite database: it does not begin with SQLite's header",
                text.display()
            )
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
