//! Which columns of a MariaDB result hold JSON.
//!
//! MariaDB keeps a JSON column as LONGTEXT with a `json_valid` check, and a result's metadata
//! carries no mark of it: only the catalog (`information_schema.CHECK_CONSTRAINTS`) tells. Asking
//! on every read of a table with a text column cost two round trips and a catalog query per call,
//! which made such reads several times slower than others. The answer is kept per table for
//! [`FRESH`]: a column turned into JSON (or back) by `ALTER TABLE` is shown as text (or parsed)
//! for at most that long, and the value itself is the same either way.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mysql_async::consts::ColumnType;
use mysql_async::{Conn, Statement};

use super::{Flavor, catalog};

/// How long a table's JSON columns are trusted before they are looked up again.
const FRESH: Duration = Duration::from_secs(60);
/// The most tables remembered; past it, the memory starts over.
const TABLES: usize = 1024;

/// A table column known to hold JSON: schema, table and column names.
pub(super) type JsonColumn = (String, String, String);

/// A table: its schema and name.
type Table = (String, String);

/// The JSON columns of the tables met so far, with when each table was looked up.
#[derive(Default)]
pub(crate) struct JsonColumns {
    tables: Mutex<HashMap<Table, (Instant, Vec<String>)>>,
}

impl JsonColumns {
    fn get(&self, key: &Table) -> Option<Vec<String>> {
        let tables = self.tables.lock().expect("JSON columns lock");
        tables
            .get(key)
            .filter(|(at, _)| at.elapsed() < FRESH)
            .map(|(_, names)| names.clone())
    }

    fn put(&self, key: Table, names: Vec<String>) {
        let mut tables = self.tables.lock().expect("JSON columns lock");
        if tables.len() >= TABLES && !tables.contains_key(&key) {
            tables.clear();
        }
        tables.insert(key, (Instant::now(), names));
    }
}

/// On MariaDB, the JSON columns among the tables a prepared statement's result reads from: from
/// `known` when it was looked up lately, else one catalog lookup per table with a text column.
pub(super) async fn json_columns(
    conn: &mut Conn,
    flavor: Flavor,
    known: &JsonColumns,
    stmt: &Statement,
) -> Result<Vec<JsonColumn>, mysql_async::Error> {
    let mut found = Vec::new();
    if flavor != Flavor::MariaDb {
        return Ok(found);
    }
    let mut seen: Vec<Table> = Vec::new();
    for c in stmt.columns().iter() {
        let long_text = matches!(
            c.column_type(),
            ColumnType::MYSQL_TYPE_BLOB | ColumnType::MYSQL_TYPE_LONG_BLOB
        ) && c.character_set() != 63;
        let key = (c.schema_str().into_owned(), c.org_table_str().into_owned());
        if !long_text || key.0.is_empty() || key.1.is_empty() || seen.contains(&key) {
            continue;
        }
        let names = match known.get(&key) {
            Some(names) => names,
            None => {
                let names = catalog::mariadb_json_columns(conn, &key.0, &key.1).await?;
                known.put(key.clone(), names.clone());
                names
            }
        };
        for name in names {
            found.push((key.0.clone(), key.1.clone(), name));
        }
        seen.push(key);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: &str) -> Table {
        ("shop".into(), t.into())
    }

    #[test]
    fn tables_are_remembered_and_the_memory_is_bounded() {
        let known = JsonColumns::default();
        assert_eq!(known.get(&key("orders")), None);
        known.put(key("orders"), vec!["meta".into()]);
        assert_eq!(known.get(&key("orders")), Some(vec!["meta".to_owned()]));
        for i in 0..TABLES {
            known.put(key(&format!("t{i}")), Vec::new());
        }
        // Full: the memory started over before the last table went in.
        assert_eq!(known.get(&key("orders")), None);
        assert!(known.tables.lock().unwrap().len() <= TABLES);
        assert_eq!(
            known.get(&key(&format!("t{}", TABLES - 1))),
            Some(Vec::new())
        );
    }

    #[test]
    fn an_old_answer_is_not_used() {
        let known = JsonColumns::default();
        let Some(old) = Instant::now().checked_sub(FRESH + Duration::from_secs(1)) else {
            return;
        };
        known
            .tables
            .lock()
            .unwrap()
            .insert(key("orders"), (old, vec!["meta".into()]));
        assert_eq!(known.get(&key("orders")), None);
    }
}
