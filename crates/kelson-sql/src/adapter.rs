//! The adapter: registers the tools and table resources of its databases on a server, and serves
//! them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kelson_server::{
    BoxFuture, HandlerError, RequestContext, Scoped, Scopes, Server, ServerBuilder, TaskStart,
    TaskSupport, ToolDef, ToolResult, Uri, WithScopes,
};
use kelson_types::{
    CallToolResult, ContentBlock, Resource, ResourceContents, ResourceTemplate,
    TextResourceContents,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::approval::{self, Decision, Spent, UsedApprovals};
use crate::config::{DatabaseConfig, MysqlConfig, PostgresConfig, SqliteConfig};
use crate::database::Database;
use crate::engine::CatalogEntry;
use crate::error::{ExecError, SqlError};
use crate::ledger::Approvals;
#[cfg(feature = "sqlite")]
use crate::ledger::FileLedger;
#[cfg(feature = "postgres")]
use crate::ledger::SharedLedger;
use crate::output::{self, Rows, TableInfo, TableSchema};
use crate::tools::{self, DescribeTableArgs, ExecuteArgs, ListTablesArgs, QueryArgs};
use crate::value::Param;

/// The name of the database made by [`SqlAdapter::sqlite`] and [`SqlAdapter::postgres`].
pub const DEFAULT_DATABASE: &str = "main";

/// How many used write approvals are remembered at most (each until its state expires).
const MAX_USED_APPROVALS: usize = 10_000;

/// The SQL adapter: one tool set over one or more named databases, and a resource per table.
///
/// Register it once per server with [`register`](Self::register). With several databases each
/// tool takes a `database` argument (an enum of the names; required when there is more than one).
/// Cloning is cheap; clones share everything.
#[derive(Clone)]
pub struct SqlAdapter {
    inner: Arc<Inner>,
}

struct Inner {
    databases: Vec<Database>,
    approvals: Approvals,
    /// How long `query` and `execute` run before they become tasks; `None`: never.
    task_after: Option<Duration>,
    /// Whether statement spans carry the SQL text (`db.query.text`).
    statement_text: bool,
}

impl std::fmt::Debug for SqlAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlAdapter")
            .field("databases", &self.inner.databases)
            .finish_non_exhaustive()
    }
}

/// The span of one statement: a child of the request's span, disabled unless a subscriber wants it.
fn statement_span(db: &Database, operation: &str, sql: &str, with_text: bool) -> tracing::Span {
    let span = tracing::info_span!(
        target: "kelson::trace::sql",
        "sql.statement",
        db.system.name = db.inner.engine.system_name(),
        db.namespace = db.name(),
        db.operation.name = operation,
        db.query.text = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    if with_text && !span.is_disabled() {
        span.record("db.query.text", sql);
    }
    span
}

/// A tool's answer: structured content and the text the model reads.
fn rich(text: String, structured: Value) -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::text(text)],
        structured_content: Some(structured),
        ..CallToolResult::default()
    }
}

impl SqlAdapter {
    /// An adapter over these databases, whose names must differ.
    pub fn new(databases: impl IntoIterator<Item = Database>) -> Result<SqlAdapter, SqlError> {
        let databases: Vec<Database> = databases.into_iter().collect();
        if databases.is_empty() {
            return Err(SqlError::NoDatabase);
        }
        for (i, d) in databases.iter().enumerate() {
            if databases[..i].iter().any(|e| e.name() == d.name()) {
                return Err(SqlError::DuplicateName(d.name().to_owned()));
            }
        }
        Ok(SqlAdapter {
            inner: Arc::new(Inner {
                databases,
                approvals: Approvals::Local(UsedApprovals::new(MAX_USED_APPROVALS)),
                task_after: None,
                statement_text: false,
            }),
        })
    }

    /// Records used write approvals in a PostgreSQL table ([`LEDGER_TABLE`](crate::LEDGER_TABLE),
    /// created if missing) instead of in this process's memory, so that instances sharing a state
    /// key (behind a load balancer) run each approved statement once between them. Connects now:
    /// a bad URL or a missing privilege (the role needs to create the table, or to insert into and
    /// delete from it) is an error here, not on the first write. If the ledger cannot be reached
    /// later, writes are refused, never run unrecorded.
    ///
    /// Without the `postgres` feature this is [`SqlError::EngineNotCompiled`].
    pub async fn with_shared_approvals(self, url: &str) -> Result<SqlAdapter, SqlError> {
        #[cfg(feature = "postgres")]
        {
            let ledger = SharedLedger::connect(url).await?;
            Ok(self.with_approvals(Approvals::Shared(Box::new(ledger))))
        }
        #[cfg(not(feature = "postgres"))]
        {
            let _ = url;
            Err(crate::engine::no_postgres())
        }
    }

    /// Records used write approvals in an SQLite file (created if missing, with its table
    /// [`LEDGER_TABLE`](crate::LEDGER_TABLE)) instead of in this process's memory, so that an
    /// approval stays used after a restart: a server whose state key survives the restart (read
    /// from a file) would otherwise accept an approval it already ran once more, until the state
    /// expires. Processes on one host that open the same file share it; instances on several
    /// hosts need [`with_shared_approvals`](Self::with_shared_approvals). Expired rows are
    /// deleted as approvals are recorded. If the file cannot be written later, writes are
    /// refused, never run unrecorded.
    ///
    /// Without the `sqlite` feature this is [`SqlError::EngineNotCompiled`].
    pub fn with_approvals_file(self, path: &std::path::Path) -> Result<SqlAdapter, SqlError> {
        #[cfg(feature = "sqlite")]
        {
            let file = FileLedger::open(path)?;
            Ok(self.with_approvals(Approvals::File(file)))
        }
        #[cfg(not(feature = "sqlite"))]
        {
            let _ = path;
            Err(crate::engine::no_sqlite())
        }
    }

    /// Lets `query` and `execute` calls that run longer than `after` become tasks (the tasks
    /// extension), for clients that declare it: the client is answered with a task it polls, so
    /// that a long report survives a dropped connection, and cancelling the task cancels the
    /// statement on the database. Calls that finish sooner, and calls from clients without the
    /// extension, are answered as usual; the approval of a write is asked before any task exists.
    /// The per-call time limit still applies. Not by default. Call it before
    /// [`with_shared_approvals`](Self::with_shared_approvals) and the like, or after: it is kept.
    ///
    /// # Panics
    ///
    /// If this adapter has been registered already (it is shared with the server then).
    #[must_use]
    pub fn tasks_after(mut self, after: Option<Duration>) -> SqlAdapter {
        Arc::get_mut(&mut self.inner)
            .expect("tasks_after is set before the adapter is registered")
            .task_after = after;
        self
    }

    /// Puts each statement's SQL text in its span (`db.query.text`) for distributed tracing; off by
    /// default, since statements may hold user data (the same rule as logging call arguments).
    ///
    /// Every `query` and `execute` runs in a span of target `kelson::trace::sql` named
    /// `sql.statement`, a child of the request's span (`kelson_server::observe::trace`), with
    /// `db.system.name`, `db.namespace` (the database's name), `db.operation.name` (`query` or
    /// `execute`) and, when it failed, `error.type`.
    ///
    /// # Panics
    ///
    /// If this adapter has been registered already (it is shared with the server then).
    #[must_use]
    pub fn statement_text_in_traces(mut self, on: bool) -> SqlAdapter {
        Arc::get_mut(&mut self.inner)
            .expect("statement_text_in_traces is set before the adapter is registered")
            .statement_text = on;
        self
    }

    /// The tool definition of `query` or `execute`, with the task policy.
    fn long_tool(&self, tool: Scoped<kelson_types::Tool>) -> ToolDef {
        let def = ToolDef::from(tool);
        match self.inner.task_after {
            Some(after) => def
                .tasks(TaskSupport::Optional)
                .task_start(TaskStart::After(after)),
            None => def,
        }
    }

    /// The same databases, with used approvals recorded in `approvals`.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    fn with_approvals(&self, approvals: Approvals) -> SqlAdapter {
        SqlAdapter {
            inner: Arc::new(Inner {
                databases: self.inner.databases.clone(),
                approvals,
                task_after: self.inner.task_after,
                statement_text: self.inner.statement_text,
            }),
        }
    }

    /// An adapter over one SQLite file, named [`DEFAULT_DATABASE`]. Without the `sqlite` feature
    /// this is [`SqlError::EngineNotCompiled`].
    pub fn sqlite(
        sqlite: impl Into<SqliteConfig>,
        config: DatabaseConfig,
    ) -> Result<SqlAdapter, SqlError> {
        Self::new([Database::sqlite(DEFAULT_DATABASE, sqlite, config)?])
    }

    /// An adapter over one PostgreSQL database, named [`DEFAULT_DATABASE`]. Without the
    /// `postgres` feature this is [`SqlError::EngineNotCompiled`].
    pub async fn postgres(
        postgres: impl Into<PostgresConfig>,
        config: DatabaseConfig,
    ) -> Result<SqlAdapter, SqlError> {
        Self::new([Database::postgres(DEFAULT_DATABASE, postgres, config).await?])
    }

    /// An adapter over one MySQL or MariaDB database, named [`DEFAULT_DATABASE`]. Without the
    /// `mysql` feature this is [`SqlError::EngineNotCompiled`].
    pub async fn mysql(
        mysql: impl Into<MysqlConfig>,
        config: DatabaseConfig,
    ) -> Result<SqlAdapter, SqlError> {
        Self::new([Database::mysql(DEFAULT_DATABASE, mysql, config).await?])
    }

    /// The databases, in the order given.
    pub fn databases(&self) -> &[Database] {
        &self.inner.databases
    }

    /// A paragraph for the server's `instructions`: what the databases are and how to use the tools.
    pub fn instructions(&self) -> String {
        let list: Vec<String> = self
            .inner
            .databases
            .iter()
            .map(|d| {
                let mut s = format!(
                    "{} ({}, {})",
                    d.name(),
                    d.engine(),
                    if d.allows_write() {
                        "writable with approval"
                    } else {
                        "read-only"
                    }
                );
                if let Some(desc) = d.description() {
                    s.push_str(": ");
                    s.push_str(desc);
                }
                s
            })
            .collect();
        let mut text = format!(
            "SQL databases: {}. Call list_tables to see the tables, describe_table for a table's columns and keys, \
             then query with one read-only statement per call, passing values in `params`.",
            list.join("; ")
        );
        if self.inner.databases.iter().any(Database::allows_write) {
            text.push_str(
                " Changes go through execute; the user approves each statement before it runs.",
            );
        } else {
            text.push_str(
                " No database takes changes: the execute tool is offered only when the operator \
                 enables writes (allow_write; `kelson serve --allow-write`).",
            );
        }
        text.push_str(&format!(
            " Each table's schema is also a resource: {URI}://{{database}}/{{schema}}/{{table}}.",
            URI = crate::URI_SCHEME
        ));
        text
    }

    /// Registers the tools (`execute` only when a database allows writes), a resource template per
    /// database, and a resource for every table that exists now.
    ///
    /// With scopes configured ([`DatabaseConfig::read_scopes`], [`DatabaseConfig::write_scopes`]),
    /// a caller sees the read tools when it may read some database and `execute` when it may write
    /// some database, and each call checks the scopes of the database it names: a call beyond them
    /// is refused as insufficient scope (a 403 over HTTP) before anything runs. A caller that may
    /// use none gets a refusal naming the first database's scopes.
    pub async fn register(&self, builder: ServerBuilder) -> Result<ServerBuilder, SqlError> {
        let dbs = &self.inner.databases;
        let read = Scopes::any(dbs.iter().map(|d| d.config().read_scopes.clone()));
        let write = Scopes::any(
            dbs.iter()
                .filter(|d| d.allows_write())
                .map(|d| d.config().write_scopes.clone()),
        );
        let mut builder = builder
            .enable_resources()
            .tool(
                tools::list_tables(dbs).with_scopes(read.clone()),
                self.handler(Self::list_tables),
            )
            .tool(
                tools::describe_table(dbs).with_scopes(read.clone()),
                self.handler(Self::describe_table),
            )
            .tool(
                self.long_tool(tools::query(dbs).with_scopes(read)),
                self.handler(Self::query),
            );
        if let Some(execute) = tools::execute(dbs) {
            builder = builder.tool(
                self.long_tool(execute.with_scopes(write)),
                self.handler(Self::execute),
            );
        }
        let cancel = CancellationToken::new();
        for db in dbs {
            builder = builder.resource_template(template(db), table_reader(db.clone()));
            let tables = db
                .inner
                .engine
                .tables(db.config().limits, &cancel)
                .await
                .map_err(|e| catalog_error(db, &e))?;
            let mut registered = db.inner.registered.lock().await;
            for t in tables {
                let uri = db.table_uri(&t.schema, &t.name);
                builder = builder.resource(table_resource(db, &t, &uri), table_reader(db.clone()));
                registered.insert(uri, t.fingerprint);
            }
        }
        Ok(builder)
    }

    /// Brings the table resources up to date with the databases: registers new tables, removes
    /// dropped ones (listeners get `resources/list_changed`), and tells subscribers of a table whose
    /// definition changed (`resources/updated`). The adapter calls this after every write; call it
    /// yourself when something else changes the schema.
    pub async fn refresh_resources(&self, server: &Server) -> Result<(), SqlError> {
        for db in &self.inner.databases {
            refresh(db, server).await?;
        }
        Ok(())
    }

    /// Brings the table resources up to date after another instance of the server changed a
    /// schema (a table created through `execute` there): as
    /// [`refresh_resources`](Self::refresh_resources), but what changes is told to this
    /// instance's listeners only, since the instance that made the change told everyone (through
    /// the server's relay, `kelson_server::relay`).
    pub async fn catch_up(&self, server: &Server) -> Result<(), SqlError> {
        for db in &self.inner.databases {
            refresh_with(db, server, false).await?;
        }
        Ok(())
    }

    /// A method as a tool handler: a closure over the adapter that takes the context and the
    /// typed arguments. (A closure rather than `State<..>`: two adapters may serve one server.)
    fn handler<A, F, Fut>(
        &self,
        method: F,
    ) -> impl Fn(RequestContext, A) -> Fut + Send + Sync + 'static
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(Arc<Inner>, RequestContext, A) -> Fut + Send + Sync + Copy + 'static,
        Fut: std::future::Future<Output = ToolResult> + Send + 'static,
    {
        let inner = self.inner.clone();
        move |ctx: RequestContext, args: A| method(inner.clone(), ctx, args)
    }

    async fn list_tables(
        inner: Arc<Inner>,
        ctx: RequestContext,
        args: ListTablesArgs,
    ) -> ToolResult {
        let db = match inner.database(args.database.as_deref(), false) {
            Ok(db) => db,
            Err(message) => return Ok(CallToolResult::error(message)),
        };
        allowed(&ctx, tools::LIST_TABLES, db, false)?;
        let cancel = ctx.cancellation_token();
        let tables = match db.inner.engine.tables(db.config().limits, &cancel).await {
            Ok(t) => t,
            Err(e) => return Ok(CallToolResult::error(e.message(tools::LIST_TABLES, false))),
        };
        let tables: Vec<TableInfo> = tables
            .into_iter()
            .filter(|t| args.schema.as_deref().is_none_or(|s| s == t.schema))
            .map(|t| TableInfo {
                uri: db.table_uri(&t.schema, &t.name),
                schema: t.schema,
                name: t.name,
                kind: t.kind,
                fingerprint: t.fingerprint,
            })
            .collect();
        let mut text = format!("Database {} ({})", db.name(), db.engine());
        if let Some(d) = db.description() {
            text.push_str(": ");
            text.push_str(d);
        }
        text.push_str("\n\n");
        if tables.is_empty() {
            text.push_str("No tables");
            if let Some(s) = &args.schema {
                text.push_str(&format!(" in schema \"{s}\""));
            }
            text.push_str(" that this server may read.\n");
        } else {
            let columns = ["schema", "name", "type"]
                .map(|n| output::Column {
                    name: n.into(),
                    ty: None,
                })
                .to_vec();
            let rows: Vec<Vec<Value>> = tables
                .iter()
                .map(|t| vec![json!(t.schema), json!(t.name), json!(t.kind)])
                .collect();
            text.push_str(&output::text_table(&columns, &rows));
            text.push_str(&format!(
                "({} {})\n",
                tables.len(),
                if tables.len() == 1 { "table" } else { "tables" }
            ));
        }
        let structured = json!({"database": db.name(), "engine": db.engine(), "tables": tables});
        Ok(rich(text, structured))
    }

    async fn describe_table(
        inner: Arc<Inner>,
        ctx: RequestContext,
        args: DescribeTableArgs,
    ) -> ToolResult {
        let db = match inner.database(args.database.as_deref(), false) {
            Ok(db) => db,
            Err(message) => return Ok(CallToolResult::error(message)),
        };
        allowed(&ctx, tools::DESCRIBE_TABLE, db, false)?;
        let cancel = ctx.cancellation_token();
        match describe(db, args.schema, args.table.clone(), &cancel).await {
            Ok(Some(schema)) => {
                let text = output::describe_text(&schema);
                let structured = serde_json::to_value(&schema).map_err(|e| {
                    HandlerError::failed(format!("could not encode the schema: {e}"))
                })?;
                Ok(rich(text, structured))
            }
            Ok(None) => Ok(CallToolResult::error(format!(
                "There is no table or view named \"{}\" in database {} that this server may read. \
                 Call list_tables to see the names (they are case-sensitive).",
                args.table,
                db.name()
            ))),
            Err(e) => Ok(CallToolResult::error(
                e.message(tools::DESCRIBE_TABLE, false),
            )),
        }
    }

    async fn query(inner: Arc<Inner>, ctx: RequestContext, args: QueryArgs) -> ToolResult {
        let db = match inner.database(args.database.as_deref(), false) {
            Ok(db) => db,
            Err(message) => return Ok(CallToolResult::error(message)),
        };
        allowed(&ctx, tools::QUERY, db, false)?;
        let params = match params(&args.params) {
            Ok(p) => p,
            Err(message) => return Ok(CallToolResult::error(message)),
        };
        let mut limits = db.config().limits;
        if let Some(n) = args.max_rows {
            limits.max_rows = n.clamp(1, limits.max_rows);
        }
        let cancel = ctx.cancellation_token();
        let started = Instant::now();
        let span = statement_span(db, tools::QUERY, &args.sql, inner.statement_text);
        let ran = db.inner.engine.query(args.sql, params, limits, &cancel);
        let ran = tracing::Instrument::instrument(ran, span.clone()).await;
        if let Err(e) = &ran {
            span.record("error.type", e.kind());
        }
        match ran {
            Ok(rows) => Ok(rows_result(db, rows, started, limits.max_rows, false)),
            Err(e) => Ok(CallToolResult::error(
                e.message(tools::QUERY, db.allows_write()),
            )),
        }
    }

    async fn execute(inner: Arc<Inner>, mut ctx: RequestContext, args: ExecuteArgs) -> ToolResult {
        let db = match inner.database(args.database.as_deref(), true) {
            Ok(db) => db,
            Err(message) => return Ok(CallToolResult::error(message)),
        };
        // Before the user is asked to approve anything.
        allowed(&ctx, tools::EXECUTE, db, true)?;
        let params = match params(&args.params) {
            Ok(p) => p,
            Err(message) => return Ok(CallToolResult::error(message)),
        };
        let form = approval::form(db.name(), db.engine(), &args.sql, &args.params);
        let nonce = match approval::confirm(&mut ctx, form)? {
            Decision::Approved { nonce } => nonce,
            Decision::NotApproved(how) => {
                return Ok(CallToolResult::error(format!(
                    "Not run: {how}, so nothing was changed. Do not retry unless the user asks for the change again."
                )));
            }
        };
        // Recorded before the statement runs: a replay racing this call is refused too.
        let ttl = ctx.server().config().state_ttl;
        match inner.approvals.consume(&nonce, ttl).await {
            Ok(()) => {}
            Err(Spent::AlreadyUsed) => {
                return Ok(CallToolResult::error(
                    "This approval was already used: the statement ran (or was attempted) once and will not run again. \
                     To run it again, call execute anew, which asks the user again.",
                ));
            }
            Err(Spent::Full) => {
                return Ok(CallToolResult::error(
                    "Too many approvals are outstanding; nothing was run. Try again in a few minutes.",
                ));
            }
            #[cfg(any(feature = "sqlite", feature = "postgres"))]
            Err(Spent::Unavailable(why)) => {
                tracing::error!(error = %why, "the approval ledger could not record an approval");
                return Ok(CallToolResult::error(
                    "The approval could not be recorded, so nothing was run. Try again later.",
                ));
            }
        }
        let cancel = ctx.cancellation_token();
        let started = Instant::now();
        let limits = db.config().limits;
        let span = statement_span(db, tools::EXECUTE, &args.sql, inner.statement_text);
        let ran = db.inner.engine.execute(args.sql, params, limits, &cancel);
        let outcome = tracing::Instrument::instrument(ran, span.clone()).await;
        if let Err(e) = &outcome {
            span.record("error.type", e.kind());
        }
        match outcome {
            Ok(rows) => {
                // Tables may have been created, dropped or altered.
                if let Err(e) = refresh(db, ctx.server()).await {
                    tracing::warn!(database = db.name(), error = %e, "could not refresh the table resources");
                }
                Ok(rows_result(db, rows, started, limits.max_rows, true))
            }
            Err(e) => Ok(CallToolResult::error(e.message(tools::EXECUTE, true))),
        }
    }
}

impl Inner {
    /// The database a call names, or the only one.
    fn database(&self, name: Option<&str>, for_write: bool) -> Result<&Database, String> {
        let candidates: Vec<&Database> = self
            .databases
            .iter()
            .filter(|d| !for_write || d.allows_write())
            .collect();
        match name {
            Some(name) => match self.databases.iter().find(|d| d.name() == name) {
                Some(d) if for_write && !d.allows_write() => Err(format!(
                    "Database {name} is read-only for this server: writes are not enabled on it (allow_write; `kelson serve --allow-write`)."
                )),
                Some(d) => Ok(d),
                None => Err(format!(
                    "There is no database named {name:?}; use one of: {}.",
                    names(&candidates)
                )),
            },
            None if candidates.len() == 1 => Ok(candidates[0]),
            None => Err(format!(
                "Name the database with the `database` argument: one of {}.",
                names(&candidates)
            )),
        }
    }
}

/// Refuses a call on `db` to a caller without its read (or write) scopes. The router has checked
/// the tool's scopes, which any one database's satisfy; this checks the database the call names.
/// spec 2026-07-28 basic/authorization: the refusal names every scope this operation needs.
fn allowed(
    ctx: &RequestContext,
    tool: &str,
    db: &Database,
    write: bool,
) -> Result<(), HandlerError> {
    let scopes = if write {
        &db.config().write_scopes
    } else {
        &db.config().read_scopes
    };
    if scopes.is_unrestricted() {
        return Ok(());
    }
    ctx.require_scopes(&format!("{tool} on database {}", db.name()), scopes)
}

fn names(dbs: &[&Database]) -> String {
    dbs.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
}

/// Maps the `params` argument; the error is the message for the model.
fn params(values: &[Value]) -> Result<Vec<Param>, String> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            Param::from_json(v).map_err(|e| format!("Invalid arguments: params[{i}]: {e}"))
        })
        .collect()
}

/// The result of `query` and `execute`.
fn rows_result(
    db: &Database,
    rows: Rows,
    started: Instant,
    max_rows: usize,
    write: bool,
) -> CallToolResult {
    let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let row_count = rows.rows.len();
    let mut text = String::new();
    if write {
        let affected = rows.rows_affected.unwrap_or(0);
        text.push_str(&format!(
            "The statement ran and was committed on database {}: {affected} {} changed.\n",
            db.name(),
            if affected == 1 { "row" } else { "rows" }
        ));
    }
    if rows.columns.is_empty() {
        if !write {
            text.push_str("The statement ran and returned no columns.\n");
        }
    } else {
        if write {
            text.push('\n');
        }
        text.push_str(&output::text_table(&rows.columns, &rows.rows));
        text.push_str(&output::footer(row_count, rows.truncated, max_rows));
        text.push('\n');
    }
    let mut structured = json!({
        "database": db.name(),
        "columns": rows.columns,
        "rows": rows.rows,
        "row_count": row_count,
        "truncated": rows.truncated.is_some(),
        "truncated_reason": rows.truncated.map(|t| t.as_str()),
        "elapsed_ms": elapsed,
    });
    if write {
        structured["rows_affected"] = json!(rows.rows_affected.unwrap_or(0));
    }
    rich(text, structured)
}

/// Describes a table, with the database name and URI added.
async fn describe(
    db: &Database,
    schema: Option<String>,
    table: String,
    cancel: &CancellationToken,
) -> Result<Option<TableSchema>, ExecError> {
    let found = db
        .inner
        .engine
        .describe(schema, table, db.config().limits, cancel)
        .await?;
    Ok(found.map(|d| TableSchema {
        database: db.name().to_owned(),
        uri: db.table_uri(&d.schema, &d.name),
        schema: d.schema,
        name: d.name,
        kind: d.kind,
        columns: d.columns,
        primary_key: d.primary_key,
        foreign_keys: d.foreign_keys,
        indexes: d.indexes,
        definition: d.definition,
    }))
}

fn catalog_error(db: &Database, e: &ExecError) -> SqlError {
    SqlError::Catalog {
        database: db.name().to_owned(),
        message: e.message(tools::LIST_TABLES, false),
    }
}

fn template(db: &Database) -> Scoped<ResourceTemplate> {
    ResourceTemplate::new(db.uri_template(), format!("{}-tables", db.name()))
        .with_title(format!("Table schemas of database {}", db.name()))
        .with_description(format!(
            "The columns, keys and indexes of a table or view of the {} database {}, as JSON.",
            db.engine(),
            db.name()
        ))
        .with_mime_type("application/json")
        .with_scopes(db.config().read_scopes.clone())
}

/// A table's resource, needing its database's read scopes.
fn table_resource(db: &Database, t: &CatalogEntry, uri: &str) -> Scoped<Resource> {
    Resource::new(uri, format!("{}.{}.{}", db.name(), t.schema, t.name))
        .with_title(format!(
            "{} {}.{} ({})",
            t.kind,
            t.schema,
            t.name,
            db.name()
        ))
        .with_description(format!(
            "Columns, keys and indexes of {} {}.{} in the {} database {}.",
            t.kind,
            t.schema,
            t.name,
            db.engine(),
            db.name()
        ))
        .with_mime_type("application/json")
        .with_scopes(db.config().read_scopes.clone())
}

/// Serves `resources/read` for a table URI: the table's description as JSON.
/// The handler of a table's resource and of the database's table template: the table's
/// description as JSON. The schema and table come from the URI (a fixed resource has no template
/// variables, and one parse serves both).
fn table_reader(
    db: Database,
) -> impl Fn(RequestContext, Uri) -> BoxFuture<Result<Vec<ResourceContents>, HandlerError>>
+ Send
+ Sync
+ 'static {
    move |ctx: RequestContext, Uri(uri): Uri| {
        let db = db.clone();
        Box::pin(async move {
            let vars = db.inner.template.match_uri(&uri).unwrap_or_default();
            let (Some(schema), Some(table)) = (vars.get("schema"), vars.get("table")) else {
                return Err(HandlerError::resource_not_found(&uri));
            };
            let cancel = ctx.cancellation_token();
            match describe(&db, Some(schema.clone()), table.clone(), &cancel).await {
                Ok(Some(described)) => {
                    let text = serde_json::to_string_pretty(&described)?;
                    Ok(vec![ResourceContents::Text(
                        TextResourceContents::new(uri, text).with_mime_type("application/json"),
                    )])
                }
                Ok(None) => Err(HandlerError::resource_not_found(&uri)),
                Err(e) => Err(HandlerError::failed(
                    e.message(tools::DESCRIBE_TABLE, false),
                )),
            }
        })
    }
}

/// Re-reads a database's catalog and brings its table resources on `server` up to date.
async fn refresh(db: &Database, server: &Server) -> Result<(), SqlError> {
    refresh_with(db, server, true).await
}

/// [`refresh`], with the changes told to the other instances through the server's relay
/// (`relay`) or to this instance's listeners only.
async fn refresh_with(db: &Database, server: &Server, relay: bool) -> Result<(), SqlError> {
    let cancel = CancellationToken::new();
    let mut registered = db.inner.registered.lock().await;
    let tables = db
        .inner
        .engine
        .tables(db.config().limits, &cancel)
        .await
        .map_err(|e| catalog_error(db, &e))?;
    if relay {
        apply_catalog(db, server, &mut registered, &tables)
    } else {
        kelson_server::relay::locally(|| apply_catalog(db, server, &mut registered, &tables))
    }
}

/// Registers new tables, removes dropped ones and notifies changed ones, against `registered`.
fn apply_catalog(
    db: &Database,
    server: &Server,
    registered: &mut std::collections::BTreeMap<String, String>,
    tables: &[CatalogEntry],
) -> Result<(), SqlError> {
    let mut now = std::collections::BTreeMap::new();
    for t in tables {
        now.insert(db.table_uri(&t.schema, &t.name), t);
    }
    let gone: Vec<String> = registered
        .keys()
        .filter(|uri| !now.contains_key(*uri))
        .cloned()
        .collect();
    for uri in gone {
        server.remove_resource(&uri);
        registered.remove(&uri);
    }
    for (uri, t) in now {
        match registered.get(&uri) {
            None => {
                server.add_resource(table_resource(db, t, &uri), table_reader(db.clone()))?;
                registered.insert(uri, t.fingerprint.clone());
            }
            Some(old) if *old != t.fingerprint => {
                server.notify_resource_updated(&uri);
                registered.insert(uri, t.fingerprint.clone());
            }
            Some(_) => {}
        }
    }
    Ok(())
}
