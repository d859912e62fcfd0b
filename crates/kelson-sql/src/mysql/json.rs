//! Which columns of a MariaDB result hold JSON.
//!
//! MariaDB keeps a JSON column as LONGTEXT with a `json_valid` check, and a result's metadata
//! carries no mark of it: only the catalog (`information_schema.CHECK_CONSTRAINTS`) tells. Asking
//! on every read of a table with a text column cost two round trips and a catalog query per call,
//! which made such reads several times slower than others. The answer is kept per table for
//! [`FRESH`]: a column turned into JSON (or back) by `ALTER TABLE` is shown as text (or parsed)
//! for at most that long, and the value itself is the same either way. A table not known yet is
//! looked up after its rows were read (they arrive before the adapter could ask), and the values
//! of its JSON columns, read as text, are parsed then.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mysql_async::consts::ColumnType;
use mysql_async::{Column, Conn};
use serde_json::Value;

use super::options::Prepared;
use super::pool::{self, ConnectError};
use super::types::{self, Kind};
use super::{Flavor, catalog, errors};
use crate::output::Rows;
use crate::value::Collector;

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

/// A result's JSON columns as far as they are known before its rows are read, and the tables
/// still to look up once they were.
pub(super) struct Lookup {
    found: Vec<JsonColumn>,
    missing: Vec<Table>,
}

/// Where a lookup's catalog query runs.
pub(super) enum Via<'a> {
    /// The call's own connection, its result read to the end.
    Conn(&'a mut Conn),
    /// A connection of its own: the call's is being stopped.
    Side(&'a Prepared),
}

/// On MariaDB, the JSON columns among the tables a result reads from that were looked up
/// lately, and the tables with a text column that were not.
pub(super) fn lookup(flavor: Flavor, known: &JsonColumns, columns: &[Column]) -> Lookup {
    let mut lookup = Lookup {
        found: Vec::new(),
        missing: Vec::new(),
    };
    if flavor != Flavor::MariaDb {
        return lookup;
    }
    let mut seen: Vec<Table> = Vec::new();
    for c in columns {
        let long_text = matches!(
            c.column_type(),
            ColumnType::MYSQL_TYPE_BLOB | ColumnType::MYSQL_TYPE_LONG_BLOB
        ) && c.character_set() != 63;
        let key = (c.schema_str().into_owned(), c.org_table_str().into_owned());
        if !long_text || key.0.is_empty() || key.1.is_empty() || seen.contains(&key) {
            continue;
        }
        match known.get(&key) {
            Some(names) => {
                for name in names {
                    lookup.found.push((key.0.clone(), key.1.clone(), name));
                }
            }
            None => lookup.missing.push(key.clone()),
        }
        seen.push(key);
    }
    lookup
}

impl Lookup {
    /// The JSON columns known before the rows were read.
    pub(super) fn found(&self) -> &[JsonColumn] {
        &self.found
    }

    /// The rows with their columns: the tables not yet known are looked up now (one catalog
    /// query each, remembered in `known`), and the values of the JSON columns found among them,
    /// collected as text, are parsed.
    pub(super) async fn finish(
        mut self,
        via: Via<'_>,
        known: &JsonColumns,
        meta: &[Column],
        collector: Collector,
    ) -> Result<Rows, mysql_async::Error> {
        let before = self.found.len();
        if !self.missing.is_empty() {
            let mut side;
            let conn = match via {
                Via::Conn(conn) => conn,
                Via::Side(prepared) => {
                    side = pool::connect(prepared).await.map_err(|e| match e {
                        ConnectError::Driver(e) => e,
                        e => std::io::Error::other(errors::connect_error(&e, prepared)).into(),
                    })?;
                    &mut side
                }
            };
            for key in std::mem::take(&mut self.missing) {
                let names = catalog::mariadb_json_columns(conn, &key.0, &key.1).await?;
                known.put(key.clone(), names.clone());
                for name in names {
                    self.found.push((key.0.clone(), key.1.clone(), name));
                }
            }
        }
        let (columns, kinds) = types::columns(meta, &self.found);
        let mut rows = collector.rows;
        if self.found.len() > before {
            let earlier = types::kinds(meta, &self.found[..before]);
            for (i, (now, then)) in kinds.iter().zip(&earlier).enumerate() {
                if *now != Kind::Json || *then == Kind::Json {
                    continue;
                }
                for row in &mut rows {
                    if let Some(Value::String(s)) = row.get(i)
                        && let Ok(parsed) = serde_json::from_str::<Value>(s)
                    {
                        row[i] = parsed;
                    }
                }
            }
        }
        Ok(Rows {
            columns,
            rows,
            truncated: collector.truncated,
            rows_affected: None,
        })
    }
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
