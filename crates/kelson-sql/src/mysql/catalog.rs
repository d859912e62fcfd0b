//! The MySQL catalog: the account check at connection time, the table list with definition
//! digests, and table descriptions, all from `information_schema` and `SHOW GRANTS`.

use std::collections::BTreeSet;

use mysql_async::Conn;
use mysql_async::prelude::Queryable as _;

use crate::engine::{CatalogEntry, Description};
use crate::output::{ColumnDef, ForeignKey, IndexDef};

/// The schemas of the server itself, never listed.
const SYSTEM_SCHEMAS: &str = "'mysql', 'information_schema', 'performance_schema', 'sys'";

/// Global privileges that reach past the database: server files (`FILE`: `LOAD_FILE`, `INTO
/// OUTFILE`), server settings and other sessions (`SUPER` and the administrative privileges
/// MariaDB and MySQL split it into), other accounts, and statements run with another account's
/// rights.
const GLOBAL_ESCAPES: &[&str] = &[
    "SUPER",
    "FILE",
    "CREATE USER",
    "SET USER",
    "SHUTDOWN",
    "RELOAD",
    "READ_ONLY ADMIN",
    "BINLOG ADMIN",
    "BINLOG REPLAY",
    "CONNECTION ADMIN",
    "FEDERATED ADMIN",
    "REPLICATION MASTER ADMIN",
    "REPLICATION SLAVE ADMIN",
    "SYSTEM_USER",
    "SET_USER_ID",
    "SET_ANY_DEFINER",
    "ALLOW_NONEXISTENT_DEFINER",
];

/// Privileges that escape wherever they are held: every privilege, routines that run with
/// their definer's rights, and acting as another account.
const ANY_LEVEL_ESCAPES: &[&str] = &[
    "ALL",
    "ALL PRIVILEGES",
    "CREATE ROUTINE",
    "ALTER ROUTINE",
    "PROXY",
];

/// One line of `SHOW GRANTS`, read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Grant {
    /// `GRANT privileges ON object TO account [WITH GRANT OPTION]`.
    Privileges {
        privileges: Vec<String>,
        object: String,
        grant_option: bool,
    },
    /// `GRANT role, ... TO account`: roles, as SHOW GRANTS FOR takes them.
    Roles(Vec<String>),
}

/// Reads a `SHOW GRANTS` line; `None` for anything else.
pub(super) fn parse_grant(line: &str) -> Option<Grant> {
    let rest = line.strip_prefix("GRANT ")?;
    let to = rest.find(" TO ")?;
    let (head, tail) = (&rest[..to], &rest[to + 4..]);
    let grant_option = tail.contains("WITH GRANT OPTION") || tail.contains("WITH ADMIN OPTION");
    match head.find(" ON ") {
        Some(on) => {
            let privileges = split_top(&head[..on])
                .into_iter()
                .map(|p| {
                    // Column privileges: `SELECT (a, b)`; the privilege is what counts here.
                    let name = p.split('(').next().unwrap_or("").trim();
                    name.to_ascii_uppercase()
                })
                .collect();
            Some(Grant::Privileges {
                privileges,
                object: head[on + 4..].trim().to_owned(),
                grant_option,
            })
        }
        None => Some(Grant::Roles(
            split_top(head)
                .into_iter()
                .map(|r| r.trim().to_owned())
                .collect(),
        )),
    }
}

/// Splits on commas outside parentheses and quotes.
fn split_top(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None, 0);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '`' | '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, ',') if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts.retain(|p| !p.is_empty());
    parts
}

/// Whether an object of a grant is the `mysql` system schema (`` `mysql`.* ``, `` `mysql`.`user` ``).
fn in_mysql_schema(object: &str) -> bool {
    let object = object
        .strip_prefix("TABLE ")
        .or_else(|| object.strip_prefix("PROCEDURE "))
        .or_else(|| object.strip_prefix("FUNCTION "))
        .unwrap_or(object);
    object.starts_with("`mysql`.") || object.starts_with("mysql.")
}

/// What in one grant escapes a read-only transaction, each named.
pub(super) fn escapes(grant: &Grant, via: Option<&str>) -> Vec<String> {
    let Grant::Privileges {
        privileges,
        object,
        grant_option,
    } = grant
    else {
        return Vec::new();
    };
    let global = object == "*.*";
    let at = |what: &str| {
        let mut text = if global || what == "PROXY" {
            what.to_owned()
        } else {
            format!("{what} on {object}")
        };
        if let Some(role) = via {
            text.push_str(&format!(" (through role {role})"));
        }
        text
    };
    let mut found = Vec::new();
    for p in privileges {
        let p = p.as_str();
        let escapes = ANY_LEVEL_ESCAPES.contains(&p)
            || (global && (GLOBAL_ESCAPES.contains(&p) || p.ends_with("_ADMIN")))
            || (in_mysql_schema(object) && p != "SELECT" && p != "USAGE");
        if escapes {
            found.push(at(p));
        }
    }
    if *grant_option {
        found.push(at("GRANT OPTION"));
    }
    found
}

/// What the account connected as holds that escapes a read-only transaction, through its own
/// grants, its roles (followed to any depth), and the definer-rights routines it may run.
/// Returns the account (`user@host`) and those privileges.
pub(super) async fn check_account(
    conn: &mut Conn,
) -> Result<(String, Vec<String>), mysql_async::Error> {
    let account: Option<String> = conn.query_first("SELECT CURRENT_USER()").await?;
    let account = account.unwrap_or_default();
    let mut found = Vec::new();
    let mut lines: Vec<(String, Option<String>)> = conn
        .query::<String, _>("SHOW GRANTS")
        .await?
        .into_iter()
        .map(|l| (l, None))
        .collect();
    let mut seen = BTreeSet::new();
    while let Some((line, via)) = lines.pop() {
        let Some(grant) = parse_grant(&line) else {
            continue;
        };
        if let Grant::Roles(roles) = &grant {
            for role in roles {
                // A bounded walk: role graphs have no cycles, but a server's answer is not
                // trusted to be small.
                if seen.len() < 256 && seen.insert(role.clone()) {
                    let grants = conn
                        .query::<String, _>(format!("SHOW GRANTS FOR {role}"))
                        .await?;
                    lines.extend(grants.into_iter().map(|l| (l, Some(role.clone()))));
                }
            }
        }
        found.extend(escapes(&grant, via.as_deref()));
    }
    let routines: Vec<(String, String, String)> = conn
        .query(
            "SELECT ROUTINE_TYPE, CONCAT('`', ROUTINE_SCHEMA, '`.`', ROUTINE_NAME, '`'), DEFINER \
             FROM information_schema.ROUTINES \
             WHERE SECURITY_TYPE = 'DEFINER' AND DEFINER <> CURRENT_USER() \
             ORDER BY ROUTINE_SCHEMA, ROUTINE_NAME LIMIT 20",
        )
        .await?;
    for (kind, name, definer) in routines {
        found.push(format!(
            "EXECUTE on {} {name}, which runs with the rights of {definer} (SQL SECURITY DEFINER)",
            kind.to_ascii_lowercase()
        ));
    }
    found.sort();
    found.dedup();
    Ok((account, found))
}

/// Every table and view the account may see, outside the system schemas, with a digest of its
/// definition (columns, indexes, foreign keys, view query).
pub(super) const TABLES: &str = concat!(
    "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, ",
    "CASE t.TABLE_TYPE WHEN 'VIEW' THEN 'view' WHEN 'SEQUENCE' THEN 'sequence' ",
    "WHEN 'SYSTEM VIEW' THEN 'view' ELSE 'table' END, ",
    "MD5(CONCAT_WS('|', ",
    "(SELECT GROUP_CONCAT(CONCAT_WS(' ', c.COLUMN_NAME, c.COLUMN_TYPE, c.IS_NULLABLE, ",
    "   IFNULL(c.COLUMN_DEFAULT, ''), c.COLUMN_KEY, c.EXTRA) ORDER BY c.ORDINAL_POSITION SEPARATOR ',') ",
    " FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME), ",
    "(SELECT GROUP_CONCAT(CONCAT_WS(' ', s.INDEX_NAME, s.SEQ_IN_INDEX, s.COLUMN_NAME, s.NON_UNIQUE) ",
    "   ORDER BY s.INDEX_NAME, s.SEQ_IN_INDEX SEPARATOR ',') ",
    " FROM information_schema.STATISTICS s WHERE s.TABLE_SCHEMA = t.TABLE_SCHEMA AND s.TABLE_NAME = t.TABLE_NAME), ",
    "(SELECT GROUP_CONCAT(CONCAT_WS(' ', k.CONSTRAINT_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_SCHEMA, ",
    "   k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME) ORDER BY k.CONSTRAINT_NAME, k.ORDINAL_POSITION SEPARATOR ',') ",
    " FROM information_schema.KEY_COLUMN_USAGE k WHERE k.TABLE_SCHEMA = t.TABLE_SCHEMA AND k.TABLE_NAME = t.TABLE_NAME ",
    " AND k.REFERENCED_TABLE_NAME IS NOT NULL), ",
    "(SELECT v.VIEW_DEFINITION FROM information_schema.VIEWS v ",
    " WHERE v.TABLE_SCHEMA = t.TABLE_SCHEMA AND v.TABLE_NAME = t.TABLE_NAME))) ",
    "FROM information_schema.TABLES t ",
    "WHERE t.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') ",
    "AND t.TABLE_TYPE <> 'TEMPORARY' ",
    "ORDER BY 1, 2"
);

/// Lists the catalog.
pub(super) async fn tables(conn: &mut Conn) -> Result<Vec<CatalogEntry>, mysql_async::Error> {
    // The digests concatenate whole definitions: MySQL's default limit (1024 bytes) would cut
    // them, and a change past the cut would go unnoticed.
    conn.query_drop("SET SESSION group_concat_max_len = 1048576")
        .await?;
    let rows: Vec<(String, String, String, String)> = conn.query(TABLES).await?;
    Ok(rows
        .into_iter()
        .map(|(schema, name, kind, fingerprint)| CatalogEntry {
            schema,
            name,
            kind,
            fingerprint,
        })
        .collect())
}

/// Describes a table or view; without a schema, in the URL's database.
pub(super) async fn describe(
    conn: &mut Conn,
    schema: Option<&str>,
    table: &str,
) -> Result<Option<Description>, mysql_async::Error> {
    let schema = match schema {
        Some(s) => s.to_owned(),
        None => match conn
            .query_first::<Option<String>, _>("SELECT DATABASE()")
            .await?
        {
            Some(Some(db)) => db,
            _ => return Ok(None),
        },
    };
    let found: Option<(String, Option<String>)> = conn
        .exec_first(
            format!(
                "SELECT CASE t.TABLE_TYPE WHEN 'VIEW' THEN 'view' WHEN 'SEQUENCE' THEN 'sequence' \
                        WHEN 'SYSTEM VIEW' THEN 'view' ELSE 'table' END, \
                        (SELECT v.VIEW_DEFINITION FROM information_schema.VIEWS v \
                         WHERE v.TABLE_SCHEMA = t.TABLE_SCHEMA AND v.TABLE_NAME = t.TABLE_NAME) \
                 FROM information_schema.TABLES t \
                 WHERE t.TABLE_SCHEMA = ? AND t.TABLE_NAME = ? \
                   AND t.TABLE_SCHEMA NOT IN ({SYSTEM_SCHEMAS})"
            ),
            (&schema, table),
        )
        .await?;
    let Some((kind, definition)) = found else {
        return Ok(None);
    };
    let columns: Vec<(String, String, String, Option<String>, String)> = conn
        .exec(
            "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, COLUMN_KEY \
             FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
             ORDER BY ORDINAL_POSITION",
            (&schema, table),
        )
        .await?;
    let primary_key: Vec<String> = conn
        .exec(
            "SELECT COLUMN_NAME FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' \
             ORDER BY SEQ_IN_INDEX",
            (&schema, table),
        )
        .await?;
    let columns = columns
        .into_iter()
        .map(|(name, ty, nullable, default, _key)| ColumnDef {
            primary_key: primary_key.contains(&name),
            name,
            ty,
            nullable: nullable == "YES",
            // MariaDB writes an explicit NULL default as the word NULL.
            default: default.filter(|d| d != "NULL"),
        })
        .collect();
    let mut foreign_keys: Vec<(String, ForeignKey)> = Vec::new();
    let keys: Vec<(String, String, String, String, String)> = conn
        .exec(
            "SELECT CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, \
                    REFERENCED_COLUMN_NAME \
             FROM information_schema.KEY_COLUMN_USAGE \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND REFERENCED_TABLE_NAME IS NOT NULL \
             ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION",
            (&schema, table),
        )
        .await?;
    for (constraint, column, ref_schema, ref_table, ref_column) in keys {
        match foreign_keys.last_mut() {
            Some((name, fk)) if *name == constraint => {
                fk.columns.push(column);
                fk.references_columns.push(ref_column);
            }
            _ => foreign_keys.push((
                constraint,
                ForeignKey {
                    columns: vec![column],
                    references_schema: ref_schema,
                    references_table: ref_table,
                    references_columns: vec![ref_column],
                },
            )),
        }
    }
    let mut indexes: Vec<IndexDef> = Vec::new();
    let parts: Vec<(String, u64, Option<String>)> = conn
        .exec(
            "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX",
            (&schema, table),
        )
        .await?;
    for (name, non_unique, column) in parts {
        // An index on an expression has no column name.
        let column = column.unwrap_or_else(|| "(expression)".to_owned());
        match indexes.last_mut() {
            Some(ix) if ix.name == name => ix.columns.push(column),
            _ => indexes.push(IndexDef {
                name,
                unique: non_unique == 0,
                columns: vec![column],
            }),
        }
    }
    Ok(Some(Description {
        schema,
        name: table.to_owned(),
        kind,
        columns,
        primary_key,
        foreign_keys: foreign_keys.into_iter().map(|(_, fk)| fk).collect(),
        indexes,
        definition,
    }))
}

/// The names of the JSON columns of a MariaDB table: LONGTEXT columns with a `json_valid` check,
/// which is all MariaDB keeps of a JSON column.
pub(super) async fn mariadb_json_columns(
    conn: &mut Conn,
    schema: &str,
    table: &str,
) -> Result<Vec<String>, mysql_async::Error> {
    conn.exec(
        "SELECT CONSTRAINT_NAME FROM information_schema.CHECK_CONSTRAINTS \
         WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ? \
           AND CHECK_CLAUSE = CONCAT('json_valid(`', CONSTRAINT_NAME, '`)')",
        (schema, table),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(line: &str) -> Vec<String> {
        escapes(&parse_grant(line).unwrap(), None)
    }

    #[test]
    fn grants_are_read() {
        assert_eq!(
            parse_grant("GRANT SELECT, INSERT (`a`, `b`) ON `shop`.* TO `ada`@`%`"),
            Some(Grant::Privileges {
                privileges: vec!["SELECT".into(), "INSERT".into()],
                object: "`shop`.*".into(),
                grant_option: false,
            })
        );
        assert_eq!(
            parse_grant("GRANT `reader`,`auditor` TO `ada`@`%`"),
            Some(Grant::Roles(vec!["`reader`".into(), "`auditor`".into()]))
        );
        assert_eq!(parse_grant("SET DEFAULT ROLE `reader` FOR `ada`@`%`"), None);
    }

    #[test]
    fn escaping_privileges_are_named() {
        assert!(named("GRANT USAGE ON *.* TO `ada`@`%`").is_empty());
        assert!(named("GRANT SELECT, SHOW VIEW ON `shop`.* TO `ada`@`%`").is_empty());
        assert_eq!(named("GRANT FILE, PROCESS ON *.* TO `ada`@`%`"), ["FILE"]);
        assert_eq!(
            named("GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION"),
            ["ALL PRIVILEGES", "GRANT OPTION"]
        );
        assert_eq!(
            named("GRANT SELECT ON `shop`.`t` TO `ada`@`%` WITH GRANT OPTION"),
            ["GRANT OPTION on `shop`.`t`"]
        );
        assert_eq!(
            named("GRANT CREATE ROUTINE ON `shop`.* TO `ada`@`%`"),
            ["CREATE ROUTINE on `shop`.*"]
        );
        assert_eq!(
            named("GRANT SELECT, INSERT ON `mysql`.* TO `ada`@`%`"),
            ["INSERT on `mysql`.*"]
        );
        assert_eq!(
            named("GRANT SYSTEM_VARIABLES_ADMIN ON *.* TO `ada`@`%`"),
            ["SYSTEM_VARIABLES_ADMIN"]
        );
        assert_eq!(
            escapes(
                &parse_grant("GRANT SUPER ON *.* TO `r`").unwrap(),
                Some("`r`")
            ),
            ["SUPER (through role `r`)"]
        );
    }
}
