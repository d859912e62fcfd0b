//! A small pool of PostgreSQL connections, each used by one call at a time.
//!
//! A call runs a transaction, so it needs a connection of its own for its whole length. A
//! connection goes back to the pool only when the call ended cleanly; one whose call was cancelled,
//! timed out, failed outside SQL, or was abandoned mid-flight is closed instead, so a late cancel
//! request or a half-read result can never reach the next call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::{CancelToken, Client, Config, NoTls};

struct Shared {
    config: Config,
    idle: Mutex<Vec<Client>>,
    permits: Arc<Semaphore>,
}

#[derive(Clone)]
pub(crate) struct PgPool {
    shared: Arc<Shared>,
}

/// A connection lent to one call.
pub(crate) struct PgConn {
    client: Option<Client>,
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
    /// Set once the call ended in a state the next call may start from.
    reusable: bool,
    /// While a statement runs: the token to cancel it with should the call be dropped.
    busy: Option<CancelToken>,
}

impl PgConn {
    pub(crate) fn client(&mut self) -> &mut Client {
        self.client
            .as_mut()
            .expect("a lent connection holds its client")
    }

    /// Marks a statement as running, so that dropping the call cancels it on the server.
    pub(crate) fn start(&mut self) {
        self.busy = Some(self.client().cancel_token());
    }

    /// Gives the connection up: it closes instead of rejoining the pool, and no further cancel
    /// request is sent for it.
    pub(crate) fn abandon(mut self) {
        self.busy = None;
        self.reusable = false;
    }

    /// Marks the call as finished cleanly: the connection may serve the next call.
    pub(crate) fn finish(&mut self) {
        self.busy = None;
        self.reusable = true;
    }
}

impl Drop for PgConn {
    fn drop(&mut self) {
        if let Some(token) = self.busy.take() {
            // The call was dropped mid-statement (the stdio transport drops a cancelled request's
            // future): ask the server to stop it rather than let it run on unobserved.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = token.cancel_query(NoTls).await;
                });
            }
        }
        if let Some(client) = self.client.take()
            && self.reusable
            && !client.is_closed()
        {
            self.shared.idle.lock().expect("pool lock").push(client);
        }
        // Otherwise the client drops here and its connection task ends.
    }
}

impl PgPool {
    pub(crate) fn new(mut config: Config, size: usize, connect_timeout: Duration) -> PgPool {
        config.application_name("mcp-sql");
        config.connect_timeout(connect_timeout);
        PgPool {
            shared: Arc::new(Shared {
                config,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(size.max(1))),
            }),
        }
    }

    /// `error` (from this pool's connections) in words, with the address it was about.
    pub(crate) fn describe(&self, error: &tokio_postgres::Error) -> String {
        super::errors::describe(error, &self.shared.config)
    }

    /// A setup error for the database `database`, from this pool's `error`.
    pub(crate) fn setup_error(
        &self,
        database: &str,
        error: tokio_postgres::Error,
    ) -> crate::error::SqlError {
        super::errors::setup_error(database, Some(&self.shared.config), error)
    }

    /// Opens a new connection and drives it on its own task.
    async fn connect(&self) -> Result<Client, tokio_postgres::Error> {
        let (client, connection) = self.shared.config.connect(NoTls).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "a PostgreSQL connection ended with an error");
            }
        });
        Ok(client)
    }

    /// Lends a connection: an idle one, or a new one while the pool is below its size.
    pub(crate) async fn get(&self) -> Result<PgConn, tokio_postgres::Error> {
        let permit = self
            .shared
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the pool's semaphore is never closed");
        let idle = loop {
            let next = self.shared.idle.lock().expect("pool lock").pop();
            match next {
                Some(c) if c.is_closed() => continue,
                other => break other,
            }
        };
        let client = match idle {
            Some(c) => c,
            None => self.connect().await?,
        };
        Ok(PgConn {
            client: Some(client),
            shared: self.shared.clone(),
            _permit: permit,
            reusable: false,
            busy: None,
        })
    }
}
