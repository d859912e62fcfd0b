//! The handler runner: a handler's future run for one request, a panic turned into -32603 for
//! that request only, and a handler past [`ServerConfig::handler_timeout`] stopped.
//!
//! [`ServerConfig::handler_timeout`]: crate::ServerConfig::handler_timeout

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use kelson_jsonrpc::ErrorObject;

use crate::Server;

impl Server {
    /// Runs a handler for `ctx`'s request: a panic becomes -32603 for that request only, and a
    /// handler still running after [`ServerConfig::handler_timeout`] is stopped (its context's
    /// cancellation fires, for work it spawned, and its future is dropped) and answered with
    /// `deadline`'s error: `Ok(Err(e))` lets a tool answer with a tool error instead.
    ///
    /// [`ServerConfig::handler_timeout`]: crate::ServerConfig::handler_timeout
    pub(crate) async fn run_handler<T>(
        &self,
        stop: Option<tokio_util::sync::CancellationToken>,
        fut: impl std::future::Future<Output = T> + Send,
        what: &str,
    ) -> Result<T, Stopped> {
        let Some(limit) = self.inner.config.handler_timeout else {
            return Self::guarded(fut, what).await.map_err(Stopped::Failed);
        };
        match tokio::time::timeout(limit, Self::guarded(fut, what)).await {
            Ok(done) => done.map_err(Stopped::Failed),
            Err(_) => {
                if let Some(stop) = stop {
                    stop.cancel();
                }
                tracing::warn!(handler = what, limit = ?limit, "handler stopped at its deadline");
                Err(Stopped::Deadline(limit))
            }
        }
    }

    pub(crate) async fn guarded<T>(
        fut: impl std::future::Future<Output = T> + Send,
        what: &str,
    ) -> Result<T, ErrorObject> {
        match AssertUnwindSafe(fut).catch_unwind().await {
            Ok(v) => Ok(v),
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned());
                tracing::error!(handler = what, panic = %msg, "handler panicked");
                Err(ErrorObject::internal_error(format_args!(
                    "the {what} handler failed"
                )))
            }
        }
    }
}

/// A duration in words: `1500 ms`, `30 s`, `2 min`.
pub(crate) fn human(d: std::time::Duration) -> String {
    match d.as_millis() {
        ms if ms < 10_000 && ms % 1000 != 0 => format!("{ms} ms"),
        ms if ms < 120_000 || ms % 60_000 != 0 => format!("{} s", d.as_secs()),
        ms => format!("{} min", ms / 60_000),
    }
}

/// Why a handler gave no answer of its own.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// It panicked: -32603.
    Failed(ErrorObject),
    /// It ran past the handler deadline and was stopped.
    Deadline(std::time::Duration),
}

impl Stopped {
    /// The JSON-RPC error for a method without a softer way to say it (tools answer a deadline
    /// with a tool error instead).
    pub(crate) fn into_error(self, what: &str) -> ErrorObject {
        match self {
            Stopped::Failed(e) => e,
            Stopped::Deadline(limit) => ErrorObject::internal_error(format_args!(
                "the {what} handler did not finish within {} and was stopped",
                human(limit)
            )),
        }
    }
}
