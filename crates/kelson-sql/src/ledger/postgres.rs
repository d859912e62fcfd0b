//! Used approvals in a PostgreSQL table, shared by every instance that connects to it.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio_postgres::{Client, Config};

use crate::postgres::PgTls;

use super::{LEDGER_TABLE, SLACK};
use crate::approval::Spent;
use crate::error::SqlError;

/// How long connecting to the ledger may take before a call gives up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Used approvals in a PostgreSQL table, one row per approval until its state has expired.
pub(crate) struct SharedLedger {
    config: Config,
    tls: PgTls,
    client: Mutex<Option<Client>>,
}

impl SharedLedger {
    /// Connects and creates the table if it is missing, so that a bad URL or a missing privilege
    /// is reported at start rather than on the first write.
    pub(crate) async fn connect(url: &str) -> Result<SharedLedger, SqlError> {
        const NAME: &str = "approval ledger";
        // TLS as for the databases: `sslmode` and `sslrootcert` in the URL, verify-full by default
        // off loopback.
        let prepared = crate::postgres::prepare(url, NAME, None, None)?;
        let ledger = SharedLedger {
            config: prepared.config,
            tls: prepared.tls,
            client: Mutex::new(None),
        };
        let client = ledger
            .open()
            .await
            .map_err(|e| crate::postgres::errors::setup_error(NAME, Some(&ledger.config), e))?;
        *ledger.client.lock().await = Some(client);
        Ok(ledger)
    }

    async fn open(&self) -> Result<Client, tokio_postgres::Error> {
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} \
             (nonce text PRIMARY KEY, expires_at timestamptz NOT NULL)"
        );
        crate::postgres::open_own_table(
            &self.config,
            &self.tls,
            CONNECT_TIMEOUT,
            &create,
            "approval ledger",
        )
        .await
    }

    pub(super) async fn consume(&self, nonce: &str, state_ttl: Duration) -> Result<(), Spent> {
        let mut slot = self.client.lock().await;
        if slot.as_ref().is_none_or(Client::is_closed) {
            *slot = None;
            match self.open().await {
                Ok(client) => *slot = Some(client),
                Err(e) => return Err(Spent::Unavailable(e.to_string())),
            }
        }
        let client = slot.as_ref().expect("connected above");
        let remember = (state_ttl + SLACK).as_secs_f64();
        let sql = format!(
            "WITH expired AS (DELETE FROM {LEDGER_TABLE} WHERE expires_at < now()) \
             INSERT INTO {LEDGER_TABLE} (nonce, expires_at) \
             VALUES ($1, now() + make_interval(secs => $2)) ON CONFLICT (nonce) DO NOTHING"
        );
        match client.execute(&sql, &[&nonce, &remember]).await {
            Ok(1) => Ok(()),
            Ok(_) => Err(Spent::AlreadyUsed),
            Err(e) => {
                if client.is_closed() {
                    *slot = None;
                }
                Err(Spent::Unavailable(e.to_string()))
            }
        }
    }
}
