//! The databases' settings: `[limits]`, `[databases.NAME]` and `--db` laid over one another, and
//! the sample database (`[sample]`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use kelson_server::Scopes;
use kelson_sql::{
    DEFAULT_DATABASE, DatabaseConfig, Limits, MysqlConfig, PostgresConfig, SqliteConfig,
};

use super::{DatabaseSettings, SAMPLE_NAME, Sample, Target, scopes};
use crate::serve::ServeArgs;
use crate::serve::file::{DatabaseSection, FileConfig};

/// The databases to open, and the limits of those that set none of their own.
pub(super) struct Databases {
    pub(super) databases: Vec<DatabaseSettings>,
    /// The defaults, then `[limits]`, then the flags: the sample database's limits too.
    pub(super) base_limits: Limits,
}

/// The file's databases (whose relative paths `in_file` resolves), then the flags'.
pub(super) fn resolve(
    args: &ServeArgs,
    file: &FileConfig,
    in_file: &dyn Fn(&Path) -> PathBuf,
) -> Result<Databases, String> {
    // Limits: defaults, then [limits], then the database's own, then the flags; each layer is
    // checked on its own so that the error names where the bad value was written.
    let flags = Layer {
        max_rows: args.max_rows,
        max_bytes: args.max_bytes,
        timeout: args.query_timeout,
        connection_wait: args.connection_wait,
    };
    flags.check(&|field| {
        match field {
            "max_rows" => "--max-rows",
            "max_bytes" => "--max-bytes",
            "connection_wait" => "--connection-wait",
            _ => "--query-timeout",
        }
        .to_owned()
    })?;
    let file_limits = Layer {
        max_rows: file.limits.max_rows,
        max_bytes: file.limits.max_bytes,
        timeout: file.limits.query_timeout.map(|s| s.0),
        connection_wait: file.limits.connection_wait.map(|s| s.0),
    };
    file_limits.check(&|field| format!("limits.{}", file_key(field)))?;
    let base_limits = flags.over(file_limits.over(Limits::default()));
    if let Some(n) = args.read_connections {
        check_read_connections(n, "--read-connections")?;
    }

    // Databases: the file's, then the flags' (a flag's name replaces the file's database).
    let mut databases = Vec::new();
    for (name, section) in &file.databases {
        let key = format!("databases.{name}");
        databases.push(file_database(
            name,
            &key,
            section,
            &file_limits,
            &flags,
            args,
            &in_file,
        )?);
    }
    let mut unnamed = false;
    let mut flag_names: Vec<String> = Vec::new();
    for value in &args.dbs {
        let (name, url) = split_db_flag(value);
        let name = match name {
            Some(name) => name.to_owned(),
            None if unnamed => {
                return Err(format!(
                    "--db {value}: more than one database without a name; name each one: --db NAME=URL"
                ));
            }
            None => {
                unnamed = true;
                DEFAULT_DATABASE.to_owned()
            }
        };
        if flag_names.contains(&name) {
            return Err(format!("--db {name}: the name {name:?} is given twice"));
        }
        flag_names.push(name.clone());
        let key = format!("--db {name}");
        let mut target = target(url, None).map_err(|e| format!("{key}: {e}"))?;
        if let (Target::Sqlite(sqlite), Some(n)) = (&mut target, args.read_connections) {
            sqlite.read_connections = n;
        }
        let config = {
            let mut edited = DatabaseConfig::default();
            edited.limits = base_limits;
            edited.allow_write = args.allow_write;
            edited.description = None;
            edited.read_scopes = default_scopes(&name, "read");
            edited.write_scopes = default_scopes(&name, "write");
            edited
        };
        databases.retain(|d: &DatabaseSettings| d.name != name);
        databases.push(DatabaseSettings {
            name,
            key,
            target,
            config,
        });
    }
    Ok(Databases {
        databases,
        base_limits,
    })
}

/// The sample database, when it is on; `data_dir` finds the data folder it lives in.
pub(super) fn sample(
    args: &ServeArgs,
    file: &FileConfig,
    databases: &[DatabaseSettings],
    base_limits: Limits,
    data_dir: &dyn Fn() -> Result<PathBuf, String>,
) -> Result<Option<Sample>, String> {
    // The sample: on by default only when no database is configured.
    let sample_on = args.sample
        || match file.sample.enabled {
            Some(on) => on,
            None => databases.is_empty(),
        };
    let sample = if sample_on {
        if databases.iter().any(|d| d.name == SAMPLE_NAME) {
            return Err(format!(
                "databases.{SAMPLE_NAME}: the name {SAMPLE_NAME:?} belongs to the sample database; rename the database or turn the sample off"
            ));
        }
        let data_dir = data_dir()?;
        let read_connections = match (args.read_connections, file.sample.read_connections) {
            (Some(n), _) => n,
            (None, Some(n)) => check_read_connections(n, "sample.read_connections")?,
            (None, None) => SqliteConfig::default_read_connections(),
        };
        Some(Sample {
            data_dir,
            read_connections,
            config: {
                let mut edited = DatabaseConfig::default();
                edited.limits = base_limits;
                edited.allow_write = args.allow_write || file.sample.allow_write;
                edited.description = Some(
                    "the sample shop: categories, products, customers, orders and order items"
                        .to_owned(),
                );
                edited.read_scopes = scopes(
                    file.sample.read_scope.as_deref(),
                    "sample.read_scope",
                    || default_scopes(SAMPLE_NAME, "read"),
                )?;
                edited.write_scopes = scopes(
                    file.sample.write_scope.as_deref(),
                    "sample.write_scope",
                    || default_scopes(SAMPLE_NAME, "write"),
                )?;
                edited
            },
        })
    } else {
        None
    };
    Ok(sample)
}

/// The settings a server database (PostgreSQL, MySQL) takes from its section.
struct ServerOptions {
    connections: Option<usize>,
    ssl_mode: Option<kelson_sql::SslMode>,
    ssl_root_cert: Option<PathBuf>,
}

fn server_options(
    key: &str,
    section: &DatabaseSection,
    in_file: &dyn Fn(&Path) -> PathBuf,
) -> Result<ServerOptions, String> {
    if section.read_connections.is_some() {
        return Err(format!(
            "{key}.read_connections: only for SQLite databases (PostgreSQL and MySQL use connections)"
        ));
    }
    let ssl_mode = section
        .ssl_mode
        .as_deref()
        .map(|mode| {
            mode.parse::<kelson_sql::SslMode>()
                .map_err(|e| format!("{key}.ssl_mode: {e}"))
        })
        .transpose()?;
    Ok(ServerOptions {
        connections: section.connections,
        ssl_mode,
        ssl_root_cert: section.ssl_root_cert.as_deref().map(in_file),
    })
}

fn file_database(
    name: &str,
    key: &str,
    section: &DatabaseSection,
    file_limits: &Layer,
    flags: &Layer,
    args: &ServeArgs,
    in_file: &dyn Fn(&Path) -> PathBuf,
) -> Result<DatabaseSettings, String> {
    let own = Layer {
        max_rows: section.max_rows,
        max_bytes: section.max_bytes,
        timeout: section.query_timeout.map(|s| s.0),
        connection_wait: section.connection_wait.map(|s| s.0),
    };
    own.check(&|field| format!("{key}.{}", file_key(field)))?;
    let mut target = target(&section.url, Some(in_file)).map_err(|e| format!("{key}.url: {e}"))?;
    match &mut target {
        Target::Postgres(pg) => {
            if let Some(url) = &section.write_url {
                match self::target(url, None) {
                    Ok(Target::Postgres(_)) => pg.write_url = Some(url.clone()),
                    _ => {
                        return Err(format!(
                            "{key}.write_url: must be a postgres:// URL like url"
                        ));
                    }
                }
            }
            let server = server_options(key, section, in_file)?;
            if let Some(n) = server.connections {
                pg.connections = n;
            }
            pg.ssl_mode = server.ssl_mode;
            pg.ssl_root_cert = server.ssl_root_cert;
        }
        Target::Mysql(my) => {
            if let Some(url) = &section.write_url {
                match self::target(url, None) {
                    Ok(Target::Mysql(_)) => my.write_url = Some(url.clone()),
                    _ => {
                        return Err(format!(
                            "{key}.write_url: must be a mysql:// (or mariadb://) URL like url"
                        ));
                    }
                }
            }
            let server = server_options(key, section, in_file)?;
            if let Some(n) = server.connections {
                my.connections = n;
            }
            my.ssl_mode = server.ssl_mode;
            my.ssl_root_cert = server.ssl_root_cert;
        }
        Target::Sqlite(sqlite) => {
            if section.write_url.is_some() {
                return Err(format!(
                    "{key}.write_url: only for PostgreSQL and MySQL databases"
                ));
            }
            if section.ssl_mode.is_some() {
                return Err(format!(
                    "{key}.ssl_mode: only for PostgreSQL and MySQL databases"
                ));
            }
            if section.ssl_root_cert.is_some() {
                return Err(format!(
                    "{key}.ssl_root_cert: only for PostgreSQL and MySQL databases"
                ));
            }
            if section.connections.is_some() {
                return Err(format!(
                    "{key}.connections: only for PostgreSQL and MySQL databases (SQLite uses read_connections)"
                ));
            }
            if let Some(n) = section.read_connections {
                sqlite.read_connections =
                    check_read_connections(n, &format!("{key}.read_connections"))?;
            }
            if let Some(n) = args.read_connections {
                sqlite.read_connections = n;
            }
        }
    }
    Ok(DatabaseSettings {
        name: name.to_owned(),
        key: key.to_owned(),
        target,
        config: {
            let mut edited = DatabaseConfig::default();
            edited.limits = flags.over(own.over(file_limits.over(Limits::default())));
            edited.allow_write = args.allow_write || section.allow_write;
            edited.description = section.description.clone();
            edited.read_scopes = scopes(
                section.read_scope.as_deref(),
                &format!("{key}.read_scope"),
                || default_scopes(name, "read"),
            )?;
            edited.write_scopes = scopes(
                section.write_scope.as_deref(),
                &format!("{key}.write_scope"),
                || default_scopes(name, "write"),
            )?;
            edited
        },
    })
}

/// The scopes a database needs by default: `NAME:read` and `NAME:write`. With an auth layer in
/// front, least privilege: a token reaches a database only when it was granted that database's
/// scope. Without one, callers are anonymous and scopes restrict nothing.
fn default_scopes(name: &str, access: &str) -> Scopes {
    Scopes::all([format!("{name}:{access}")])
}

/// One layer of limits: the values one place sets.
#[derive(Debug, Default)]
struct Layer {
    max_rows: Option<usize>,
    max_bytes: Option<usize>,
    timeout: Option<Duration>,
    connection_wait: Option<Duration>,
}

impl Layer {
    fn over(&self, limits: Limits) -> Limits {
        {
            let mut edited = Limits::default();
            edited.max_rows = self.max_rows.unwrap_or(limits.max_rows);
            edited.max_bytes = self.max_bytes.unwrap_or(limits.max_bytes);
            edited.timeout = self.timeout.unwrap_or(limits.timeout);
            edited.connection_wait = self.connection_wait.unwrap_or(limits.connection_wait);
            edited
        }
    }

    /// Checks this layer's values alone; `key` names a field (`max_rows`, `max_bytes`, `timeout`,
    /// `connection_wait`) where it was written.
    fn check(&self, key: &dyn Fn(&str) -> String) -> Result<(), String> {
        match self.over(Limits::default()).validate() {
            Ok(()) => Ok(()),
            Err(reason) => {
                // The adapter's reasons start with the field's name: "max_rows must be ...".
                let (field, rest) = reason.split_once(' ').unwrap_or(("", reason));
                Err(format!("{}: {rest}", key(field)))
            }
        }
    }
}

/// The file's name for a field of `kelson_sql::Limits`.
fn file_key(field: &str) -> &str {
    if field == "timeout" {
        "query_timeout"
    } else {
        field
    }
}

/// A number of SQLite read connections, within what the adapter accepts.
fn check_read_connections(n: usize, key: &str) -> Result<usize, String> {
    let max = SqliteConfig::MAX_READ_CONNECTIONS;
    if (1..=max).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{key}: must be between 1 and {max}"))
    }
}

/// Splits `--db [NAME=]URL`. A value that starts like a URL or a path has no name, so that a path
/// holding `=` still works.
pub(super) fn split_db_flag(value: &str) -> (Option<&str>, &str) {
    let unnamed = [
        "postgres://",
        "postgresql://",
        "mysql://",
        "mariadb://",
        "sqlite:",
        "/",
        ".",
        "~",
    ]
    .iter()
    .any(|p| value.starts_with(p));
    if !unnamed && let Some((name, url)) = value.split_once('=') {
        let name_like = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if name_like {
            return (Some(name), url);
        }
    }
    (None, value)
}

/// What a database URL names: `postgres://...` or `postgresql://...`, `mysql://...` or
/// `mariadb://...`, `sqlite:PATH` (also
/// `sqlite://PATH`), or a plain path to an SQLite file. Relative paths resolve with `base` (the
/// configuration file's folder) when given. Errors never repeat the URL, which may hold a password.
fn target(url: &str, base: Option<&dyn Fn(&Path) -> PathBuf>) -> Result<Target, String> {
    let url = url.trim();
    if url.is_empty() {
        return Err("the database URL is empty".to_owned());
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Target::Postgres(PostgresConfig::new(url)));
    }
    if url.starts_with("mysql://") || url.starts_with("mariadb://") {
        return Ok(Target::Mysql(MysqlConfig::new(url)));
    }
    let path = if let Some(rest) = url.strip_prefix("sqlite:") {
        rest.strip_prefix("//").unwrap_or(rest)
    } else if let Some((scheme, _)) = url.split_once("://") {
        return Err(format!(
            "unsupported database URL scheme {scheme:?}: use postgres://..., mysql://... (or \
             mariadb://...), sqlite:PATH or the path of an SQLite file"
        ));
    } else {
        url
    };
    if path.is_empty() {
        return Err("sqlite: needs the path of the database file".to_owned());
    }
    let path = Path::new(path);
    let path = match base {
        Some(resolve) => resolve(path),
        None => path.to_path_buf(),
    };
    Ok(Target::Sqlite(SqliteConfig::new(path)))
}
