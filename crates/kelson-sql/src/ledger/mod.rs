//! Where used write approvals are recorded.
//!
//! In memory by default, which makes an approval single-use within one process's life. Two things
//! defeat that: a restart (the state key read from a file survives it, so a sealed approval is
//! accepted again until its state expires) and instances behind a load balancer (they share the
//! key, so each would accept it once). An approvals file (SQLite, [`file`]) survives restarts and
//! is shared by the processes of one host; a shared ledger (a PostgreSQL table, [`postgres`]) is
//! shared by every instance. Both fail closed: when the record cannot be written, nothing runs.
//! Each is there only with its engine's feature; the record in memory always is.

#[cfg(feature = "sqlite")]
mod file;
#[cfg(feature = "postgres")]
mod postgres;

use std::time::Duration;

use crate::approval::{Spent, UsedApprovals};

#[cfg(feature = "sqlite")]
pub(crate) use file::FileLedger;
#[cfg(feature = "postgres")]
pub(crate) use postgres::SharedLedger;

/// The table the approvals file and the shared ledger keep used approvals in.
pub const LEDGER_TABLE: &str = "mcp_used_approvals";

/// Extra time a used approval is remembered past its state's lifetime, for clock differences
/// between the instance that sealed the state and the one that records its use.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
const SLACK: Duration = Duration::from_secs(60);

pub(crate) enum Approvals {
    Local(UsedApprovals),
    #[cfg(feature = "sqlite")]
    File(FileLedger),
    #[cfg(feature = "postgres")]
    Shared(Box<SharedLedger>),
}

impl Approvals {
    /// Records `nonce` as used, unless it already was (see [`UsedApprovals::consume`]).
    pub(crate) async fn consume(&self, nonce: &str, state_ttl: Duration) -> Result<(), Spent> {
        match self {
            Approvals::Local(used) => used.consume(nonce, state_ttl),
            #[cfg(feature = "sqlite")]
            Approvals::File(file) => file.consume(nonce, state_ttl).await,
            #[cfg(feature = "postgres")]
            Approvals::Shared(ledger) => ledger.consume(nonce, state_ttl).await,
        }
    }
}
