//! `kelson serve --check`: the settings checked and everything they name opened as a start would
//! (databases, roots, key and certificate files, the authorization server), without serving;
//! what would be served is printed on stdout.

use std::fmt::Write as _;
use std::path::Path;

use super::exit::Failure;
use super::open::{self, Mode};
use super::settings::{Settings, Target};
use super::{authenticator, eras_line, load_tls, policy};

/// Checks `settings` (read from the flags and the file `config`) and prints the report; errors
/// are worded as a start's (`in_file` names the file and line of a key).
pub(super) async fn run(
    settings: &Settings,
    config: Option<&Path>,
    in_file: &dyn Fn(String) -> anyhow::Error,
) -> Result<(), Failure> {
    let unavailable = |e: String| Failure::Unavailable(in_file(e));
    let served = open::open(settings, Mode::Check)
        .await
        .map_err(|e| super::open_failure(e, in_file))?;
    let tls = if settings.stdio {
        None
    } else {
        load_tls(settings).map_err(unavailable)?
    };
    let auth = if settings.stdio {
        None
    } else {
        authenticator(settings).await.map_err(unavailable)?
    };
    let mut out = String::new();
    let from = match config {
        Some(path) => format!("{} and the flags", path.display()),
        None => "the flags".to_owned(),
    };
    let command = if settings.gateway.is_some() {
        "kelson gateway check"
    } else {
        "kelson serve --check"
    };
    let _ = writeln!(
        out,
        "{command}: the settings ({from}) and what they name are good; nothing was started"
    );
    if settings.stdio {
        let _ = writeln!(out, "listener:  stdio (newline-delimited JSON-RPC)");
    } else {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let _ = writeln!(
            out,
            "listener:  {scheme}://{}{} (Streamable HTTP; GET /healthz, /readyz)",
            settings.http.bind, settings.http.path
        );
        let _ = writeln!(out, "accepting: {}", policy(settings, settings.http.bind));
        if let Some(files) = &settings.http.tls {
            let _ = writeln!(
                out,
                "https:     certificate {}, key {}",
                files.cert.display(),
                files.key.display()
            );
        }
    }
    let _ = writeln!(out, "eras:      {}", eras_line(settings, settings.stdio));
    match (&settings.auth, &auth) {
        (Some(a), Some(auth)) => {
            let _ = writeln!(
                out,
                "auth:      bearer tokens of {} for {} (metadata at {})",
                a.config.issuer,
                a.config.resource,
                auth.resource_metadata_url()
            );
        }
        _ if settings.stdio => {
            let _ = writeln!(
                out,
                "auth:      none (stdio serves the host that starts it)"
            );
        }
        _ => {
            let _ = writeln!(out, "auth:      none");
        }
    }
    if let Some(m) = &settings.observability.metrics {
        match m.addr {
            Some((addr, _)) => {
                let _ = writeln!(out, "metrics:   http://{addr}{}", m.path);
            }
            None if settings.stdio => {}
            None => {
                let _ = writeln!(out, "metrics:   {} on the listener", m.path);
            }
        }
    }
    if let Some(sample) = &settings.sample {
        let path = sample.path();
        let how = if served
            .databases
            .iter()
            .any(|d| d.name() == super::settings::SAMPLE_NAME)
        {
            "exists"
        } else {
            "created on the first start"
        };
        let _ = writeln!(
            out,
            "database {}: SQLite {} ({how}), {}",
            super::settings::SAMPLE_NAME,
            path.display(),
            access(sample.config.allow_write)
        );
    }
    for db in &settings.databases {
        let location = match &db.target {
            Target::Sqlite(sqlite) => {
                let path = std::path::absolute(&sqlite.path).unwrap_or(sqlite.path.clone());
                format!("SQLite {}", path.display())
            }
            Target::Postgres(pg) => format!("PostgreSQL {}", without_secrets(&pg.url)),
            Target::Mysql(my) => format!("MySQL {}", without_secrets(&my.url)),
        };
        let _ = writeln!(
            out,
            "database {}: {location}, {}",
            db.name,
            access(db.config.allow_write)
        );
    }
    if !settings.roots.is_empty() {
        let configs = settings.roots.iter().map(|r| r.config.clone()).collect();
        let adapter = kelson_fs::FsAdapter::new(configs, settings.fs_limits.clone())
            .map_err(|e| unavailable(format!("roots: {e}")))?;
        for root in adapter.roots() {
            let _ = writeln!(out, "root {}: {}", root.name(), root.uri());
        }
    }
    let tools: Vec<String> = served.server.tools().into_iter().map(|t| t.name).collect();
    if !tools.is_empty() {
        let _ = writeln!(out, "tools:     {}", tools.join(", "));
    }
    if let Some(gateway) = &settings.gateway {
        let (report, unreachable) = crate::gateway::report(gateway)
            .await
            .map_err(|e| Failure::Usage(in_file(e)))?;
        out.push_str(&report);
        print!("{out}");
        if unreachable > 0 {
            return Err(Failure::Unavailable(anyhow::anyhow!(
                "{unreachable} upstream(s) could not be reached (see above)"
            )));
        }
        return Ok(());
    }
    print!("{out}");
    Ok(())
}

/// How a database may be used.
fn access(write: bool) -> &'static str {
    if write {
        "writable through execute, each statement approved by the user"
    } else {
        "read-only"
    }
}

/// A database URL without its password and query (which may hold one): `postgres://ada@host/db`.
fn without_secrets(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split(':').next().unwrap_or_default();
            format!("{user}@{host}")
        }
        None => authority.to_owned(),
    };
    format!("{scheme}://{authority}{path}")
}

#[cfg(test)]
mod tests {
    use super::without_secrets;

    #[test]
    fn urls_are_shown_without_their_secrets() {
        assert_eq!(
            without_secrets("postgres://ada:s3cret@db.example:5432/sales?sslmode=require"),
            "postgres://ada@db.example:5432/sales"
        );
        assert_eq!(
            without_secrets("mysql://root@127.0.0.1:3306/test"),
            "mysql://root@127.0.0.1:3306/test"
        );
        assert_eq!(
            without_secrets("postgres://h/db?password=x"),
            "postgres://h/db"
        );
        assert_eq!(without_secrets("postgres://a:b@h"), "postgres://a@h");
    }
}
