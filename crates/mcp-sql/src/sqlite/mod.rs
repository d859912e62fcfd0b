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

impl SqliteDb {
    /// Opens the connections. The write connection is opened first so that it can create the file.
    pub(crate) fn open(config: &SqliteConfig, db: &DatabaseConfig) -> Result<SqliteDb, SqlError> {
        let path = config.path.clone();
        let fail = |source| SqlError::Sqlite {
            path: path.clone(),
            source,
        };
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
