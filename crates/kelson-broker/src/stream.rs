//! The connection to the broker: plain TCP, or TLS over it (`rediss://`, `tls://`; feature
//! `tls`). The certificate is always checked against the trusted CAs and the URL's host name;
//! there is no mode that skips either.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::target::Target;

/// A connection to the broker.
pub(crate) enum Stream {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Stream {
    /// A TCP connection to the broker, without TLS yet.
    pub(crate) async fn tcp(target: &Target) -> io::Result<Stream> {
        let stream = TcpStream::connect(target.addr()).await?;
        stream.set_nodelay(true)?;
        Ok(Stream::Plain(stream))
    }

    /// A connection with TLS from its first byte when the URL asks for TLS (Redis), plain
    /// otherwise.
    pub(crate) async fn open(target: &Target) -> io::Result<Stream> {
        let stream = Stream::tcp(target).await?;
        if target.tls.is_some() {
            stream.start_tls(target).await
        } else {
            Ok(stream)
        }
    }

    /// The TLS handshake on a plain connection (NATS starts it after the server's `INFO`).
    #[cfg(feature = "tls")]
    pub(crate) async fn start_tls(self, target: &Target) -> io::Result<Stream> {
        let (Stream::Plain(tcp), Some(tls)) = (self, &target.tls) else {
            return Err(io::Error::other("TLS was not asked for, or is already on"));
        };
        let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
        let name = rustls::pki_types::ServerName::try_from(target.host.clone())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let stream = connector.connect(name, tcp).await.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("the TLS handshake with the broker failed: {e}"),
            )
        })?;
        Ok(Stream::Tls(Box::new(stream)))
    }

    #[cfg(not(feature = "tls"))]
    pub(crate) async fn start_tls(self, _target: &Target) -> io::Result<Stream> {
        Err(io::Error::other(
            "this build has no TLS support (kelson-broker's feature `tls`)",
        ))
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
