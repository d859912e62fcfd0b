//! A small pool of MySQL connections, each used by one call at a time, and the side connection
//! that stops a running statement (`KILL QUERY`).
//!
//! A connection goes back to the pool only when its call ended cleanly and its session was reset
//! (`COM_RESET_CONNECTION`); one whose call was cancelled, timed out, failed outside SQL, or was
//! dropped mid-statement is closed instead.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql_async::Conn;
use mysql_async::prelude::Queryable as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use super::options::Prepared;
use crate::database::PoolStats;

/// How long a connection may stay idle before it is pinged when lent again.
const IDLE_CHECK: Duration = Duration::from_secs(30);

struct Shared {
    prepared: Prepared,
    /// Idle connections, with when each was given back.
    idle: Mutex<Vec<(Conn, Instant)>>,
    permits: Arc<Semaphore>,
    size: usize,
    waiting: AtomicUsize,
}

/// Why no connection was lent.
pub(crate) enum GetError {
    /// Every connection stayed in use for the whole wait.
    Busy { connections: usize },
    /// A new connection could not be opened.
    Connect(mysql_async::Error),
    /// A new connection was not opened within the connect timeout.
    ConnectTimeout(Duration),
}

#[derive(Clone)]
pub(crate) struct MyPool {
    shared: Arc<Shared>,
}

/// A connection lent to one call.
pub(crate) struct MyConn {
    conn: Option<Conn>,
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
    reusable: bool,
    /// While a statement runs: the connection id to `KILL QUERY` should the call be dropped.
    busy: Option<u32>,
}

impl MyConn {
    pub(crate) fn conn(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("a lent connection holds its client")
    }

    /// The server's id of this connection, which `KILL QUERY` names.
    pub(crate) fn id(&self) -> u32 {
        self.conn.as_ref().map_or(0, Conn::id)
    }

    /// Marks a statement as running, so that dropping the call stops it on the server.
    pub(crate) fn start(&mut self) {
        self.busy = Some(self.id());
    }

    /// Gives the connection up: it closes instead of rejoining the pool.
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

impl Drop for MyConn {
    fn drop(&mut self) {
        if let Some(id) = self.busy.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            // The call was dropped mid-statement (the stdio transport drops a cancelled
            // request's future): stop the statement rather than let it run on unobserved.
            let prepared = self.shared.prepared.clone();
            runtime.spawn(async move {
                if let Err(e) = kill_query(&prepared, id).await {
                    tracing::warn!(error = %e, "could not stop a MySQL statement");
                }
            });
        }
        if let Some(conn) = self.conn.take()
            && self.reusable
        {
            self.shared
                .idle
                .lock()
                .expect("pool lock")
                .push((conn, Instant::now()));
        }
        // Otherwise the connection drops here, and the driver closes it.
    }
}

/// Opens a connection, within the connect timeout.
pub(crate) async fn connect(prepared: &Prepared) -> Result<Conn, GetError> {
    match tokio::time::timeout(prepared.connect_timeout, Conn::new(prepared.opts.clone())).await {
        Ok(conn) => conn.map_err(GetError::Connect),
        Err(_) => Err(GetError::ConnectTimeout(prepared.connect_timeout)),
    }
}

/// Stops the statement running on connection `id`, from a connection of its own: the one running
/// it is busy reading the statement's results. The account may kill its own statements without
/// any privilege.
pub(crate) async fn kill_query(prepared: &Prepared, id: u32) -> Result<(), String> {
    let mut side = connect(prepared)
        .await
        .map_err(|e| super::errors::get_error(&e, prepared))?;
    let killed = side.query_drop(format!("KILL QUERY {id}")).await;
    let _ = side.disconnect().await;
    killed.map_err(|e| e.to_string())
}

impl MyPool {
    pub(crate) fn new(prepared: Prepared, size: usize) -> MyPool {
        let size = size.max(1);
        MyPool {
            shared: Arc::new(Shared {
                prepared,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(size)),
                size,
                waiting: AtomicUsize::new(0),
            }),
        }
    }

    pub(crate) fn prepared(&self) -> &Prepared {
        &self.shared.prepared
    }

    /// The pool's state now.
    pub(crate) fn stats(&self, pool: &'static str) -> PoolStats {
        let shared = &self.shared;
        PoolStats {
            pool,
            size: shared.size,
            in_use: shared
                .size
                .saturating_sub(shared.permits.available_permits()),
            waiting: shared.waiting.load(Ordering::Relaxed),
            round_trips: 0,
        }
    }

    /// Lends a connection: an idle one, or a new one while the pool is below its size. Waits at
    /// most `wait` for a call to give one back; opening a new one is not part of the wait.
    pub(crate) async fn get(&self, wait: Duration) -> Result<MyConn, GetError> {
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
        let mut conn = None;
        loop {
            let next = self.shared.idle.lock().expect("pool lock").pop();
            let Some((mut idle, since)) = next else { break };
            // The server closes connections idle for longer than its `wait_timeout`: one that
            // waited a while is checked before a call relies on it.
            if since.elapsed() < IDLE_CHECK || idle.ping().await.is_ok() {
                conn = Some(idle);
                break;
            }
        }
        let conn = match conn {
            Some(c) => c,
            None => connect(&self.shared.prepared).await?,
        };
        Ok(MyConn {
            conn: Some(conn),
            shared: self.shared.clone(),
            _permit: permit,
            reusable: false,
            busy: None,
        })
    }
}
