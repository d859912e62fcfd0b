//! Used approvals in a small SQLite file, so that they stay used across restarts: one row per
//! approval until its state has expired, deleted as later approvals are recorded.
//!
//! The times are wall-clock seconds since the Unix epoch, since a monotonic clock starts again with
//! the process. The file is written in WAL mode with `synchronous = NORMAL`: a commit survives the
//! process being killed (the threat here is a restart, not a power cut), and costs no fsync.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};

use super::{LEDGER_TABLE, SLACK};
use crate::approval::Spent;
use crate::error::SqlError;

/// How long a call waits for another process that is writing the file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Used approvals in an SQLite file; processes that open the same file share it.
pub(crate) struct FileLedger {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
}

impl FileLedger {
    /// Opens the file, creating it and its table if they are missing, so that an unwritable
    /// place is reported at start rather than on the first write.
    pub(crate) fn open(path: &Path) -> Result<FileLedger, SqlError> {
        let fail = |source| SqlError::Sqlite {
            path: path.to_owned(),
            source,
        };
        // Never SQLITE_OPEN_URI: the path is a file name.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // `journal_mode` answers with the mode it set, so it is read as a query.
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .map_err(fail)?;
        conn.execute_batch(&format!(
            "PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} \
             (nonce TEXT PRIMARY KEY, expires_at INTEGER NOT NULL) WITHOUT ROWID;"
        ))
        .map_err(fail)?;
        Ok(FileLedger {
            path: path.to_owned(),
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Records `nonce` as used until its state has expired, unless it already was. Runs on a
    /// blocking thread: the write may wait for another process that holds the file's lock.
    pub(crate) async fn consume(&self, nonce: &str, state_ttl: Duration) -> Result<(), Spent> {
        let conn = self.conn.clone();
        let nonce = nonce.to_owned();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let job = move || {
            let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            consume_at(&mut conn, &nonce, now, state_ttl)
        };
        match tokio::task::spawn_blocking(job).await {
            Ok(Ok(true)) => Ok(()),
            Ok(Ok(false)) => Err(Spent::AlreadyUsed),
            Ok(Err(e)) => Err(Spent::Unavailable(format!("{}: {e}", self.path.display()))),
            Err(e) => Err(Spent::Unavailable(e.to_string())),
        }
    }
}

/// Deletes the expired rows and records `nonce` in one transaction; whether it was new.
fn consume_at(
    conn: &mut Connection,
    nonce: &str,
    now: Duration,
    state_ttl: Duration,
) -> rusqlite::Result<bool> {
    let now_secs = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    let remember = i64::try_from((state_ttl + SLACK).as_secs()).unwrap_or(i64::MAX);
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        &format!("DELETE FROM {LEDGER_TABLE} WHERE expires_at < ?1"),
        [now_secs],
    )?;
    let added = tx.execute(
        &format!(
            "INSERT INTO {LEDGER_TABLE} (nonce, expires_at) VALUES (?1, ?2) \
             ON CONFLICT (nonce) DO NOTHING"
        ),
        params![nonce, now_secs.saturating_add(remember)],
    )?;
    tx.commit()?;
    Ok(added == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(conn: &Connection) -> Vec<String> {
        let mut stmt = conn
            .prepare(&format!("SELECT nonce FROM {LEDGER_TABLE} ORDER BY nonce"))
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_nonce_is_used_once_and_forgotten_after_its_state_expired() {
        let dir = std::env::temp_dir().join(format!("mcp-sql-ledger-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("approvals.db");
        let ledger = FileLedger::open(&path).unwrap();
        let mut conn = ledger.conn.lock().unwrap();
        let ttl = Duration::from_secs(600);
        let t = |s: u64| Duration::from_secs(1_800_000_000 + s);

        assert!(consume_at(&mut conn, "a", t(0), ttl).unwrap());
        assert!(!consume_at(&mut conn, "a", t(1), ttl).unwrap());
        assert!(consume_at(&mut conn, "b", t(300), ttl).unwrap());
        // Still remembered until the state's life and the slack are over.
        assert!(!consume_at(&mut conn, "a", t(600 + 60), ttl).unwrap());
        // Past it, recording another approval deletes it.
        assert!(consume_at(&mut conn, "c", t(600 + 61), ttl).unwrap());
        assert_eq!(rows(&conn), ["b", "c"]);
        drop(conn);

        // Another process (here another connection) sees what was recorded.
        let again = FileLedger::open(&path).unwrap();
        assert!(!consume_at(&mut again.conn.lock().unwrap(), "b", t(700), ttl).unwrap());
        drop((ledger, again));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
