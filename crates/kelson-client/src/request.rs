//! One pending call and its per-call options: progress and log callbacks, timeouts, cache bypass.

use std::fmt;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use kelson_jsonrpc::RawValue;
use kelson_types::{LoggingLevel, LoggingMessageNotificationParams, ProgressNotificationParams};
use tokio_util::sync::CancellationToken;

use crate::handlers::BoxFuture;
use crate::{Client, Error};

pub(crate) type ProgressCallback = Arc<dyn Fn(&ProgressNotificationParams) + Send + Sync>;
pub(crate) type LogCallback = Arc<dyn Fn(&LoggingMessageNotificationParams) + Send + Sync>;
pub(crate) type ResultCallback = Arc<dyn Fn(&RawValue) + Send + Sync>;

/// The per-call options.
#[derive(Clone, Default)]
pub(crate) struct Options {
    pub(crate) progress: Option<ProgressCallback>,
    pub(crate) log: Option<(LoggingLevel, LogCallback)>,
    pub(crate) result: Option<ResultCallback>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_time: Option<Duration>,
    pub(crate) fresh: bool,
    pub(crate) cancel: Option<CancellationToken>,
    /// Declares the tasks extension on this request even when the client does not on every one
    /// (`tasks/*`, [`Client::call_tool_as_task`]).
    pub(crate) declare_tasks: bool,
}

impl Options {
    /// Hands a complete result to the [`Request::on_result`] callback, if there is one.
    pub(crate) fn deliver_result(&self, raw: &RawValue) {
        if let Some(callback) = &self.result {
            callback(raw);
        }
    }

    /// Waits until the call's cancellation token fires; never, without one.
    pub(crate) async fn cancelled(&self) {
        match &self.cancel {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// Whether a cached value may answer this call.
    pub(crate) fn may_use_cache(&self) -> bool {
        !self.fresh && self.result.is_none()
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("progress", &self.progress.is_some())
            .field("log", &self.log.as_ref().map(|(level, _)| level))
            .field("result", &self.result.is_some())
            .field("timeout", &self.timeout)
            .field("max_time", &self.max_time)
            .field("fresh", &self.fresh)
            .field("cancel", &self.cancel.is_some())
            .field("declare_tasks", &self.declare_tasks)
            .finish()
    }
}

type Run<'c, T> =
    Box<dyn FnOnce(&'c Client, Options) -> BoxFuture<'c, Result<T, Error>> + Send + 'c>;

/// A call not sent yet: set per-call options, then `.await` it.
///
/// ```no_run
/// # async fn demo(client: kelson_client::Client) -> Result<(), kelson_client::Error> {
/// use std::time::Duration;
/// use kelson_types::LoggingLevel;
///
/// let result = client
///     .call_tool("index", serde_json::json!({"path": "/srv"}))
///     .on_progress(|p| eprintln!("{}/{:?} {}", p.progress, p.total, p.message.as_deref().unwrap_or("")))
///     .on_log(LoggingLevel::Info, |m| eprintln!("[{:?}] {}", m.level, m.data))
///     .timeout(Duration::from_secs(30))
///     .await?;
/// # let _ = result; Ok(()) }
/// ```
#[must_use = "a request does nothing until it is awaited"]
pub struct Request<'c, T> {
    client: &'c Client,
    run: Run<'c, T>,
    options: Options,
}

impl<T> fmt::Debug for Request<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<'c, T> Request<'c, T> {
    pub(crate) fn new(
        client: &'c Client,
        run: impl FnOnce(&'c Client, Options) -> BoxFuture<'c, Result<T, Error>> + Send + 'c,
    ) -> Self {
        Request {
            client,
            run: Box::new(run),
            options: Options::default(),
        }
    }

    /// Asks for progress notifications (a `progressToken` in `_meta`) and delivers them to `callback`.
    /// Each one also resets the idle timeout.
    pub fn on_progress(
        mut self,
        callback: impl Fn(&ProgressNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.options.progress = Some(Arc::new(callback));
        self
    }

    /// Asks for log messages at `level` and above (`logLevel` in `_meta`, deprecated in 2026-07-28)
    /// and delivers them to `callback`.
    pub fn on_log(
        mut self,
        level: LoggingLevel,
        callback: impl Fn(&LoggingMessageNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.options.log = Some((level, Arc::new(callback)));
        self
    }

    /// Delivers each complete result to `callback` as the server sent it, before it is decoded
    /// into its type: every member, known to this crate or not, in the server's order. A paginated
    /// `list_all_*` call delivers each page; an interim `input_required` result is not delivered,
    /// only the final one. The call skips the cache (a cached value has no text to deliver). A
    /// legacy `discover`, which sends no request, delivers the `initialize` result it was built
    /// from.
    pub fn on_result(mut self, callback: impl Fn(&RawValue) + Send + Sync + 'static) -> Self {
        self.options.result = Some(Arc::new(callback));
        self
    }

    /// How long to wait for the answer; progress notifications restart the wait. Overrides the
    /// client's default for this call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = Some(timeout);
        self
    }

    /// The hard maximum per request, whatever progress says. Overrides the client's default.
    pub fn max_time(mut self, max_time: Duration) -> Self {
        self.options.max_time = Some(max_time);
        self
    }

    /// Cancels the call when `token` fires: the request is dropped (cancelled in the transport's
    /// way) and the call fails with [`Error::Cancelled`]. A `tools/call` that became a task
    /// ([`Client::call_tool`]) sends `tasks/cancel` first; [`Client::wait_task`] does too.
    pub fn cancel_token(mut self, token: CancellationToken) -> Self {
        self.options.cancel = Some(token);
        self
    }

    /// Skips the cache for this call (the fresh result is still stored).
    pub fn fresh(mut self) -> Self {
        self.options.fresh = true;
        self
    }
}

impl<'c, T: Send + 'c> IntoFuture for Request<'c, T> {
    type Output = Result<T, Error>;
    type IntoFuture = BoxFuture<'c, Result<T, Error>>;

    fn into_future(self) -> Self::IntoFuture {
        (self.run)(self.client, self.options)
    }
}
