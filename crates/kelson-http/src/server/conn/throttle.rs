//! Warnings that a flood would repeat thousands of times a second (accept failures, connections
//! refused at the cap, responses refused for memory): logged once, then at most once per period
//! with the number left out in between.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::timer::now_ms;

/// How often a throttled warning may be logged.
const PERIOD_MS: u64 = 10_000;

/// One warning's throttle.
pub(crate) struct Throttle {
    /// When the next line may be logged ([`now_ms`]); 0 before the first.
    next_at: AtomicU64,
    /// Occurrences not logged since the last line.
    skipped: AtomicU64,
}

impl Throttle {
    pub(crate) const fn new() -> Self {
        Throttle {
            next_at: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
        }
    }

    /// `Some(n)` when this occurrence is to be logged, `n` being how many were left out since the
    /// last line; `None` when it is to be left out.
    pub(crate) fn allow(&self) -> Option<u64> {
        self.allow_at(now_ms())
    }

    fn allow_at(&self, now: u64) -> Option<u64> {
        let next = self.next_at.load(Relaxed);
        if now >= next
            && self
                .next_at
                .compare_exchange(next, now + PERIOD_MS, Relaxed, Relaxed)
                .is_ok()
        {
            return Some(self.skipped.swap(0, Relaxed));
        }
        self.skipped.fetch_add(1, Relaxed);
        None
    }
}

/// Logs a warning through `throttle`, saying how many like it were left out.
macro_rules! throttled_warn {
    ($throttle:expr, $($arg:tt)+) => {
        if let Some(skipped) = $throttle.allow() {
            if skipped == 0 {
                tracing::warn!($($arg)+);
            } else {
                tracing::warn!(more_in_last_10s = skipped, $($arg)+);
            }
        }
    };
}
pub(crate) use throttled_warn;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_counting_the_rest() {
        let t = Throttle::new();
        assert_eq!(t.allow_at(5), Some(0));
        for ms in [6, 100, 9_000] {
            assert_eq!(t.allow_at(ms), None);
        }
        assert_eq!(t.allow_at(10_005), Some(3));
        assert_eq!(t.allow_at(10_006), None);
        assert_eq!(t.allow_at(40_000), Some(1));
    }
}
