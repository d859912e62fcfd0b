//! Opening what the settings name: the state key, the sample database (created on first run), the
//! databases, the roots; then the server with both adapters registered.

use std::path::Path;

use anyhow::{Context as _, anyhow};
use kelson_fs::{FsAdapter, FsWatcher};
use kelson_server::observe::{Metrics, RequestLog};
use kelson_server::{Eras, MIN_KEY_LEN, Server, ServerConfig};
use kelson_sql::{
    Database, PoolStats, SampleOutcome, SqlAdapter, SqlError, SqliteConfig, create_sample_database,
};
use kelson_types::Implementation;

use super::file::ErasSetting;
use super::settings::{KeyFile, SAMPLE_NAME, Sample, Settings, Target};

/// The built server, and what must live as long as it is served.
pub(crate) struct Served {
    pub server: Server,
    /// The databases served, for readiness checks.
    pub databases: Vec<Database>,
    /// The broker relaying change notifications between instances, if there is one.
    pub broker: Option<kelson_broker::Broker>,
    /// `kelson gateway`: the upstreams behind the server.
    pub gateway: Option<kelson_gateway::Gateway>,
    /// Keeps file change notifications flowing; dropping it stops the watcher.
    _watcher: Option<FsWatcher>,
}

/// Why the server is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// To serve it.
    Serve,
    /// To check the settings (`--check`): everything is opened and the server built, but no file
    /// is created (a sample database that does not exist yet is left for the first start, the
    /// record of used approvals is not opened), and the broker and the file watcher are not
    /// started.
    Check,
}

pub(crate) async fn open(settings: &Settings, mode: Mode) -> anyhow::Result<Served> {
    let state_key = settings
        .server
        .state_key
        .as_ref()
        .map(read_key)
        .transpose()?;
    let previous_state_keys = settings
        .server
        .previous_state_keys
        .iter()
        .map(read_key)
        .collect::<anyhow::Result<Vec<_>>>()?;

    let mut databases = Vec::new();
    if let Some(sample) = &settings.sample
        && (mode == Mode::Serve || sample.path().exists())
    {
        databases.push(open_sample(sample)?);
    }
    for db in &settings.databases {
        let opened = match &db.target {
            Target::Sqlite(sqlite) => Database::sqlite(&db.name, sqlite.clone(), db.config.clone())
                .map_err(|e| match e {
                    SqlError::Sqlite { .. } => missing_sqlite_file(&db.key, &sqlite.path)
                        .err()
                        .map_or(e, |missing| SqlError::Config {
                            database: db.name.clone(),
                            reason: missing,
                        }),
                    e => e,
                }),
            Target::Postgres(pg) => {
                Database::postgres(&db.name, pg.clone(), db.config.clone()).await
            }
            Target::Mysql(my) => Database::mysql(&db.name, my.clone(), db.config.clone()).await,
        }
        .map_err(|e| open_error(&db.key, e))?;
        tracing::info!(
            "database {}: {}{}, {}",
            opened.name(),
            opened.engine(),
            opened
                .sqlite_path()
                .map(|p| format!(" {}", p.display()))
                .unwrap_or_default(),
            policy(&opened)
        );
        databases.push(opened);
    }
    let sql = if databases.is_empty() {
        None
    } else {
        let adapter = SqlAdapter::new(databases)
            .context("setting up the SQL adapter")?
            .tasks_after(settings.server.task_after)
            // Statement text in trace spans follows the rule for logged arguments.
            .statement_text_in_traces(settings.observability.log_arguments.is_some());
        match (&settings.server.approval_ledger, &settings.approvals_file) {
            (Some((url, key)), _) => Some(
                adapter
                    .with_shared_approvals(url)
                    .await
                    .with_context(|| format!("{key}: connecting to the approval ledger"))?,
            ),
            (None, Some(_)) if mode == Mode::Check => Some(adapter),
            (None, Some(path)) => {
                if let Some(dir) = path.parent() {
                    create_dir_private(dir).with_context(|| {
                        format!(
                            "creating the data folder {} (set KELSON_DATA_DIR to use another)",
                            dir.display()
                        )
                    })?;
                }
                let adapter = adapter.with_approvals_file(path).with_context(|| {
                    format!(
                        "opening the record of used write approvals {}",
                        path.display()
                    )
                })?;
                tracing::info!("used write approvals are recorded in {}", path.display());
                Some(adapter)
            }
            (None, None) => Some(adapter),
        }
    };

    let files = if settings.roots.is_empty() {
        None
    } else {
        // Each root alone first, so that an error names the flag or key that gave it.
        for root in &settings.roots {
            FsAdapter::new(vec![root.config.clone()], settings.fs_limits.clone())
                .map_err(|e| anyhow!("{}: {e}", root.key))?;
        }
        let configs = settings.roots.iter().map(|r| r.config.clone()).collect();
        let adapter = FsAdapter::new(configs, settings.fs_limits.clone())
            .map_err(|e| anyhow!("roots: {e}"))?;
        for root in adapter.roots() {
            tracing::info!("root {}: {}", root.name(), root.uri());
        }
        Some(adapter)
    };

    // A check opens no file: the gateway (its pin file and audit log) is set up to serve only;
    // `kelson gateway check` looks at the upstreams on its own.
    let gateway = match mode {
        Mode::Serve => settings
            .gateway
            .clone()
            .map(kelson_gateway::Gateway::new)
            .transpose()
            .map_err(|e| anyhow::Error::new(Misconfigured(e.to_string())))?,
        Mode::Check => None,
    };

    let version = env!("CARGO_PKG_VERSION");
    let mut builder = Server::builder(&settings.server.name, version)
        .info(Implementation::new(&settings.server.name, version).with_title(&settings.server.name))
        .config({
            let mut edited = ServerConfig::default();
            edited.eras = match settings.eras {
                ErasSetting::Both => Eras::Both,
                ErasSetting::Modern => Eras::ModernOnly,
            };
            edited.handler_timeout = Some(settings.handler_timeout);
            edited
        })
        // One log line per request; arguments only when asked, and only at DEBUG.
        .observer(RequestLog::new().with_arguments(settings.observability.log_arguments.is_some()));
    let builder_metrics = settings
        .observability
        .metrics
        .as_ref()
        .map(|_| Metrics::new());
    if let Some(metrics) = &builder_metrics {
        if let Some(sql) = &sql {
            pool_gauges(metrics, sql);
        }
        builder = builder.metrics(metrics.clone());
    }
    let instructions: Vec<String> = settings
        .instructions
        .iter()
        .cloned()
        .chain(sql.as_ref().map(SqlAdapter::instructions))
        .chain(files.as_ref().map(FsAdapter::instructions))
        .collect();
    builder = builder.instructions(instructions.join("\n\n"));
    if let Some(key) = state_key {
        builder = builder.state_key(key);
        for previous in previous_state_keys {
            builder = builder.previous_state_key(previous);
        }
    }
    if let Some((url, key)) = &settings.server.task_store {
        let store = kelson_sql::PgTaskStore::connect(url)
            .await
            .with_context(|| format!("{key}: connecting to the task store"))?
            .runner_timeout(settings.server.task_runner_timeout);
        tracing::info!("tasks are kept in the table {}", kelson_sql::TASKS_TABLE);
        builder = builder.task_store(store);
    }
    if let Some(sql) = &sql {
        builder = sql
            .register(builder)
            .await
            .context("registering the SQL tools")?;
    }
    if let Some(files) = &files {
        builder = files.register(builder);
    }
    if let Some(gateway) = &gateway {
        builder = gateway.prepare(builder);
    }
    let broker = match &settings.server.broker {
        Some(b) => {
            let broker = kelson_broker::Broker::new(&b.url, &b.channel)
                .map_err(|e| anyhow!("{}: {e}", b.key))?;
            if let Some(metrics) = builder_metrics.as_ref() {
                broker_metrics(metrics, &broker);
            }
            builder = builder.relay(std::sync::Arc::new(broker.clone()));
            Some(broker)
        }
        None => None,
    };
    let server = builder.build().context("building the server")?;
    if mode == Mode::Check {
        return Ok(Served {
            server,
            databases: sql
                .as_ref()
                .map(|sql| sql.databases().to_vec())
                .unwrap_or_default(),
            broker,
            gateway,
            _watcher: None,
        });
    }
    if let Some(gateway) = &gateway {
        gateway.start(&server).await;
        let tools = gateway.tools();
        for (name, state) in gateway.upstreams() {
            let count = tools.iter().filter(|(_, u)| *u == name).count();
            match state {
                kelson_gateway::State::Ready { version } => {
                    tracing::info!("upstream {name}: {count} tools served ({version})");
                }
                other => tracing::warn!("upstream {name}: not connected yet: {other:?}"),
            }
        }
    }
    if let Some(broker) = &broker {
        if let Some(sql) = &sql {
            catch_up_on_remote_changes(broker, sql, &server);
        }
        broker.start(server.relay_inlet());
        // Serving starts either way: while the broker is unreachable, listeners miss the other
        // instances' changes (and readiness says so), and the connection keeps being retried.
        if broker
            .wait_connected(std::time::Duration::from_secs(3))
            .await
        {
            tracing::info!(
                "change notifications are shared through {} on {}",
                broker.describe(),
                broker.channel()
            );
        } else {
            tracing::warn!(
                "the broker {} is not reachable yet; serving anyway, retrying in the background",
                broker.describe()
            );
        }
    }
    let watcher = files
        .as_ref()
        .map(|f| f.watch(&server))
        .transpose()
        .context("watching the roots")?;
    Ok(Served {
        server,
        databases: sql
            .as_ref()
            .map(|sql| sql.databases().to_vec())
            .unwrap_or_default(),
        broker,
        gateway,
        _watcher: watcher,
    })
}

/// When another instance's change arrives (it may have created or altered a table), re-reads the
/// catalogs, at most every 200 ms, so that this instance lists the same tables; what that changes
/// is told to this instance's listeners only, since the other instance told everyone.
fn catch_up_on_remote_changes(broker: &kelson_broker::Broker, sql: &SqlAdapter, server: &Server) {
    let wake = std::sync::Arc::new(tokio::sync::Notify::new());
    let waker = wake.clone();
    broker.on_remote_event(move || waker.notify_one());
    let (sql, server) = (sql.clone(), server.clone());
    tokio::spawn(async move {
        let stop = server.shutdown_token();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = wake.notified() => {}
            }
            // Changes come in bursts: one catalog read for the burst.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            if let Err(e) = sql.catch_up(&server).await {
                tracing::warn!(error = %e, "re-reading the catalog after another instance's change");
            }
        }
    });
}

/// The broker connection in the metrics: whether it is up, and its counts.
fn broker_metrics(metrics: &Metrics, broker: &kelson_broker::Broker) {
    let b = broker.clone();
    metrics.gauges(
        "mcp_broker_connected",
        "1 while the connection to the broker that shares change notifications is up.",
        &[],
        move |emit| emit(&[], i64::from(b.is_connected())),
    );
    type Pick = fn(&kelson_broker::BrokerStats) -> u64;
    let families: [(&str, &str, Pick); 4] = [
        (
            "mcp_broker_events_published_total",
            "Change notifications published to the other instances.",
            |s| s.published,
        ),
        (
            "mcp_broker_events_received_total",
            "Change notifications received from the other instances.",
            |s| s.received,
        ),
        (
            "mcp_broker_events_lost_total",
            "Change notifications not published: the broker was unreachable or the queue was full.",
            |s| s.lost,
        ),
        (
            "mcp_broker_disconnects_total",
            "Times the connection to the broker was lost.",
            |s| s.disconnects,
        ),
    ];
    for (name, help, pick) in families {
        let b = broker.clone();
        metrics.counters(name, help, &[], move |emit| {
            emit(&[], i64::try_from(pick(&b.stats())).unwrap_or(i64::MAX));
        });
    }
}

/// The SQL connection pools in the metrics, by database and pool (`read` or `write`): their size,
/// the connections lent to calls, and the calls waiting for one (the queue that
/// `--connection-wait` bounds). Read from the pools at each scrape.
fn pool_gauges(metrics: &Metrics, sql: &SqlAdapter) {
    type Pick = fn(&PoolStats) -> usize;
    let families: [(&str, &str, Pick); 3] = [
        (
            "mcp_sql_pool_connections",
            "The most SQL connections a pool holds, by database and pool (read, write).",
            |p| p.size,
        ),
        (
            "mcp_sql_pool_connections_in_use",
            "SQL connections lent to tool calls now, by database and pool.",
            |p| p.in_use,
        ),
        (
            "mcp_sql_pool_calls_waiting",
            "Tool calls waiting for a free SQL connection now, by database and pool.",
            |p| p.waiting,
        ),
    ];
    for (name, help, pick) in families {
        let databases = sql.databases().to_vec();
        metrics.gauges(name, help, &["database", "pool"], move |emit| {
            for db in &databases {
                for pool in db.pools() {
                    let value = i64::try_from(pick(&pool)).unwrap_or(i64::MAX);
                    emit(&[db.name(), pool.pool], value);
                }
            }
        });
    }
}

/// Why a database could not be opened, naming the flag or key that gave it.
/// `kelson serve` opens SQLite files that exist and never creates one (a typo in a path would
/// otherwise serve an empty database): when opening failed because the file is missing, the error
/// says so with its path, made absolute.
fn missing_sqlite_file(key: &str, path: &Path) -> Result<(), String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let shown = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            Err(format!(
                "{key}: the SQLite file {} does not exist; kelson serve opens existing database \
                 files and does not create them (check the path, or create the database first, \
                 e.g. with sqlite3)",
                shown.display()
            ))
        }
        // Anything else (a directory, no permission) is for SQLite's own message.
        _ => Ok(()),
    }
}

/// An error of the settings found while opening what they name: a database setting its engine
/// refuses as written (a name, a URL it cannot read, an option it does not support, a value out
/// of range). `kelson serve` exits with its usage status for it (see exit.rs), and with the
/// status of something unavailable for the other errors of opening.
#[derive(Debug)]
pub(crate) struct Misconfigured(pub String);

impl std::fmt::Display for Misconfigured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Misconfigured {}

fn open_error(key: &str, error: SqlError) -> anyhow::Error {
    let misconfigured = match &error {
        SqlError::InvalidName(_)
        | SqlError::DuplicateName(_)
        | SqlError::NoDatabase
        | SqlError::EngineNotCompiled { .. } => true,
        // The missing file is worded as one (missing_sqlite_file): not a setting's fault.
        SqlError::Config { reason, .. } => !reason.starts_with(key),
        // A URL tokio-postgres could not read names no server.
        SqlError::Postgres { target, .. } => target.is_empty(),
        _ => false,
    };
    let error = worded(key, error);
    if misconfigured {
        anyhow::Error::new(Misconfigured(format!("{error:#}")))
    } else {
        error
    }
}

fn worded(key: &str, error: SqlError) -> anyhow::Error {
    match error {
        // The adapter's own message offers `allow_privileged_role`, which `kelson serve` does not
        // expose: a privileged role is always refused here.
        SqlError::PrivilegedRole {
            role, privileges, ..
        } => anyhow!(
            "{key}: role {role:?} is {privileges}, which can escape a read-only transaction (for \
             example with COPY ... TO PROGRAM); connect as a least-privilege role (see kelson's \
             docs/serve/databases.md, section PostgreSQL)"
        ),
        // As for PostgreSQL: `allow_privileged_account` is not exposed by `kelson serve`.
        SqlError::PrivilegedAccount {
            account,
            privileges,
            ..
        } => anyhow!(
            "{key}: account {account} holds {privileges}, which can escape a read-only \
             transaction; connect as a least-privilege account (see kelson's \
             docs/serve/databases.md, section MySQL and MariaDB)"
        ),
        SqlError::Mysql {
            target, message, ..
        } => anyhow!("{key}: MySQL {}: {message}", target.trim_end()),
        // The key names the database already; the target says where it is and as whom.
        SqlError::Postgres {
            target, message, ..
        } => anyhow!("{key}: PostgreSQL {}: {message}", target.trim_end()),
        // A directory or a file of something else, named as a missing file is: by its absolute
        // path.
        SqlError::NotSqlite { path, reason } => {
            let shown = std::path::absolute(&path).unwrap_or(path);
            anyhow!("{key}: {} {reason}", shown.display())
        }
        // Already in words, key included.
        SqlError::Config { reason, .. } if reason.starts_with(key) => anyhow!(reason),
        e => anyhow!("{key}: {e}"),
    }
}

fn policy(db: &Database) -> &'static str {
    if db.allows_write() {
        "writable through execute, each statement approved by the user"
    } else {
        "read-only"
    }
}

/// Creates the sample database on first run (never overwriting a file that is there) and opens it.
fn open_sample(sample: &Sample) -> anyhow::Result<Database> {
    create_dir_private(&sample.data_dir).with_context(|| {
        format!(
            "creating the data folder {} (set KELSON_DATA_DIR to use another)",
            sample.data_dir.display()
        )
    })?;
    let path = sample.path();
    let outcome = create_sample_database(&path)
        .with_context(|| format!("creating the sample database {}", path.display()))?;
    let sqlite = {
        let mut edited = SqliteConfig::new(&path);
        edited.read_connections = sample.read_connections;
        edited
    };
    let db = Database::sqlite(SAMPLE_NAME, sqlite, sample.config.clone())
        .with_context(|| format!("opening the sample database {}", path.display()))?;
    let how = match outcome {
        SampleOutcome::Created => "created now",
        SampleOutcome::AlreadyExists => "existing",
    };
    tracing::info!(
        "database {SAMPLE_NAME}: SQLite {} ({how}), {}",
        path.display(),
        policy(&db)
    );
    Ok(db)
}

/// Creates `dir` and its parents; the folders created are private to the user (0700).
fn create_dir_private(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Reads the `requestState` key: the file's bytes, less one trailing line break (so a key written
/// by `openssl rand -hex 32 > FILE` works), at least [`MIN_KEY_LEN`] of them.
fn read_key(file: &KeyFile) -> anyhow::Result<Vec<u8>> {
    let path = &file.path;
    let mut key = std::fs::read(path)
        .map_err(|e| anyhow!("{}: cannot read {}: {e}", file.key, path.display()))?;
    if key.ends_with(b"\n") {
        key.pop();
        if key.ends_with(b"\r") {
            key.pop();
        }
    }
    if key.len() < MIN_KEY_LEN {
        return Err(anyhow!(
            "{}: {} holds {} bytes; the state key needs at least {MIN_KEY_LEN} (make one with: head -c 32 /dev/urandom > {})",
            file.key,
            path.display(),
            key.len(),
            path.display()
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                "{} {} can be read by other users; anyone with the key can forge requestState (chmod 600 it)",
                file.key,
                path.display()
            );
        }
    }
    Ok(key)
}
