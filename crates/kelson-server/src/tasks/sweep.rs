//! The tasks' housekeeping on a server: expired tasks swept from the store, and a heartbeat while
//! this instance runs tasks.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use kelson_types::TaskStatus;

use super::TaskRuntime;
use crate::Server;
use crate::server::Inner;

impl TaskRuntime {
    /// Starts the sweeper and the heartbeat once, on the first task.
    pub(crate) fn start_sweeper(&self, server: &Server) {
        use std::sync::atomic::Ordering;
        if self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let config = &server.inner.config.tasks;
        every(server, config.sweep_interval, |inner| async move {
            let tasks = &inner.tasks;
            match tasks.store.sweep(SystemTime::now()).await {
                Ok(expired) => {
                    for id in expired {
                        if let Some(running) = tasks.local(&id) {
                            running.cancel.cancel();
                        }
                        tasks.unregister(&id);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "expired tasks could not be deleted"),
            }
        });
        // While this instance runs tasks: tell the store they are alive, stop those that were
        // cancelled (or failed, or deleted) elsewhere, and wake those whose input arrived through
        // another instance.
        every(server, config.heartbeat_interval, |inner| async move {
            let tasks = &inner.tasks;
            let ids: Vec<String> = tasks.running().keys().cloned().collect();
            if ids.is_empty() {
                return;
            }
            let records = match tasks.store.heartbeat(&tasks.instance, ids.clone()).await {
                Ok(records) => records,
                Err(e) => {
                    tracing::warn!(error = %e, "the tasks' heartbeat could not be recorded");
                    return;
                }
            };
            let seen: std::collections::HashSet<&str> =
                records.iter().map(|r| r.id.as_str()).collect();
            for id in ids.iter().filter(|id| !seen.contains(id.as_str())) {
                // Deleted or expired: nobody can ask for its result any more.
                if let Some(running) = tasks.local(id) {
                    running.cancel.cancel();
                }
            }
            for record in &records {
                let Some(running) = tasks.local(&record.id) else {
                    continue;
                };
                if record.status.is_terminal() {
                    running.cancel.cancel();
                } else if record.status == TaskStatus::Working {
                    running.resume.notify_one();
                }
            }
        });
    }
}

/// Runs `job` every `period` (at least 10 ms) until the server shuts down or is dropped.
fn every<F, Fut>(server: &Server, period: Duration, mut job: F)
where
    F: FnMut(Arc<Inner>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let weak = Arc::downgrade(&server.inner);
    let shutdown = server.inner.shutdown.clone();
    let period = period.max(Duration::from_millis(10));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.cancelled() => return,
            }
            let Some(inner) = weak.upgrade() else { return };
            job(inner).await;
        }
    });
}
