//! A connection's timer: made the first time the connection has to wait with a deadline, then
//! kept for the connection's life and moved as rarely as possible.
//!
//! Moving a tokio timer clones the runtime's handle (a reference count every worker thread
//! shares) and may take the timer wheel's lock, which a connection should not do for every
//! request. So a wait asks only that the timer fire *by* its deadline ([`Deadline::ensure_by`]):
//! a timer already set for that time or earlier is left alone, and when it fires early the
//! waiter checks its own deadline and sets the timer once more. A connection that goes idle after
//! every request thus moves its timer about once per idle timeout, not once per request; one whose
//! next request is already there, or whose answer the socket takes at once, never looks at it.

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::time::{Instant, Sleep};

/// A timer for one wait at a time.
#[derive(Default)]
pub(crate) struct Deadline {
    sleep: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl Deadline {
    /// Fires at `at`, earlier or later than it was set for.
    pub(crate) fn arm_at(&mut self, at: Instant) {
        match &mut self.sleep {
            Some(sleep) => sleep.as_mut().reset(at),
            None => self.sleep = Some(Box::pin(tokio::time::sleep_until(at))),
        }
        self.armed = true;
    }

    /// Fires at `at` or earlier: left alone when it is set to fire by then already. The caller
    /// checks its own deadline when it fires.
    pub(crate) fn ensure_by(&mut self, at: Instant) {
        let set = self.armed && self.sleep.as_ref().is_some_and(|s| s.deadline() <= at);
        if !set {
            self.arm_at(at);
        }
    }

    /// Stops waiting. The timer stays in the runtime's wheel until its deadline, when it may wake
    /// the task once for nothing; that is cheaper than taking it out.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }

    /// Ready once the armed deadline has passed (then it is disarmed); never while disarmed.
    pub(crate) fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.armed {
            return Poll::Pending;
        }
        let Some(sleep) = &mut self.sleep else {
            return Poll::Pending;
        };
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.armed = false;
                Poll::Ready(())
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Waits until `due`: fires, checks, and sets itself again while it fires early. Ready at or
    /// after `due`.
    pub(crate) fn poll_until(&mut self, due: Instant, cx: &mut Context<'_>) -> Poll<()> {
        self.ensure_by(due);
        while self.poll_expired(cx).is_ready() {
            if Instant::now() >= due {
                return Poll::Ready(());
            }
            self.arm_at(due);
        }
        Poll::Pending
    }
}

/// Milliseconds since the first call in this process: a cheap, monotonic timestamp that fits
/// an atomic.
pub(crate) fn now_ms() -> u64 {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn it_fires_at_the_latest_deadline_and_not_while_disarmed() {
        let ms = Duration::from_millis;
        let fired = |timer: &mut Deadline| {
            let waker = std::task::Waker::noop();
            timer
                .poll_expired(&mut Context::from_waker(waker))
                .is_ready()
        };
        let mut timer = Deadline::default();
        assert!(!fired(&mut timer), "never armed");
        timer.arm_at(Instant::now() + ms(200));
        tokio::time::sleep(ms(100)).await;
        assert!(!fired(&mut timer));
        // Moved later: the first deadline passes without firing.
        timer.arm_at(Instant::now() + ms(300));
        tokio::time::sleep(ms(150)).await;
        assert!(!fired(&mut timer));
        tokio::time::sleep(ms(200)).await;
        assert!(fired(&mut timer));
        assert!(!timer.armed);
        assert!(!fired(&mut timer), "once per arming");
        timer.arm_at(Instant::now() + ms(10));
        timer.disarm();
        tokio::time::sleep(ms(50)).await;
        assert!(!fired(&mut timer), "disarmed");
    }

    #[tokio::test]
    async fn a_wait_by_a_later_deadline_leaves_the_timer_and_checks_when_it_fires() {
        let ms = Duration::from_millis;
        let mut timer = Deadline::default();
        timer.arm_at(Instant::now() + ms(100));
        let first = timer.sleep.as_ref().unwrap().deadline();
        let due = Instant::now() + ms(250);
        timer.ensure_by(due);
        assert_eq!(
            timer.sleep.as_ref().unwrap().deadline(),
            first,
            "left alone"
        );
        let started = Instant::now();
        std::future::poll_fn(|cx| timer.poll_until(due, cx)).await;
        assert!(Instant::now() >= due);
        assert!(started.elapsed() >= ms(200));
    }
}
