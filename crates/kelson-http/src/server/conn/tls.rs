//! HTTPS: TLS terminated in the accept loop with rustls (the aws-lc-rs provider), a certificate
//! chain and key read from PEM files, and reloadable while serving.
//!
//! The certificate sits behind an `ArcSwap` that the rustls configuration's resolver reads at
//! every handshake, so [`ServerTls::reload`] changes what new connections see without touching the
//! ones already open (they keep the keys they agreed on), and a reload that fails leaves the
//! certificate in use. ALPN offers `h2` and `http/1.1`; a client that names neither is served
//! HTTP/1.1.
//!
//! The accept loop hands each connection of an HTTPS listener to [`serve_conn`], in the
//! connection's own task: cleartext HTTP is answered with a 400 that says so, the handshake is
//! timed, and the protocol ALPN agreed on is served.

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use http::{Request, Response};
use hyper_util::rt::TokioExecutor;
use kelson_server::observe::CloseReason;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_util::sync::CancellationToken;

use super::accept::{Limits, Open, trace_conn_error};
use super::h1::{self, RequestBody};
use super::h2;
use super::stop::{Stop, Watched};
use crate::server::endpoint::McpBody;

/// The default of [`ServerTls::handshake_timeout`].
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a certificate or key could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// The certificate file holds no PEM `CERTIFICATE` section, or a malformed one.
    #[error("{}: no PEM certificate in it ({source})", path.display())]
    Certificate {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// The key file holds no PEM private key, or a malformed one.
    #[error(
        "{}: no PEM private key in it (PKCS#8, PKCS#1 or SEC1) ({source})",
        path.display()
    )]
    Key {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// rustls refused the key, or the key is not the certificate's.
    #[error("{} and {}: {source}", cert.display(), key.display())]
    Refused {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What went wrong.
        #[source]
        source: rustls::Error,
    },
}

/// A server's TLS settings: the certificate files, the rustls configuration built once over them,
/// and the handshake timeout. Cloning shares the certificate, so a clone kept to reload it reloads
/// the one the listener serves.
#[derive(Clone)]
pub struct ServerTls {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: Arc<Current>,
    config: Arc<rustls::ServerConfig>,
    handshake_timeout: Duration,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Reads the certificate chain (PEM, the server's certificate first) and its private key
    /// (PEM: PKCS#8, PKCS#1 or SEC1) and checks that they belong together.
    pub fn from_pem_files(
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Result<Self, TlsError> {
        let (cert_path, key_path) = (cert.into(), key.into());
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let certified = load(&cert_path, &key_path, &provider)?;
        let current = Arc::new(Current {
            key: ArcSwap::from_pointee(certified),
            provider: provider.clone(),
        });
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|source| TlsError::Refused {
                cert: cert_path.clone(),
                key: key_path.clone(),
                source,
            })?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        // spec 2026-07-28 basic/transports: Streamable HTTP is served over HTTP/2 and HTTP/1.1
        // alike; h2 first, as clients that speak both prefer it.
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(ServerTls {
            cert_path,
            key_path,
            current,
            config: Arc::new(config),
            handshake_timeout: HANDSHAKE_TIMEOUT,
        })
    }

    /// How long a TLS handshake may take from the first byte the client sends; a client that does
    /// not finish it within that time is disconnected [default: 10 s]. The wait for the first byte
    /// is the listener's first-bytes timeout, as for cleartext connections. Zero waits forever.
    #[must_use]
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Reads the certificate and key files again and, if they load and match, serves them to every
    /// new connection from now on; open connections are not touched. On an error the certificate
    /// in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let certified = load(&self.cert_path, &self.key_path, &self.current.provider)?;
        self.current.key.store(Arc::new(certified));
        Ok(())
    }

    /// The certificate file.
    pub fn cert_path(&self) -> &Path {
        &self.cert_path
    }

    /// The key file.
    pub fn key_path(&self) -> &Path {
        &self.key_path
    }

    /// What the listener's connections need of these settings.
    pub(crate) fn side(&self) -> TlsSide {
        TlsSide {
            acceptor: tokio_rustls::TlsAcceptor::from(self.config.clone()),
            timeout: self.handshake_timeout,
        }
    }
}

/// The TLS side of a listener: what each connection's handshake needs.
#[derive(Clone)]
pub(crate) struct TlsSide {
    acceptor: tokio_rustls::TlsAcceptor,
    timeout: Duration,
}

/// The certificate served now, which every handshake reads.
struct Current {
    key: ArcSwap<CertifiedKey>,
    provider: Arc<CryptoProvider>,
}

impl fmt::Debug for Current {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Current")
    }
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.key.load_full())
    }
}

/// Reads a certificate chain and its key, and checks that the key is the certificate's.
fn load(
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let cert_pem = read(cert_path)?;
    let key_pem = read(key_path)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .and_then(|chain| {
            if chain.is_empty() {
                Err(rustls_pki_types::pem::Error::NoItemsFound)
            } else {
                Ok(chain)
            }
        })
        .map_err(|source| TlsError::Certificate {
            path: cert_path.to_owned(),
            source,
        })?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|source| TlsError::Key {
        path: key_path.to_owned(),
        source,
    })?;
    CertifiedKey::from_der(chain, key, provider).map_err(|source| TlsError::Refused {
        cert: cert_path.to_owned(),
        key: key_path.to_owned(),
        source,
    })
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

/// What a client that sent cleartext HTTP to the HTTPS port is told, instead of a TLS alert it
/// could not read.
const CLEARTEXT_REFUSED: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
content-type: text/plain; charset=utf-8\r\n\
connection: close\r\n\
content-length: 46\r\n\
\r\n\
This port speaks HTTPS: use an https:// URL.\r\n";

/// Answers a cleartext HTTP request with a 400 and closes: the answer is written within a second,
/// then what the client still sends is read and dropped for up to a second, so that it reads the
/// answer rather than a reset.
pub(crate) async fn refuse_cleartext(mut stream: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let limit = Duration::from_secs(1);
    let answer = async {
        stream.write_all(CLEARTEXT_REFUSED).await?;
        stream.shutdown().await
    };
    if !matches!(tokio::time::timeout(limit, answer).await, Ok(Ok(()))) {
        return;
    }
    let drain = async {
        let mut sink = [0u8; 4096];
        let mut total = 0usize;
        while total < 1024 * 1024 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    };
    let _ = tokio::time::timeout(limit, drain).await;
}

/// Serves one connection over TLS: waits for its first byte within the first-bytes time, answers
/// cleartext HTTP with a 400, runs the handshake within the handshake time, and serves the protocol
/// ALPN agreed on.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn serve_conn<H, F>(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    tls: TlsSide,
    handler: H,
    http2: hyper::server::conn::http2::Builder<TokioExecutor>,
    stop: Arc<Stop>,
    stopping: CancellationToken,
    limits: Limits,
    (h1_settings, h2_settings): (h1::Settings, h2::Settings),
    open: Open,
) where
    H: Fn(Request<RequestBody>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<McpBody>> + Send + 'static,
{
    let first = tokio::select! {
        first = first_byte_within(&stream, limits.first_bytes) => first,
        () = stopping.cancelled() => return,
    };
    match first {
        // A TLS connection opens with a handshake record (RFC 8446 §5.1).
        Ok(0x16) => {}
        Ok(_) => {
            tracing::debug!(%peer, "cleartext on the HTTPS listener; answered 400");
            refuse_cleartext(stream).await;
            return;
        }
        Err(e) => {
            if e.kind() == std::io::ErrorKind::TimedOut {
                open.stats.closed(CloseReason::ReadTimeout);
            }
            tracing::debug!(%peer, error = %e, "connection closed before its first request");
            return;
        }
    }
    let handshake = tls.acceptor.accept(stream);
    let handshake = async {
        if tls.timeout.is_zero() {
            return handshake.await;
        }
        tokio::time::timeout(tls.timeout, handshake)
            .await
            .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
    };
    let stream = tokio::select! {
        stream = handshake => stream,
        () = stopping.cancelled() => return,
    };
    let stream = match stream {
        Ok(stream) => stream,
        Err(e) => {
            if e.kind() == std::io::ErrorKind::TimedOut {
                open.stats.closed(CloseReason::ReadTimeout);
            }
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            return;
        }
    };
    let stats = open.stats.clone();
    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
        let conn = h2::serve(stream, handler, &http2, stop, h2_settings, stats);
        if let Some(Err(e)) = conn.await {
            trace_conn_error(peer, &*e);
        }
    } else {
        let conn = h1::serve(stream, handler, stop.clone(), h1_settings, stats);
        if let Some(Err(e)) = Watched::new(conn, |_: Pin<&mut _>| {}, stop).await {
            trace_conn_error(peer, &e);
        }
    }
    drop(open);
}

/// The first byte the client sends, without consuming it; `TimedOut` after `limit` (unless zero).
async fn first_byte_within(stream: &tokio::net::TcpStream, limit: Duration) -> std::io::Result<u8> {
    let peek = async {
        let mut byte = [0u8; 1];
        match stream.peek(&mut byte).await? {
            0 => Err(std::io::ErrorKind::UnexpectedEof.into()),
            _ => Ok(byte[0]),
        }
    };
    if limit.is_zero() {
        return peek.await;
    }
    tokio::time::timeout(limit, peek)
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

#[cfg(test)]
mod tests {
    use super::CLEARTEXT_REFUSED;

    #[test]
    fn the_cleartext_answer_states_its_length() {
        let text = std::str::from_utf8(CLEARTEXT_REFUSED).expect("ASCII");
        let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .expect("content-length")
            .parse()
            .expect("a number");
        assert_eq!(length, body.len());
    }
}
