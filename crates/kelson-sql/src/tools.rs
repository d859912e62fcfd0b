//! The four tool definitions: schemas, annotations and descriptions written for a model.

use kelson_types::{JsonObject, Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Database;
use crate::error::human_duration;

/// The longest SQL text accepted.
pub(crate) const MAX_SQL_LEN: usize = 100_000;
/// The most parameters one statement may bind.
pub(crate) const MAX_PARAMS: usize = 100;
/// The longest schema or table name accepted.
const MAX_NAME_LEN: usize = 256;

pub(crate) const LIST_TABLES: &str = "list_tables";
pub(crate) const DESCRIBE_TABLE: &str = "describe_table";
pub(crate) const QUERY: &str = "query";
pub(crate) const EXECUTE: &str = "execute";

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListTablesArgs {
    pub(crate) database: Option<String>,
    pub(crate) schema: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DescribeTableArgs {
    pub(crate) database: Option<String>,
    pub(crate) schema: Option<String>,
    pub(crate) table: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct QueryArgs {
    pub(crate) database: Option<String>,
    pub(crate) sql: String,
    #[serde(default)]
    pub(crate) params: Vec<Value>,
    pub(crate) max_rows: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExecuteArgs {
    pub(crate) database: Option<String>,
    pub(crate) sql: String,
    #[serde(default)]
    pub(crate) params: Vec<Value>,
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("schemas are written as JSON objects"),
    }
}

/// The `database` property, and whether it is required: it is whenever there is a choice.
fn database_property(names: &[&str]) -> (Value, bool) {
    let list = names.join(", ");
    let description = if names.len() == 1 {
        format!("The database to use. Optional: the only one is \"{list}\".")
    } else {
        format!("The database to use, one of: {list}.")
    };
    // Mirrored into the `Mcp-Param-Database` header by HTTP clients (spec 2026-07-28 x-mcp-header),
    // so that a load balancer can route or authorize each call by database without reading the
    // body; the server checks that the header and the argument agree.
    (
        json!({
            "type": "string",
            "enum": names,
            "description": description,
            "x-mcp-header": "Database",
        }),
        names.len() > 1,
    )
}

fn input_schema(names: &[&str], mut properties: JsonObject, mut required: Vec<&str>) -> JsonObject {
    let (database, database_required) = database_property(names);
    let mut all = JsonObject::new();
    all.insert("database".into(), database);
    all.append(&mut properties);
    if database_required {
        required.insert(0, "database");
    }
    object(json!({
        "type": "object",
        "properties": all,
        "required": required,
        "additionalProperties": false,
    }))
}

fn sql_property(what: &str) -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_SQL_LEN,
        "description": what,
    })
}

fn params_property() -> Value {
    json!({
        "type": "array",
        "maxItems": MAX_PARAMS,
        "items": {"type": ["string", "number", "boolean", "null"]},
        "description": "Values for the statement's placeholders, in order: ?1, ?2, ... (or ?) on SQLite, \
                        $1, $2, ... on PostgreSQL, ? on MySQL and MariaDB. Always pass values here rather than writing them into \
                        the SQL. Dates, numerics and other types are given as strings and parsed by the database.",
    })
}

fn columns_schema() -> Value {
    json!({
        "type": "array",
        "description": "The result columns, in order.",
        "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "type": {"type": ["string", "null"], "description": "The declared or actual type, when known."},
            },
            "required": ["name", "type"],
            "additionalProperties": false,
        },
    })
}

/// The properties shared by the results of `query` and `execute`.
fn rows_properties() -> JsonObject {
    object(json!({
        "database": {"type": "string"},
        "columns": columns_schema(),
        "rows": {
            "type": "array",
            "description": "One array of values per row, in column order. Binary values are {\"base64\": ...}; \
                            PostgreSQL and MySQL numerics (decimals), dates and times are strings.",
            "items": {"type": "array"},
        },
        "row_count": {"type": "integer", "minimum": 0, "description": "How many rows `rows` holds."},
        "truncated": {"type": "boolean", "description": "True when the result has more rows than were returned."},
        "truncated_reason": {
            "type": ["string", "null"],
            "enum": ["max_rows", "max_bytes", null],
            "description": "Which limit cut the result.",
        },
        "elapsed_ms": {"type": "integer", "minimum": 0},
    }))
}

fn read_only_annotations(title: &str) -> ToolAnnotations {
    ToolAnnotations {
        title: Some(title.to_owned()),
        ..ToolAnnotations::new()
            .with_read_only(true)
            .with_destructive(false)
            .with_idempotent(true)
            .with_open_world(false)
    }
}

/// A line per database for the tool descriptions.
fn catalog(databases: &[Database]) -> String {
    databases
        .iter()
        .map(|d| {
            let mut line = format!("- {} ({}", d.name(), d.engine());
            line.push_str(if d.allows_write() {
                ", writable"
            } else {
                ", read-only"
            });
            line.push(')');
            if let Some(desc) = d.description() {
                line.push_str(": ");
                line.push_str(desc);
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn list_tables(databases: &[Database]) -> Tool {
    let names: Vec<&str> = databases.iter().map(Database::name).collect();
    let input = input_schema(
        &names,
        object(json!({
            "schema": {
                "type": "string", "minLength": 1, "maxLength": MAX_NAME_LEN,
                "description": "Only list tables in this schema (PostgreSQL; on MySQL and MariaDB, a database). SQLite has one schema, \"main\".",
            },
        })),
        vec![],
    );
    let output = object(json!({
        "type": "object",
        "properties": {
            "database": {"type": "string"},
            "engine": {"type": "string", "enum": ["SQLite", "PostgreSQL", "MySQL", "MariaDB"]},
            "tables": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "schema": {"type": "string"},
                        "name": {"type": "string"},
                        "type": {"type": "string", "description": "table, view, materialized view, foreign table, partitioned table or sequence"},
                        "uri": {"type": "string", "description": "The resource describing the table."},
                    },
                    "required": ["schema", "name", "type", "uri"],
                    "additionalProperties": false,
                },
            },
        },
        "required": ["database", "engine", "tables"],
        "additionalProperties": false,
    }));
    Tool::new(LIST_TABLES, input)
        .with_title("List tables")
        .with_description(format!(
            "List the tables and views of a SQL database, each with its schema and the URI of the \
             resource that describes it. Start here to see what data exists, then call describe_table \
             for a table's columns and keys before you query it.\n\nDatabases:\n{}",
            catalog(databases)
        ))
        .with_output_schema(output)
        .with_annotations(read_only_annotations("List tables"))
}

pub(crate) fn describe_table(databases: &[Database]) -> Tool {
    let names: Vec<&str> = databases.iter().map(Database::name).collect();
    let input = input_schema(
        &names,
        object(json!({
            "schema": {
                "type": "string", "minLength": 1, "maxLength": MAX_NAME_LEN,
                "description": "The table's schema. Optional: by default the first match on the search path \
                                (PostgreSQL), the connection's database (MySQL, MariaDB) or \"main\" (SQLite).",
            },
            "table": {
                "type": "string", "minLength": 1, "maxLength": MAX_NAME_LEN,
                "description": "The table or view name, exactly as list_tables shows it (not quoted).",
            },
        })),
        vec!["table"],
    );
    let name_list = json!({"type": "array", "items": {"type": "string"}});
    let output = object(json!({
        "type": "object",
        "properties": {
            "database": {"type": "string"},
            "schema": {"type": "string"},
            "name": {"type": "string"},
            "type": {"type": "string"},
            "columns": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "type": {"type": "string"},
                        "nullable": {"type": "boolean"},
                        "default": {"type": ["string", "null"]},
                        "primary_key": {"type": "boolean"},
                    },
                    "required": ["name", "type", "nullable", "default", "primary_key"],
                    "additionalProperties": false,
                },
            },
            "primary_key": name_list,
            "foreign_keys": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "columns": name_list,
                        "references_schema": {"type": "string"},
                        "references_table": {"type": "string"},
                        "references_columns": name_list,
                    },
                    "required": ["columns", "references_schema", "references_table", "references_columns"],
                    "additionalProperties": false,
                },
            },
            "indexes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "columns": name_list,
                        "unique": {"type": "boolean"},
                    },
                    "required": ["name", "columns", "unique"],
                    "additionalProperties": false,
                },
            },
            "definition": {"type": ["string", "null"], "description": "The defining statement or view query, where kept."},
            "uri": {"type": "string"},
        },
        "required": ["database", "schema", "name", "type", "columns", "primary_key", "foreign_keys", "indexes", "definition", "uri"],
        "additionalProperties": false,
    }));
    Tool::new(DESCRIBE_TABLE, input)
        .with_title("Describe a table")
        .with_description(
            "Describe one table or view: its columns with types, nullability and defaults, the primary key, \
             the foreign keys (how it joins to other tables) and its indexes. Call it before writing a query \
             against a table you have not seen yet.",
        )
        .with_output_schema(output)
        .with_annotations(read_only_annotations("Describe a table"))
}

pub(crate) fn query(databases: &[Database]) -> Tool {
    let names: Vec<&str> = databases.iter().map(Database::name).collect();
    let max_rows = databases
        .iter()
        .map(|d| d.config().limits.max_rows)
        .max()
        .unwrap_or(1);
    let input = input_schema(
        &names,
        object(json!({
            "sql": sql_property("Exactly one read-only SQL statement, such as SELECT or WITH ... SELECT. No trailing second statement."),
            "params": params_property(),
            "max_rows": {
                "type": "integer", "minimum": 1, "maximum": max_rows,
                "description": "Return at most this many rows (the database's own limit still applies).",
            },
        })),
        vec!["sql"],
    );
    let properties = rows_properties();
    let output = object(json!({
        "type": "object",
        "properties": properties,
        "required": ["database", "columns", "rows", "row_count", "truncated", "truncated_reason", "elapsed_ms"],
        "additionalProperties": false,
    }));
    let limits: Vec<String> = databases
        .iter()
        .map(|d| {
            let l = d.config().limits;
            format!(
                "{}: {} rows, {} KiB, {}",
                d.name(),
                l.max_rows,
                l.max_bytes / 1024,
                human_duration(l.timeout)
            )
        })
        .collect();
    Tool::new(QUERY, input)
        .with_title("Run a read-only SQL query")
        .with_description(format!(
            "Run one read-only SQL statement and get its rows as a table. The database itself enforces \
             read-only access: a statement that would change anything (INSERT, UPDATE, DELETE, DDL, ATTACH, \
             settings) is refused and nothing changes. Put values in `params` and refer to them with \
             placeholders instead of writing them into the SQL. Results are cut at a row limit and a size \
             limit (`truncated` says so) and each call has a time limit: use WHERE, LIMIT and aggregates to \
             keep results small. Use the SQL dialect of the database's engine.\n\nLimits per call: {}.\n\n\
             Databases:\n{}",
            limits.join("; "),
            catalog(databases)
        ))
        .with_output_schema(output)
        .with_annotations(read_only_annotations("Run a read-only SQL query"))
}

/// `execute`, offered on the databases that allow writes; `None` when none does.
pub(crate) fn execute(databases: &[Database]) -> Option<Tool> {
    let writable: Vec<&Database> = databases.iter().filter(|d| d.allows_write()).collect();
    if writable.is_empty() {
        return None;
    }
    let names: Vec<&str> = writable.iter().map(|d| d.name()).collect();
    let input = input_schema(
        &names,
        object(json!({
            "sql": sql_property("Exactly one SQL statement that changes data or schema, such as INSERT, UPDATE, DELETE, CREATE TABLE or ALTER TABLE."),
            "params": params_property(),
        })),
        vec!["sql"],
    );
    let mut properties = rows_properties();
    properties.insert(
        "rows_affected".into(),
        json!({"type": "integer", "minimum": 0, "description": "Rows inserted, updated or deleted."}),
    );
    let output = object(json!({
        "type": "object",
        "properties": properties,
        "required": ["database", "rows_affected", "columns", "rows", "row_count", "truncated", "truncated_reason", "elapsed_ms"],
        "additionalProperties": false,
    }));
    Some(
        Tool::new(EXECUTE, input)
            .with_title("Run an approved SQL change")
            .with_description(format!(
                "Run one SQL statement that changes data or schema (INSERT, UPDATE, DELETE, CREATE, ALTER, \
                 DROP ...) in a transaction of its own. Before it runs, the user is shown the exact statement \
                 and parameters and must approve it; if they decline, nothing changes. Reports the rows \
                 changed and any rows the statement returns (RETURNING). Check the tables with describe_table \
                 first, and put values in `params`. Writable databases: {}.",
                names.join(", ")
            ))
            .with_output_schema(output)
            .with_annotations(ToolAnnotations {
                title: Some("Run an approved SQL change".to_owned()),
                ..ToolAnnotations::new()
                    .with_read_only(false)
                    .with_destructive(true)
                    .with_idempotent(false)
                    .with_open_world(false)
            }),
    )
}
