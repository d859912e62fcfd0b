//! What the engines that reach a database server share (PostgreSQL, MySQL): the pool of
//! connections, each lent to one call at a time, and the run loop of a call (a connection taken
//! within the call's deadline and cancellation, the work supervised, the statement stopped from
//! outside when the call is cancelled or runs past its time).
//!
//! An engine brings a [`Connector`]: how to open a connection, how to tell whether an idle one
//! may still serve, how to stop its running statement from outside (PostgreSQL's cancel request,
//! MySQL's `KILL QUERY` from a side connection), and, where the engine defers work to the next
//! call (PostgreSQL's rollback and reset, written in front of the next call's messages when one is
//! waiting), how to see and write what a connection still holds unsent. What becomes of a
//! connection after its call stays the engine's: each knows what its session may have left.
//!
//! A connection goes back to the pool only when its call ended cleanly; one whose call was
//! cancelled, timed out, failed outside SQL, or was dropped mid-statement is closed instead, so
//! a late stop or a half-read result can never reach the next call.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio_util::sync::CancellationToken;

use crate::config::Limits;
use crate::database::PoolStats;
use crate::error::ExecError;

/// How long a connection may wait in the pool with work still unsent (a call that was waiting
/// for it gave up), holding what that work would have ended (a read's transaction and its locks).
pub(crate) const SWEEP_AFTER: Duration = Duration::from_millis(5);

/// How long a stopped statement may take to end before its call gives up on it.
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(5);

/// An engine's connections, as the pool and the run loop need them.
pub(crate) trait Connector: Send + Sync + 'static {
    type Conn: Send + 'static;
    type Error;
    type Stopper: Stopper;

    /// Opens a new connection.
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, Self::Error>> + Send;

    /// Whether an idle connection, given back `idle_for` ago, may serve a call (the server may
    /// have closed it meanwhile). One that may not is dropped.
    fn ready(&self, conn: &mut Self::Conn, idle_for: Duration)
    -> impl Future<Output = bool> + Send;

    /// What stops the statement `conn` runs, from outside.
    fn stopper(&self, conn: &Self::Conn) -> Self::Stopper;

    /// The times `conn` waited for its server so far.
    fn trips(_conn: &Self::Conn) -> u64 {
        0
    }

    /// Whether `conn` holds work its call left to send.
    fn has_unsent(_conn: &Self::Conn) -> bool {
        false
    }

    /// Sends what `conn` holds unsent; `false` when the connection is no longer fit.
    fn send_unsent(_conn: &mut Self::Conn) -> impl Future<Output = bool> + Send {
        async { true }
    }
}

/// Stops a running statement from outside its connection.
pub(crate) trait Stopper: Clone + Send + Sync + 'static {
    /// The engine's name, for the log line when stopping fails.
    const ENGINE: &'static str;

    fn stop(&self) -> impl Future<Output = Result<(), String>> + Send;
}

struct Shared<C: Connector> {
    connector: C,
    /// Idle connections, with when each was given back.
    idle: Mutex<Vec<(C::Conn, Instant)>>,
    permits: Arc<Semaphore>,
    size: usize,
    /// Calls waiting for a connection now.
    waiting: AtomicUsize,
    /// Times calls waited for the server, over every connection the pool has lent.
    round_trips: AtomicU64,
    /// Set while a sweep of unsent work is scheduled.
    sweeping: AtomicBool,
}

impl<C: Connector> Shared<C> {
    fn has_unsent_idle(&self) -> bool {
        self.idle
            .lock()
            .expect("pool lock")
            .iter()
            .any(|(c, _)| C::has_unsent(c))
    }
}

/// Writes, after [`SWEEP_AFTER`], what idle connections still hold unsent: each is taken as a
/// call takes one (a permit first), its work written, and given back. One sweep per pool at a
/// time.
fn sweep_later<C: Connector>(shared: &Arc<Shared<C>>) {
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
                    .position(|(c, _)| C::has_unsent(c))
                    .map(|at| idle.swap_remove(at))
            };
            let Some((mut conn, _)) = taken else { return };
            if C::send_unsent(&mut conn).await {
                shared
                    .idle
                    .lock()
                    .expect("pool lock")
                    .push((conn, Instant::now()));
            }
            drop(permit);
        }
    });
}

/// Why no connection was lent.
pub(crate) enum GetError<E> {
    /// Every connection stayed in use for the whole wait.
    Busy { connections: usize },
    /// A new connection could not be opened.
    Connect(E),
}

/// A pool of at most `size` connections, opened as calls need them.
pub(crate) struct Pool<C: Connector> {
    shared: Arc<Shared<C>>,
}

impl<C: Connector> Clone for Pool<C> {
    fn clone(&self) -> Self {
        Pool {
            shared: self.shared.clone(),
        }
    }
}

/// A connection lent to one call.
pub(crate) struct Lent<C: Connector> {
    conn: Option<C::Conn>,
    shared: Arc<Shared<C>>,
    _permit: OwnedSemaphorePermit,
    /// Set once the call ended in a state the next call may start from.
    reusable: bool,
    /// While a statement runs: what stops it should the call be dropped.
    busy: Option<C::Stopper>,
    /// The connection's round-trip count when it was lent.
    trips_before: u64,
}

impl<C: Connector> Lent<C> {
    pub(crate) fn conn(&mut self) -> &mut C::Conn {
        self.conn
            .as_mut()
            .expect("a lent connection holds its client")
    }

    /// Marks a statement as running, so that dropping the call stops it on the server, and
    /// returns what stops it, for the call's own supervision.
    pub(crate) fn start(&mut self) -> C::Stopper {
        let conn = self
            .conn
            .as_ref()
            .expect("a lent connection holds its client");
        let stopper = self.shared.connector.stopper(conn);
        self.busy = Some(stopper.clone());
        stopper
    }

    /// Gives the connection up: it closes instead of rejoining the pool, and nothing more is sent
    /// to stop its statement.
    pub(crate) fn abandon(mut self) {
        self.busy = None;
        self.reusable = false;
    }

    /// Marks the call as finished cleanly: the connection may serve the next call. What the call
    /// left unsent is written now, unless a call is waiting for a connection: that call will
    /// write it in front of its own work. Should nobody take the connection after all (the
    /// waiting call gave up), the pool writes it within [`SWEEP_AFTER`].
    pub(crate) async fn finish(&mut self) {
        self.busy = None;
        let waiting = self.shared.waiting.load(Ordering::Relaxed) > 0;
        let conn = self.conn();
        if C::has_unsent(conn) && !waiting && !C::send_unsent(conn).await {
            return;
        }
        self.reusable = true;
    }
}

impl<C: Connector> Drop for Lent<C> {
    fn drop(&mut self) {
        if let Some(stopper) = self.busy.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            // The call was dropped mid-statement (the stdio transport drops a cancelled
            // request's future): stop the statement rather than let it run on unobserved.
            runtime.spawn(async move {
                if let Err(e) = stopper.stop().await {
                    tracing::warn!(error = %e, engine = C::Stopper::ENGINE, "could not stop a statement");
                }
            });
        }
        if let Some(conn) = self.conn.take() {
            let trips = C::trips(&conn).saturating_sub(self.trips_before);
            self.shared.round_trips.fetch_add(trips, Ordering::Relaxed);
            if self.reusable {
                let unsent = C::has_unsent(&conn);
                self.shared
                    .idle
                    .lock()
                    .expect("pool lock")
                    .push((conn, Instant::now()));
                if unsent {
                    sweep_later(&self.shared);
                }
            }
        }
        // Otherwise the connection drops here, and with it the socket.
    }
}

impl<C: Connector> Pool<C> {
    pub(crate) fn new(connector: C, size: usize) -> Pool<C> {
        let size = size.max(1);
        Pool {
            shared: Arc::new(Shared {
                connector,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(size)),
                size,
                waiting: AtomicUsize::new(0),
                round_trips: AtomicU64::new(0),
                sweeping: AtomicBool::new(false),
            }),
        }
    }

    pub(crate) fn connector(&self) -> &C {
        &self.shared.connector
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

    /// Lends a connection: an idle one, or a new one while the pool is below its size. Waits at
    /// most `wait` for a call to give one back; opening a new one is not part of the wait.
    pub(crate) async fn get(&self, wait: Duration) -> Result<Lent<C>, GetError<C::Error>> {
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
        // A connection the server closed while idle (a restart, an administrator, its idle
        // timeout) is dropped here rather than failing the call.
        let mut conn = None;
        loop {
            let next = self.shared.idle.lock().expect("pool lock").pop();
            let Some((mut idle, since)) = next else { break };
            if self
                .shared
                .connector
                .ready(&mut idle, since.elapsed())
                .await
            {
                conn = Some(idle);
                break;
            }
        }
        let conn = match conn {
            Some(c) => c,
            None => self
                .shared
                .connector
                .connect()
                .await
                .map_err(GetError::Connect)?,
        };
        Ok(Lent {
            trips_before: C::trips(&conn),
            conn: Some(conn),
            shared: self.shared.clone(),
            _permit: permit,
            reusable: false,
            busy: None,
        })
    }
}

/// Takes a connection of `pool` for a call, within the call's `deadline` and its cancellation,
/// waiting at most the limits' `connection_wait` for one to come back. `describe` words a failed
/// connect.
pub(crate) async fn acquire<C: Connector>(
    pool: &Pool<C>,
    limits: Limits,
    cancel: &CancellationToken,
    deadline: Instant,
    describe: impl FnOnce(&C::Error) -> String,
) -> Result<Lent<C>, ExecError> {
    let wait = limits
        .connection_wait
        .min(deadline.saturating_duration_since(Instant::now()));
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ExecError::Cancelled),
        () = tokio::time::sleep_until(deadline.into()) => Err(ExecError::Timeout(limits.timeout)),
        conn = pool.get(wait) => conn.map_err(|e| match e {
            GetError::Busy { connections } => ExecError::Busy { connections, waited: wait },
            GetError::Connect(e) => ExecError::Unavailable(describe(&e)),
        }),
    }
}

/// What stopped a call from outside: the error to report, given the call's time limit.
pub(crate) type Stopped = fn(Duration) -> ExecError;

/// Runs `work` until it finishes, the request is cancelled, or `backstop` passes; in the latter
/// two cases stops the statement with `stopper` and waits up to [`STOP_WAIT`] for the work to
/// end. The second value says why the call was stopped, when it was.
pub(crate) async fn supervise<T, S: Stopper>(
    work: impl Future<Output = T>,
    cancel: &CancellationToken,
    backstop: Instant,
    stopper: &S,
) -> (Option<T>, Option<Stopped>) {
    let mut work = pin!(work);
    let stopped: Stopped = tokio::select! {
        biased;
        out = &mut work => return (Some(out), None),
        () = cancel.cancelled() => |_| ExecError::Cancelled,
        () = tokio::time::sleep_until(backstop.into()) => ExecError::Timeout,
    };
    if let Err(e) = stopper.stop().await {
        tracing::warn!(error = %e, engine = S::ENGINE, "could not stop a statement");
    }
    let out = tokio::time::timeout(STOP_WAIT, &mut work).await.ok();
    (out, Some(stopped))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// What the fake engine saw, shared by the test and the connector.
    #[derive(Default)]
    struct Seen {
        opened: AtomicUsize,
        stopped: Mutex<Vec<usize>>,
        /// Connections the "server" closed while they were idle.
        dead: Mutex<Vec<usize>>,
    }

    struct Fake(Arc<Seen>);

    struct FakeConn {
        id: usize,
        unsent: bool,
    }

    #[derive(Clone)]
    struct FakeStop(usize, Arc<Seen>);

    impl Stopper for FakeStop {
        const ENGINE: &'static str = "fake";

        async fn stop(&self) -> Result<(), String> {
            self.1.stopped.lock().unwrap().push(self.0);
            Ok(())
        }
    }

    impl Connector for Fake {
        type Conn = FakeConn;
        type Error = ();
        type Stopper = FakeStop;

        async fn connect(&self) -> Result<FakeConn, ()> {
            let id = self.0.opened.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(FakeConn { id, unsent: false })
        }

        async fn ready(&self, conn: &mut FakeConn, _idle_for: Duration) -> bool {
            !self.0.dead.lock().unwrap().contains(&conn.id)
        }

        fn stopper(&self, conn: &FakeConn) -> FakeStop {
            FakeStop(conn.id, self.0.clone())
        }

        fn has_unsent(conn: &FakeConn) -> bool {
            conn.unsent
        }

        async fn send_unsent(conn: &mut FakeConn) -> bool {
            conn.unsent = false;
            true
        }
    }

    fn pool(size: usize) -> (Pool<Fake>, Arc<Seen>) {
        let seen = Arc::new(Seen::default());
        (Pool::new(Fake(seen.clone()), size), seen)
    }

    async fn lend(pool: &Pool<Fake>) -> Lent<Fake> {
        match pool.get(Duration::from_secs(10)).await {
            Ok(lent) => lent,
            Err(_) => panic!("no connection lent"),
        }
    }

    /// Polls `done` until it holds, for at most ten seconds.
    async fn eventually(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: not within 10 s");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_connection_serves_again_only_after_its_call_finished_cleanly() {
        let (pool, seen) = pool(2);
        let mut first = lend(&pool).await;
        assert_eq!(first.conn().id, 1);
        first.finish().await;
        drop(first);
        // Given back clean: lent again, nothing new opened.
        let abandoned = lend(&pool).await;
        assert_eq!(seen.opened.load(Ordering::SeqCst), 1);
        abandoned.abandon();
        // Abandoned, or dropped without finishing: closed, and the next call opens another.
        let mut next = lend(&pool).await;
        assert_eq!(next.conn().id, 2);
        drop(next);
        let mut last = lend(&pool).await;
        assert_eq!(last.conn().id, 3);
        assert_eq!(pool.stats("read").in_use, 1);
        drop(last);
        assert_eq!(pool.stats("read").in_use, 0);
    }

    #[tokio::test]
    async fn an_idle_connection_the_server_closed_is_replaced() {
        let (pool, seen) = pool(1);
        let mut lent = lend(&pool).await;
        lent.finish().await;
        drop(lent);
        seen.dead.lock().unwrap().push(1);
        let mut again = lend(&pool).await;
        assert_eq!(again.conn().id, 2);
    }

    #[tokio::test]
    async fn a_call_dropped_mid_statement_has_its_statement_stopped() {
        let (pool, seen) = pool(1);
        let mut lent = lend(&pool).await;
        let _ = lent.start();
        drop(lent);
        eventually("the stop", || *seen.stopped.lock().unwrap() == [1]).await;
        // Stopped and closed, never lent again.
        let mut next = lend(&pool).await;
        assert_eq!(next.conn().id, 2);
        // A finished call's connection is not stopped.
        let _ = next.start();
        next.finish().await;
        drop(next);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(*seen.stopped.lock().unwrap(), [1]);
    }

    #[tokio::test]
    async fn a_full_pool_counts_the_waiting_call_and_answers_busy_after_the_wait() {
        let (pool, _seen) = pool(1);
        let held = lend(&pool).await;
        let waiter = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.get(Duration::from_millis(300)).await.err() })
        };
        eventually("one call waiting", || pool.stats("read").waiting == 1).await;
        match waiter.await.unwrap() {
            Some(GetError::Busy { connections }) => assert_eq!(connections, 1),
            _ => panic!("expected busy"),
        }
        assert_eq!(pool.stats("read").waiting, 0);
        drop(held);
    }

    #[tokio::test]
    async fn unsent_work_is_written_at_once_unless_a_call_waits_and_swept_when_nobody_takes_it() {
        let (pool, _seen) = pool(1);
        // Nobody waits: what the call left is written when it finishes.
        let mut lent = lend(&pool).await;
        lent.conn().unsent = true;
        lent.finish().await;
        assert!(!lent.conn().unsent, "written at once");
        drop(lent);

        // A call waits: the work stays for it to carry.
        let mut lent = lend(&pool).await;
        let waiter = {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut next = pool.get(Duration::from_secs(10)).await.ok().unwrap();
                let carried = next.conn().unsent;
                next.conn().unsent = false;
                next.finish().await;
                carried
            })
        };
        eventually("one call waiting", || pool.stats("read").waiting == 1).await;
        lent.conn().unsent = true;
        lent.finish().await;
        assert!(lent.conn().unsent, "left for the waiting call");
        drop(lent);
        assert!(
            waiter.await.unwrap(),
            "the waiting call got the unsent work"
        );

        // The waiting call gives up after the connection was finished for it: nobody takes the
        // connection, and the pool's sweep writes the work within its delay.
        let mut lent = lend(&pool).await;
        let waiter = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.get(Duration::from_millis(300)).await.is_err() })
        };
        eventually("one call waiting", || pool.stats("read").waiting == 1).await;
        lent.conn().unsent = true;
        lent.finish().await;
        assert!(lent.conn().unsent, "left for the waiting call");
        assert!(waiter.await.unwrap(), "the waiting call gave up");
        drop(lent);
        let shared = pool.shared.clone();
        eventually("the sweep", || !shared.has_unsent_idle()).await;
        let mut last = lend(&pool).await;
        assert!(!last.conn().unsent, "written by the sweep");
        assert_eq!(last.conn().id, 1, "the same connection throughout");
    }
}
