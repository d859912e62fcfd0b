//! Running one statement, and reading the catalog, on a pooled SQLite connection.

use std::time::Duration;

use rusqlite::fallible_iterator::FallibleIterator as _;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Batch, Statement};
use serde_json::Value;

use super::policy::Mode;
use super::pool::{Control, Slot};
use crate::error::ExecError;
use crate::output::{Column, ColumnDef, ForeignKey, IndexDef, Rows};
use crate::value::{Collector, Param};

/// Prepares exactly one statement: the authorizer judges it while it is prepared, and whatever
/// follows it must be whitespace or comments. The tail is prepared with every action refused, so
/// nothing in a second statement is ever authorized, let alone run.
fn prepare_one<'c>(
    slot: &'c Slot,
    sql: &str,
    control: &Control,
    limit: Duration,
) -> Result<Statement<'c>, ExecError> {
    slot.policy.reset();
    let mut batch = Batch::new(&slot.conn, sql);
    let first = batch
        .next()
        .map_err(|e| control.classify(e, &slot.policy, limit))?;
    let Some(stmt) = first else {
        return Err(ExecError::Empty);
    };
    slot.policy.begin_tail();
    let rest = batch.next().map(|s| s.is_some());
    slot.policy.end_tail();
    slot.policy.reset();
    match rest {
        Ok(false) => Ok(stmt),
        Ok(true) | Err(_) => Err(ExecError::MultipleStatements),
    }
}

fn to_sql(p: &Param) -> SqlValue {
    match p {
        Param::Null => SqlValue::Null,
        Param::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Param::Int(i) => SqlValue::Integer(*i),
        Param::Float(f) => SqlValue::Real(*f),
        Param::Text(s) => SqlValue::Text(s.clone()),
    }
}

fn to_json(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => crate::value::float(f),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => crate::value::bytes(b),
    }
}

/// Binds `params`, steps the statement and collects its rows under the limits. A write keeps
/// stepping past the limits (its changes must all be made); a read stops at the first row over.
fn run_statement(
    slot: &Slot,
    stmt: &mut Statement<'_>,
    params: &[Param],
    (max_rows, max_bytes): (usize, usize),
    to_completion: bool,
    control: &Control,
    limit: Duration,
) -> Result<Rows, ExecError> {
    let expected = stmt.parameter_count();
    if expected != params.len() {
        return Err(ExecError::Sql(format!(
            "the statement has {expected} parameter placeholder(s) but {} value(s) were given in `params`",
            params.len()
        )));
    }
    for (i, p) in params.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, to_sql(p))
            .map_err(|e| control.classify(e, &slot.policy, limit))?;
    }
    let columns: Vec<Column> = stmt
        .columns()
        .map(|c| Column {
            name: c.name().to_owned(),
            ty: c.decl_type().map(str::to_owned),
        })
        .collect();
    let width = columns.len();
    let mut collector = Collector::new(max_rows, max_bytes);
    let mut rows = stmt.raw_query();
    loop {
        let row = match rows.next() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(e) => return Err(control.classify(e, &slot.policy, limit)),
        };
        if collector.wants_more() {
            let values = (0..width)
                .map(|i| row.get_ref(i).map(to_json))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| control.classify(e, &slot.policy, limit))?;
            if !collector.push(values) && !to_completion {
                break;
            }
        } else if !to_completion {
            break;
        }
    }
    Ok(Rows {
        columns,
        rows: collector.rows,
        truncated: collector.truncated,
        rows_affected: None,
    })
}

/// Runs a read: one statement, authorized as a read, that SQLite confirms makes no change to the
/// database file (`sqlite3_stmt_readonly`, which also catches `VACUUM INTO`).
pub(crate) fn read(
    slot: &mut Slot,
    control: &Control,
    sql: &str,
    params: &[Param],
    caps: (usize, usize),
    limit: Duration,
) -> Result<Rows, ExecError> {
    let mut stmt = prepare_one(slot, sql, control, limit)?;
    if !stmt.readonly() {
        return Err(ExecError::ReadOnly(
            "`query` runs read-only statements, and this one would change the database file".into(),
        ));
    }
    run_statement(slot, &mut stmt, params, caps, false, control, limit)
}

/// Runs an approved write in a transaction of its own: committed when the statement succeeds,
/// rolled back otherwise (including on timeout and cancellation).
pub(crate) fn write(
    slot: &mut Slot,
    control: &Control,
    sql: &str,
    params: &[Param],
    caps: (usize, usize),
    limit: Duration,
) -> Result<Rows, ExecError> {
    debug_assert_eq!(slot.policy.mode(), Mode::Write);
    slot.policy
        .internal(|| slot.conn.execute_batch("BEGIN IMMEDIATE"))
        .map_err(|e| control.classify(e, &slot.policy, limit))?;
    let before = slot.conn.total_changes();
    let outcome = prepare_one(slot, sql, control, limit)
        .and_then(|mut stmt| run_statement(slot, &mut stmt, params, caps, true, control, limit));
    let outcome = outcome.and_then(|mut rows| {
        rows.rows_affected = Some(slot.conn.total_changes().saturating_sub(before));
        slot.policy
            .internal(|| slot.conn.execute_batch("COMMIT"))
            .map_err(|e| control.classify(e, &slot.policy, limit))?;
        Ok(rows)
    });
    if outcome.is_err() && !slot.conn.is_autocommit() {
        let _ = slot.policy.internal(|| slot.conn.execute_batch("ROLLBACK"));
    }
    outcome
}

/// One table or view from `sqlite_schema`, with a fingerprint of everything defining it.
pub(crate) struct SchemaRow {
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) fingerprint: String,
}

/// Every table and view of the database, by name.
pub(crate) fn tables(slot: &Slot) -> rusqlite::Result<Vec<SchemaRow>> {
    let mut stmt = slot.conn.prepare(
        "SELECT t.name, t.type, \
                coalesce(t.sql, '') || coalesce((SELECT group_concat(coalesce(o.sql, o.name), ';') \
                   FROM sqlite_schema o WHERE o.tbl_name = t.name AND o.name <> t.name), '') \
         FROM sqlite_schema t \
         WHERE t.type IN ('table', 'view') AND t.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
         ORDER BY t.name",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(SchemaRow {
            name: r.get(0)?,
            kind: r.get(1)?,
            fingerprint: r.get(2)?,
        })
    })?;
    rows.collect()
}

/// What `describe_table` reports, before the adapter adds names and URIs.
pub(crate) struct Found {
    pub(crate) kind: String,
    pub(crate) columns: Vec<ColumnDef>,
    pub(crate) primary_key: Vec<String>,
    pub(crate) foreign_keys: Vec<ForeignKey>,
    pub(crate) indexes: Vec<IndexDef>,
    pub(crate) definition: Option<String>,
}

/// Describes a table or view, or `None` when there is none by that name.
pub(crate) fn describe(slot: &Slot, table: &str) -> rusqlite::Result<Option<Found>> {
    let found = slot
        .conn
        .prepare(
            "SELECT type, sql FROM sqlite_schema \
             WHERE type IN ('table', 'view') AND name = ?1 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
        )?
        .query_map([table], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })?
        .next()
        .transpose()?;
    let Some((kind, definition)) = found else {
        return Ok(None);
    };

    let mut pk: Vec<(i64, String)> = Vec::new();
    let columns = slot
        .conn
        .prepare(
            "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1) ORDER BY cid",
        )?
        .query_map([table], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, bool>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .map(|(name, ty, notnull, default, pk_pos)| {
            if pk_pos > 0 {
                pk.push((pk_pos, name.clone()));
            }
            ColumnDef {
                name,
                ty,
                nullable: !notnull && pk_pos == 0,
                default,
                primary_key: pk_pos > 0,
            }
        })
        .collect();
    pk.sort();

    let mut foreign_keys: Vec<ForeignKey> = Vec::new();
    let mut last_id = None;
    let fk_rows = slot
        .conn
        .prepare(
            "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
        )?
        .query_map([table], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for (id, parent, from, to) in fk_rows {
        if last_id != Some(id) {
            foreign_keys.push(ForeignKey {
                columns: Vec::new(),
                references_schema: "main".into(),
                references_table: parent,
                references_columns: Vec::new(),
            });
            last_id = Some(id);
        }
        let fk = foreign_keys.last_mut().expect("pushed above");
        fk.columns.push(from);
        // A foreign key without target columns refers to the parent's primary key.
        if let Some(to) = to {
            fk.references_columns.push(to);
        }
    }

    for fk in &mut foreign_keys {
        if fk.references_columns.is_empty() {
            fk.references_columns = slot
                .conn
                .prepare("SELECT name FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk")?
                .query_map([&fk.references_table], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
        }
    }

    let index_rows = slot
        .conn
        .prepare("SELECT name, \"unique\" FROM pragma_index_list(?1) ORDER BY name")?
        .query_map([table], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut indexes = Vec::with_capacity(index_rows.len());
    for (name, unique) in index_rows {
        let columns = slot
            .conn
            .prepare(
                "SELECT coalesce(name, '<expression>') FROM pragma_index_info(?1) ORDER BY seqno",
            )?
            .query_map([&name], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        indexes.push(IndexDef {
            name,
            columns,
            unique,
        });
    }

    Ok(Some(Found {
        kind,
        columns,
        primary_key: pk.into_iter().map(|(_, n)| n).collect(),
        foreign_keys,
        indexes,
        definition,
    }))
}
