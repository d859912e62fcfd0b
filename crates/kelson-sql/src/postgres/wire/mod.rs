//! The adapter's own PostgreSQL connections, for the calls: every message a call sends goes out in
//! one write, and its answers come back in one read.
//!
//! Why not the driver: tokio-postgres waits for each step's answer before it sends the next one
//! (the transaction's start, the statement's Parse, its Bind, each Execute, the rollback, the
//! reset), so a one-row read cost five round trips to the server. Nothing a read sends depends on
//! an answer, because the extended protocol makes the server skip everything after an error up to
//! the next Sync: the start of the transaction, its limits, the statement's Parse, Describe, Bind
//! and Execute all go out together, and a refused statement never runs outside the transaction.
//! The rollback and the session reset follow the answer in a write of their own that nobody waits
//! for: the next call on the connection reads their answers together with its own (see
//! [`Wire::settle`]), and a failed reset makes that call's answers unusable.
//!
//! tokio-postgres stays for the adapter's own tables (the approval ledger, the task store), and
//! its configuration parser reads the connection strings: [`connect`] takes its `Config`.
//! postgres-protocol (tokio-postgres's own message and SCRAM code) encodes and decodes messages.

mod connect;
mod error;
mod exchange;

pub(crate) use connect::{CancelKey, connect};
pub(crate) use error::{DbError, WireError};
pub(crate) use exchange::{Column, End, Outcome, ResultFormat, Tx};

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf as _, BytesMut};
use futures_util::FutureExt as _;
use postgres_protocol::message::backend::Message;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

/// The largest message other than a result row the adapter accepts (a row description of many
/// columns, a long error): anything larger means the stream is not what it should be.
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// The socket under a connection.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, buf),
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
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
        }
    }
}

/// What [`Wire::recv`] read.
pub(crate) enum Incoming {
    Message(Message),
    /// A result row over the size allowed, already read past.
    SkippedRow,
}

/// What to do with a result row over the size allowed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Oversized {
    /// Stop reading: the connection is given up ([`WireError::Oversized`]).
    Stop,
    /// Read past it without keeping it (an approved write must learn whether it committed).
    Skip,
}

/// One connection, used by one call at a time.
pub(crate) struct Wire {
    stream: Stream,
    rbuf: BytesMut,
    wbuf: BytesMut,
    cancel: CancelKey,
    /// Answers (each ending with ReadyForQuery) owed for work written but not yet read.
    owed: usize,
    /// The largest value the current call accepts, the largest row that allows once the columns
    /// are known, and what to do with a larger row.
    value_cap: usize,
    row_cap: usize,
    oversized: Oversized,
    /// How many times a call on this connection waited for the server.
    trips: u64,
}

impl Wire {
    fn new(stream: Stream, cancel: CancelKey) -> Wire {
        Wire {
            stream,
            rbuf: BytesMut::with_capacity(8 * 1024),
            wbuf: BytesMut::with_capacity(1024),
            cancel,
            owed: 0,
            value_cap: MAX_MESSAGE,
            row_cap: MAX_MESSAGE,
            oversized: Oversized::Stop,
            trips: 0,
        }
    }

    /// What cancels the statement running on this connection.
    pub(crate) fn cancel_key(&self) -> &CancelKey {
        &self.cancel
    }

    /// How many times calls on this connection waited for the server.
    pub(crate) fn trips(&self) -> u64 {
        self.trips
    }

    /// Sets the largest result value accepted until the next call, and what to do with a row that
    /// must hold a larger one (longer than that many bytes for each of its columns).
    pub(crate) fn limit_values(&mut self, cap: usize, oversized: Oversized) {
        self.value_cap = cap;
        self.row_cap = MAX_MESSAGE.max(cap);
        self.oversized = oversized;
    }

    /// The statement's columns are known: a row longer than the value cap for each of them
    /// cannot be taken.
    fn columns_known(&mut self, count: usize) {
        // Each value also carries its 4-byte length; the row, its 2-byte count.
        self.row_cap = self
            .value_cap
            .saturating_add(4)
            .saturating_mul(count.max(1))
            .saturating_add(2);
    }

    /// The buffer of messages to send.
    fn out(&mut self) -> &mut BytesMut {
        &mut self.wbuf
    }

    /// Whether the connection is closed, as far as can be told without waiting: the server ended
    /// it while it was idle (a restart, an administrator's `pg_terminate_backend`), or sent
    /// something no work of the adapter asked for (the error that announces such an end).
    pub(crate) fn looks_closed(&mut self) -> bool {
        loop {
            self.rbuf.reserve(1024);
            match self.stream.read_buf(&mut self.rbuf).now_or_never() {
                None => break,
                Some(Ok(0) | Err(_)) => return true,
                Some(Ok(_)) => continue,
            }
        }
        self.owed == 0 && !self.rbuf.is_empty()
    }

    /// Writes every queued message, in one write.
    async fn send(&mut self) -> Result<(), WireError> {
        self.stream.write_all(&self.wbuf).await?;
        self.stream.flush().await?;
        self.wbuf.clear();
        Ok(())
    }

    /// Writes every queued message and counts a wait for the server: the caller reads answers
    /// next.
    async fn send_and_wait(&mut self) -> Result<(), WireError> {
        self.trips += 1;
        self.send().await
    }

    /// Queues a simple-protocol query whose answer nobody waits for: the next call reads it.
    fn queue_owed(&mut self, sql: &str) -> Result<(), WireError> {
        postgres_protocol::message::frontend::query(sql, self.out())?;
        self.owed += 1;
        Ok(())
    }

    /// Whether queued messages have not been written yet (a read's end, see [`Wire::end_read`]).
    pub(crate) fn has_unsent(&self) -> bool {
        !self.wbuf.is_empty()
    }

    /// Writes the queued messages, without waiting for an answer.
    pub(crate) async fn send_unsent(&mut self) -> Result<(), WireError> {
        if self.has_unsent() {
            self.send().await?;
        }
        Ok(())
    }

    /// Reads the answers owed for earlier work. Any error in them means the session may still
    /// hold what that work was to clear.
    async fn settle(&mut self) -> Result<(), WireError> {
        let mut failed = None;
        while self.owed > 0 {
            match self.recv().await? {
                Incoming::Message(Message::ReadyForQuery(body)) => {
                    self.owed -= 1;
                    if body.status() != b'I' && failed.is_none() {
                        failed = Some(Box::new(DbError {
                            severity: "ERROR".into(),
                            code: tokio_postgres::error::SqlState::INTERNAL_ERROR,
                            message: "a transaction was still open after the session reset".into(),
                            detail: None,
                            hint: None,
                            position: None,
                        }));
                    }
                }
                Incoming::Message(Message::ErrorResponse(body)) => {
                    failed.get_or_insert(Box::new(DbError::parse(&body)?));
                }
                Incoming::Message(Message::CopyInResponse(_) | Message::CopyOutResponse(_)) => {
                    return Err(WireError::Copy);
                }
                _ => {}
            }
        }
        match failed {
            Some(e) => Err(WireError::Unclean(e)),
            None => Ok(()),
        }
    }

    /// Reads the next message that matters, skipping notices, parameter changes and
    /// notifications.
    async fn recv(&mut self) -> Result<Incoming, WireError> {
        loop {
            if self.rbuf.len() >= 5 {
                let tag = self.rbuf[0];
                let len =
                    u32::from_be_bytes([self.rbuf[1], self.rbuf[2], self.rbuf[3], self.rbuf[4]])
                        as usize;
                if tag == b'D' && len > self.row_cap {
                    match self.oversized {
                        Oversized::Stop => return Err(WireError::Oversized(len)),
                        Oversized::Skip => {
                            self.skip(1 + len).await?;
                            return Ok(Incoming::SkippedRow);
                        }
                    }
                }
                if tag != b'D' && len > MAX_MESSAGE {
                    return Err(WireError::Protocol(format!(
                        "a message of {len} bytes (type {:?})",
                        char::from(tag)
                    )));
                }
            }
            match Message::parse(&mut self.rbuf)? {
                Some(Message::NoticeResponse(_))
                | Some(Message::ParameterStatus(_))
                | Some(Message::NotificationResponse(_)) => continue,
                Some(message) => return Ok(Incoming::Message(message)),
                None => {
                    if self.stream.read_buf(&mut self.rbuf).await? == 0 {
                        return Err(WireError::Closed);
                    }
                }
            }
        }
    }

    /// Reads past `len` bytes without keeping them.
    async fn skip(&mut self, mut len: usize) -> Result<(), WireError> {
        loop {
            let here = len.min(self.rbuf.len());
            self.rbuf.advance(here);
            len -= here;
            if len == 0 {
                return Ok(());
            }
            self.rbuf.reserve(len.min(64 * 1024));
            if self.stream.read_buf(&mut self.rbuf).await? == 0 {
                return Err(WireError::Closed);
            }
        }
    }

    /// Reads messages up to the next ReadyForQuery, keeping the first error.
    async fn finish_sync(&mut self) -> Result<Option<Box<DbError>>, WireError> {
        let mut error = None;
        loop {
            match self.recv().await? {
                Incoming::Message(Message::ReadyForQuery(_)) => return Ok(error),
                Incoming::Message(Message::ErrorResponse(body)) => {
                    error.get_or_insert(Box::new(DbError::parse(&body)?));
                }
                Incoming::Message(Message::CopyInResponse(_) | Message::CopyOutResponse(_)) => {
                    return Err(WireError::Copy);
                }
                _ => {}
            }
        }
    }
}
