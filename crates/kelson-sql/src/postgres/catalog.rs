//! The PostgreSQL catalog: the role check at connection time, the table list with definition
//! digests, and table descriptions.

use std::time::Duration;

use serde_json::Value;

use super::Failure;
use super::calls::catalog_rows;
use super::pool::{GetError, PgPool};
use super::wire::WireError;
use crate::engine::{CatalogEntry, Description};
use crate::error::{ExecError, SqlError};
use crate::output::{ColumnDef, ForeignKey, IndexDef};

/// A catalog value as text; `None` for NULL or another type.
fn text(row: &[Value], i: usize) -> Option<String> {
    row.get(i)?.as_str().map(str::to_owned)
}

fn boolean(row: &[Value], i: usize) -> bool {
    row.get(i).and_then(Value::as_bool).unwrap_or(false)
}

fn texts(row: &[Value], i: usize) -> Vec<String> {
    match row.get(i) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// A catalog row of the wrong shape: the adapter's own query did not answer as written.
fn shape() -> Failure {
    Failure::sql(ExecError::Sql(
        "the catalog answered in a shape this adapter does not expect".to_owned(),
    ))
}

/// Refuses a role that could escape a read-only transaction, unless told to accept it.
pub(super) async fn check_role(pool: &PgPool, database: &str, allow: bool) -> Result<(), SqlError> {
    let fail = |source| pool.setup_error(database, source);
    // Checked while the pool is new, so a connection is free at once.
    let mut conn = match pool.get(Duration::from_secs(60)).await {
        Ok(conn) => conn,
        Err(GetError::Connect(e)) => return Err(fail(e)),
        Err(GetError::Busy { .. }) => {
            return Err(SqlError::Catalog {
                database: database.to_owned(),
                message: "every connection was busy while the role was checked".into(),
            });
        }
    };
    let rows = catalog_rows(
        conn.wire(),
        "SELECT current_user::text, \
                EXISTS (SELECT 1 FROM pg_roles s \
                        WHERE s.rolsuper AND pg_has_role(current_user, s.oid, 'MEMBER')), \
                pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER'), \
                pg_has_role(current_user, 'pg_write_server_files', 'MEMBER'), \
                pg_has_role(current_user, 'pg_read_server_files', 'MEMBER')",
        &[],
        Duration::from_secs(60),
    )
    .await
    .map_err(|e| pool.setup_error(database, e))?;
    conn.finish().await;
    let Some(row) = rows.first() else {
        return Err(SqlError::Catalog {
            database: database.to_owned(),
            message: "the role check returned no row".into(),
        });
    };
    let role = text(row, 0).unwrap_or_default();
    let privileges: Vec<&str> = [
        (boolean(row, 1), "a superuser"),
        (boolean(row, 2), "a member of pg_execute_server_program"),
        (boolean(row, 3), "a member of pg_write_server_files"),
        (boolean(row, 4), "a member of pg_read_server_files"),
    ]
    .into_iter()
    .filter_map(|(has, what)| has.then_some(what))
    .collect();
    if privileges.is_empty() {
        return Ok(());
    }
    let privileges = privileges.join(" and ");
    if allow {
        tracing::warn!(database, %role, %privileges, "serving PostgreSQL through a privileged role, as configured");
        Ok(())
    } else {
        Err(SqlError::PrivilegedRole {
            database: database.to_owned(),
            role,
            privileges,
        })
    }
}

const KIND: &str = "CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' \
                    WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' \
                    WHEN 'f' THEN 'foreign table' END";

/// Every table and view the role may read, outside the system schemas, with a digest of its
/// definition (columns, constraints, indexes, view query).
pub(super) const TABLES: &str = concat!(
    "SELECT n.nspname::text, c.relname::text, ",
    "CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' ",
    "WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' END, ",
    "md5(concat_ws('|', ",
    "(SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text ",
    "   || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), ''), ',' ORDER BY a.attnum) ",
    " FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum ",
    " WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), ",
    "(SELECT string_agg(pg_get_constraintdef(o.oid), ',' ORDER BY o.conname) FROM pg_constraint o WHERE o.conrelid = c.oid), ",
    "(SELECT string_agg(pg_get_indexdef(i.indexrelid), ',' ORDER BY i.indexrelid) FROM pg_index i WHERE i.indrelid = c.oid), ",
    "CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END)) ",
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace ",
    "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') ",
    "AND n.nspname NOT IN ('pg_catalog', 'information_schema') ",
    "AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%' ",
    "AND has_schema_privilege(n.oid, 'USAGE') ",
    "AND (has_table_privilege(c.oid, 'SELECT') OR has_any_column_privilege(c.oid, 'SELECT')) ",
    "ORDER BY 1, 2"
);

/// Every table and view the role may read.
pub(super) async fn tables(
    wire: &mut super::wire::Wire,
    limit: Duration,
) -> Result<Vec<CatalogEntry>, Failure> {
    let rows = catalog_rows(wire, TABLES, &[], limit)
        .await
        .map_err(|e| Failure::wire(&e, limit))?;
    rows.iter()
        .map(|r| {
            Ok(CatalogEntry {
                schema: text(r, 0).ok_or_else(shape)?,
                name: text(r, 1).ok_or_else(shape)?,
                kind: text(r, 2).ok_or_else(shape)?,
                fingerprint: text(r, 3).ok_or_else(shape)?,
            })
        })
        .collect()
}

/// Describes a table or view; without a schema, the first match on the search path.
pub(super) async fn describe(
    wire: &mut super::wire::Wire,
    schema: Option<&str>,
    table: &str,
    limit: Duration,
) -> Result<Option<Description>, Failure> {
    let fail = |e: WireError| Failure::wire(&e, limit);
    let found = catalog_rows(
        wire,
        &format!(
            "SELECT c.oid, n.nspname::text, {KIND}, \
                        CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid, true) END \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relname = $2::text AND c.relkind IN ('r', 'p', 'v', 'm', 'f') \
                   AND has_schema_privilege(n.oid, 'USAGE') \
                   AND CASE WHEN $1::text IS NULL THEN n.nspname = ANY (current_schemas(false)) \
                            ELSE n.nspname = $1::text END \
                 ORDER BY array_position(current_schemas(false), n.nspname) NULLS LAST \
                 LIMIT 1"
        ),
        &[schema.map(str::to_owned), Some(table.to_owned())],
        limit,
    )
    .await
    .map_err(fail)?;
    let Some(found) = found.first() else {
        return Ok(None);
    };
    let oid = found
        .first()
        .and_then(Value::as_u64)
        .ok_or_else(shape)?
        .to_string();
    let schema = text(found, 1).ok_or_else(shape)?;
    let kind = text(found, 2).ok_or_else(shape)?;
    let definition = text(found, 3);
    let by_oid = [Some(oid)];

    let columns = catalog_rows(
        wire,
        "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, \
                    pg_get_expr(d.adbin, d.adrelid), \
                    EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary \
                            AND a.attnum = ANY (i.indkey)) \
             FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        &by_oid,
        limit,
    )
    .await
    .map_err(fail)?
    .iter()
    .map(|r| {
        Ok(ColumnDef {
            name: text(r, 0).ok_or_else(shape)?,
            ty: text(r, 1).ok_or_else(shape)?,
            nullable: boolean(r, 2),
            default: text(r, 3),
            primary_key: boolean(r, 4),
        })
    })
    .collect::<Result<Vec<_>, Failure>>()?;

    let mut primary_key = Vec::new();
    let mut foreign_keys = Vec::new();
    for r in catalog_rows(
        wire,
        "SELECT o.contype::text, \
                    ARRAY(SELECT a.attname::text FROM unnest(o.conkey) WITH ORDINALITY k(n, i) \
                          JOIN pg_attribute a ON a.attrelid = o.conrelid AND a.attnum = k.n ORDER BY k.i), \
                    fn.nspname::text, fc.relname::text, \
                    ARRAY(SELECT a.attname::text FROM unnest(o.confkey) WITH ORDINALITY k(n, i) \
                          JOIN pg_attribute a ON a.attrelid = o.confrelid AND a.attnum = k.n ORDER BY k.i) \
             FROM pg_constraint o \
             LEFT JOIN pg_class fc ON fc.oid = o.confrelid \
             LEFT JOIN pg_namespace fn ON fn.oid = fc.relnamespace \
             WHERE o.conrelid = $1 AND o.contype IN ('p', 'f') ORDER BY o.contype DESC, o.conname",
        &by_oid,
        limit,
    )
    .await
    .map_err(fail)?
    {
        let cols = texts(&r, 1);
        if text(&r, 0).as_deref() == Some("p") {
            primary_key = cols;
        } else {
            foreign_keys.push(ForeignKey {
                columns: cols,
                references_schema: text(&r, 2).unwrap_or_default(),
                references_table: text(&r, 3).unwrap_or_default(),
                references_columns: texts(&r, 4),
            });
        }
    }

    let indexes = catalog_rows(
        wire,
        "SELECT ic.relname::text, i.indisunique, \
                    ARRAY(SELECT pg_get_indexdef(i.indexrelid, k, true) \
                          FROM generate_series(1, i.indnkeyatts) k ORDER BY k) \
             FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid \
             WHERE i.indrelid = $1 ORDER BY ic.relname",
        &by_oid,
        limit,
    )
    .await
    .map_err(fail)?
    .iter()
    .map(|r| {
        Ok(IndexDef {
            name: text(r, 0).ok_or_else(shape)?,
            unique: boolean(r, 1),
            columns: texts(r, 2),
        })
    })
    .collect::<Result<Vec<_>, Failure>>()?;

    Ok(Some(Description {
        schema,
        name: table.to_owned(),
        kind,
        columns,
        primary_key,
        foreign_keys,
        indexes,
        definition,
    }))
}
