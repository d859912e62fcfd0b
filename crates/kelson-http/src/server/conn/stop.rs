//! Telling every open connection that the server stops, at no cost per poll.
//!
//! A connection task that waited on a shutdown future next to its connection (hyper-util's graceful
//! watcher, a cancellation token in `select!`) polled those futures every time it woke, once or twice
//! per request, and each poll of a registered `Notify` takes a lock. Here a connection registers its
//! task's waker once, and a poll reads one atomic; only stopping walks the registered wakers.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

// The phases, in order; a stop starts at 0, running.
/// Finish the requests in flight, then close.
const DRAINING: u8 = 1;
/// Close now.
const CUT_OFF: u8 = 2;

/// The server's stop signal, shared by its connections.
#[derive(Default)]
pub(crate) struct Stop {
    phase: AtomicU8,
    next_key: AtomicU64,
    wakers: Mutex<HashMap<u64, Waker>>,
}

impl Stop {
    pub(crate) fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Asks every connection to finish what it is serving and close.
    pub(crate) fn drain(&self) {
        self.advance(DRAINING);
    }

    /// Closes every connection still open.
    pub(crate) fn cut_off(&self) {
        self.advance(CUT_OFF);
    }

    fn advance(&self, phase: u8) {
        self.phase.fetch_max(phase, Ordering::AcqRel);
        let wakers: Vec<Waker> = self
            .wakers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for waker in wakers {
            waker.wake();
        }
    }

    /// Whether the server has begun to stop. A connection that reads this from inside a
    /// [`Watched`] future is woken when it changes.
    pub(crate) fn is_draining(&self) -> bool {
        self.phase.load(Ordering::Acquire) >= DRAINING
    }

    fn register(&self, key: u64, waker: &Waker) {
        self.wakers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, waker.clone());
    }
}

/// A connection that drains when the server stops and is dropped when it is cut off. Resolves to
/// `None` when it was cut off.
pub(crate) struct Watched<C, G> {
    conn: Pin<Box<C>>,
    graceful_shutdown: G,
    stop: Arc<Stop>,
    key: u64,
    /// The waker registered with `stop`, to notice a task that moved to another waker.
    waker: Option<Waker>,
    draining: bool,
}

impl<C, G> Watched<C, G>
where
    C: Future,
    G: FnMut(Pin<&mut C>),
{
    pub(crate) fn new(conn: C, graceful_shutdown: G, stop: Arc<Stop>) -> Self {
        let key = stop.next_key.fetch_add(1, Ordering::Relaxed);
        Watched {
            conn: Box::pin(conn),
            graceful_shutdown,
            stop,
            key,
            waker: None,
            draining: false,
        }
    }
}

impl<C, G> Future for Watched<C, G>
where
    C: Future,
    G: FnMut(Pin<&mut C>) + Unpin,
{
    type Output = Option<C::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if !this.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            this.stop.register(this.key, cx.waker());
            this.waker = Some(cx.waker().clone());
        }
        // Read after registering: a stop that comes later wakes this task.
        match this.stop.phase.load(Ordering::Acquire) {
            CUT_OFF => return Poll::Ready(None),
            DRAINING if !this.draining => {
                this.draining = true;
                (this.graceful_shutdown)(this.conn.as_mut());
            }
            _ => {}
        }
        this.conn.as_mut().poll(cx).map(Some)
    }
}

impl<C, G> Drop for Watched<C, G> {
    fn drop(&mut self) {
        if self.waker.is_some() {
            self.stop
                .wakers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    /// A connection that is pending until asked to shut down, then finishes on its next poll.
    struct Fake {
        asked: Arc<AtomicBool>,
    }

    impl Future for Fake {
        type Output = &'static str;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<&'static str> {
            if self.asked.load(Ordering::SeqCst) {
                Poll::Ready("drained")
            } else {
                Poll::Pending
            }
        }
    }

    fn watched(
        stop: &Arc<Stop>,
        asked: &Arc<AtomicBool>,
    ) -> impl Future<Output = Option<&'static str>> + use<> {
        let flag = asked.clone();
        Watched::new(
            Fake {
                asked: asked.clone(),
            },
            move |_: Pin<&mut Fake>| flag.store(true, Ordering::SeqCst),
            stop.clone(),
        )
    }

    #[tokio::test]
    async fn draining_asks_the_connection_and_lets_it_finish() {
        let stop = Stop::new();
        let asked = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(watched(&stop, &asked));
        tokio::task::yield_now().await;
        assert!(!task.is_finished());
        stop.drain();
        assert_eq!(task.await.expect("joins"), Some("drained"));
        assert!(asked.load(Ordering::SeqCst));
        assert!(stop.wakers.lock().expect("lock").is_empty(), "unregistered");
    }

    #[tokio::test]
    async fn cutting_off_drops_the_connection() {
        let stop = Stop::new();
        let never = Arc::new(AtomicBool::new(false));
        // A connection that ignores the request to drain.
        let task = tokio::spawn(Watched::new(
            Fake {
                asked: never.clone(),
            },
            |_: Pin<&mut Fake>| {},
            stop.clone(),
        ));
        tokio::task::yield_now().await;
        stop.drain();
        tokio::task::yield_now().await;
        assert!(!task.is_finished());
        stop.cut_off();
        assert_eq!(task.await.expect("joins"), None);
    }

    #[tokio::test]
    async fn a_connection_that_starts_after_the_stop_sees_it() {
        let stop = Stop::new();
        stop.drain();
        let asked = Arc::new(AtomicBool::new(false));
        assert_eq!(watched(&stop, &asked).await, Some("drained"));
    }
}
