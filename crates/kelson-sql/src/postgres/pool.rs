//! PostgreSQL's connections in the shared pool ([`crate::remote`]): our own wire connections
//! ([`super::wire`]), checked for a close by the server while idle, stopped with a cancel request,
//! and carrying a read's rollback and reset unsent until the next call or the pool's sweep.

use std::time::Duration;

use tokio_postgres::Config;

use super::tls::PgTls;
use super::wire::{self, CancelKey, Wire, WireError};
use crate::remote::{Connector, Lent, Pool, Stopper};

pub(crate) use crate::remote::GetError;

/// How the pool opens and looks after PostgreSQL connections.
pub(crate) struct PgConnector {
    config: Config,
    tls: PgTls,
}

impl Connector for PgConnector {
    type Conn = Wire;
    type Error = WireError;
    type Stopper = CancelKey;

    async fn connect(&self) -> Result<Wire, WireError> {
        wire::connect(&self.config, &self.tls).await
    }

    async fn ready(&self, conn: &mut Wire, _idle_for: Duration) -> bool {
        !conn.looks_closed()
    }

    fn stopper(&self, conn: &Wire) -> CancelKey {
        conn.cancel_key().clone()
    }

    fn trips(conn: &Wire) -> u64 {
        conn.trips()
    }

    fn has_unsent(conn: &Wire) -> bool {
        conn.has_unsent()
    }

    async fn send_unsent(conn: &mut Wire) -> bool {
        conn.send_unsent().await.is_ok()
    }
}

impl Stopper for CancelKey {
    const ENGINE: &'static str = "PostgreSQL";

    async fn stop(&self) -> Result<(), String> {
        self.cancel().await.map_err(|e| e.to_string())
    }
}

pub(crate) type PgPool = Pool<PgConnector>;

/// A connection lent to one call.
pub(crate) type PgConn = Lent<PgConnector>;

impl Lent<PgConnector> {
    pub(crate) fn wire(&mut self) -> &mut Wire {
        self.conn()
    }
}

impl Pool<PgConnector> {
    pub(crate) fn postgres(
        mut config: Config,
        tls: PgTls,
        size: usize,
        connect_timeout: Duration,
    ) -> PgPool {
        config.application_name("kelson-sql");
        config.connect_timeout(connect_timeout);
        Pool::new(PgConnector { config, tls }, size)
    }

    /// `error` (from this pool's connections) in words, with the address it was about.
    pub(crate) fn describe(&self, error: &WireError) -> String {
        super::errors::describe_wire(error, &self.connector().config)
    }

    /// A setup error for the database `database`, from this pool's `error`.
    pub(crate) fn setup_error(&self, database: &str, error: WireError) -> crate::error::SqlError {
        super::errors::wire_setup_error(database, &self.connector().config, error)
    }
}
