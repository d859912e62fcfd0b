//! The part of Redis's protocol (RESP2) a relay needs: `AUTH`, `SUBSCRIBE` on one connection,
//! `PUBLISH` on another (a subscribed connection may not publish), and `PING` on both
//! (<https://redis.io/docs/latest/develop/reference/protocol-spec/>).
//!
//! Redis delivers a connection's own messages to its subscriptions, so the relay's inlet drops
//! them by their origin.

use std::io;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::stream::Stream;
use crate::target::Target;
use crate::{Incoming, MAX_EVENT};

/// A reply, as far as the relay reads them.
#[derive(Debug, PartialEq)]
pub(crate) enum Reply {
    Simple(String),
    Error(String),
    Integer(i64),
    Bulk(Option<Bytes>),
    Array(Option<Vec<Reply>>),
}

/// How deep arrays may nest in a reply (pub/sub replies have depth 1).
const MAX_DEPTH: usize = 4;
/// The most elements of one array.
const MAX_ELEMENTS: usize = 1024;

struct Side {
    stream: Stream,
    buf: BytesMut,
}

impl Side {
    async fn open(target: &Target) -> io::Result<Side> {
        let mut side = Side {
            stream: Stream::open(target).await?,
            buf: BytesMut::with_capacity(8 * 1024),
        };
        if let Some(password) = &target.password {
            let mut args: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(user) = &target.user {
                args.push(user.as_bytes());
            }
            args.push(password.as_bytes());
            side.send(&args).await?;
            match side.reply().await? {
                Reply::Simple(_) => {}
                Reply::Error(e) => {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!("the server refused the login: {e}"),
                    ));
                }
                other => return Err(protocol(format!("AUTH answered {other:?}"))),
            }
        }
        Ok(side)
    }

    async fn send(&mut self, args: &[&[u8]]) -> io::Result<()> {
        self.stream.write_all(&command(args)).await?;
        // TLS holds written data until flushed.
        self.stream.flush().await
    }

    /// The next whole reply. Cancel-safe.
    async fn reply(&mut self) -> io::Result<Reply> {
        loop {
            if let Some((reply, used)) = parse(&self.buf, 0)? {
                self.buf.advance(used);
                return Ok(reply);
            }
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
        }
    }
}

pub(crate) struct Conn {
    /// Subscribed to the channel: reads messages.
    sub: Side,
    /// Publishes, and reads the count each PUBLISH answers.
    publisher: Side,
    channel: String,
}

impl Conn {
    pub(crate) async fn connect(target: &Target, channel: &str) -> io::Result<Conn> {
        let mut sub = Side::open(target).await?;
        sub.send(&[b"SUBSCRIBE", channel.as_bytes()]).await?;
        match sub.reply().await? {
            Reply::Array(Some(items)) if items.first() == Some(&bulk("subscribe")) => {}
            Reply::Error(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("SUBSCRIBE refused: {e}"),
                ));
            }
            other => return Err(protocol(format!("SUBSCRIBE answered {other:?}"))),
        }
        let publisher = Side::open(target).await?;
        Ok(Conn {
            sub,
            publisher,
            channel: channel.to_owned(),
        })
    }

    pub(crate) async fn publish(&mut self, payload: &[u8]) -> io::Result<()> {
        self.publisher
            .send(&[b"PUBLISH", self.channel.as_bytes(), payload])
            .await?;
        match self.publisher.reply().await? {
            Reply::Integer(_) => Ok(()),
            Reply::Error(e) => Err(protocol(format!("PUBLISH refused: {e}"))),
            other => Err(protocol(format!("PUBLISH answered {other:?}"))),
        }
    }

    /// Pings both connections; the subscribed one answers through [`next`](Self::next).
    pub(crate) async fn ping(&mut self) -> io::Result<()> {
        self.sub.send(&[b"PING"]).await?;
        self.publisher.send(&[b"PING"]).await?;
        match self.publisher.reply().await? {
            Reply::Simple(s) if s == "PONG" => Ok(()),
            other => Err(protocol(format!("PING answered {other:?}"))),
        }
    }

    /// The next message, or the answer to a ping, on the subscribed connection. Cancel-safe.
    pub(crate) async fn next(&mut self) -> io::Result<Incoming> {
        loop {
            let reply = self.sub.reply().await?;
            let Reply::Array(Some(items)) = reply else {
                if let Reply::Error(e) = reply {
                    return Err(protocol(format!("the server said {e}")));
                }
                continue;
            };
            match items.as_slice() {
                [kind, _channel, Reply::Bulk(Some(payload))] if *kind == bulk("message") => {
                    return Ok(Incoming::Event(payload.clone()));
                }
                // A subscribed connection answers PING with ["pong", ""].
                [kind, ..] if *kind == bulk("pong") => return Ok(Incoming::Pong),
                _ => {}
            }
        }
    }
}

fn bulk(text: &str) -> Reply {
    Reply::Bulk(Some(Bytes::copy_from_slice(text.as_bytes())))
}

/// A command as an array of bulk strings.
pub(crate) fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// One reply from the start of `buf` and the bytes it took, or `None` if it is not all there.
pub(crate) fn parse(buf: &[u8], depth: usize) -> io::Result<Option<(Reply, usize)>> {
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
        if buf.len() > 64 * 1024 {
            return Err(protocol("a reply line longer than 64 KiB".to_owned()));
        }
        return Ok(None);
    };
    let Some((&kind, rest)) = buf[..end].split_first() else {
        return Err(protocol("an empty reply line".to_owned()));
    };
    let text = std::str::from_utf8(rest)
        .map_err(|_| protocol("a reply line that is not UTF-8".to_owned()))?;
    let number = || -> io::Result<i64> {
        text.parse()
            .map_err(|_| protocol(format!("a bad number in a reply: {text:?}")))
    };
    let after = end + 2;
    Ok(match kind {
        b'+' => Some((Reply::Simple(text.to_owned()), after)),
        b'-' => Some((Reply::Error(text.to_owned()), after)),
        b':' => Some((Reply::Integer(number()?), after)),
        b'$' => {
            let n = number()?;
            if n < 0 {
                return Ok(Some((Reply::Bulk(None), after)));
            }
            let n = usize::try_from(n).expect("not negative");
            if n > MAX_EVENT {
                return Err(protocol(format!("a reply of {n} bytes")));
            }
            if buf.len() < after + n + 2 {
                return Ok(None);
            }
            if &buf[after + n..after + n + 2] != b"\r\n" {
                return Err(protocol("a bulk string not ended by CRLF".to_owned()));
            }
            let data = Bytes::copy_from_slice(&buf[after..after + n]);
            Some((Reply::Bulk(Some(data)), after + n + 2))
        }
        b'*' => {
            let n = number()?;
            if n < 0 {
                return Ok(Some((Reply::Array(None), after)));
            }
            let n = usize::try_from(n).expect("not negative");
            if n > MAX_ELEMENTS || depth >= MAX_DEPTH {
                return Err(protocol(format!(
                    "an array of {n} elements at depth {depth}"
                )));
            }
            let mut items = Vec::with_capacity(n);
            let mut at = after;
            for _ in 0..n {
                match parse(&buf[at..], depth + 1)? {
                    Some((item, used)) => {
                        items.push(item);
                        at += used;
                    }
                    None => return Ok(None),
                }
            }
            Some((Reply::Array(Some(items)), at))
        }
        other => {
            return Err(protocol(format!(
                "an unknown reply type {:?}",
                char::from(other)
            )));
        }
    })
}

fn protocol(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_parse_whole_or_not_at_all() {
        let message = b"*3\r\n$7\r\nmessage\r\n$3\r\nmcp\r\n$5\r\nhe\r\nl\r\n";
        let (reply, used) = parse(message, 0).unwrap().unwrap();
        assert_eq!(used, message.len());
        assert_eq!(
            reply,
            Reply::Array(Some(vec![
                bulk("message"),
                bulk("mcp"),
                Reply::Bulk(Some(Bytes::from_static(b"he\r\nl")))
            ]))
        );
        // Every prefix is incomplete, never an error or a wrong reply.
        for cut in 0..message.len() {
            assert!(parse(&message[..cut], 0).unwrap().is_none(), "cut at {cut}");
        }
        assert_eq!(
            parse(b":42\r\n+OK\r\n", 0).unwrap(),
            Some((Reply::Integer(42), 5))
        );
        assert_eq!(
            parse(b"-ERR no\r\n", 0).unwrap(),
            Some((Reply::Error("ERR no".into()), 9))
        );
        assert_eq!(parse(b"$-1\r\n", 0).unwrap(), Some((Reply::Bulk(None), 5)));
    }

    #[test]
    fn hostile_replies_are_errors() {
        for junk in [
            &b"?x\r\n"[..],
            b"$abc\r\n",
            b"$3\r\nabcXY",
            b"$999999999\r\n",
            b"*99999\r\n",
            b"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
            b"\r\n",
        ] {
            assert!(parse(junk, 0).is_err(), "{}", String::from_utf8_lossy(junk));
        }
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        assert_eq!(
            command(&[b"PUBLISH", b"ch", b"a\r\nb"]),
            b"*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$4\r\na\r\nb\r\n"
        );
    }
}
