//! Progress on stderr while a call runs: an indicatif bar on a terminal, plain lines otherwise (so
//! logs and scripts see them too). Each says what the server said (the amount, `n/total` and the
//! percentage when the total is known, the message) and how long the call has run; a task's status
//! changes name the task and its status. A call that has said nothing for a while is shown as
//! waited for: a spinner after [`NOTICE_TERMINAL`] on a terminal, one line after
//! [`NOTICE_PLAIN`] otherwise.

use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use kelson_types::ProgressNotificationParams;
use serde_json::Value;

use super::output::{clean_line, truncate};

/// How long a call may stay silent on a terminal before a spinner says that it is waited for.
const NOTICE_TERMINAL: Duration = Duration::from_secs(1);
/// The same without a terminal, where the notice is a line that stays: later, so that the
/// stderr of quick calls in logs and scripts is left as it was.
const NOTICE_PLAIN: Duration = Duration::from_secs(2);
/// How often the notice looks again while a prompt asks (it waits for the prompt to end).
const RECHECK: Duration = Duration::from_millis(200);
/// The longest message a bar shows, in characters: the bar redraws one line.
const BAR_MESSAGE: usize = 120;
/// Steps of the bar when the server gives a total: fractions of the total, in thousandths.
const SCALE: f64 = 1000.0;

/// The progress of the call in flight, shared with the prompts (which hide it while they ask).
#[derive(Clone, Default, Debug)]
pub(crate) struct Progress {
    state: Arc<Mutex<State>>,
}

#[derive(Default, Debug)]
struct State {
    bar: Option<ProgressBar>,
    /// When the call started ([`Progress::watch`], else the first notification).
    since: Option<Instant>,
    /// What the call waits for, as the notice names it (already cleaned).
    what: String,
    /// A notification was shown.
    shown: bool,
    /// The waiting notice was shown.
    noticed: bool,
    /// The bar is drawn and redrawn.
    ticking: bool,
    /// Prompts asking now: no notice appears under one.
    asking: usize,
    /// The task that shows the notice when the call stays silent.
    watcher: Option<tokio::task::JoinHandle<()>>,
}

impl State {
    fn elapsed(&mut self) -> Duration {
        self.since.get_or_insert_with(Instant::now).elapsed()
    }

    /// The bar, made on first use (not drawn until [`State::draw`]), with the elapsed time
    /// counted from the call's start.
    fn bar(&mut self) -> ProgressBar {
        let since = *self.since.get_or_insert_with(Instant::now);
        self.bar
            .get_or_insert_with(|| {
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                bar.set_style(style(since, None));
                bar
            })
            .clone()
    }

    /// Draws the bar from now on, redrawn by a ticker: once its first message is set, so that no
    /// empty frame is drawn before it.
    fn draw(&mut self) {
        if let Some(bar) = &self.bar
            && !self.ticking
        {
            self.ticking = true;
            bar.enable_steady_tick(Duration::from_millis(120));
        }
    }
}

/// A bar's style: `template` with `{since}`, the time since `since` (`None`: a spinner and the
/// message).
fn style(since: Instant, template: Option<&str>) -> ProgressStyle {
    let template = template.unwrap_or("{spinner} {msg} [{since}]");
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .with_key(
            "since",
            move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&seconds(since.elapsed()));
            },
        )
        .progress_chars("=> ")
}

impl Progress {
    /// Starts the clock of a call that waits for `what` (a tool's name, `the task ID`): the
    /// elapsed times count from now, and a notice says that it is waited for should it stay
    /// silent. Called from within the runtime.
    pub(crate) fn watch(&self, what: &str) {
        let terminal = std::io::stderr().is_terminal();
        let mut state = self.lock();
        state.since = Some(Instant::now());
        state.what = clean_line(what).into_owned();
        let me = self.clone();
        let delay = if terminal {
            NOTICE_TERMINAL
        } else {
            NOTICE_PLAIN
        };
        if let Some(old) = state.watcher.take() {
            old.abort();
        }
        state.watcher = Some(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            while !me.notice(terminal) {
                tokio::time::sleep(RECHECK).await;
            }
        }));
    }

    /// Shows the waiting notice unless something was shown already; false while a prompt asks
    /// (try again later).
    fn notice(&self, terminal: bool) -> bool {
        let mut state = self.lock();
        if state.shown || state.noticed {
            return true;
        }
        if state.asking > 0 {
            return false;
        }
        state.noticed = true;
        let what = state.what.clone();
        if terminal {
            let since = *state.since.get_or_insert_with(Instant::now);
            let bar = state.bar();
            bar.set_style(style(since, Some("{spinner} waiting for {msg}… {since}")));
            bar.set_message(truncate(&what, BAR_MESSAGE));
            state.draw();
        } else {
            let elapsed = seconds(state.elapsed());
            let _ = writeln!(std::io::stderr(), "waiting for {what}… [{elapsed}]");
        }
        true
    }

    /// Shows one notification.
    pub(crate) fn update(&self, p: &ProgressNotificationParams) {
        let (fraction, text) = describe(p);
        let mut state = self.lock();
        state.shown = true;
        if !std::io::stderr().is_terminal() {
            let elapsed = seconds(state.elapsed());
            let prefix = if is_task(p) { "" } else { "progress: " };
            let _ = writeln!(std::io::stderr(), "{prefix}{text} [{elapsed}]");
            return;
        }
        let since = *state.since.get_or_insert_with(Instant::now);
        let bar = state.bar();
        let template = fraction.map(|_| "{spinner} [{bar:24}] {msg} [{since}]");
        bar.set_style(style(since, template));
        bar.set_message(truncate(&text, BAR_MESSAGE));
        if let Some(fraction) = fraction {
            bar.set_length(SCALE as u64);
            bar.set_position((fraction * SCALE) as u64);
        }
        state.draw();
    }

    /// Removes the bar, when there is one, and stops the waiting notice.
    pub(crate) fn finish(&self) {
        let mut state = self.lock();
        if let Some(watcher) = state.watcher.take() {
            watcher.abort();
        }
        if let Some(bar) = state.bar.take() {
            bar.finish_and_clear();
        }
        state.ticking = false;
    }

    /// Runs `f` with the bar hidden and no notice appearing (for prompts and log lines).
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        let bar = {
            let mut state = self.lock();
            state.asking += 1;
            state.bar.clone()
        };
        let _asking = Asking(self);
        match bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held leaves nothing half-done that matters here.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Counts a prompt as asking until dropped.
struct Asking<'a>(&'a Progress);

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.asking = state.asking.saturating_sub(1);
    }
}

/// The status of the task a notification reports on, when it is one: the client reports a task's
/// status changes as progress under the task's id, with the status in `_meta`.
fn task_status(p: &ProgressNotificationParams) -> Option<&str> {
    p.meta
        .as_ref()?
        .extra
        .get(kelson_client::TASK_STATUS_KEY)?
        .as_str()
}

fn is_task(p: &ProgressNotificationParams) -> bool {
    task_status(p).is_some()
}

/// What a notification says, for a person: the fraction done when there is a total, and the text
/// (every part of it the server's, cleaned to one line). A task: `task ID STATUS: MESSAGE`. A
/// call: `n/total (p%) MESSAGE`, or `n MESSAGE` without a total.
fn describe(p: &ProgressNotificationParams) -> (Option<f64>, String) {
    let message = clean_line(p.message.as_deref().unwrap_or_default());
    if let Some(status) = task_status(p) {
        let id = match p.progress_token.to_value() {
            Value::String(id) => id,
            other => other.to_string(),
        };
        let status = clean_line(status);
        let mut text = format!("task {} {status}", clean_line(&id));
        // Without a status message of its own, the client's message is `task STATUS`.
        if !message.is_empty() && message.as_ref() != format!("task {status}").as_str() {
            let _ = write!(text, ": {message}");
        }
        return (None, text);
    }
    let total = p.total.filter(|t| t.is_finite() && *t > 0.0);
    let fraction = total.map(|t| (p.progress / t).clamp(0.0, 1.0));
    let mut text = match (p.total, fraction) {
        (Some(total), Some(fraction)) => format!(
            "{}/{} ({}%)",
            number(p.progress),
            number(total),
            (fraction * 100.0).floor()
        ),
        (Some(total), None) => format!("{}/{}", number(p.progress), number(total)),
        (None, _) => number(p.progress),
    };
    if !message.is_empty() {
        let _ = write!(text, " {message}");
    }
    (fraction, text)
}

/// A number as people write it: `50`, `0.5`, `1.23` (two decimals at most).
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return format!("{value:.0}");
    }
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// An elapsed time: `0.4s`, `12.0s`, `2m05s`, `1h02m`.
fn seconds(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    match secs {
        0..60 => format!("{:.1}s", elapsed.as_secs_f64()),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs / 60 % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kelson_jsonrpc::Id;
    use kelson_types::NotificationMeta;

    fn call(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
        let mut p = ProgressNotificationParams::new(Id::Int(3), progress);
        p.total = total;
        p.message = message.map(str::to_owned);
        describe(&p).1
    }

    fn task(id: &str, status: &str, message: &str) -> String {
        let mut meta = NotificationMeta::default();
        meta.extra
            .insert(kelson_client::TASK_STATUS_KEY.into(), Value::from(status));
        let mut p = ProgressNotificationParams::new(Id::Str(id.into()), 1.0).with_message(message);
        p.meta = Some(meta);
        let (fraction, text) = describe(&p);
        assert_eq!(fraction, None);
        text
    }

    #[test]
    fn a_call_shows_the_amount_the_total_the_percentage_and_the_message() {
        assert_eq!(
            call(50.0, Some(100.0), Some("Completed step 50 of 100")),
            "50/100 (50%) Completed step 50 of 100"
        );
        assert_eq!(call(1.0, Some(3.0), None), "1/3 (33%)");
        assert_eq!(call(0.25, Some(1.0), Some("a")), "0.25/1 (25%) a");
        // Past the total (a server's mistake): the percentage stops at 100.
        assert_eq!(call(7.0, Some(5.0), None), "7/5 (100%)");
        assert_eq!(call(3.0, None, Some("indexing")), "3 indexing");
        assert_eq!(call(2.0, Some(0.0), None), "2/0");
        let mut p = ProgressNotificationParams::new(Id::Int(1), 1.0);
        p.total = Some(4.0);
        assert_eq!(describe(&p).0, Some(0.25));
    }

    #[test]
    fn a_task_shows_its_id_status_and_message() {
        assert_eq!(
            task("t-1", "working", "report: 1.0 of 1.5 s"),
            "task t-1 working: report: 1.0 of 1.5 s"
        );
        // The client's own message when the task has none is not repeated.
        assert_eq!(task("t-1", "working", "task working"), "task t-1 working");
        assert_eq!(
            task("t-2", "input_required", "Deleting"),
            "task t-2 input_required: Deleting"
        );
    }

    #[test]
    fn the_servers_words_are_cleaned() {
        assert_eq!(
            call(1.0, None, Some("a\x1b[2J\nb")),
            "1 a␛[2J↵b",
            "a message cannot draw or start a line"
        );
        assert_eq!(
            task("id\x07\u{202e}", "work\x1bing", "m\r"),
            "task id␇<U+202E> work␛ing: m␍"
        );
    }

    #[test]
    fn numbers_and_times_read_as_people_write_them() {
        assert_eq!(number(50.0), "50");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(1.23456), "1.23");
        assert_eq!(number(-2.0), "-2");
        assert_eq!(seconds(Duration::from_millis(400)), "0.4s");
        assert_eq!(seconds(Duration::from_secs(12)), "12.0s");
        assert_eq!(seconds(Duration::from_secs(125)), "2m05s");
        assert_eq!(seconds(Duration::from_secs(3720)), "1h02m");
    }
}
