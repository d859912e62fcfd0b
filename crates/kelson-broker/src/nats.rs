//! The part of the NATS client protocol a relay needs: `CONNECT`, one `SUB`, `PUB`, `MSG`, and
//! `PING`/`PONG` both ways (<https://docs.nats.io/reference/reference-protocols/nats-protocol>).
//!
//! The connection asks the server not to echo its own messages back (`"echo": false`).

use std::io;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::stream::Stream;
use crate::target::Target;
use crate::{Incoming, MAX_EVENT};

/// The longest control line accepted from the server (an `INFO` line lists cluster URLs).
const MAX_LINE: usize = 64 * 1024;

pub(crate) struct Conn {
    stream: Stream,
    buf: BytesMut,
    subject: String,
}

impl Conn {
    /// Connects, logs in, subscribes to `subject`, and waits for the server to confirm it all
    /// (a `PONG` after the `SUB`, or the `-ERR` that refused it).
    pub(crate) async fn connect(target: &Target, subject: &str) -> io::Result<Conn> {
        let mut conn = Conn {
            stream: Stream::tcp(target).await?,
            buf: BytesMut::with_capacity(8 * 1024),
            subject: subject.to_owned(),
        };
        // The server speaks first, in plain text even when it requires TLS; the TLS handshake
        // follows its INFO.
        let info = conn.line().await?;
        let Some(info) = info.strip_prefix("INFO ") else {
            return Err(protocol(format!("expected INFO, got {}", clip(&info))));
        };
        let info: serde_json::Value = serde_json::from_str(info).unwrap_or_default();
        let says = |key: &str| info[key].as_bool().unwrap_or(false);
        let required = says("tls_required");
        if target.tls.is_some() {
            if !required && !says("tls_available") {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "the NATS server does not offer TLS: configure TLS on it, or use a nats:// URL",
                ));
            }
            if !conn.buf.is_empty() {
                return Err(protocol("the server said more before TLS began".to_owned()));
            }
            conn.stream = conn.stream.start_tls(target).await?;
        } else if required {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the NATS server requires TLS: use a tls:// URL",
            ));
        }
        let mut options = serde_json::json!({
            "verbose": false,
            "pedantic": false,
            "lang": "rust",
            "name": "kelson-broker",
            "version": env!("CARGO_PKG_VERSION"),
            "protocol": 1,
            "echo": false,
            "headers": false,
        });
        match (&target.user, &target.password) {
            (Some(user), Some(pass)) => {
                options["user"] = user.as_str().into();
                options["pass"] = pass.as_str().into();
            }
            (Some(token), None) => options["auth_token"] = token.as_str().into(),
            (None, Some(pass)) => options["auth_token"] = pass.as_str().into(),
            (None, None) => {}
        }
        let hello = format!("CONNECT {options}\r\nSUB {subject} 1\r\nPING\r\n");
        conn.send(hello.as_bytes()).await?;
        loop {
            let line = conn.line().await?;
            match line.as_str() {
                "PONG" => return Ok(conn),
                "PING" => conn.send(b"PONG\r\n").await?,
                "+OK" => {}
                l if l.starts_with("INFO ") => {}
                l if l.starts_with("-ERR") => {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!("the server refused the connection: {}", clip(l)),
                    ));
                }
                l => return Err(protocol(format!("unexpected {}", clip(l)))),
            }
        }
    }

    pub(crate) async fn publish(&mut self, payload: &[u8]) -> io::Result<()> {
        let mut frame = Vec::with_capacity(payload.len() + self.subject.len() + 24);
        frame.extend_from_slice(b"PUB ");
        frame.extend_from_slice(self.subject.as_bytes());
        frame.extend_from_slice(format!(" {}\r\n", payload.len()).as_bytes());
        frame.extend_from_slice(payload);
        frame.extend_from_slice(b"\r\n");
        self.send(&frame).await
    }

    pub(crate) async fn ping(&mut self) -> io::Result<()> {
        self.send(b"PING\r\n").await
    }

    /// Writes `bytes` and flushes them (TLS holds written data until flushed).
    async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await?;
        self.stream.flush().await
    }

    /// The next thing the server says that matters. Cancel-safe: bytes read stay in the buffer
    /// until a whole frame is there.
    pub(crate) async fn next(&mut self) -> io::Result<Incoming> {
        loop {
            if let Some(incoming) = self.parse()? {
                match incoming {
                    Frame::Ping => self.send(b"PONG\r\n").await?,
                    Frame::Other => {}
                    Frame::Pong => return Ok(Incoming::Pong),
                    Frame::Message(payload) => return Ok(Incoming::Event(payload)),
                }
                continue;
            }
            self.fill().await?;
        }
    }

    async fn fill(&mut self) -> io::Result<()> {
        if self.stream.read_buf(&mut self.buf).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        Ok(())
    }

    /// One control line, during the handshake.
    async fn line(&mut self) -> io::Result<String> {
        loop {
            if let Some(end) = find_crlf(&self.buf) {
                let line = self.buf.split_to(end + 2);
                return Ok(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            if self.buf.len() > MAX_LINE {
                return Err(protocol("a control line longer than 64 KiB".to_owned()));
            }
            self.fill().await?;
        }
    }

    /// Takes one whole frame off the buffer, if one is there.
    fn parse(&mut self) -> io::Result<Option<Frame>> {
        let Some(end) = find_crlf(&self.buf) else {
            if self.buf.len() > MAX_LINE {
                return Err(protocol("a control line longer than 64 KiB".to_owned()));
            }
            return Ok(None);
        };
        let line = &self.buf[..end];
        let upper = |n: usize| line.len() >= n && line[..n].eq_ignore_ascii_case(&b"MSG "[..n]);
        if upper(4) {
            // MSG <subject> <sid> [reply-to] <#bytes>
            let text = std::str::from_utf8(line)
                .map_err(|_| protocol("a MSG line that is not UTF-8".to_owned()))?;
            let size: usize = text
                .split_ascii_whitespace()
                .last()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| protocol(format!("a MSG line without a size: {}", clip(text))))?;
            if size > MAX_EVENT {
                return Err(protocol(format!("a message of {size} bytes")));
            }
            let total = end + 2 + size + 2;
            if self.buf.len() < total {
                self.buf.reserve(total - self.buf.len());
                return Ok(None);
            }
            if &self.buf[end + 2 + size..total] != b"\r\n" {
                return Err(protocol("a message not ended by CRLF".to_owned()));
            }
            self.buf.advance(end + 2);
            let payload = self.buf.split_to(size).freeze();
            self.buf.advance(2);
            return Ok(Some(Frame::Message(payload)));
        }
        let frame = if line.eq_ignore_ascii_case(b"PING") {
            Frame::Ping
        } else if line.eq_ignore_ascii_case(b"PONG") {
            Frame::Pong
        } else if line.starts_with(b"-ERR") {
            let text = String::from_utf8_lossy(line).into_owned();
            return Err(protocol(format!("the server said {}", clip(&text))));
        } else {
            // +OK, INFO updates.
            Frame::Other
        };
        self.buf.advance(end + 2);
        Ok(Some(frame))
    }
}

enum Frame {
    Ping,
    Pong,
    Message(bytes::Bytes),
    Other,
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

fn protocol(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

fn clip(text: &str) -> String {
    text.chars().take(120).collect()
}
