//! PostgreSQL over TLS with rustls (the aws-lc-rs provider): the `sslmode` values of libpq, the
//! CA file (`sslrootcert`) or the system's CA certificates, and errors in plain words.
//!
//! tokio-postgres knows `sslmode=disable|prefer|require` only, and no `sslrootcert`, so both are
//! taken out of the connection string here and the rest is parsed by tokio-postgres; what it is
//! told is `disable`, `prefer` or `require`, and the verification is this module's certificate
//! verifier. Without a mode, a server on a loopback address (or a Unix socket) is reached without
//! TLS, as before TLS was supported, and any other server with `verify-full`.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::Host;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::{Config, Socket};

use crate::config::SslMode;

/// A connection string made ready: tokio-postgres's configuration and the TLS connector.
pub(crate) struct Prepared {
    pub(crate) config: Config,
    pub(crate) tls: PgTls,
}

/// Takes `sslmode` and `sslrootcert` out of `url`, lays `mode` and `root_cert` (the adapter's
/// settings) over them, and builds the connector. An error is a sentence about the setting.
pub(crate) fn prepare(
    url: &str,
    mode: Option<SslMode>,
    root_cert: Option<&Path>,
) -> Result<Result<Prepared, tokio_postgres::Error>, String> {
    let (rest, url_mode, url_root) = take_tls_params(url)?;
    let config = match rest.parse::<Config>() {
        Ok(config) => config,
        Err(e) => return Ok(Err(e)),
    };
    let root_cert = root_cert.map(Path::to_path_buf).or(url_root);
    let mode = mode.or(url_mode).unwrap_or_else(|| default_mode(&config));
    let tls = PgTls::new(mode, root_cert)?;
    let mut config = config;
    config.ssl_mode(match mode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        _ => tokio_postgres::config::SslMode::Require,
    });
    Ok(Ok(Prepared { config, tls }))
}

/// `verify-full` unless every host is on this machine (a loopback address, `localhost` or a Unix
/// socket), where connections stay unencrypted as they were before TLS was supported.
fn default_mode(config: &Config) -> SslMode {
    let local = |host: &Host| match host {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            name.eq_ignore_ascii_case("localhost")
                || name
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    };
    let hosts = config.get_hosts();
    if hosts.iter().all(local) {
        SslMode::Disable
    } else {
        SslMode::VerifyFull
    }
}

/// The connection string without `sslmode` and `sslrootcert`, and their values. Both forms are
/// read: a URL's query (`?sslmode=verify-full&sslrootcert=/path`) and `key=value` words.
fn take_tls_params(url: &str) -> Result<(String, Option<SslMode>, Option<PathBuf>), String> {
    let mut mode = None;
    let mut root = None;
    let mut take = |key: &str, value: String| -> Result<bool, String> {
        match key {
            "sslmode" => {
                mode = Some(value.parse::<SslMode>()?);
                Ok(true)
            }
            "sslrootcert" => {
                root = Some(PathBuf::from(value));
                Ok(true)
            }
            _ => Ok(false),
        }
    };
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else {
            return Ok((url.to_owned(), None, None));
        };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !take(key, percent_decode(value)?)? {
                kept.push(pair);
            }
        }
        let rest = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return Ok((rest, mode, root));
    }
    let mut kept = Vec::new();
    for word in url.split_whitespace() {
        let (key, value) = word.split_once('=').unwrap_or((word, ""));
        let value = value.trim_matches('\'').to_owned();
        if !take(key.trim(), value)? {
            kept.push(word);
        }
    }
    Ok((kept.join(" "), mode, root))
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

/// The TLS connector of one database's connections (and their cancel requests).
#[derive(Clone)]
pub(crate) struct PgTls {
    config: Option<Arc<rustls::ClientConfig>>,
    /// The CA file, to name in errors; `None`: the system's CA certificates.
    ca_file: Option<PathBuf>,
}

impl PgTls {
    fn new(mode: SslMode, ca_file: Option<PathBuf>) -> Result<PgTls, String> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        // As in libpq, `require` with a CA file given checks the certificate as `verify-ca`.
        let check = match mode {
            SslMode::Disable => {
                return Ok(PgTls {
                    config: None,
                    ca_file,
                });
            }
            SslMode::Prefer => Check::Nothing,
            SslMode::Require if ca_file.is_none() => Check::Nothing,
            SslMode::Require | SslMode::VerifyCa => Check::Issuer,
            SslMode::VerifyFull => Check::IssuerAndName,
        };
        let verifier: Arc<dyn ServerCertVerifier> = match check {
            Check::Nothing => Arc::new(Unchecked(provider.clone())),
            Check::Issuer | Check::IssuerAndName => {
                let roots = Arc::new(roots(ca_file.as_deref())?);
                let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                    .build()
                    .map_err(|e| format!("the CA certificates cannot be used: {e}"))?;
                Arc::new(Verifier {
                    webpki,
                    names: check == Check::IssuerAndName,
                })
            }
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(PgTls {
            config: Some(Arc::new(config)),
            ca_file,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    Issuer,
    IssuerAndName,
}

/// The trusted CA certificates: those of the file, or the system's (`SSL_CERT_FILE` and
/// `SSL_CERT_DIR` replace them, as for OpenSSL).
fn roots(ca_file: Option<&Path>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let pem = std::fs::read(path)
                .map_err(|e| format!("cannot read the CA file {}: {e}", path.display()))?;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("the CA file {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "the CA file {} holds no PEM certificate",
                    path.display()
                ));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| {
                    format!(
                        "the CA file {}: a certificate is not usable ({e})",
                        path.display()
                    )
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(
                    "no CA certificates found on this system to check the server's certificate \
                     with; give a CA file (sslrootcert in the URL)"
                        .to_owned(),
                );
            }
        }
    }
    Ok(roots)
}

/// Checks a certificate against the trusted CAs, and its names unless `names` is off
/// (`verify-ca`).
#[derive(Debug)]
struct Verifier {
    webpki: Arc<WebPkiServerVerifier>,
    names: bool,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// `prefer` and `require`: any certificate is accepted (the handshake's signatures are still
/// checked, so the connection is encrypted to whoever holds the certificate's key).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Why a TLS connection to the server failed, in plain words.
#[derive(Debug)]
pub(crate) struct TlsFailure(String);

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsFailure {}

impl MakeTlsConnect<Socket> for PgTls {
    type Stream = PgTlsStream;
    type TlsConnect = OneConnect;
    type Error = TlsFailure;

    fn make_tls_connect(&mut self, domain: &str) -> Result<OneConnect, TlsFailure> {
        // tokio-postgres asks for a connector even when TLS is disabled, and then never uses it.
        let connector = self.config.clone().map(tokio_rustls::TlsConnector::from);
        let (host, name) = server_name(domain).map_err(TlsFailure)?;
        Ok(OneConnect {
            connector,
            name,
            host: host.to_owned(),
            ca_file: self.ca_file.clone(),
        })
    }
}

/// A host as the connection string names it, without IPv6 brackets, and as TLS checks it.
fn server_name(domain: &str) -> Result<(&str, ServerName<'static>), String> {
    let host = domain.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_owned())
        .map_err(|_| format!("{domain:?} is not a host name TLS can check"))?;
    Ok((host, name))
}

impl PgTls {
    /// The TLS handshake on the adapter's own connections (`wire`), with the same checks and
    /// the same errors in words as the driver's.
    pub(crate) async fn handshake<IO>(
        &self,
        domain: &str,
        io: IO,
    ) -> Result<tokio_rustls::client::TlsStream<IO>, String>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let Some(config) = self.config.clone() else {
            return Err("TLS is disabled (sslmode=disable)".to_owned());
        };
        let (host, name) = server_name(domain)?;
        tokio_rustls::TlsConnector::from(config)
            .connect(name, io)
            .await
            .map_err(|e| plain_words(&e, host, self.ca_file.as_deref()))
    }
}

/// The TLS handshake of one connection.
pub(crate) struct OneConnect {
    /// `None` with TLS disabled.
    connector: Option<tokio_rustls::TlsConnector>,
    name: ServerName<'static>,
    host: String,
    ca_file: Option<PathBuf>,
}

impl TlsConnect<Socket> for OneConnect {
    type Stream = PgTlsStream;
    type Error = TlsFailure;
    type Future = Pin<Box<dyn Future<Output = Result<PgTlsStream, TlsFailure>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        Box::pin(async move {
            let Some(connector) = self.connector else {
                return Err(TlsFailure("TLS is disabled (sslmode=disable)".to_owned()));
            };
            connector
                .connect(self.name, stream)
                .await
                .map(|s| PgTlsStream(Box::new(s)))
                .map_err(|e| TlsFailure(plain_words(&e, &self.host, self.ca_file.as_deref())))
        })
    }
}

/// A handshake's error as an operator can act on it.
fn plain_words(error: &io::Error, host: &str, ca_file: Option<&Path>) -> String {
    let trusted = || match ca_file {
        Some(path) => format!("CA file {}", path.display()),
        None => "the system's CA certificates".to_owned(),
    };
    let Some(rustls::Error::InvalidCertificate(problem)) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return format!("TLS handshake with {host} failed: {error}");
    };
    match problem {
        CertificateError::UnknownIssuer | CertificateError::BadSignature => format!(
            "certificate not trusted ({}): the server's certificate was not issued by it",
            trusted()
        ),
        CertificateError::NotValidForNameContext { presented, .. } => format!(
            "host name mismatch: the certificate is for {}, not {host}",
            if presented.is_empty() {
                "no host name".to_owned()
            } else {
                presented
                    .iter()
                    .map(|name| bare_name(name))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        CertificateError::NotValidForName => {
            format!("host name mismatch: the certificate is not for {host}")
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            "the server's certificate has expired".to_owned()
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "the server's certificate is not valid yet".to_owned()
        }
        other => format!("the server's certificate was refused: {other:?}"),
    }
}

/// A name as rustls reports it (`DnsName("db.example")`, `IpAddress(10.0.0.5)`), without its
/// kind.
fn bare_name(name: &str) -> &str {
    for kind in ["DnsName(\"", "IpAddress(", "Uri(\""] {
        if let Some(inner) = name.strip_prefix(kind) {
            return inner.trim_end_matches(')').trim_end_matches('"');
        }
    }
    name
}

/// A TLS connection to the server.
pub(crate) struct PgTlsStream(Box<tokio_rustls::client::TlsStream<Socket>>);

impl AsyncRead for PgTlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for PgTlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl TlsStream for PgTlsStream {
    fn channel_binding(&self) -> ChannelBinding {
        // SCRAM runs without channel binding (tokio-postgres's `prefer` default then does too).
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_settings_are_taken_out_of_urls_and_key_value_strings() {
        let (rest, mode, root) = take_tls_params(
            "postgres://u@db.example:5432/app?sslmode=verify-full&application_name=x&sslrootcert=%2Ftmp%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u@db.example:5432/app?application_name=x");
        assert_eq!(mode, Some(SslMode::VerifyFull));
        assert_eq!(root, Some(PathBuf::from("/tmp/ca.pem")));
        let (rest, mode, root) =
            take_tls_params("host=db.example user=u sslmode=verify-ca sslrootcert=/ca.pem")
                .unwrap();
        assert_eq!(rest, "host=db.example user=u");
        assert_eq!(mode, Some(SslMode::VerifyCa));
        assert_eq!(root, Some(PathBuf::from("/ca.pem")));
        assert!(take_tls_params("postgres://h/db?sslmode=verify").is_err());
    }

    #[test]
    fn names_in_a_mismatch_are_shown_bare() {
        assert_eq!(bare_name("DnsName(\"db.example\")"), "db.example");
        assert_eq!(bare_name("IpAddress(127.0.0.1)"), "127.0.0.1");
        assert_eq!(bare_name("plain"), "plain");
    }

    #[test]
    fn loopback_hosts_keep_cleartext_and_others_verify_fully() {
        let mode = |url: &str| default_mode(&url.parse::<Config>().unwrap());
        assert_eq!(mode("postgres://u@127.0.0.1/db"), SslMode::Disable);
        assert_eq!(mode("postgres://u@localhost/db"), SslMode::Disable);
        assert_eq!(mode("postgres://u@[::1]:5432/db"), SslMode::Disable);
        assert_eq!(mode("postgres://u@db.example/db"), SslMode::VerifyFull);
        assert_eq!(mode("postgres://u@10.0.0.5/db"), SslMode::VerifyFull);
    }
}
