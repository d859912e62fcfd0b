//! The PostgreSQL catalog: the role check at connection time, the table list with definition
//! digests, and table descriptions.

use std::time::Duration;

use tokio_postgres::Client;

use super::pool::{GetError, PgPool};
use crate::engine::Description;
use crate::error::SqlError;
use crate::output::{ColumnDef, ForeignKey, IndexDef};

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
    let row = conn
        .client()
        .query_one(
            "SELECT current_user::text, \
                    EXISTS (SELECT 1 FROM pg_roles s \
                            WHERE s.rolsuper AND pg_has_role(current_user, s.oid, 'MEMBER')), \
                    pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER'), \
                    pg_has_role(current_user, 'pg_write_server_files', 'MEMBER'), \
                    pg_has_role(current_user, 'pg_read_server_files', 'MEMBER')",
            &[],
        )
        .await
        .map_err(fail)?;
    conn.finish();
    let role: String = row.get(0);
    let privileges: Vec<&str> = [
        (row.get::<_, bool>(1), "a superuser"),
        (
            row.get::<_, bool>(2),
            "a member of pg_execute_server_program",
        ),
        (row.get::<_, bool>(3), "a member of pg_write_server_files"),
        (row.get::<_, bool>(4), "a member of pg_read_server_files"),
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

/// Describes a table or view; without a schema, the first match on the search path.
pub(super) async fn describe(
    client: &mut Client,
    schema: Option<&str>,
    table: &str,
) -> Result<Option<Description>, tokio_postgres::Error> {
    let found = client
        .query_opt(
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
            &[&schema, &table],
        )
        .await?;
    let Some(found) = found else {
        return Ok(None);
    };
    let oid: u32 = found.try_get(0)?;
    let schema: String = found.try_get(1)?;
    let kind: String = found.try_get(2)?;
    let definition: Option<String> = found.try_get(3)?;

    let columns = client
        .query(
            "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, \
                    pg_get_expr(d.adbin, d.adrelid), \
                    EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary \
                            AND a.attnum = ANY (i.indkey)) \
             FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            &[&oid],
        )
        .await?
        .iter()
        .map(|r| {
            Ok(ColumnDef {
                name: r.try_get(0)?,
                ty: r.try_get(1)?,
                nullable: r.try_get(2)?,
                default: r.try_get(3)?,
                primary_key: r.try_get(4)?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;

    let mut primary_key = Vec::new();
    let mut foreign_keys = Vec::new();
    for r in client
        .query(
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
            &[&oid],
        )
        .await?
    {
        let kind: String = r.try_get(0)?;
        let cols: Vec<String> = r.try_get(1)?;
        if kind == "p" {
            primary_key = cols;
        } else {
            foreign_keys.push(ForeignKey {
                columns: cols,
                references_schema: r.try_get::<_, Option<String>>(2)?.unwrap_or_default(),
                references_table: r.try_get::<_, Option<String>>(3)?.unwrap_or_default(),
                references_columns: r.try_get(4)?,
            });
        }
    }

    let indexes = client
        .query(
            "SELECT ic.relname::text, i.indisunique, \
                    ARRAY(SELECT pg_get_indexdef(i.indexrelid, k, true) \
                          FROM generate_series(1, i.indnkeyatts) k ORDER BY k) \
             FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid \
             WHERE i.indrelid = $1 ORDER BY ic.relname",
            &[&oid],
        )
        .await?
        .iter()
        .map(|r| {
            Ok(IndexDef {
                name: r.try_get(0)?,
                unique: r.try_get(1)?,
                columns: r.try_get(2)?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;

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
