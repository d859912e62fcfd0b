//! A call's statement on a connection: a read fetched a batch at a time, so that no more than the
//! row limit (plus one, to detect truncation) ever leaves the server; an approved write run to
//! completion and committed; catalog queries; and result rows decoded into JSON.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use fallible_iterator::FallibleIterator as _;
use postgres_protocol::message::backend::DataRowBody;
use serde_json::Value;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{Kind, Type};

use super::types::decode;
use super::wire::Oversized;
use super::wire::{Column as WireColumn, DbError, End, Outcome, ResultFormat, Tx, Wire, WireError};
use super::{Done, Failure, done};
use crate::config::Limits;
use crate::error::ExecError;
use crate::output::{Column, Rows};
use crate::value::{Collector, Truncation};

/// Rows fetched per round trip from a read's portal, so that the byte limit can stop a read early.
const FETCH: usize = 256;

/// The types that are not built in (enums, domains, arrays of them, extension types), by OID,
/// as the server described them.
#[derive(Default)]
pub(super) struct TypeCache(Mutex<HashMap<u32, Type>>);

impl TypeCache {
    fn get(&self, oid: u32) -> Option<Type> {
        Type::from_oid(oid).or_else(|| self.0.lock().expect("type cache lock").get(&oid).cloned())
    }

    /// Looks up `missing` in `pg_type`, and the types they are built on, in the current
    /// transaction.
    async fn load(&self, wire: &mut Wire, mut missing: Vec<u32>) -> Result<(), WireError> {
        let mut found: HashMap<u32, TypeRow> = HashMap::new();
        // A domain over an array of an enum is three levels; more is not worth a round trip each.
        for _ in 0..4 {
            if missing.is_empty() {
                break;
            }
            let list = missing
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",");
            let outcome = wire
                .own_query(TYPE_QUERY, &[Some(format!("{{{list}}}"))])
                .await?;
            if let Some(e) = outcome.error {
                return Err(WireError::Db(e));
            }
            missing.clear();
            for row in &outcome.rows {
                let Some(values) = row_values(row, TYPE_COLUMNS, usize::MAX)? else {
                    continue;
                };
                let Some(row) = TypeRow::from(&values) else {
                    continue;
                };
                for next in [row.base, row.element] {
                    if next != 0 && self.get(next).is_none() && !found.contains_key(&next) {
                        missing.push(next);
                    }
                }
                found.insert(row.oid, row);
            }
        }
        let oids: Vec<u32> = found.keys().copied().collect();
        for oid in oids {
            let ty = self.build(oid, &found, 0);
            self.0.lock().expect("type cache lock").insert(oid, ty);
        }
        Ok(())
    }

    fn build(&self, oid: u32, found: &HashMap<u32, TypeRow>, depth: usize) -> Type {
        if let Some(ty) = self.get(oid) {
            return ty;
        }
        let Some(row) = found.get(&oid) else {
            return unknown(oid);
        };
        let inner = |next| {
            if depth > 4 {
                unknown(next)
            } else {
                self.build(next, found, depth + 1)
            }
        };
        let kind = match row.kind.as_str() {
            "e" => Kind::Enum(Vec::new()),
            "d" => Kind::Domain(inner(row.base)),
            "p" => Kind::Pseudo,
            _ if row.category == "A" && row.element != 0 => Kind::Array(inner(row.element)),
            _ => Kind::Simple,
        };
        Type::new(row.name.clone(), oid, kind, row.schema.clone())
    }
}

/// A type the catalog did not describe: shown with the hint to cast it.
fn unknown(oid: u32) -> Type {
    Type::new(format!("type {oid}"), oid, Kind::Simple, String::new())
}

const TYPE_QUERY: &str = "SELECT t.oid, t.typname::text, n.nspname::text, t.typtype::text, \
                          t.typbasetype, t.typelem, t.typcategory::text \
                          FROM pg_catalog.pg_type t \
                          JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace \
                          WHERE t.oid = ANY ($1::pg_catalog.oid[])";

const TYPE_COLUMNS: &[Type] = &[
    Type::OID,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::OID,
    Type::OID,
    Type::TEXT,
];

struct TypeRow {
    oid: u32,
    name: String,
    schema: String,
    kind: String,
    base: u32,
    element: u32,
    category: String,
}

impl TypeRow {
    fn from(values: &[Value]) -> Option<TypeRow> {
        let oid = |i: usize| values.get(i)?.as_u64().and_then(|v| u32::try_from(v).ok());
        let text = |i: usize| values.get(i)?.as_str().map(str::to_owned);
        Some(TypeRow {
            oid: oid(0)?,
            name: text(1)?,
            schema: text(2)?,
            kind: text(3)?,
            base: oid(4)?,
            element: oid(5)?,
            category: text(6)?,
        })
    }
}

/// The columns' types, looking up those that are not built in (one more round trip, the first
/// time a type is met).
async fn column_types(
    wire: &mut Wire,
    columns: &[WireColumn],
    cache: &TypeCache,
) -> Result<Vec<Type>, WireError> {
    let missing: Vec<u32> = columns
        .iter()
        .map(|c| c.oid)
        .filter(|oid| cache.get(*oid).is_none())
        .collect();
    if !missing.is_empty() {
        cache.load(wire, missing).await?;
    }
    Ok(columns
        .iter()
        .map(|c| cache.get(c.oid).unwrap_or_else(|| unknown(c.oid)))
        .collect())
}

/// A row's values as JSON, or `None` when one of them is larger than `cap` bytes on the wire:
/// such a value could never be returned, so it is not decoded.
fn row_values(
    row: &DataRowBody,
    types: &[Type],
    cap: usize,
) -> Result<Option<Vec<Value>>, WireError> {
    let mut out = Vec::with_capacity(types.len());
    let mut ranges = row.ranges();
    let mut i = 0;
    while let Some(range) = ranges.next()? {
        let ty = types.get(i).unwrap_or(&Type::BYTEA);
        i += 1;
        out.push(match range {
            None => Value::Null,
            Some(range) if range.len() > cap => return Ok(None),
            Some(range) => decode(ty, &row.buffer()[range]),
        });
    }
    Ok(Some(out))
}

fn output_columns(columns: &[WireColumn], types: &[Type]) -> Vec<Column> {
    columns
        .iter()
        .zip(types)
        .map(|(c, ty)| Column {
            name: c.name.clone(),
            ty: Some(ty.name().to_owned()),
        })
        .collect()
}

/// The statement's error as the model is told it; a Bind refused for its parameter count is
/// said in the adapter's words.
fn statement_error(
    e: Box<DbError>,
    declared: Option<usize>,
    given: usize,
    limit: Duration,
) -> Failure {
    if let Some(declared) = declared
        && declared != given
        && e.code == SqlState::PROTOCOL_VIOLATION
    {
        return Failure::sql(ExecError::Sql(format!(
            "the statement has {declared} parameter placeholder(s) ($1, $2, ...) but {given} value(s) were given in `params`"
        )));
    }
    Failure::wire(&WireError::Db(e), limit)
}

fn transaction(limits: &Limits, read_only: bool) -> Tx {
    Tx {
        read_only,
        timeout_ms: limits.timeout.as_millis(),
    }
}

/// A read: one statement in a `READ ONLY` transaction, its first batch in the call's one round
/// trip, more batches one round trip each while the limits want more rows.
pub(super) async fn read(
    wire: &mut Wire,
    sql: &str,
    params: &[Option<String>],
    limits: Limits,
    types: &TypeCache,
) -> Done<Rows> {
    wire.limit_values(limits.value_cap(), Oversized::Stop);
    let want = (limits.max_rows + 1).min(FETCH);
    let tx = transaction(&limits, true);
    let batch = wire
        .read(&tx, sql, params, ResultFormat::Binary, batch_size(want))
        .await;
    let result = match batch {
        Ok(batch) => collect(wire, batch, limits, types, params.len()).await,
        Err(e) => Err(read_failure(&e, limits)),
    };
    if result.as_ref().is_err_and(|f| f.fatal) {
        return (result, false);
    }
    // The rollback and the reset are queued: they go out when the call ends, or in front of the
    // next call's messages; the next call on the connection reads their answer.
    match wire.end_read() {
        Ok(()) => done(result),
        Err(_) => (result, false),
    }
}

fn batch_size(want: usize) -> i32 {
    i32::try_from(want).unwrap_or(i32::MAX)
}

/// A read's failure on the connection: a row too large to take is the value limit's refusal
/// (the connection is given up rather than the row read).
fn read_failure(e: &WireError, limits: Limits) -> Failure {
    let mut failure = Failure::wire(e, limits.timeout);
    if let WireError::Oversized(_) = e {
        failure.error = ExecError::TooBig(limits.value_cap());
        failure.retry = false;
    }
    failure
}

async fn collect(
    wire: &mut Wire,
    mut batch: Outcome,
    limits: Limits,
    cache: &TypeCache,
    given: usize,
) -> Result<Rows, Failure> {
    let limit = limits.timeout;
    let fail = |e: WireError| read_failure(&e, limits);
    if let Some(e) = batch.error.take() {
        return Err(statement_error(e, batch.params, given, limit));
    }
    if batch.end == Some(End::Empty) {
        return Err(Failure::sql(ExecError::Empty));
    }
    let types = column_types(wire, &batch.columns, cache)
        .await
        .map_err(fail)?;
    let columns = output_columns(&batch.columns, &types);
    let cap = limits.value_cap();
    let mut collector = Collector::new(limits.max_rows, limits.max_bytes);
    'fetch: loop {
        for row in &batch.rows {
            let Some(values) = row_values(row, &types, cap).map_err(fail)? else {
                return Err(Failure::sql(ExecError::TooBig(cap)));
            };
            if !collector.push(values) {
                break 'fetch;
            }
        }
        if batch.end != Some(End::Suspended) {
            break;
        }
        let want = (limits.max_rows + 1 - collector.rows.len()).min(FETCH);
        batch = wire.fetch(batch_size(want)).await.map_err(fail)?;
        if let Some(e) = batch.error.take() {
            return Err(Failure::wire(&WireError::Db(e), limit));
        }
    }
    // The transaction is rolled back by the caller.
    Ok(Rows {
        columns,
        rows: collector.rows,
        truncated: collector.truncated,
        rows_affected: None,
    })
}

/// An approved write: one statement in a `READ WRITE` transaction, committed when it succeeds and
/// rolled back otherwise, in one round trip with the session reset. Returned rows (`RETURNING`)
/// are kept up to the limits, but the statement always runs to completion.
pub(super) async fn write(
    wire: &mut Wire,
    sql: &str,
    params: &[Option<String>],
    limits: Limits,
    cache: &TypeCache,
) -> Done<Rows> {
    let limit = limits.timeout;
    let cap = limits.value_cap();
    wire.limit_values(cap, Oversized::Skip);
    let tx = transaction(&limits, false);
    let mut outcome = match wire.write(&tx, sql, params).await {
        Ok(outcome) => outcome,
        Err(e) => return done(Err(Failure::wire(&e, limit))),
    };
    let reusable = !outcome.reset_failed;
    if let Some(e) = outcome.error.take() {
        // The transaction was rolled back and the session reset.
        return (
            Err(statement_error(e, outcome.params, params.len(), limit)),
            reusable,
        );
    }
    if outcome.end == Some(End::Empty) {
        return (Err(Failure::sql(ExecError::Empty)), reusable);
    }
    // What the write did stands whatever follows: a type the lookup cannot name is shown with
    // the hint to cast it.
    let types = if reusable {
        match column_types(wire, &outcome.columns, cache).await {
            Ok(types) => types,
            Err(_) => {
                let types: Vec<Type> = outcome.columns.iter().map(|c| unknown(c.oid)).collect();
                return (Ok(rows_of_write(&outcome, &types, limits)), false);
            }
        }
    } else {
        outcome
            .columns
            .iter()
            .map(|c| cache.get(c.oid).unwrap_or_else(|| unknown(c.oid)))
            .collect()
    };
    (Ok(rows_of_write(&outcome, &types, limits)), reusable)
}

fn rows_of_write(outcome: &Outcome, types: &[Type], limits: Limits) -> Rows {
    let cap = limits.value_cap();
    let mut collector = Collector::new(limits.max_rows, limits.max_bytes);
    for row in &outcome.rows {
        // An approved write runs to completion whatever it returns: a returned value over the
        // cap only ends the rows kept, as the byte limit does.
        if !collector.wants_more() {
            break;
        }
        match row_values(row, types, cap) {
            Ok(Some(values)) => {
                collector.push(values);
            }
            _ => collector.cut(Truncation::MaxBytes),
        }
    }
    if outcome.skipped > 0 && collector.wants_more() {
        collector.cut(Truncation::MaxBytes);
    }
    let affected = match &outcome.end {
        Some(End::Complete(tag)) => tag
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        _ => 0,
    };
    Rows {
        columns: output_columns(&outcome.columns, types),
        rows: collector.rows,
        truncated: collector.truncated,
        rows_affected: Some(affected),
    }
}

/// A catalog query of the adapter's own in a read-only transaction: its rows as JSON (built-in
/// types only).
pub(super) async fn catalog_rows(
    wire: &mut Wire,
    sql: &str,
    params: &[Option<String>],
    limit: Duration,
) -> Result<Vec<Vec<Value>>, WireError> {
    wire.limit_values(usize::MAX, Oversized::Stop);
    let tx = Tx {
        read_only: true,
        timeout_ms: limit.as_millis(),
    };
    let mut outcome = wire.read(&tx, sql, params, ResultFormat::Binary, 0).await?;
    wire.end_read()?;
    if let Some(e) = outcome.error.take() {
        return Err(WireError::Db(e));
    }
    let types: Vec<Type> = outcome
        .columns
        .iter()
        .map(|c| Type::from_oid(c.oid).unwrap_or(Type::TEXT))
        .collect();
    let mut rows = Vec::with_capacity(outcome.rows.len());
    for row in &outcome.rows {
        if let Some(values) = row_values(row, &types, usize::MAX)? {
            rows.push(values);
        }
    }
    Ok(rows)
}
