//! The bridge from the `log` crate to `tracing`, with a rate limit per call site.
//!
//! Libraries that log through `log` can repeat one line at the rate of what they watch: notify
//! warns "Unable to remove the path from the watches" for nearly every directory rename inside a
//! root, so a writer renaming a directory in a loop once produced megabytes of log a second. Each
//! call site (target, file and line) may write [`PER_WINDOW`] lines per [`WINDOW`]; the rest are
//! counted, and one line says how many were held back and what the first of them said, when the
//! window is over (at the next line from that site, or from a timer thread). `tracing` events of
//! our own do not pass through here.

use std::collections::HashMap;
use std::hash::BuildHasher as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tracing_log::LogTracer;

/// Lines one call site may write per window.
pub(crate) const PER_WINDOW: u32 = 10;
/// The window.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// How often the timer thread looks for windows to summarise.
const TICK: Duration = Duration::from_secs(5);
/// The most characters of a held-back line quoted in its summary.
const SAMPLE_CHARS: usize = 200;
/// The most call sites tracked; windows that ended are dropped first.
const MAX_SITES: usize = 1024;

/// What a summary line needs of its call site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Site {
    pub(crate) level: log::Level,
    pub(crate) target: String,
    pub(crate) file: Option<&'static str>,
    pub(crate) line: Option<u32>,
}

/// Lines held back from one call site in one window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Summary {
    pub(crate) site: Site,
    pub(crate) held: u64,
    /// The first line held back.
    pub(crate) sample: String,
}

#[derive(Debug)]
struct Window {
    start: Instant,
    passed: u32,
    held: u64,
    site: Site,
    sample: String,
}

/// The counting, apart from the clock and the output, so that it can be tested.
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    windows: HashMap<u64, Window>,
}

impl Limiter {
    /// Whether a line from the call site `key` may be written at `now`; a summary of the site's
    /// previous window comes with it when that window held lines back. `site` and `message` are
    /// only called when needed.
    pub(crate) fn admit(
        &mut self,
        key: u64,
        now: Instant,
        site: impl FnOnce() -> Site,
        message: impl FnOnce() -> String,
    ) -> (bool, Option<Summary>) {
        if !self.windows.contains_key(&key) && self.windows.len() >= MAX_SITES {
            self.windows
                .retain(|_, w| w.held > 0 || now.duration_since(w.start) < WINDOW);
            if self.windows.len() >= MAX_SITES {
                // Call sites are places in the code, so this many at once does not happen; if
                // it did, the line would pass unlimited rather than grow the map.
                return (true, None);
            }
        }
        let window = self.windows.entry(key).or_insert_with(|| Window {
            start: now,
            passed: 0,
            held: 0,
            site: site(),
            sample: String::new(),
        });
        let mut summary = None;
        if now.duration_since(window.start) >= WINDOW {
            summary = window.close();
            window.start = now;
            window.passed = 0;
        }
        if window.passed < PER_WINDOW {
            window.passed += 1;
            return (true, summary);
        }
        if window.held == 0 {
            window.sample = message().chars().take(SAMPLE_CHARS).collect();
        }
        window.held += 1;
        (false, summary)
    }

    /// Summaries of the windows that ended by `now` and held lines back.
    pub(crate) fn due(&mut self, now: Instant) -> Vec<Summary> {
        self.windows
            .values_mut()
            .filter(|w| w.held > 0 && now.duration_since(w.start) >= WINDOW)
            .filter_map(|w| {
                let summary = w.close();
                // A fresh window from now: the site stays quiet until it writes again.
                w.start = now;
                w.passed = 0;
                summary
            })
            .collect()
    }
}

impl Window {
    fn close(&mut self) -> Option<Summary> {
        if self.held == 0 {
            return None;
        }
        Some(Summary {
            site: self.site.clone(),
            held: std::mem::take(&mut self.held),
            sample: std::mem::take(&mut self.sample),
        })
    }
}

/// A `log::Log` that hands records to `tracing` (through [`LogTracer`]) under the limit.
pub(crate) struct LimitedLog {
    inner: Arc<LogTracer>,
    limiter: Arc<Mutex<Limiter>>,
    hasher: std::hash::RandomState,
    timer: std::sync::Once,
}

impl LimitedLog {
    pub(crate) fn new() -> LimitedLog {
        LimitedLog {
            inner: Arc::new(LogTracer::new()),
            limiter: Arc::default(),
            hasher: std::hash::RandomState::new(),
            timer: std::sync::Once::new(),
        }
    }

    /// Starts, once lines have been held back, the thread that writes the summaries of windows no
    /// later line closes.
    fn start_timer(&self) {
        let (inner, limiter) = (self.inner.clone(), self.limiter.clone());
        self.timer.call_once(move || {
            let spawned = std::thread::Builder::new()
                .name("kelson-log-limit".to_owned())
                .spawn(move || {
                    loop {
                        std::thread::sleep(TICK);
                        let due = limiter
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .due(Instant::now());
                        for summary in &due {
                            write_summary(&*inner, summary);
                        }
                    }
                });
            // Without the thread, summaries still come with the site's next line.
            drop(spawned);
        });
    }
}

impl log::Log for LimitedLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        log::Log::enabled(&*self.inner, metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let key = self.hasher.hash_one((
            record.level(),
            record.target(),
            record.file(),
            record.line(),
        ));
        let (pass, summary) = self
            .limiter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .admit(
                key,
                Instant::now(),
                || Site {
                    level: record.level(),
                    target: record.target().to_owned(),
                    file: record.file_static(),
                    line: record.line(),
                },
                || record.args().to_string(),
            );
        if let Some(summary) = summary {
            write_summary(&*self.inner, &summary);
        }
        if pass {
            self.inner.log(record);
        } else {
            self.start_timer();
        }
    }

    fn flush(&self) {}
}

/// Writes "N more like this in the last minute" at the call site's level and target.
fn write_summary(inner: &dyn log::Log, summary: &Summary) {
    let site = &summary.site;
    inner.log(
        &log::Record::builder()
            .level(site.level)
            .target(&site.target)
            .file_static(site.file)
            .line(site.line)
            .args(format_args!(
                "{} more like this in the last minute (not shown), the first: {}",
                summary.held, summary.sample
            ))
            .build(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site {
        Site {
            level: log::Level::Warn,
            target: "notify::inotify".into(),
            file: Some("inotify.rs"),
            line: Some(381),
        }
    }

    #[test]
    fn a_call_site_writes_a_few_lines_a_minute_and_a_summary_of_the_rest() {
        let mut limiter = Limiter::default();
        let t0 = Instant::now();
        let mut written = 0;
        for i in 0..10_000u64 {
            let (pass, summary) = limiter.admit(7, t0, site, || format!("line {i}"));
            assert_eq!(summary, None);
            written += u32::from(pass);
        }
        assert_eq!(written, PER_WINDOW);
        // Another call site has a window of its own.
        assert!(limiter.admit(8, t0, site, String::new).0);
        assert!(limiter.due(t0 + WINDOW / 2).is_empty());

        // The next line after the window brings the summary and passes.
        let (pass, summary) = limiter.admit(7, t0 + WINDOW, site, || "later".into());
        assert!(pass);
        assert_eq!(
            summary,
            Some(Summary {
                site: site(),
                held: 10_000 - u64::from(PER_WINDOW),
                sample: format!("line {PER_WINDOW}"),
            })
        );
    }

    #[test]
    fn a_window_no_later_line_closes_is_summarised_by_the_timer() {
        let mut limiter = Limiter::default();
        let t0 = Instant::now();
        for _ in 0..PER_WINDOW + 3 {
            limiter.admit(1, t0, site, || "x".repeat(1000));
        }
        assert!(limiter.due(t0 + WINDOW - Duration::from_secs(1)).is_empty());
        let due = limiter.due(t0 + WINDOW);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].held, 3);
        assert_eq!(due[0].sample.chars().count(), SAMPLE_CHARS);
        // Once only; and a quiet window has nothing to say.
        assert!(limiter.due(t0 + WINDOW * 3).is_empty());
        assert_eq!(
            limiter.admit(1, t0 + WINDOW * 3, site, String::new),
            (true, None)
        );
    }

    #[test]
    fn the_sites_tracked_are_bounded() {
        let mut limiter = Limiter::default();
        let t0 = Instant::now();
        for key in 0..(MAX_SITES as u64) * 3 {
            let now = t0 + WINDOW * u32::try_from(key / MAX_SITES as u64).unwrap();
            assert!(limiter.admit(key, now, site, String::new).0);
            assert!(limiter.windows.len() <= MAX_SITES, "{key}");
        }
    }
}
