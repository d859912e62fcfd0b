//! A small pool of PostgreSQL connections, each used by one call at a time.
//!
//! A call runs a transaction, so it needs a connection of its own for its whole length. A
//! connection goes back to the pool only when the call ended cleanly; one whose call was cancelled,
//! timed out, failed outside SQL, or was abandoned mid-flight is closed instead, so a late cancel
//! request or a half-read result can never reach the next call.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio_postgres::Config;

use super::tls::PgTls;
use super::wire::{self, CancelKey, Wire, WireError};

use crate::database::PoolStats;

/// How long a connection may wait in the pool with its previous read's rollback unsent (a call
/// that was waiting for it gave up), holding the read's transaction and its table locks open.
pub(crate) const SWEEP_AFTER: Duration = Duration::from_millis(5);

/// Writes, after [`SWEEP_AFTER`], what idle connections still hold queued: each is taken as a
/// call takes one (a permit first), its messages written, and given back. One sweep per pool at
/// a time.
fn sweep_later(shared: &Arc<Shared>) {
    if shared.sweeping.swap(true, Ordering::AcqRel) {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        shared.sweeping.store(false, Ordering::Release);
        return;
    };
    let shared = shared.clone();
    runtime.spawn(async move {
        tokio::time::sleep(SWEEP_AFTER).await;
        shared.sweeping.store(false, Ordering::Release);
        loop {
            let Ok(permit) = shared.permits.clone().try_acquire_owned() else {
                // Every connection is lent: the pool is busy, and the next look comes later.
                if shared.has_unsent_idle() {
                    sweep_later(&shared);
                }
                return;
            };
            let taken = {
                let mut idle = shared.idle.lock().expect("pool lock");
                idle.iter()
                    .position(Wire::has_unsent)
                    .map(|at| idle.swap_remove(at))
            };
            let Some(mut wire) = taken else { return };
            if wire.send_unsent().await.is_ok() {
                shared.idle.lock().expect("pool lock").push(wire);
            }
            drop(permit);
        }
    });
}

struct Shared {
    config: Config,
    tls: PgTls,
    idle: Mutex<Vec<Wire>>,
    permits: Arc<Semaphore>,
    size: usize,
    /// Calls waiting for a connection now.
    waiting: AtomicUsize,
    /// Times calls waited for the server, over every connection the pool has lent.
    round_trips: AtomicU64,
    /// Set while a sweep of unsent work is scheduled.
    sweeping: AtomicBool,
}

impl Shared {
    fn has_unsent_idle(&self) -> bool {
        self.idle
            .lock()
            .expect("pool lock")
            .iter()
            .any(Wire::has_unsent)
    }
}

/// Why no connection was lent.
pub(crate) enum GetError {
    /// Every connection stayed in use for the whole wait.
    Busy { connections: usize },
    /// A new connection could not be opened.
    Connect(WireError),
}

#[derive(Clone)]
pub(crate) struct PgPool {
    shared: Arc<Shared>,
}

/// A connection lent to one call.
pub(crate) struct PgConn {
    wire: Option<Wire>,
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
    /// Set once the call ended in a state the next call may start from.
    reusable: bool,
    /// While a statement runs: the token to cancel it with should the call be dropped.
    busy: Option<CancelKey>,
    /// The connection's round-trip count when it was lent.
    trips_before: u64,
}

impl PgConn {
    pub(crate) fn wire(&mut self) -> &mut Wire {
        self.wire
            .as_mut()
            .expect("a lent connection holds its client")
    }

    /// Marks a statement as running, so that dropping the call cancels it on the server.
    pub(crate) fn start(&mut self) {
        self.busy = Some(self.wire().cancel_key().clone());
    }

    /// Gives the connection up: it closes instead of rejoining the pool, and no further cancel
    /// request is sent for it.
    pub(crate) fn abandon(mut self) {
        self.busy = None;
        self.reusable = false;
    }

    /// Marks the call as finished cleanly: the connection may serve the next call. What the call
    /// left queued (a read's rollback and reset) is written now, unless a call is waiting for a
    /// connection: that call will write it in front of its own messages, which saves the server
    /// a read and the adapter a write per call under load. Should nobody take the connection
    /// after all (the waiting call gave up), the pool writes it within [`SWEEP_AFTER`].
    pub(crate) async fn finish(&mut self) {
        self.busy = None;
        if self.shared.waiting.load(Ordering::Relaxed) == 0
            && self.wire().send_unsent().await.is_err()
        {
            return;
        }
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
                    let _ = token.cancel().await;
                });
            }
        }
        if let Some(wire) = self.wire.take() {
            let trips = wire.trips() - self.trips_before;
            self.shared.round_trips.fetch_add(trips, Ordering::Relaxed);
            if self.reusable {
                let unsent = wire.has_unsent();
                self.shared.idle.lock().expect("pool lock").push(wire);
                if unsent {
                    sweep_later(&self.shared);
                }
            }
        }
        // Otherwise the client drops here and its connection task ends.
    }
}

impl PgPool {
    pub(crate) fn new(
        mut config: Config,
        tls: PgTls,
        size: usize,
        connect_timeout: Duration,
    ) -> PgPool {
        config.application_name("kelson-sql");
        config.connect_timeout(connect_timeout);
        let size = size.max(1);
        PgPool {
            shared: Arc::new(Shared {
                config,
                tls,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(size)),
                size,
                waiting: AtomicUsize::new(0),
                round_trips: AtomicU64::new(0),
                sweeping: AtomicBool::new(false),
            }),
        }
    }

    /// `error` (from this pool's connections) in words, with the address it was about.
    pub(crate) fn describe(&self, error: &WireError) -> String {
        super::errors::describe_wire(error, &self.shared.config)
    }

    /// A setup error for the database `database`, from this pool's `error`.
    pub(crate) fn setup_error(&self, database: &str, error: WireError) -> crate::error::SqlError {
        super::errors::wire_setup_error(database, &self.shared.config, error)
    }

    /// The pool's state now: its size, the connections lent and the calls waiting for one.
    pub(crate) fn stats(&self, pool: &'static str) -> PoolStats {
        let shared = &self.shared;
        PoolStats {
            pool,
            size: shared.size,
            in_use: shared
                .size
                .saturating_sub(shared.permits.available_permits()),
            waiting: shared.waiting.load(Ordering::Relaxed),
            round_trips: shared.round_trips.load(Ordering::Relaxed),
        }
    }

    /// Opens a new connection.
    async fn connect(&self) -> Result<Wire, WireError> {
        wire::connect(&self.shared.config, &self.shared.tls).await
    }

    /// Lends a connection: an idle one, or a new one while the pool is below its size. Waits at
    /// most `wait` for a call to give one back; opening a new one is not part of the wait.
    pub(crate) async fn get(&self, wait: Duration) -> Result<PgConn, GetError> {
        let permits = &self.shared.permits;
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => unreachable!("the pool's semaphore is never closed"),
            Err(TryAcquireError::NoPermits) => {
                let _waiting = crate::engine::Waiting::new(&self.shared.waiting);
                match tokio::time::timeout(wait, permits.clone().acquire_owned()).await {
                    Ok(permit) => permit.expect("the pool's semaphore is never closed"),
                    Err(_) => {
                        return Err(GetError::Busy {
                            connections: self.shared.size,
                        });
                    }
                }
            }
        };
        // A connection the server closed while idle (a restart, an administrator) is dropped here
        // rather than failing the call.
        let idle = loop {
            let next = self.shared.idle.lock().expect("pool lock").pop();
            match next {
                Some(mut c) => {
                    if !c.looks_closed() {
                        break Some(c);
                    }
                }
                None => break None,
            }
        };
        let wire = match idle {
            Some(c) => c,
            None => self.connect().await.map_err(GetError::Connect)?,
        };
        Ok(PgConn {
            trips_before: wire.trips(),
            wire: Some(wire),
            shared: self.shared.clone(),
            _permit: permit,
            reusable: false,
            busy: None,
        })
    }
}
