//! A MySQL or MariaDB URL made ready to connect with: the scheme (`mysql://` or `mariadb://`),
//! the TLS settings taken out of its query, and the driver's options.
//!
//! mysql_async reads many settings from a URL's query (`socket`, `prefer_socket`, `require_ssl`,
//! `stmt_cache_size`, ...), several of which would undo what the engine relies on (a socket path
//! that skips TLS, a statement cache that keeps user statements). So only the TLS parameters are
//! read, under libpq's names (`sslmode`, `sslrootcert`, the same settings as PostgreSQL's) or
//! MySQL's (`ssl-mode`, `ssl-ca`); any other parameter is refused with a sentence naming it.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mysql_async::{Opts, OptsBuilder, SslOpts};

use crate::config::SslMode;

/// A URL made ready: the driver's options, and `user@host:port/db` for messages.
#[derive(Clone)]
pub(crate) struct Prepared {
    pub(crate) opts: Opts,
    pub(crate) target: String,
    pub(crate) connect_timeout: Duration,
}

/// Reads `url`, lays `mode` and `root_cert` (the adapter's settings) over the TLS parameters it
/// carries, and builds the driver's options. An error is a sentence about the URL or setting.
pub(crate) fn prepare(
    url: &str,
    mode: Option<SslMode>,
    root_cert: Option<&Path>,
    connect_timeout: Duration,
) -> Result<Prepared, String> {
    let rest = url
        .strip_prefix("mysql://")
        .or_else(|| url.strip_prefix("mariadb://"))
        .ok_or_else(|| {
            "expected a mysql://user@host:port/database (or mariadb://) URL".to_owned()
        })?;
    let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut url_mode = None;
    let mut url_root = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value)?;
        match key {
            "sslmode" | "ssl-mode" | "ssl_mode" => url_mode = Some(parse_mode(&value)?),
            "sslrootcert" | "ssl-ca" | "ssl_ca" => url_root = Some(PathBuf::from(value)),
            other => {
                return Err(format!(
                    "unknown URL parameter {other:?}: a MySQL URL may carry only sslmode (or \
                     ssl-mode) and sslrootcert (or ssl-ca)"
                ));
            }
        }
    }
    let opts = Opts::from_url(&format!("mysql://{base}"))
        .map_err(|e| format!("the URL cannot be read: {e}"))?;
    let loopback = is_loopback(opts.ip_or_hostname());
    let mode = mode.or(url_mode).unwrap_or(if loopback {
        SslMode::Disable
    } else {
        SslMode::VerifyFull
    });
    let root_cert = root_cert.map(Path::to_path_buf).or(url_root);
    let ssl = ssl_opts(mode, root_cert.as_deref())?;
    let target = format!(
        "{}@{}:{}/{}",
        opts.user().unwrap_or(""),
        host_for_display(opts.ip_or_hostname()),
        opts.tcp_port(),
        opts.db_name().unwrap_or("")
    );
    let opts = OptsBuilder::from_opts(opts)
        // Never a socket found through the server's `socket` variable: the URL's host is what the
        // TLS settings were chosen for.
        .prefer_socket(false)
        // User statements are prepared once and never kept: a cached statement would outlive the
        // session reset that ends every call.
        .stmt_cache_size(0)
        .tcp_nodelay(true)
        .ssl_opts(ssl)
        .connect_attribute("program_name", "kelson-sql");
    Ok(Prepared {
        opts: opts.into(),
        target,
        connect_timeout,
    })
}

/// libpq's mode names, or MySQL's (`DISABLED`, `REQUIRED`, `VERIFY_CA`, `VERIFY_IDENTITY`).
fn parse_mode(text: &str) -> Result<SslMode, String> {
    match text.to_ascii_uppercase().as_str() {
        "DISABLED" => Ok(SslMode::Disable),
        "PREFERRED" => Ok(SslMode::Prefer),
        "REQUIRED" => Ok(SslMode::Require),
        "VERIFY_CA" => Ok(SslMode::VerifyCa),
        "VERIFY_IDENTITY" => Ok(SslMode::VerifyFull),
        _ => text.parse::<SslMode>(),
    }
}

/// A loopback address or `localhost`: reached without TLS unless a mode is set, as PostgreSQL.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn host_for_display(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// The driver's TLS options for `mode`: `None` for `disable`. `prefer` is refused, since
/// mysql_async either requires TLS or does not use it.
fn ssl_opts(mode: SslMode, ca_file: Option<&Path>) -> Result<Option<SslOpts>, String> {
    match mode {
        SslMode::Disable => return Ok(None),
        SslMode::Prefer => {
            return Err(
                "sslmode prefer is not supported for MySQL (the driver cannot fall back to an \
                 unencrypted connection): use require, verify-ca or verify-full, or disable"
                    .to_owned(),
            );
        }
        SslMode::Require if ca_file.is_none() => {
            return Ok(Some(
                SslOpts::default().with_danger_accept_invalid_certs(true),
            ));
        }
        // mysql_async forgives a name mismatch by looking for `NotValidForName` in the text of
        // rustls's error, which rustls 0.23 no longer writes that way ("certificate not valid
        // for name ..."): its "skip domain validation" refuses every mismatch. So `verify-ca`
        // cannot be done with this driver and is refused in words rather than quietly checked as
        // `verify-full`.
        SslMode::VerifyCa => {
            return Err(
                "sslmode verify-ca is not supported for MySQL (the driver cannot check the \
                 issuer while forgiving the host name): use verify-full, connecting by a name \
                 the certificate holds, or require"
                    .to_owned(),
            );
        }
        // libpq checks the issuer for `require` with a CA file; without `verify-ca`, the whole
        // certificate is checked here, name included.
        SslMode::Require | SslMode::VerifyFull => {}
    };
    let roots = match ca_file {
        Some(path) => {
            let pem = std::fs::read(path)
                .map_err(|e| format!("the CA file {} cannot be read: {e}", path.display()))?;
            if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
                return Err(format!(
                    "the CA file {} holds no PEM certificate",
                    path.display()
                ));
            }
            vec![pem.into()]
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            if found.certs.is_empty() {
                return Err(
                    "no CA certificates were found on this system: give the CA file \
                     (sslrootcert, or ssl_root_cert)"
                        .to_owned(),
                );
            }
            found
                .certs
                .into_iter()
                .map(|der| der.as_ref().to_vec().into())
                .collect()
        }
    };
    Ok(Some(
        SslOpts::default()
            .with_root_certs(roots)
            .with_disable_built_in_roots(true),
    ))
}

/// `%XX` escapes of a URL's query value, decoded.
fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("a malformed %-escape in {text:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?} is not UTF-8 once decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(url: &str) -> Result<Prepared, String> {
        prepare(url, None, None, Duration::from_secs(1))
    }

    #[test]
    fn schemes_and_targets() {
        let p = ready("mysql://ada:secret@127.0.0.1:3307/sales").unwrap();
        assert_eq!(p.target, "ada@127.0.0.1:3307/sales");
        assert!(
            p.opts.ssl_opts().is_none(),
            "loopback is cleartext by default"
        );
        assert_eq!(p.opts.stmt_cache_size(), 0);
        let p = ready("mariadb://ada@localhost/sales").unwrap();
        assert_eq!(p.target, "ada@localhost:3306/sales");
        let e = ready("postgres://ada@h/db").err().unwrap();
        assert!(e.contains("mysql://"), "{e}");
    }

    #[test]
    fn tls_modes() {
        // A remote host is verify-full by default: the system's roots, names checked.
        let p = ready("mysql://ada@db.example/sales").unwrap();
        let ssl = p.opts.ssl_opts().unwrap();
        assert!(!ssl.skip_domain_validation() && !ssl.accept_invalid_certs());
        assert!(ssl.disable_built_in_roots());
        let p = ready("mysql://ada@db.example/sales?ssl-mode=REQUIRED").unwrap();
        assert!(p.opts.ssl_opts().unwrap().accept_invalid_certs());
        let p = ready("mysql://ada@db.example/sales?sslmode=disable").unwrap();
        assert!(p.opts.ssl_opts().is_none());
        let p = prepare(
            "mysql://ada@127.0.0.1/sales",
            Some(SslMode::Require),
            None,
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(p.opts.ssl_opts().is_some(), "a mode set wins over loopback");
    }

    #[test]
    fn bad_settings_are_refused_in_words() {
        let e = ready("mysql://ada@db.example/sales?sslmode=prefer")
            .err()
            .unwrap();
        assert!(e.contains("prefer is not supported"), "{e}");
        let e = ready("mysql://ada@db.example/sales?socket=/tmp/s")
            .err()
            .unwrap();
        assert!(e.contains("unknown URL parameter \"socket\""), "{e}");
        let e = ready("mysql://ada@db.example/sales?ssl-mode=VERIFY_CA")
            .err()
            .unwrap();
        assert!(e.contains("verify-ca is not supported for MySQL"), "{e}");
        let e = ready("mysql://ada@db.example/sales?sslmode=sometimes")
            .err()
            .unwrap();
        assert!(e.contains("unknown sslmode"), "{e}");
        let e = ready("mysql://ada@db.example/sales?sslrootcert=/no/such/ca.pem")
            .err()
            .unwrap();
        assert!(e.contains("/no/such/ca.pem cannot be read"), "{e}");
        let e = ready("mysql://ada@db.example:notaport/sales")
            .err()
            .unwrap();
        assert!(e.contains("cannot be read"), "{e}");
    }
}
