//! Change notifications shared between instances of one MCP server through a broker, NATS or
//! Redis, so that a `subscriptions/listen` stream held by one instance hears of a change made
//! through another (a row written with `execute`, a tool registered at run time, a task that
//! finished).
//!
//! [`Broker`] is the server's [`Relay`]: every change the server makes is published on one
//! channel (a NATS subject or a Redis pub/sub channel), and every change published there by the
//! other instances is handed to this one's listeners. It keeps one connection (two with Redis) and
//! keeps trying to reconnect, with backoff, while the broker is unreachable. Meanwhile streams
//! stay open and events are lost (counted in [`BrokerStats::lost`]); when the connection is back,
//! every listener of every instance is told that what it follows may have changed, and re-reads
//! it.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use kelson_broker::Broker;
//!
//! let broker = Broker::new("nats://127.0.0.1:4222", "mcp.changes")?;
//! let server = kelson_server::Server::builder("db", "1.0")
//!     .relay(Arc::new(broker.clone()))
//!     .build()?;
//! broker.start(server.relay_inlet());
//! # Ok(())
//! # }
//! ```
//!
//! Only what one instance alone can see is worth relaying: a folder every instance watches is
//! seen by each of them (`Server::notify_resource_updated_locally`).
//!
//! The clients here speak the few commands a relay needs and nothing else; they need no
//! dependency beyond tokio, and rustls for TLS (feature `tls`: `tls://` for NATS, `rediss://` for
//! Redis, the certificate always checked against the CAs and the host name; `?sslrootcert=CA.pem`
//! instead of the system's CAs, `&sslcert=CERT.pem&sslkey=KEY.pem` for a client certificate).

mod nats;
mod redis;
mod stream;
mod target;

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use kelson_server::relay::{Delivery, Relay, RelayInlet};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use target::{Kind, Target};

/// The largest event accepted from the broker, in bytes. Events are a few hundred bytes; a
/// task's status message makes the largest.
pub(crate) const MAX_EVENT: usize = 1024 * 1024;

/// How many events may wait to be published while the connection is busy; beyond it they are
/// lost (and counted).
const QUEUE: usize = 4096;
/// How often an idle connection is pinged, and how many pings may go unanswered before it is
/// taken for dead.
const PING_EVERY: Duration = Duration::from_secs(10);
const PINGS_UNANSWERED: u32 = 2;
/// How long connecting (and logging in, and subscribing) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one write to the broker may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Reconnection backoff.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MOST: Duration = Duration::from_secs(5);

/// A broker URL or channel that cannot work.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// The URL is not one of `nats://...` and `redis://...`, or cannot be used.
    #[error("{0}")]
    Url(String),
    /// The channel name is not usable on this broker.
    #[error("{0}")]
    Channel(String),
}

/// What a broker connection has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BrokerStats {
    /// Whether it is connected now.
    pub connected: bool,
    /// Events published to the other instances.
    pub published: u64,
    /// Events received from the other instances and handed to this one's listeners.
    pub received: u64,
    /// Events of this instance that were not published: the broker was unreachable or the queue
    /// was full.
    pub lost: u64,
    /// Events received that could not be read.
    pub malformed: u64,
    /// Times the connection was lost.
    pub disconnects: u64,
}

/// The relay to a NATS or Redis broker. Cloning is cheap; clones are the same connection.
#[derive(Clone)]
pub struct Broker {
    shared: Arc<Shared>,
}

struct Shared {
    target: Target,
    channel: String,
    queue: mpsc::Sender<Bytes>,
    /// The receiving end, until [`Broker::start`] takes it.
    pending: std::sync::Mutex<Option<mpsc::Receiver<Bytes>>>,
    connected: AtomicBool,
    connected_changed: Notify,
    published: AtomicU64,
    received: AtomicU64,
    lost: AtomicU64,
    malformed: AtomicU64,
    disconnects: AtomicU64,
    stop: CancellationToken,
    /// Why the last attempt to connect failed, or the connection was lost; cleared on connecting.
    last_error: std::sync::Mutex<Option<String>>,
    /// Called after each event of another instance reaches this one's listeners.
    on_remote: std::sync::Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("target", &self.shared.target)
            .field("channel", &self.shared.channel)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Shared {
    fn set_last_error(&self, error: Option<String>) {
        *self
            .last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = error;
    }

    fn remote_event(&self) {
        let hook = self
            .on_remote
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(hook) = hook {
            hook();
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Broker {
    /// A relay through the broker at `url` (`nats://[user:password@]host[:4222]` or
    /// `redis://[[user]:password@]host[:6379]`; `tls://` and `rediss://` for TLS, with the
    /// feature `tls`, taking `?sslrootcert=CA.pem` and `sslcert=...&sslkey=...`) on `channel`: a NATS subject or a Redis channel,
    /// the same for every instance of one server and different for unrelated servers sharing the
    /// broker. Nothing connects until [`start`](Self::start).
    pub fn new(url: &str, channel: &str) -> Result<Broker, BrokerError> {
        let target = checked(url, channel)?;
        let (queue, pending) = mpsc::channel(QUEUE);
        Ok(Broker {
            shared: Arc::new(Shared {
                target,
                channel: channel.to_owned(),
                queue,
                pending: std::sync::Mutex::new(Some(pending)),
                connected: AtomicBool::new(false),
                connected_changed: Notify::new(),
                published: AtomicU64::new(0),
                received: AtomicU64::new(0),
                lost: AtomicU64::new(0),
                malformed: AtomicU64::new(0),
                disconnects: AtomicU64::new(0),
                stop: CancellationToken::new(),
                last_error: std::sync::Mutex::new(None),
                on_remote: std::sync::Mutex::new(None),
            }),
        })
    }

    /// Whether [`new`](Self::new) would take `url` and `channel`, without making anything: for
    /// checking settings before the runtime starts.
    pub fn check(url: &str, channel: &str) -> Result<(), BrokerError> {
        checked(url, channel).map(drop)
    }

    /// Connects, in a task of the current Tokio runtime, and keeps the connection until the last
    /// clone is dropped or [`stop`](Self::stop): publishes what the server relays, and hands
    /// what the other instances publish to `inlet`. Calling it again does nothing.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn start(&self, inlet: RelayInlet) {
        let Some(queue) = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let shared = Arc::downgrade(&self.shared);
        let stop = self.shared.stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = supervise(shared, queue, inlet) => {}
            }
        });
    }

    /// Calls `f` after each event from another instance has reached this instance's listeners
    /// (and after a resync): for state this instance keeps that such events make stale, such as
    /// a catalog of tables another instance may have created. `f` runs on the relay's task: keep
    /// it short (wake a task of your own).
    pub fn on_remote_event(&self, f: impl Fn() + Send + Sync + 'static) {
        *self
            .shared
            .on_remote
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(f));
    }

    /// Closes the connection for good.
    pub fn stop(&self) {
        self.shared.stop.cancel();
    }

    /// The broker, without credentials (`nats://host:port`).
    pub fn describe(&self) -> String {
        self.shared.target.to_string()
    }

    /// The channel events travel on.
    pub fn channel(&self) -> &str {
        &self.shared.channel
    }

    /// Whether the connection is up now.
    pub fn is_connected(&self) -> bool {
        self.shared.connected.load(Ordering::Relaxed)
    }

    /// Waits until the connection is up, for at most `timeout`; whether it is.
    pub async fn wait_connected(&self, timeout: Duration) -> bool {
        let wait = async {
            loop {
                let changed = self.shared.connected_changed.notified();
                if self.is_connected() {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(timeout, wait).await.is_ok()
    }

    /// Why the connection is down: the last attempt's error, or what ended the last connection.
    /// `None` while connected, and before the first attempt.
    pub fn last_error(&self) -> Option<String> {
        self.shared
            .last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The counts so far.
    pub fn stats(&self) -> BrokerStats {
        let s = &self.shared;
        BrokerStats {
            connected: self.is_connected(),
            published: s.published.load(Ordering::Relaxed),
            received: s.received.load(Ordering::Relaxed),
            lost: s.lost.load(Ordering::Relaxed),
            malformed: s.malformed.load(Ordering::Relaxed),
            disconnects: s.disconnects.load(Ordering::Relaxed),
        }
    }
}

impl Relay for Broker {
    fn publish(&self, event: Bytes) {
        if !self.is_connected() {
            // Lost while the broker is unreachable; the others resync when it is back.
            self.shared.lost.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.shared.queue.try_send(event).is_err() {
            self.shared.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn checked(url: &str, channel: &str) -> Result<Target, BrokerError> {
    let target = Target::parse(url)?;
    check_channel(target.kind, channel)?;
    Ok(target)
}

/// A NATS subject (tokens of letters, digits, `_` and `-` between dots; no wildcards) or a Redis
/// channel (any bytes, but we keep to the same printable set, so that one name works on both).
fn check_channel(kind: Kind, channel: &str) -> Result<(), BrokerError> {
    let ok_token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    if channel.len() > 200 || !channel.split('.').all(ok_token) {
        let on = match kind {
            Kind::Nats => "a NATS subject",
            Kind::Redis => "a channel",
        };
        return Err(BrokerError::Channel(format!(
            "the channel {channel:?} is not usable as {on}: use letters, digits, '_' and '-' in dot-separated parts (e.g. mcp.changes)"
        )));
    }
    Ok(())
}

/// What a connection's reader brings.
pub(crate) enum Incoming {
    Event(Bytes),
    Pong,
}

enum Conn {
    Nats(nats::Conn),
    Redis(redis::Conn),
}

impl Conn {
    async fn connect(target: &Target, channel: &str) -> io::Result<Conn> {
        match target.kind {
            Kind::Nats => nats::Conn::connect(target, channel).await.map(Conn::Nats),
            Kind::Redis => redis::Conn::connect(target, channel).await.map(Conn::Redis),
        }
    }

    async fn publish(&mut self, payload: &[u8]) -> io::Result<()> {
        match self {
            Conn::Nats(c) => c.publish(payload).await,
            Conn::Redis(c) => c.publish(payload).await,
        }
    }

    async fn ping(&mut self) -> io::Result<()> {
        match self {
            Conn::Nats(c) => c.ping().await,
            Conn::Redis(c) => c.ping().await,
        }
    }

    async fn next(&mut self) -> io::Result<Incoming> {
        match self {
            Conn::Nats(c) => c.next().await,
            Conn::Redis(c) => c.next().await,
        }
    }
}

/// Connects, serves the connection until it fails, and reconnects, until the broker is dropped.
async fn supervise(
    shared: std::sync::Weak<Shared>,
    mut queue: mpsc::Receiver<Bytes>,
    inlet: RelayInlet,
) {
    let mut backoff = BACKOFF_FIRST;
    let mut ever_connected = false;
    let mut failures: u64 = 0;
    loop {
        let Some(s) = shared.upgrade() else { return };
        let (target, channel) = (s.target.clone(), s.channel.clone());
        drop(s);
        let attempt = tokio::time::timeout(CONNECT_TIMEOUT, Conn::connect(&target, &channel)).await;
        let outcome: io::Result<()> = match attempt {
            Ok(Ok(conn)) => {
                let Some(s) = shared.upgrade() else { return };
                // Whatever waited to be published was made while disconnected: lost.
                while queue.try_recv().is_ok() {
                    s.lost.fetch_add(1, Ordering::Relaxed);
                }
                s.set_last_error(None);
                s.connected.store(true, Ordering::Relaxed);
                s.connected_changed.notify_waiters();
                drop(s);
                if ever_connected {
                    tracing::info!(broker = %target, "reconnected to the broker; listeners re-read what they follow");
                } else {
                    tracing::info!(broker = %target, channel, "connected to the broker");
                }
                let mut conn = conn;
                if ever_connected {
                    // Events of the others, and ours to them, were lost meanwhile: this
                    // instance's listeners and every other instance's re-read what they follow.
                    inlet.resync();
                    if let Some(s) = shared.upgrade() {
                        s.remote_event();
                    }
                    let asked =
                        tokio::time::timeout(WRITE_TIMEOUT, conn.publish(&inlet.resync_message()))
                            .await;
                    if !matches!(asked, Ok(Ok(()))) {
                        tracing::warn!("could not ask the other instances to resync");
                    }
                }
                ever_connected = true;
                failures = 0;
                backoff = BACKOFF_FIRST;
                let error = serve(&shared, conn, &mut queue, &inlet).await;
                let Some(s) = shared.upgrade() else { return };
                s.connected.store(false, Ordering::Relaxed);
                s.connected_changed.notify_waiters();
                s.disconnects.fetch_add(1, Ordering::Relaxed);
                Err(error)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()),
            )),
        };
        if let Err(error) = outcome {
            let error = explained(&error);
            if let Some(s) = shared.upgrade() {
                s.set_last_error(Some(error.clone()));
            }
            failures += 1;
            // The first failure, then one in fifty: a broker down for long must not flood the log.
            if failures == 1 || failures.is_multiple_of(50) {
                tracing::warn!(
                    broker = %target,
                    error = %error,
                    attempts = failures,
                    "the broker is unreachable; listen streams stay open but miss other instances' changes until it is back; retrying"
                );
            }
        }
        // Wait before the next attempt; what the server relays meanwhile is lost.
        let wait = tokio::time::sleep(backoff);
        tokio::pin!(wait);
        loop {
            tokio::select! {
                () = &mut wait => break,
                event = queue.recv() => match event {
                    Some(_) => {
                        let Some(s) = shared.upgrade() else { return };
                        s.lost.fetch_add(1, Ordering::Relaxed);
                    }
                    None => return,
                },
            }
        }
        backoff = (backoff * 2).min(BACKOFF_MOST);
    }
}

/// Serves one connection until it fails; the error says why.
async fn serve(
    shared: &std::sync::Weak<Shared>,
    mut conn: Conn,
    queue: &mut mpsc::Receiver<Bytes>,
    inlet: &RelayInlet,
) -> io::Error {
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    let mut unanswered: u32 = 0;
    loop {
        tokio::select! {
            incoming = conn.next() => match incoming {
                Ok(Incoming::Event(payload)) => {
                    let Some(s) = shared.upgrade() else { return closed() };
                    match inlet.deliver(&payload) {
                        Ok(Delivery::Delivered) => {
                            s.received.fetch_add(1, Ordering::Relaxed);
                            s.remote_event();
                        }
                        Ok(_) => {}
                        Err(e) => {
                            s.malformed.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!(error = %e, "a relayed event was dropped");
                        }
                    }
                }
                Ok(Incoming::Pong) => unanswered = 0,
                Err(e) => return e,
            },
            event = queue.recv() => {
                let Some(event) = event else { return closed() };
                match tokio::time::timeout(WRITE_TIMEOUT, conn.publish(&event)).await {
                    Ok(Ok(())) => {
                        let Some(s) = shared.upgrade() else { return closed() };
                        s.published.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(Err(e)) => {
                        lose(shared);
                        return e;
                    }
                    Err(_) => {
                        lose(shared);
                        return io::Error::new(io::ErrorKind::TimedOut, "a publish did not complete within 5 s");
                    }
                }
            }
            _ = ping.tick() => {
                if unanswered >= PINGS_UNANSWERED {
                    return io::Error::new(io::ErrorKind::TimedOut, "the broker stopped answering pings");
                }
                unanswered += 1;
                match tokio::time::timeout(WRITE_TIMEOUT, conn.ping()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return e,
                    Err(_) => return io::Error::new(io::ErrorKind::TimedOut, "a ping did not complete within 5 s"),
                }
            }
        }
    }
}

/// An error in words, with what to do where the cause is known. With TLS 1.3 a server that wants
/// a client certificate says so only after the handshake, in an alert on the first read.
fn explained(error: &io::Error) -> String {
    let text = error.to_string();
    if text.contains("CertificateRequired") {
        format!("{text}: the broker asks for a client certificate (sslcert and sslkey in the URL)")
    } else {
        text
    }
}

fn lose(shared: &std::sync::Weak<Shared>) {
    if let Some(s) = shared.upgrade() {
        s.lost.fetch_add(1, Ordering::Relaxed);
    }
}

fn closed() -> io::Error {
    io::Error::other("the relay was dropped")
}
