//! The exchanges of a call, each one write and one read.
//!
//! A read ([`Wire::read`]) sends, in one write: `START TRANSACTION READ ONLY`; one `SELECT` that
//! sets the transaction's limits with `set_config(.., true)` and takes its first snapshot (after
//! which PostgreSQL refuses to make it read-write); the user's statement as Parse (whose unnamed
//! statement refuses more than one command), Describe, Bind with the parameters in text format,
//! and an Execute of the first batch of rows; then Sync. An error anywhere makes the server skip
//! to the Sync, so the statement never runs outside the transaction. More rows cost one Execute
//! and Sync each ([`Wire::fetch`]). [`Wire::end_read`] then queues the rollback and the reset,
//! which go out without a wait for their answer.
//!
//! An approved write ([`Wire::write`]) sends the same with `READ WRITE` and an Execute of every
//! row, then `COMMIT` (which a failed transaction turns into a rollback) and `DISCARD ALL`, and
//! reads all three answers: one round trip, the reset included, so that a write's connection is
//! never reused before its reset is known to have worked.

use bytes::BytesMut;
use fallible_iterator::FallibleIterator as _;
use postgres_protocol::IsNull;
use postgres_protocol::message::backend::{DataRowBody, Message};
use postgres_protocol::message::frontend;

use super::{DbError, Incoming, Wire, WireError};

/// What a read leaves behind its rolled-back transaction, cleared: session advisory locks and
/// statements prepared with SQL `PREPARE` survive a rollback; everything else a read-only
/// transaction can change (settings, roles, `LISTEN`, cursors) is rolled back with it, and what
/// would outlive it otherwise (temporary tables, sequence state) is refused in a read-only one.
const END_READ: &str = "ROLLBACK; SELECT pg_advisory_unlock_all(); DEALLOCATE ALL";

/// The portal of the user's statement: named, so that a query of the adapter's own in the same
/// transaction (a type lookup, on the unnamed one) leaves it open for the next batch.
const PORTAL: &str = "c";

/// The format result columns are asked for in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResultFormat {
    Text,
    Binary,
}

/// A result column: its name and type.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub(crate) name: String,
    pub(crate) oid: u32,
}

/// How a statement's rows ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The statement completed, with its command tag.
    Complete(String),
    /// The batch is full; the portal has more rows.
    Suspended,
    /// The statement was empty (whitespace or comments).
    Empty,
}

/// What one exchange brought back.
#[derive(Default)]
pub(crate) struct Outcome {
    /// The statement's number of parameters, once it parsed.
    pub(crate) params: Option<usize>,
    /// The statement's result columns (empty for a statement without rows).
    pub(crate) columns: Vec<Column>,
    /// The rows of this batch.
    pub(crate) rows: Vec<DataRowBody>,
    /// Rows read past for their size (writes only).
    pub(crate) skipped: usize,
    pub(crate) end: Option<End>,
    /// The server's error, if the statement (or what surrounds it) failed.
    pub(crate) error: Option<Box<DbError>>,
    /// For a write: the command tag of the commit (`COMMIT`, or `ROLLBACK` when the transaction
    /// had failed).
    pub(crate) commit: Option<String>,
    /// For a write: the session reset after the commit failed, so the connection must not serve
    /// again (what the write did stands).
    pub(crate) reset_failed: bool,
}

/// The transaction a call runs in.
pub(crate) struct Tx {
    pub(crate) read_only: bool,
    /// `statement_timeout` and `lock_timeout`, in milliseconds.
    pub(crate) timeout_ms: u128,
}

impl Tx {
    /// The statements that open the transaction: its start, then its limits in one `SELECT`,
    /// which also takes the first snapshot.
    fn statements(&self) -> [String; 2] {
        let ms = self.timeout_ms.max(1);
        [
            if self.read_only {
                "START TRANSACTION READ ONLY".to_owned()
            } else {
                "START TRANSACTION READ WRITE".to_owned()
            },
            format!(
                "SELECT set_config('statement_timeout', '{ms}', true), \
                 set_config('lock_timeout', '{ms}', true), \
                 set_config('idle_in_transaction_session_timeout', '{}', true)",
                ms + 60_000
            ),
        ]
    }
}

/// Queues one statement of the adapter's own: Parse, Bind and Execute, without Sync.
fn own_statement(sql: &str, out: &mut BytesMut) -> Result<(), WireError> {
    frontend::parse("", sql, [], out)?;
    bind("", &[], ResultFormat::Text, out)?;
    frontend::execute("", 0, out)?;
    Ok(())
}

fn bind(
    portal: &str,
    params: &[Option<String>],
    format: ResultFormat,
    out: &mut BytesMut,
) -> Result<(), WireError> {
    let formats: &[i16] = match format {
        ResultFormat::Text => &[],
        ResultFormat::Binary => &[1],
    };
    frontend::bind(
        portal,
        "",
        [],
        params.iter(),
        |param, buf| match param {
            None => Ok(IsNull::Yes),
            Some(text) => {
                buf.extend_from_slice(text.as_bytes());
                Ok(IsNull::No)
            }
        },
        formats.iter().copied(),
        out,
    )
    .map_err(|_| WireError::Protocol("a parameter too large to send".into()))
}

impl Wire {
    /// A read's one round trip: the transaction, its limits, the statement and its first `rows`
    /// rows (0: all).
    pub(crate) async fn read(
        &mut self,
        tx: &Tx,
        sql: &str,
        params: &[Option<String>],
        format: ResultFormat,
        rows: i32,
    ) -> Result<Outcome, WireError> {
        self.queue_call(tx, sql, params, format, rows)?;
        self.send_and_wait().await?;
        self.settle().await?;
        let mut outcome = Outcome::default();
        self.read_call(&mut outcome, 2).await?;
        Ok(outcome)
    }

    /// The next batch of a read whose portal is suspended: up to `rows` more rows.
    pub(crate) async fn fetch(&mut self, rows: i32) -> Result<Outcome, WireError> {
        frontend::execute(PORTAL, rows, self.out())?;
        frontend::sync(self.out());
        self.send_and_wait().await?;
        let mut outcome = Outcome::default();
        self.read_call(&mut outcome, 0).await?;
        Ok(outcome)
    }

    /// A query of the adapter's own inside the call's transaction (on the unnamed statement and
    /// portal), every row at once.
    pub(crate) async fn own_query(
        &mut self,
        sql: &str,
        params: &[Option<String>],
    ) -> Result<Outcome, WireError> {
        let out = self.out();
        frontend::parse("", sql, [], out)?;
        frontend::describe(b'S', "", out)?;
        bind("", params, ResultFormat::Binary, out)?;
        frontend::execute("", 0, out)?;
        frontend::sync(out);
        self.send_and_wait().await?;
        self.settle().await?;
        let mut outcome = Outcome::default();
        self.read_call(&mut outcome, 0).await?;
        Ok(outcome)
    }

    /// Ends a read: queues the rollback of its transaction and the clearing of what survives a
    /// rollback, whose answer nobody waits for (the next call reads it). It is written by
    /// [`Wire::send_unsent`], or in front of the next call's own messages when a call is already
    /// waiting for the connection (see the pool).
    pub(crate) fn end_read(&mut self) -> Result<(), WireError> {
        self.queue_owed(END_READ)
    }

    /// An approved write's one round trip: the transaction, the statement run to completion,
    /// the commit and the session reset.
    pub(crate) async fn write(
        &mut self,
        tx: &Tx,
        sql: &str,
        params: &[Option<String>],
    ) -> Result<Outcome, WireError> {
        self.queue_call(tx, sql, params, ResultFormat::Binary, 0)?;
        frontend::query("COMMIT", self.out())?;
        frontend::query("DISCARD ALL", self.out())?;
        self.send_and_wait().await?;
        self.settle().await?;
        let mut outcome = Outcome::default();
        self.read_call(&mut outcome, 2).await?;
        // The commit's answer: its tag, or the error of a deferred constraint.
        loop {
            match self.recv().await? {
                Incoming::Message(Message::CommandComplete(body)) => {
                    outcome.commit = Some(body.tag()?.to_owned());
                }
                Incoming::Message(Message::ErrorResponse(body)) => {
                    outcome.commit = None;
                    outcome
                        .error
                        .get_or_insert(Box::new(DbError::parse(&body)?));
                }
                Incoming::Message(Message::ReadyForQuery(_)) => break,
                _ => {}
            }
        }
        outcome.reset_failed = self.finish_sync().await?.is_some();
        Ok(outcome)
    }

    fn queue_call(
        &mut self,
        tx: &Tx,
        sql: &str,
        params: &[Option<String>],
        format: ResultFormat,
        rows: i32,
    ) -> Result<(), WireError> {
        for statement in tx.statements() {
            own_statement(&statement, self.out())?;
        }
        let out = self.out();
        frontend::parse("", sql, [], out)?;
        frontend::describe(b'S', "", out)?;
        bind(PORTAL, params, format, out)?;
        frontend::execute(PORTAL, rows, out)?;
        frontend::sync(out);
        Ok(())
    }

    /// Reads one Sync's answers: the `prefix` statements of the adapter's own first (each ending
    /// with its CommandComplete), then the user's statement.
    async fn read_call(
        &mut self,
        outcome: &mut Outcome,
        mut prefix: usize,
    ) -> Result<(), WireError> {
        loop {
            let message = match self.recv().await? {
                Incoming::Message(message) => message,
                Incoming::SkippedRow => {
                    outcome.skipped += 1;
                    continue;
                }
            };
            match message {
                Message::ParseComplete | Message::BindComplete | Message::CloseComplete => {}
                Message::DataRow(row) if prefix == 0 => outcome.rows.push(row),
                Message::DataRow(_) => {}
                Message::CommandComplete(_) if prefix > 0 => prefix -= 1,
                Message::CommandComplete(body) => {
                    outcome.end = Some(End::Complete(body.tag()?.to_owned()));
                }
                Message::PortalSuspended => outcome.end = Some(End::Suspended),
                Message::EmptyQueryResponse => outcome.end = Some(End::Empty),
                Message::ParameterDescription(body) => {
                    outcome.params = Some(body.parameters().count()?);
                }
                Message::RowDescription(body) => {
                    let mut fields = body.fields();
                    while let Some(field) = fields.next()? {
                        outcome.columns.push(Column {
                            name: field.name().to_owned(),
                            oid: field.type_oid(),
                        });
                    }
                    self.columns_known(outcome.columns.len());
                }
                Message::NoData => {}
                Message::ErrorResponse(body) => {
                    let error = DbError::parse(&body)?;
                    // The server ends the session after a FATAL error: no ReadyForQuery follows.
                    if error.severity == "FATAL" || error.severity == "PANIC" {
                        return Err(WireError::Db(Box::new(error)));
                    }
                    outcome.error.get_or_insert(Box::new(error));
                }
                Message::CopyInResponse(_) | Message::CopyOutResponse(_) => {
                    return Err(WireError::Copy);
                }
                Message::ReadyForQuery(_) => return Ok(()),
                _ => {
                    return Err(WireError::Protocol(
                        "a message that does not belong to a statement's answer".into(),
                    ));
                }
            }
        }
    }

    /// A query of the simple protocol, its rows as text: for the connection's own checks.
    pub(crate) async fn simple_rows(&mut self, sql: &str) -> Result<Vec<Vec<String>>, WireError> {
        frontend::query(sql, self.out())?;
        self.send_and_wait().await?;
        self.settle().await?;
        let mut rows = Vec::new();
        let mut error = None;
        loop {
            match self.recv().await? {
                Incoming::Message(Message::DataRow(row)) => {
                    let mut values = Vec::new();
                    let mut ranges = row.ranges();
                    while let Some(range) = ranges.next()? {
                        values.push(
                            range
                                .map(|r| String::from_utf8_lossy(&row.buffer()[r]).into_owned())
                                .unwrap_or_default(),
                        );
                    }
                    rows.push(values);
                }
                Incoming::Message(Message::ErrorResponse(body)) => {
                    error.get_or_insert(Box::new(DbError::parse(&body)?));
                }
                Incoming::Message(Message::CopyInResponse(_) | Message::CopyOutResponse(_)) => {
                    return Err(WireError::Copy);
                }
                Incoming::Message(Message::ReadyForQuery(_)) => break,
                _ => {}
            }
        }
        match error {
            Some(e) => Err(WireError::Db(e)),
            None => Ok(rows),
        }
    }
}
