//! What the engines return, as `structuredContent`, and the text the model reads beside it.

use serde::Serialize;
use serde_json::Value;

use crate::value::Truncation;

/// A result column.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Column {
    pub(crate) name: String,
    /// The declared (SQLite) or actual (PostgreSQL) type, when known.
    #[serde(rename = "type")]
    pub(crate) ty: Option<String>,
}

/// The rows a statement produced, cut to the limits.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rows {
    pub(crate) columns: Vec<Column>,
    pub(crate) rows: Vec<Vec<Value>>,
    pub(crate) truncated: Option<Truncation>,
    /// For writes: rows inserted, updated or deleted.
    pub(crate) rows_affected: Option<u64>,
}

/// A table or view, as `list_tables` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct TableInfo {
    pub(crate) schema: String,
    pub(crate) name: String,
    /// `table`, `view`, `materialized view`, `foreign table`, `partitioned table` or `sequence`.
    #[serde(rename = "type")]
    pub(crate) kind: String,
    /// The resource holding its schema.
    pub(crate) uri: String,
    /// Changes whenever the table's definition changes; not serialized.
    #[serde(skip)]
    pub(crate) fingerprint: String,
}

/// One column of a table, as `describe_table` reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ColumnDef {
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) ty: String,
    pub(crate) nullable: bool,
    pub(crate) default: Option<String>,
    pub(crate) primary_key: bool,
}

/// A foreign key of a table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ForeignKey {
    pub(crate) columns: Vec<String>,
    pub(crate) references_schema: String,
    pub(crate) references_table: String,
    pub(crate) references_columns: Vec<String>,
}

/// An index of a table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct IndexDef {
    pub(crate) name: String,
    pub(crate) columns: Vec<String>,
    pub(crate) unique: bool,
}

/// The full description of a table: `describe_table`'s result and the table resource's content.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct TableSchema {
    pub(crate) database: String,
    pub(crate) schema: String,
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) columns: Vec<ColumnDef>,
    pub(crate) primary_key: Vec<String>,
    pub(crate) foreign_keys: Vec<ForeignKey>,
    pub(crate) indexes: Vec<IndexDef>,
    /// The statement that defines it, where the engine keeps one (SQLite `CREATE ...`, a
    /// PostgreSQL view's query).
    pub(crate) definition: Option<String>,
    pub(crate) uri: String,
}

/// The widest a cell is drawn in the text table; the structured rows always carry full values.
const CELL_WIDTH: usize = 60;

/// A cell as text: strings bare, NULL as `NULL`, everything else as JSON.
fn cell(value: &Value) -> String {
    let text = match value {
        Value::Null => "NULL".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    // One line per row: control characters would break the table.
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > CELL_WIDTH {
        let mut cut: String = text.chars().take(CELL_WIDTH - 1).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

/// Draws rows as an aligned text table, psql style.
pub(crate) fn text_table(columns: &[Column], rows: &[Vec<Value>]) -> String {
    if columns.is_empty() {
        return String::new();
    }
    let cells: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(cell).collect()).collect();
    let headers: Vec<String> = columns
        .iter()
        .map(|c| cell(&Value::String(c.name.clone())))
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (i, c) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, values: &[String]| {
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                out.push_str(" | ");
            }
            out.push_str(v);
            if i + 1 < values.len() {
                let pad = widths[i].saturating_sub(v.chars().count());
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
    };
    line(&mut out, &headers);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&rule.join("-+-"));
    out.push('\n');
    for row in &cells {
        line(&mut out, row);
    }
    out
}

/// The closing line under a result table.
pub(crate) fn footer(row_count: usize, truncated: Option<Truncation>, max_rows: usize) -> String {
    let rows = if row_count == 1 { "row" } else { "rows" };
    match truncated {
        None => format!("({row_count} {rows})"),
        Some(Truncation::MaxRows) => format!(
            "({row_count} {rows} shown; the result was cut at the limit of {max_rows} rows and has more. \
             Narrow it with WHERE, aggregate, or page with LIMIT/OFFSET.)"
        ),
        Some(Truncation::MaxBytes) => format!(
            "({row_count} {rows} shown; the result was cut at the size limit and has more. \
             Select fewer or shorter columns, or fewer rows.)"
        ),
    }
}

/// The text for `describe_table`.
pub(crate) fn describe_text(t: &TableSchema) -> String {
    let mut out = format!(
        "{} {}.{} in database {} ({})\n\n",
        t.kind, t.schema, t.name, t.database, t.uri
    );
    let columns = vec![
        Column {
            name: "column".into(),
            ty: None,
        },
        Column {
            name: "type".into(),
            ty: None,
        },
        Column {
            name: "nullable".into(),
            ty: None,
        },
        Column {
            name: "default".into(),
            ty: None,
        },
        Column {
            name: "key".into(),
            ty: None,
        },
    ];
    let rows: Vec<Vec<Value>> = t
        .columns
        .iter()
        .map(|c| {
            vec![
                Value::String(c.name.clone()),
                Value::String(c.ty.clone()),
                Value::String(if c.nullable { "yes" } else { "no" }.into()),
                c.default.clone().map_or(Value::Null, Value::String),
                Value::String(if c.primary_key { "PK" } else { "" }.into()),
            ]
        })
        .collect();
    out.push_str(&text_table(&columns, &rows));
    for fk in &t.foreign_keys {
        out.push_str(&format!(
            "foreign key ({}) references {}.{} ({})\n",
            fk.columns.join(", "),
            fk.references_schema,
            fk.references_table,
            fk.references_columns.join(", ")
        ));
    }
    for ix in &t.indexes {
        out.push_str(&format!(
            "{}index {} ({})\n",
            if ix.unique { "unique " } else { "" },
            ix.name,
            ix.columns.join(", ")
        ));
    }
    if let Some(def) = &t.definition {
        out.push_str("\ndefinition:\n");
        out.push_str(def);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn col(name: &str) -> Column {
        Column {
            name: name.into(),
            ty: None,
        }
    }

    #[test]
    fn table_is_aligned() {
        let text = text_table(
            &[col("id"), col("name")],
            &[
                vec![json!(1), json!("Ada")],
                vec![json!(22), Value::Null],
                vec![json!(3), json!({"base64": "AA=="})],
            ],
        );
        assert_eq!(
            text,
            "id | name\n\
             ---+------------------\n\
             1  | Ada\n\
             22 | NULL\n\
             3  | {\"base64\":\"AA==\"}\n"
        );
    }

    #[test]
    fn long_and_multiline_cells_are_cut() {
        let long = "x".repeat(100);
        let text = text_table(&[col("v")], &[vec![json!(long)], vec![json!("a\nb")]]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[2].chars().count(), CELL_WIDTH);
        assert!(lines[2].ends_with('…'));
        assert_eq!(lines[3], "a b");
    }

    #[test]
    fn footers() {
        assert_eq!(footer(1, None, 10), "(1 row)");
        assert!(footer(10, Some(Truncation::MaxRows), 10).contains("limit of 10 rows"));
        assert!(footer(3, Some(Truncation::MaxBytes), 10).contains("size limit"));
    }
}
