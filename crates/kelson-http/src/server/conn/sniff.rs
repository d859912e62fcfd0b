//! Which protocol a connection speaks (HTTP/1.1, or h2c with prior knowledge), told by its first
//! bytes without consuming them.

use std::time::Duration;

/// The HTTP/2 connection preface (RFC 9113 §3.4), which an h2c client with prior knowledge sends
/// first.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The protocol a client speaks.
pub(crate) enum Version {
    H1,
    H2,
}

/// [`sniff`], giving up after `limit` (unless zero) with a `TimedOut` error.
pub(crate) async fn sniff_within(
    stream: &tokio::net::TcpStream,
    limit: Duration,
) -> std::io::Result<Version> {
    if limit.is_zero() {
        return sniff(stream).await;
    }
    tokio::time::timeout(limit, sniff(stream))
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

/// Which protocol the client speaks, read with `peek` so that nothing is consumed: the connection
/// is then read from its first byte, with no rewinding wrapper in between.
/// An HTTP/1.1 request differs from the preface by its second byte at the latest.
///
/// A preface split across packets leaves bytes in the socket that a `peek` sees again at once, so
/// peeking in a loop would spin (one wake-up per millisecond per connection, when it slept in
/// between). Instead, the readiness the runtime recorded is cleared after a peek that saw only
/// part of the preface, and the task sleeps until the kernel reports new bytes (or the peer's
/// closing). Clearing is safe from the race with bytes that arrive meanwhile: tokio clears only
/// the readiness event the peek saw, not a newer one.
async fn sniff(stream: &tokio::net::TcpStream) -> std::io::Result<Version> {
    use tokio::io::Interest;
    loop {
        let ready = stream.ready(Interest::READABLE).await?;
        match stream.try_io(Interest::READABLE, || peek_version(stream)) {
            Ok(version) => return Ok(version),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Part of the preface and then the peer's end of sending: no preface will come.
                if ready.is_read_closed() {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Peeks at what has arrived without waiting: `WouldBlock` when it is nothing, or only part of
/// the preface.
fn peek_version(stream: &tokio::net::TcpStream) -> std::io::Result<Version> {
    let mut buf = [0u8; H2_PREFACE.len()];
    let mut read = tokio::io::ReadBuf::new(&mut buf);
    // The caller waits for readiness itself; this context only lets `poll_peek` run once.
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let n = match stream.poll_peek(&mut cx, &mut read) {
        std::task::Poll::Ready(n) => n?,
        std::task::Poll::Pending => return Err(std::io::ErrorKind::WouldBlock.into()),
    };
    let seen = read.filled();
    if n == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    if seen != &H2_PREFACE[..n] {
        return Ok(Version::H1);
    }
    if n == H2_PREFACE.len() {
        return Ok(Version::H2);
    }
    Err(std::io::ErrorKind::WouldBlock.into())
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt as _;
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A connected pair: what the client writes, the server side sniffs.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        (client, server)
    }

    #[tokio::test]
    async fn an_http1_request_is_told_apart_by_its_first_bytes() {
        let (mut client, server) = pair().await;
        // "PO" already differs from "PR": no need to wait for more.
        client.write_all(b"PO").await.expect("write");
        assert!(matches!(sniff(&server).await, Ok(Version::H1)));
        let (mut client, server) = pair().await;
        client
            .write_all(b"GET / HTTP/1.1\r\n\r\n")
            .await
            .expect("write");
        assert!(matches!(sniff(&server).await, Ok(Version::H1)));
    }

    #[tokio::test]
    async fn a_preface_split_across_writes_is_h2_and_nothing_is_consumed() {
        let (mut client, server) = pair().await;
        client.write_all(&H2_PREFACE[..10]).await.expect("write");
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            client.write_all(&H2_PREFACE[10..]).await.expect("write");
            client
        });
        assert!(matches!(sniff(&server).await, Ok(Version::H2)));
        let _client = writer.await.expect("writer");
        // hyper must still find the whole preface on the socket.
        let mut buf = [0u8; 24];
        let n = server.peek(&mut buf).await.expect("peek");
        assert_eq!(&buf[..n], H2_PREFACE);
    }

    #[tokio::test]
    async fn a_connection_closed_before_speaking_is_an_error() {
        let (client, server) = pair().await;
        drop(client);
        assert!(sniff(&server).await.is_err());
    }

    #[tokio::test]
    async fn a_partial_preface_is_waited_for_without_waking() {
        let (mut client, server) = pair().await;
        client.write_all(b"P").await.expect("write");
        // Count the times the sniffer runs while the rest does not come: it must sleep until new
        // bytes arrive, not look again and again.
        let mut sniffing = std::pin::pin!(sniff(&server));
        let mut polls = 0;
        let counted = std::future::poll_fn(|cx| {
            polls += 1;
            sniffing.as_mut().poll(cx)
        });
        let waited = tokio::time::timeout(Duration::from_millis(300), counted).await;
        assert!(waited.is_err(), "no protocol can be told from one byte");
        assert!(polls <= 3, "the sniffer woke {polls} times in 300 ms");
        // The rest arrives: it wakes, and the connection is h2.
        client.write_all(&H2_PREFACE[1..]).await.expect("write");
        assert!(matches!(sniff(&server).await, Ok(Version::H2)));
    }

    #[tokio::test]
    async fn a_partial_preface_then_closing_is_an_error_at_once() {
        let (mut client, server) = pair().await;
        client.write_all(b"PRI * HTTP").await.expect("write");
        client.shutdown().await.expect("shutdown");
        let sniffed = tokio::time::timeout(Duration::from_secs(5), sniff(&server)).await;
        assert!(
            matches!(sniffed, Ok(Err(_))),
            "{:?}",
            sniffed.map(|r| r.is_ok())
        );
    }
}
