//! Broker URLs: `nats://[user:password@|token@]host[:4222]` and
//! `redis://[[user]:password@]host[:6379][/db]`; with TLS (feature `tls`), `tls://` for NATS and
//! `rediss://` for Redis, which take `?sslrootcert=CA.pem` (instead of the system's CAs) and
//! `sslcert=CERT.pem&sslkey=KEY.pem` (a client certificate), named as in PostgreSQL's URLs.

use std::fmt;
use std::path::PathBuf;
#[cfg(feature = "tls")]
use std::sync::Arc;

use crate::BrokerError;

/// Which broker, where, and how to log in.
#[derive(Clone)]
pub(crate) struct Target {
    pub kind: Kind,
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    /// TLS, when the URL asks for it.
    pub tls: Option<Tls>,
}

/// What TLS to the broker uses: the client configuration made from the files the URL named (read
/// when the URL is parsed, so that a missing or bad file is a settings error).
#[derive(Clone)]
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
pub(crate) struct Tls {
    #[cfg(feature = "tls")]
    pub config: Arc<rustls::ClientConfig>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Nats,
    Redis,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the password.
        f.write_str(&self.to_string())
    }
}

/// The URL without its credentials, for logs.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match (self.kind, self.tls.is_some()) {
            (Kind::Nats, false) => "nats",
            (Kind::Nats, true) => "tls",
            (Kind::Redis, false) => "redis",
            (Kind::Redis, true) => "rediss",
        };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
        }
    }
}

impl Target {
    pub(crate) fn parse(text: &str) -> Result<Target, BrokerError> {
        let bad = |why: &str| BrokerError::Url(why.to_owned());
        let url = url::Url::parse(text).map_err(|e| bad(&format!("not a URL ({e})")))?;
        let (kind, default_port, tls) = match url.scheme() {
            "nats" => (Kind::Nats, 4222, false),
            "redis" => (Kind::Redis, 6379, false),
            "tls" => (Kind::Nats, 4222, true),
            "rediss" => (Kind::Redis, 6379, true),
            other => {
                return Err(bad(&format!(
                    "unsupported scheme \"{other}\": use nats://host:4222 or redis://host:6379 \
                     (tls:// or rediss:// for TLS)"
                )));
            }
        };
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(bad("no host")),
        };
        if url.fragment().is_some() {
            return Err(bad("a broker URL takes no fragment"));
        }
        let mut files: [Option<PathBuf>; 3] = [None, None, None];
        for (key, value) in url.query_pairs() {
            let slot = match key.as_ref() {
                "sslrootcert" => 0,
                "sslcert" => 1,
                "sslkey" => 2,
                other if tls => {
                    return Err(bad(&format!(
                        "unknown parameter \"{other}\": a TLS broker URL takes sslrootcert, \
                         sslcert and sslkey"
                    )));
                }
                _ => {
                    return Err(bad(
                        "a broker URL takes no query (only tls:// and rediss:// take sslrootcert, sslcert and sslkey)",
                    ));
                }
            };
            if !tls {
                return Err(bad(&format!(
                    "{key} needs TLS: use {} instead",
                    if kind == Kind::Nats {
                        "tls://"
                    } else {
                        "rediss://"
                    }
                )));
            }
            if value.is_empty() {
                return Err(bad(&format!("{key} is empty")));
            }
            files[slot] = Some(PathBuf::from(value.as_ref()));
        }
        let [ca_file, cert_file, key_file] = files;
        let tls = if tls {
            Some(tls_settings(ca_file, cert_file, key_file)?)
        } else {
            None
        };
        let decode = |s: &str| {
            url::form_urlencoded::parse(format!("x={s}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let user = (!url.username().is_empty()).then(|| decode(url.username()));
        let password = url.password().map(decode);
        match kind {
            Kind::Nats if url.path() != "" && url.path() != "/" => {
                return Err(bad("a NATS URL has no path"));
            }
            Kind::Redis if url.path() != "" && url.path() != "/" && url.path() != "/0" => {
                // Pub/sub channels are global to a Redis server: the database number does not
                // separate them, so a URL that names one would promise what it cannot keep.
                return Err(bad(
                    "pub/sub ignores the database number; leave it out (use another channel to separate deployments)",
                ));
            }
            _ => {}
        }
        Ok(Target {
            kind,
            host,
            port: url.port().unwrap_or(default_port),
            user,
            password,
            tls,
        })
    }

    pub(crate) fn addr(&self) -> (String, u16) {
        (self.host.clone(), self.port)
    }
}

#[cfg(not(feature = "tls"))]
fn tls_settings(
    _ca: Option<PathBuf>,
    _cert: Option<PathBuf>,
    _key: Option<PathBuf>,
) -> Result<Tls, BrokerError> {
    Err(BrokerError::Url(
        "this build has no TLS support for the broker (kelson-broker's feature `tls`)".to_owned(),
    ))
}

/// The client configuration: the CA file's certificates or the system's, and the client
/// certificate when both of its files are given.
#[cfg(feature = "tls")]
fn tls_settings(
    ca_file: Option<PathBuf>,
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
) -> Result<Tls, BrokerError> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let bad = |why: String| BrokerError::Url(why);
    let read = |path: &PathBuf, what: &str| {
        std::fs::read(path)
            .map_err(|e| bad(format!("cannot read the {what} {}: {e}", path.display())))
    };
    let certs_of =
        |path: &PathBuf, what: &str| -> Result<Vec<CertificateDer<'static>>, BrokerError> {
            let pem = read(path, what)?;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(format!("the {what} {}: {e}", path.display())))?;
            if certs.is_empty() {
                return Err(bad(format!(
                    "the {what} {} holds no PEM certificate",
                    path.display()
                )));
            }
            Ok(certs)
        };
    let mut roots = rustls::RootCertStore::empty();
    match &ca_file {
        Some(path) => {
            for cert in certs_of(path, "CA file")? {
                roots.add(cert).map_err(|e| {
                    bad(format!(
                        "the CA file {}: a certificate is not usable ({e})",
                        path.display()
                    ))
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(bad(
                    "no CA certificates found on this system to check the broker's certificate \
                     with; give a CA file (sslrootcert in the URL)"
                        .to_owned(),
                ));
            }
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .with_root_certificates(roots);
    let config = match (&cert_file, &key_file) {
        (Some(cert), Some(key)) => {
            let chain = certs_of(cert, "client certificate file")?;
            let pem = read(key, "client key file")?;
            let key_der = PrivateKeyDer::from_pem_slice(&pem)
                .map_err(|e| bad(format!("the client key file {}: {e}", key.display())))?;
            builder.with_client_auth_cert(chain, key_der).map_err(|e| {
                bad(format!(
                    "the client certificate and key do not go together: {e}"
                ))
            })?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(bad(
                "a client certificate needs both sslcert and sslkey".to_owned()
            ));
        }
    };
    Ok(Tls {
        config: Arc::new(config),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_the_broker_the_address_and_the_credentials() {
        let t = Target::parse("nats://127.0.0.1").unwrap();
        assert_eq!(
            (t.kind, t.port, t.user, t.password),
            (Kind::Nats, 4222, None, None)
        );
        let t = Target::parse("nats://alice:s%40cret@nats.internal:4333").unwrap();
        assert_eq!(t.host, "nats.internal");
        assert_eq!(t.port, 4333);
        assert_eq!(t.user.as_deref(), Some("alice"));
        assert_eq!(t.password.as_deref(), Some("s@cret"));
        // Neither Debug nor Display shows the password.
        assert_eq!(format!("{t:?}"), "nats://nats.internal:4333");
        assert_eq!(t.to_string(), "nats://nats.internal:4333");

        let t = Target::parse("redis://:pw@[::1]").unwrap();
        assert_eq!((t.kind, t.port), (Kind::Redis, 6379));
        assert_eq!(t.host, "::1");
        assert_eq!(t.user, None);
        assert_eq!(t.password.as_deref(), Some("pw"));
        assert_eq!(t.to_string(), "redis://[::1]:6379");
        assert!(Target::parse("redis://localhost/0").is_ok());
    }

    #[test]
    fn what_cannot_work_is_refused_in_words() {
        for (url, says) in [
            ("amqp://localhost", "unsupported scheme \"amqp\""),
            (
                "redis://localhost?sslrootcert=/ca.pem",
                "sslrootcert needs TLS: use rediss://",
            ),
            (
                "nats://localhost?sslrootcert=/ca.pem",
                "sslrootcert needs TLS: use tls://",
            ),
            ("redis://localhost?db=1", "takes no query"),
            (
                "rediss://localhost?verify=no",
                "unknown parameter \"verify\"",
            ),
            ("rediss://localhost?sslrootcert=", "sslrootcert is empty"),
            ("redis://localhost/3", "pub/sub ignores the database number"),
            ("nats://localhost/x", "a NATS URL has no path"),
            ("nats://localhost?x=1", "no query"),
            ("nats://localhost#x", "no fragment"),
            ("localhost:4222", "unsupported scheme"),
            ("nats://", "no host"),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn tls_urls_need_the_feature() {
        for url in ["rediss://localhost", "tls://localhost"] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains("no TLS support"), "{url}: {e}");
        }
    }

    #[cfg(feature = "tls")]
    #[test]
    fn tls_urls_read_their_files_when_parsed() {
        let dir = std::env::temp_dir().join(format!("mcp-broker-target-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca = rcgen::generate_simple_self_signed(vec!["ca.test".to_owned()]).unwrap();
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, ca.cert.pem()).unwrap();
        let key_file = dir.join("key.pem");
        std::fs::write(&key_file, ca.signing_key.serialize_pem()).unwrap();
        let not_pem = dir.join("not.pem");
        std::fs::write(&not_pem, "hello").unwrap();

        let t = Target::parse(&format!(
            "rediss://:pw@redis.internal?sslrootcert={}",
            ca_file.display()
        ))
        .unwrap();
        assert!(t.tls.is_some());
        assert_eq!((t.kind, t.port), (Kind::Redis, 6379));
        assert_eq!(t.to_string(), "rediss://redis.internal:6379");
        let t = Target::parse(&format!(
            "tls://nats.internal:4443?sslrootcert={ca}&sslcert={ca}&sslkey={key}",
            ca = ca_file.display(),
            key = key_file.display()
        ))
        .unwrap();
        assert_eq!((t.kind, t.port), (Kind::Nats, 4443));
        assert_eq!(t.to_string(), "tls://nats.internal:4443");

        for (url, says) in [
            (
                format!("rediss://h?sslrootcert={}/missing.pem", dir.display()),
                "cannot read the CA file",
            ),
            (
                format!("rediss://h?sslrootcert={}", not_pem.display()),
                "holds no PEM certificate",
            ),
            (
                format!(
                    "rediss://h?sslrootcert={}&sslcert={}",
                    ca_file.display(),
                    ca_file.display()
                ),
                "needs both sslcert and sslkey",
            ),
            (
                format!(
                    "rediss://h?sslcert={}&sslkey={}",
                    ca_file.display(),
                    not_pem.display()
                ),
                "the client key file",
            ),
        ] {
            let e = Target::parse(&url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
