//! Opening a connection (the hosts of the connection string in order, TLS as `sslmode` says, the
//! startup message, password, MD5 or SCRAM-SHA-256 authentication) and cancelling a statement.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use fallible_iterator::FallibleIterator as _;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{self, ChannelBinding, ScramSha256};
use postgres_protocol::message::{backend::Message, frontend};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::Config;
use tokio_postgres::config::{Host, SslMode, TargetSessionAttrs};

use super::{DbError, Incoming, Stream, Wire, WireError};
use crate::postgres::PgTls;

/// Where a connection went, so that a cancel request can follow it.
#[derive(Clone, Debug)]
enum Target {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// What cancels the statement running on a connection: the server's address, the TLS used to
/// reach it, and the key the server gave the connection.
#[derive(Clone)]
pub(crate) struct CancelKey {
    target: Target,
    /// The connector and host name, when the connection used TLS.
    tls: Option<(PgTls, String)>,
    process_id: i32,
    secret_key: i32,
}

impl CancelKey {
    /// Asks the server to cancel the connection's running statement, over a connection of its
    /// own (as the protocol has it). Whether anything was running is not reported.
    pub(crate) async fn cancel(&self) -> Result<(), WireError> {
        let mut stream = match (&self.target, &self.tls) {
            (Target::Tcp(addr), Some((tls, host))) => {
                negotiate_tls(TcpStream::connect(addr).await?, tls, host, true).await?
            }
            (Target::Tcp(addr), None) => Stream::Tcp(TcpStream::connect(addr).await?),
            (Target::Unix(path), _) => Stream::Unix(UnixStream::connect(path).await?),
        };
        let mut buf = bytes::BytesMut::new();
        frontend::cancel_request(self.process_id, self.secret_key, &mut buf);
        stream.write_all(&buf).await?;
        stream.flush().await?;
        // The server closes the connection once it has read the request.
        let mut rest = [0u8; 64];
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut rest)).await;
        Ok(())
    }
}

/// Opens a connection as `config` says: each host in order until one accepts (each within the
/// connect timeout), TLS as its `sslmode` says (never over a Unix socket, as in libpq).
pub(crate) async fn connect(config: &Config, tls: &PgTls) -> Result<Wire, WireError> {
    let hosts = config.get_hosts();
    let addrs = config.get_hostaddrs();
    let ports = config.get_ports();
    let count = hosts.len().max(addrs.len());
    if count == 0 {
        return Err(WireError::Auth(
            "the connection string names no host".to_owned(),
        ));
    }
    let mut last = WireError::Timeout;
    for i in 0..count {
        let port = ports
            .get(i)
            .or_else(|| (ports.len() == 1).then(|| &ports[0]))
            .copied()
            .unwrap_or(5432);
        let host = hosts.get(i);
        let addr = addrs.get(i).map(|ip| SocketAddr::new(*ip, port));
        let attempt = connect_one(config, tls, host, addr, port);
        let result = match config.get_connect_timeout() {
            Some(limit) => tokio::time::timeout(*limit, attempt)
                .await
                .unwrap_or(Err(WireError::Timeout)),
            None => attempt.await,
        };
        match result {
            Ok(wire) => return Ok(wire),
            Err(e) => last = e,
        }
    }
    Err(last)
}

async fn connect_one(
    config: &Config,
    tls: &PgTls,
    host: Option<&Host>,
    addr: Option<SocketAddr>,
    port: u16,
) -> Result<Wire, WireError> {
    let (stream, target, tls_used) = match (host, addr) {
        (Some(Host::Unix(dir)), _) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            let stream = UnixStream::connect(&path).await?;
            (Stream::Unix(stream), Target::Unix(path), None)
        }
        (host, addr) => {
            let name = match host {
                Some(Host::Tcp(name)) => name.clone(),
                _ => addr.map(|a| a.ip().to_string()).unwrap_or_default(),
            };
            let tcp = match addr {
                Some(addr) => TcpStream::connect(addr).await?,
                None => TcpStream::connect((name.as_str(), port)).await?,
            };
            tcp.set_nodelay(true)?;
            if config.get_keepalives() {
                let keepalive =
                    socket2::TcpKeepalive::new().with_time(config.get_keepalives_idle());
                socket2::SockRef::from(&tcp).set_tcp_keepalive(&keepalive)?;
            }
            let peer = tcp.peer_addr()?;
            let (stream, used) = match config.get_ssl_mode() {
                SslMode::Disable => (Stream::Tcp(tcp), false),
                mode => {
                    let stream = negotiate_tls(tcp, tls, &name, mode != SslMode::Prefer).await?;
                    let used = matches!(stream, Stream::Tls(_));
                    (stream, used)
                }
            };
            (stream, Target::Tcp(peer), used.then(|| (tls.clone(), name)))
        }
    };
    let cancel = CancelKey {
        target,
        tls: tls_used,
        process_id: 0,
        secret_key: 0,
    };
    let mut wire = Wire::new(stream, cancel);
    startup(&mut wire, config).await?;
    check_session_attrs(&mut wire, config.get_target_session_attrs()).await?;
    Ok(wire)
}

/// Asks the server for TLS and, if it accepts, makes the handshake. A server that declines is
/// refused when `required`, and spoken to in the clear otherwise (`sslmode=prefer`).
async fn negotiate_tls(
    mut tcp: TcpStream,
    tls: &PgTls,
    host: &str,
    required: bool,
) -> Result<Stream, WireError> {
    let mut buf = bytes::BytesMut::new();
    frontend::ssl_request(&mut buf);
    tcp.write_all(&buf).await?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer).await?;
    match answer[0] {
        b'S' => tls
            .handshake(host, tcp)
            .await
            .map(|s| Stream::Tls(Box::new(s)))
            .map_err(WireError::Tls),
        b'N' if required => Err(WireError::Tls(
            "the server does not accept TLS connections, and the connection requires TLS".into(),
        )),
        b'N' => Ok(Stream::Tcp(tcp)),
        other => Err(WireError::Protocol(format!(
            "answer {other:#04x} to the TLS request"
        ))),
    }
}

/// The startup message and the authentication, then the server's parameters and the cancel key,
/// up to the first ReadyForQuery.
async fn startup(wire: &mut Wire, config: &Config) -> Result<(), WireError> {
    let Some(user) = config.get_user() else {
        return Err(WireError::Auth(
            "the connection string names no user".to_owned(),
        ));
    };
    let mut params = vec![("client_encoding", "UTF8"), ("user", user)];
    if let Some(db) = config.get_dbname() {
        params.push(("database", db));
    }
    if let Some(options) = config.get_options() {
        params.push(("options", options));
    }
    if let Some(name) = config.get_application_name() {
        params.push(("application_name", name));
    }
    frontend::startup_message(params, wire.out())?;
    wire.send().await?;
    let password = config.get_password();
    let need_password = || {
        password.ok_or_else(|| {
            WireError::Auth(
                "the server asks for a password, and the connection string has none".to_owned(),
            )
        })
    };
    let mut scram: Option<ScramSha256> = None;
    loop {
        let Incoming::Message(message) = wire.recv().await? else {
            return Err(WireError::Protocol("a data row during startup".into()));
        };
        match message {
            Message::AuthenticationOk => break,
            Message::AuthenticationCleartextPassword => {
                frontend::password_message(need_password()?, wire.out())?;
                wire.send().await?;
            }
            Message::AuthenticationMd5Password(body) => {
                let hash = md5_hash(user.as_bytes(), need_password()?, body.salt());
                frontend::password_message(hash.as_bytes(), wire.out())?;
                wire.send().await?;
            }
            Message::AuthenticationSasl(body) => {
                let mut offered = Vec::new();
                let mut mechanisms = body.mechanisms();
                while let Some(m) = mechanisms.next()? {
                    offered.push(m.to_owned());
                }
                if !offered.iter().any(|m| m == sasl::SCRAM_SHA_256) {
                    return Err(WireError::Auth(format!(
                        "the server offers SASL mechanisms {offered:?}, and this adapter speaks {}",
                        sasl::SCRAM_SHA_256
                    )));
                }
                // Without channel binding, as the driver of the adapter's own tables does.
                let state = ScramSha256::new(need_password()?, ChannelBinding::unsupported());
                frontend::sasl_initial_response(sasl::SCRAM_SHA_256, state.message(), wire.out())?;
                wire.send().await?;
                scram = Some(state);
            }
            Message::AuthenticationSaslContinue(body) => {
                let state = scram
                    .as_mut()
                    .ok_or_else(|| WireError::Protocol("SASL continue before SASL".into()))?;
                state.update(body.data())?;
                frontend::sasl_response(state.message(), wire.out())?;
                wire.send().await?;
            }
            Message::AuthenticationSaslFinal(body) => {
                let state = scram
                    .as_mut()
                    .ok_or_else(|| WireError::Protocol("SASL final before SASL".into()))?;
                state.finish(body.data())?;
            }
            Message::ErrorResponse(body) => {
                return Err(WireError::Db(Box::new(DbError::parse(&body)?)));
            }
            Message::AuthenticationKerberosV5
            | Message::AuthenticationScmCredential
            | Message::AuthenticationGss
            | Message::AuthenticationSspi
            | Message::AuthenticationGssContinue(_) => {
                return Err(WireError::Auth(
                    "the server asks for Kerberos, GSSAPI or SSPI authentication, which this \
                     adapter does not speak: use a password (scram-sha-256) for its role"
                        .to_owned(),
                ));
            }
            _ => return Err(WireError::Protocol("during authentication".into())),
        }
    }
    loop {
        let Incoming::Message(message) = wire.recv().await? else {
            return Err(WireError::Protocol("a data row during startup".into()));
        };
        match message {
            Message::BackendKeyData(body) => {
                wire.cancel.process_id = body.process_id();
                wire.cancel.secret_key = body.secret_key();
            }
            Message::ReadyForQuery(_) => return Ok(()),
            Message::ErrorResponse(body) => {
                return Err(WireError::Db(Box::new(DbError::parse(&body)?)));
            }
            _ => return Err(WireError::Protocol("after authentication".into())),
        }
    }
}

/// `target_session_attrs`: a server that does not match is refused (and the next host tried).
async fn check_session_attrs(wire: &mut Wire, attrs: TargetSessionAttrs) -> Result<(), WireError> {
    let want_read_only = match attrs {
        TargetSessionAttrs::ReadWrite => false,
        TargetSessionAttrs::ReadOnly => true,
        _ => return Ok(()),
    };
    let rows = wire.simple_rows("SHOW transaction_read_only").await?;
    let read_only = rows.first().and_then(|r| r.first()).map(String::as_str) == Some("on");
    if read_only == want_read_only {
        Ok(())
    } else {
        Err(WireError::Auth(format!(
            "the server is {}, and target_session_attrs asks for {}",
            if read_only { "read-only" } else { "read-write" },
            if want_read_only {
                "read-only"
            } else {
                "read-write"
            },
        )))
    }
}
