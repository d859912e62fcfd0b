//! Progress notifications on stderr: an indicatif bar on a terminal, plain lines otherwise (so logs
//! and scripts see them too).

use std::io::{IsTerminal as _, Write as _};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_types::ProgressNotificationParams;

use super::output::clean_line;

/// The bar of the call in flight, shared with the prompts (which hide it while they ask).
#[derive(Clone, Default, Debug)]
pub(crate) struct Progress {
    bar: Arc<Mutex<Option<ProgressBar>>>,
}

/// Steps of the bar when the server gives a total: fractions of the total, in thousandths.
const SCALE: f64 = 1000.0;

impl Progress {
    /// Shows one notification.
    pub(crate) fn update(&self, p: &ProgressNotificationParams) {
        // The server's words on one line: the bar redraws its line, which a line break or a
        // cursor movement in the message would break (or use to draw elsewhere).
        let message = clean_line(p.message.as_deref().unwrap_or_default()).into_owned();
        if !std::io::stderr().is_terminal() {
            let amount = match p.total {
                Some(total) => format!("{}/{}", p.progress, total),
                None => p.progress.to_string(),
            };
            let sep = if message.is_empty() { "" } else { " " };
            let _ = writeln!(std::io::stderr(), "progress: {amount}{sep}{message}");
            return;
        }
        let mut slot = self.bar.lock().expect("progress lock");
        let bar = slot.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        match p.total.filter(|t| *t > 0.0) {
            Some(total) => {
                bar.set_style(
                    ProgressStyle::with_template("{spinner} [{bar:30}] {percent:>3}% {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                );
                bar.set_length(SCALE as u64);
                bar.set_position(((p.progress / total).clamp(0.0, 1.0) * SCALE) as u64);
            }
            None => {
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
            }
        }
        let text = match p.total {
            Some(_) => message,
            None if message.is_empty() => format!("{}", p.progress),
            None => format!("{} {message}", p.progress),
        };
        bar.set_message(text);
    }

    /// Removes the bar, when there is one.
    pub(crate) fn finish(&self) {
        if let Some(bar) = self.bar.lock().expect("progress lock").take() {
            bar.finish_and_clear();
        }
    }

    /// Runs `f` with the bar hidden (for prompts).
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        let bar = self.bar.lock().expect("progress lock").clone();
        match bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }
}
