//! `kelson bench`: a protocol-aware load generator.
//!
//! It speaks MCP properly (standard headers, `_meta`, JSON or SSE answers) and counts anything but a
//! complete, non-error result as an error, by class. Latencies go into an HDR histogram per worker,
//! merged at the end; workers share only two atomic counters. A handshake-era server is measured
//! too: each connection does the `initialize` handshake once, then loads its session (era.rs).

mod era;
mod http;
mod soak;
mod stats;
mod stdio;
mod tools;
mod workload;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::client::EraArg;
use era::{Failure, Found, Protocol};
use stats::{Report, Stats};

#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    /// The server's Streamable HTTP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with = "stdio",
        required_unless_present = "stdio"
    )]
    url: Option<String>,
    /// A command that serves MCP on stdio; it is started once and kept busy. It is split into
    /// words like the client's --stdio (quotes and backslashes, no expansion) and run without a
    /// shell.
    #[arg(long, value_name = "CMD")]
    stdio: Option<String>,
    /// HTTP: keep-alive connections, each with one request at a time.
    #[arg(long, short = 'c', default_value_t = 16)]
    connections: usize,
    /// stdio: requests kept in flight.
    #[arg(long, default_value_t = 32)]
    in_flight: usize,
    /// How long to measure, after the warm-up (e.g. 10s, 500ms, 1m) [default: 10s, or 10m with
    /// --soak].
    #[arg(long, short = 'd', value_parser = crate::flags::duration)]
    duration: Option<Duration>,
    /// Stop after this many measured requests instead of after --duration.
    #[arg(long, short = 'n')]
    requests: Option<u64>,
    /// Load sent before measuring starts.
    #[arg(long, default_value = "1s", value_parser = crate::flags::duration)]
    warmup: Duration,
    /// Workload: call this tool.
    #[arg(long, value_name = "TOOL")]
    call: Option<String>,
    /// An argument of --call as KEY=VALUE (repeatable), as `kelson call` takes it, or the
    /// arguments as one JSON object. The value is taken as JSON when it parses as a number, a
    /// boolean, null, an array or an object, else as a string (bench does not read the tool's
    /// schema: a string that reads as a number goes in the JSON object form). Also spelt --args.
    #[arg(
        long = "arg",
        short = 'a',
        alias = "args",
        value_name = "KEY=VALUE|JSON"
    )]
    args: Vec<String>,
    /// Workload: tools/list.
    #[arg(long)]
    list_tools: bool,
    /// Workload: resources/read of this URI.
    #[arg(long, value_name = "URI")]
    read: Option<String>,
    /// Workload: a weighted mix such as `call=8,list=1,read=1` (uses --call/--arg and --read).
    #[arg(long, value_name = "SPEC")]
    mix: Option<String>,
    /// Extra HTTP header, `Name: value` (repeatable), e.g. an Authorization header.
    #[arg(long = "header", short = 'H', value_name = "K:V")]
    headers: Vec<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Show the stdio server's stderr.
    #[arg(long)]
    server_stderr: bool,
    /// The share of measured requests that may fail before the run counts as failed (exit
    /// non-zero), e.g. `1%` or `0.01`. By default any failure fails the run.
    #[arg(long, value_name = "SHARE", default_value = "0")]
    max_errors: String,
    /// Which protocol era to measure: auto probes the server once with server/discover and
    /// measures a 2025 server as legacy (a server that speaks both is measured as modern);
    /// modern sends 2026-07-28 requests at once; legacy does the initialize handshake once per
    /// HTTP connection (or on the stdio process) and loads the session it opens.
    #[arg(long, value_enum, value_name = "ERA", default_value_t = EraArg::Auto)]
    era: EraArg,
    /// Soak the server instead of measuring it (HTTP, 2026-07-28): the workload on --connections
    /// keep-alive connections, with listen streams opened and dropped and calls abandoned
    /// mid-way beside it, while the server's memory, file descriptors (--pid) and live tasks
    /// (--metrics) are sampled; it fails unless they stay flat after the warm-up.
    #[arg(long, requires = "url", conflicts_with_all = ["requests", "stdio"])]
    soak: bool,
    /// With --soak: the server's process id, to sample its memory and open descriptors.
    #[arg(long, value_name = "PID", requires = "soak")]
    pid: Option<u32>,
    /// With --soak: the server's metrics URL, to sample its live tasks (mcp_runtime_tasks_alive).
    #[arg(long, value_name = "URL", requires = "soak")]
    metrics: Option<String>,
    /// With --soak: how often to sample.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::flags::duration)]
    sample_every: Duration,
    /// With --soak: write every sample to this CSV file (seconds, rss_kib, fds, tasks, answered,
    /// failed).
    #[arg(long, value_name = "FILE", requires = "soak")]
    samples: Option<std::path::PathBuf>,
}

/// The run's schedule, shared by every worker.
pub(crate) struct Clock {
    issued: AtomicU64,
    /// Requests started in the measured phase; with `--requests` no more than the limit start.
    measured_issued: AtomicU64,
    measured_done: AtomicU64,
    warmup_end: Instant,
    deadline: Option<Instant>,
    limit: Option<u64>,
    stop: AtomicBool,
    /// Why the run ended early (a lost server), when it did.
    abort: std::sync::Mutex<Option<String>>,
    last_done: std::sync::Mutex<Instant>,
}

/// One request the clock allows: its number, and whether it counts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ticket {
    pub(crate) n: u64,
    pub(crate) measured: bool,
}

impl Clock {
    fn new(warmup: Duration, duration: Duration, limit: Option<u64>) -> Self {
        let start = Instant::now();
        let warmup_end = start + warmup;
        Clock {
            issued: AtomicU64::new(0),
            measured_issued: AtomicU64::new(0),
            measured_done: AtomicU64::new(0),
            warmup_end,
            deadline: limit.is_none().then(|| warmup_end + duration),
            limit,
            stop: AtomicBool::new(false),
            abort: std::sync::Mutex::new(None),
            last_done: std::sync::Mutex::new(warmup_end),
        }
    }

    pub(crate) fn in_warmup(&self, at: Instant) -> bool {
        at < self.warmup_end
    }

    /// The next request to send, or `None` when the run is over. The phase is decided here, when
    /// the request is allowed, so that `--requests N` measures exactly N requests however many
    /// connections race for the last ones.
    pub(crate) fn next(&self) -> Option<Ticket> {
        if self.stopped() || self.expired() {
            return None;
        }
        let measured = Instant::now() >= self.warmup_end;
        if measured
            && let Some(limit) = self.limit
            && self.measured_issued.fetch_add(1, Ordering::Relaxed) >= limit
        {
            self.stop.store(true, Ordering::Relaxed);
            return None;
        }
        Some(Ticket {
            n: self.issued.fetch_add(1, Ordering::Relaxed),
            measured,
        })
    }

    /// Whether the deadline has passed (and, if so, stops the run). Workers that cannot send (a
    /// connection that keeps failing) ask this instead of [`Clock::next`].
    pub(crate) fn expired(&self) -> bool {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stop.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    pub(crate) fn done(&self, measured: bool) {
        if measured {
            self.measured_done.fetch_add(1, Ordering::Relaxed);
            *self.last_done.lock().expect("clock lock") = Instant::now();
        }
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Ends the run early, keeping the first reason given.
    pub(crate) fn abort(&self, reason: String) {
        let mut slot = self.abort.lock().expect("clock lock");
        if slot.is_none() {
            *slot = Some(reason);
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    fn aborted(&self) -> Option<String> {
        self.abort.lock().expect("clock lock").clone()
    }

    fn window(&self) -> Duration {
        // Requests that started before the deadline are counted when they finish, so the window
        // runs until the last of them.
        let last = *self.last_done.lock().expect("clock lock");
        let end = self.deadline.map_or(last, |d| d.max(last));
        end.saturating_duration_since(self.warmup_end)
    }
}

/// The arguments of `--call`, as a JSON object's text: the `--arg` values in order, each a JSON
/// object whose members are merged or a `KEY=VALUE` pair, later ones winning.
fn call_arguments(values: &[String]) -> anyhow::Result<String> {
    let mut arguments = serde_json::Map::new();
    for value in values {
        if value.trim_start().starts_with('{') {
            match serde_json::from_str::<serde_json::Value>(value) {
                Ok(serde_json::Value::Object(members)) => arguments.extend(members),
                Ok(_) => bail!("--arg {value:?}: expected KEY=VALUE or a JSON object"),
                Err(e) => bail!("--arg {value:?} is not a JSON object: {e}"),
            }
            continue;
        }
        let Some((key, raw)) = value.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            bail!("--arg {value:?}: expected KEY=VALUE or a JSON object");
        };
        // As `kelson call` types a value whose schema does not say: JSON unless it is a string.
        let typed = match serde_json::from_str::<serde_json::Value>(raw) {
            Ok(json) if !json.is_string() => json,
            _ => serde_json::Value::String(raw.to_owned()),
        };
        arguments.insert(key.to_owned(), typed);
    }
    Ok(serde_json::Value::Object(arguments).to_string())
}

/// The requests of the run, with the modern envelope or for a legacy session.
fn workload(args: &BenchArgs, legacy: bool) -> anyhow::Result<workload::Workload> {
    let arguments = call_arguments(&args.args)?;
    if let Some(spec) = &args.mix {
        return workload::mix(
            spec,
            args.call.as_deref(),
            &arguments,
            args.read.as_deref(),
            legacy,
        );
    }
    let chosen = [args.call.is_some(), args.list_tools, args.read.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    if chosen != 1 {
        bail!("choose one workload: --call TOOL, --list-tools, --read URI, or --mix SPEC");
    }
    let template = if let Some(name) = &args.call {
        workload::call(name, &arguments, legacy)?
    } else if args.list_tools {
        workload::list_tools(legacy)?
    } else {
        workload::read(args.read.as_deref().unwrap_or_default(), legacy)?
    };
    Ok(workload::Workload::single(template))
}

fn progress(clock: Arc<Clock>, total: Duration, hidden: bool) -> ProgressBar {
    let bar = if hidden {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(total.as_millis().try_into().unwrap_or(u64::MAX))
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {msg}")
            .expect("a valid template"),
    );
    let ticker = bar.clone();
    tokio::spawn(async move {
        let start = Instant::now();
        while !clock.stopped() {
            tokio::time::sleep(Duration::from_millis(200)).await;
            ticker.set_position(start.elapsed().as_millis().try_into().unwrap_or(u64::MAX));
            ticker.set_message(format!("{} requests", clock.issued.load(Ordering::Relaxed)));
        }
    });
    bar
}

/// Runs the benchmark and returns the exit status: 0 when every measured request got the
/// expected answer (or the failures stayed within `--max-errors`), else that of the most frequent
/// error class (1 `isError`, 2 a protocol error, 3 a transport error), and 4 for a usage error.
/// How long to measure: as given, else 10 s (10 min for a soak).
fn duration(args: &BenchArgs) -> Duration {
    args.duration.unwrap_or(if args.soak {
        Duration::from_secs(600)
    } else {
        Duration::from_secs(10)
    })
}

pub(crate) async fn run(args: BenchArgs) -> u8 {
    // Checked before anything is started; built again once the era is known.
    let checked = match workload(&args, false) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {}", crate::client::clean_line(&format!("{e:#}")));
            return crate::client::EXIT_USAGE;
        }
    };
    if args.soak {
        return soak(&args, checked).await;
    }
    match measure(&args).await {
        Ok(report) => {
            if args.json {
                match serde_json::to_string_pretty(&report) {
                    Ok(text) => println!("{text}"),
                    Err(e) => eprintln!("error: {e}"),
                }
            } else {
                report.print_human();
            }
            if let Some(failure) = &report.failure {
                eprintln!("error: {failure}");
            }
            report.exit_code
        }
        Err(Setup::Usage(e)) => {
            eprintln!("error: {}", crate::client::clean_line(&format!("{e:#}")));
            crate::client::EXIT_USAGE
        }
        Err(Setup::Transport(e)) => {
            eprintln!("error: {}", crate::client::clean_line(&format!("{e:#}")));
            crate::client::EXIT_TRANSPORT
        }
        Err(Setup::Protocol(e)) => {
            eprintln!("error: {}", crate::client::clean_line(&format!("{e:#}")));
            crate::client::EXIT_PROTOCOL
        }
    }
}

/// `--soak`: the report, and a status that fails unless the resources stayed flat.
async fn soak(args: &BenchArgs, workload: workload::Workload) -> u8 {
    let headers = args
        .headers
        .iter()
        .map(|h| {
            let (k, v) = h.split_once(':').context("--header wants `Name: value`")?;
            Ok((k.trim().parse()?, v.trim().parse()?))
        })
        .collect::<anyhow::Result<Vec<_>>>();
    let headers = match headers {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {}", crate::client::clean_line(&format!("{e:#}")));
            return crate::client::EXIT_USAGE;
        }
    };
    let plan = soak::Plan {
        url: args.url.clone().unwrap_or_default(),
        connections: args.connections,
        warmup: args.warmup.max(duration(args) / 5),
        duration: duration(args),
        every: args.sample_every.max(Duration::from_millis(100)),
        pid: args.pid,
        metrics: args.metrics.clone(),
        samples: args.samples.clone(),
        headers,
    };
    if workload.calls_tools()
        && let Ok(target) = http::Target::parse(&plan.url, &plan.headers)
    {
        // A tool the server does not have would fail every call of the soak: refused now.
        let listed = target.tools(&target.modern()).await;
        if let Err(e) = tools::check(&workload, listed.as_ref()) {
            eprintln!("error: {}", crate::client::clean_line(&e));
            return crate::client::EXIT_PROTOCOL;
        }
    }
    match soak::run(plan, Arc::new(workload)).await {
        Ok(outcome) => {
            if args.json {
                match serde_json::to_string_pretty(&outcome) {
                    Ok(text) => println!("{text}"),
                    Err(e) => eprintln!("error: {e}"),
                }
            } else {
                outcome.print_human();
            }
            if outcome.passed { 0 } else { 1 }
        }
        Err(e) => {
            eprintln!("error: {}", crate::client::clean_line(&format!("{e:#}")));
            crate::client::EXIT_TRANSPORT
        }
    }
}

/// Why a run could not start.
enum Setup {
    Usage(anyhow::Error),
    Transport(anyhow::Error),
    /// The server answered the handshake with an error.
    Protocol(anyhow::Error),
}

impl From<Failure> for Setup {
    fn from(failure: Failure) -> Self {
        let hint = "the legacy handshake failed";
        match failure {
            Failure::Protocol(m) => Setup::Protocol(anyhow::anyhow!("{hint}: {m}")),
            Failure::Transport(m) => Setup::Transport(anyhow::anyhow!("{hint}: {m}")),
        }
    }
}

/// Whether to measure the legacy era: as forced, or as the probe found.
fn legacy(era: EraArg, found: Option<Found>) -> bool {
    match era {
        EraArg::Legacy => true,
        EraArg::Modern => false,
        EraArg::Auto => found == Some(Found::Legacy),
    }
}

async fn measure(args: &BenchArgs) -> Result<Report, Setup> {
    let max_error_rate =
        parse_rate(&args.max_errors).map_err(|e| Setup::Usage(anyhow::anyhow!(e)))?;
    let workload_for = |legacy: bool| workload(args, legacy).map(Arc::new).map_err(Setup::Usage);
    let (target, protocol, workload, concurrency, stats, clock) = if let Some(url) = &args.url {
        let extra = args
            .headers
            .iter()
            .map(|h| {
                let (k, v) = h.split_once(':').context("--header wants `Name: value`")?;
                Ok((k.trim().parse()?, v.trim().parse()?))
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .map_err(Setup::Usage)?;
        let target = Arc::new(http::Target::parse(url, &extra).map_err(Setup::Usage)?);
        // A server that is not there ends the run at once, before any load is timed.
        let unreachable =
            |e: anyhow::Error| Setup::Transport(anyhow::anyhow!("{e:#}; is the server running?"));
        let found = match args.era {
            EraArg::Auto => Some(target.probe().await.map_err(unreachable)?),
            EraArg::Modern | EraArg::Legacy => {
                target.connect().await.map_err(unreachable)?;
                None
            }
        };
        let legacy = legacy(args.era, found);
        let connections = args.connections.max(1);
        // Each connection's handshake, all done before the clock starts.
        let mut sessions = Vec::with_capacity(connections);
        let mut protocol = Protocol::modern();
        if legacy {
            let handshakes: Vec<_> = (0..connections)
                .map(|_| {
                    let target = target.clone();
                    tokio::spawn(async move {
                        let mut sender = target
                            .connect()
                            .await
                            .map_err(|e| Failure::Transport(format!("{e:#}")))?;
                        let (protocol, session) = target.handshake(&mut sender).await?;
                        Ok::<_, Failure>((protocol, session, sender))
                    })
                })
                .collect();
            let mut failed = None;
            for handshake in handshakes {
                match handshake.await {
                    Ok(Ok((p, session, sender))) => {
                        protocol = p;
                        sessions.push((session, Some(sender)));
                    }
                    Ok(Err(e)) => failed = failed.or(Some(Setup::from(e))),
                    Err(e) => {
                        let e = anyhow::Error::new(e).context("a handshake failed");
                        failed = failed.or(Some(Setup::Transport(e)));
                    }
                }
            }
            if let Some(failed) = failed {
                // The sessions already open would otherwise wait for the server's idle limit.
                for (session, sender) in sessions {
                    target.end(sender, &session).await;
                }
                return Err(failed);
            }
        } else {
            sessions.resize_with(connections, || (target.modern(), None));
        }
        let mut workload = workload(args, legacy).map_err(Setup::Usage)?;
        if workload.calls_tools() {
            let listed = target.tools(&sessions[0].0).await;
            // A tool the server does not have would fail every call of the run: refused now.
            if let Err(e) = tools::check(&workload, listed.as_ref()) {
                for (session, sender) in sessions {
                    target.end(sender, &session).await;
                }
                return Err(Setup::Protocol(anyhow::anyhow!(e)));
            }
            // Calls mirror their tools' `x-mcp-header` arguments as a client must; a server
            // whose list cannot be read gets the calls without them (and says so in its answers).
            match &listed {
                Ok(listed) if !legacy => workload.mirror(&listed.tools),
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "tools/list before the load"),
            }
        }
        let workload = Arc::new(workload);
        let clock = Arc::new(Clock::new(args.warmup, duration(args), args.requests));
        let bar = progress(
            clock.clone(),
            args.warmup + duration(args),
            args.requests.is_some() || args.json,
        );
        let workers: Vec<_> = sessions
            .into_iter()
            .map(|(session, sender)| {
                tokio::spawn(http::worker(
                    target.clone(),
                    workload.clone(),
                    clock.clone(),
                    session,
                    sender,
                ))
            })
            .collect();
        let mut total = Stats::new();
        for w in workers {
            total.merge(
                w.await
                    .context("a worker failed")
                    .map_err(Setup::Transport)?,
            );
        }
        bar.finish_and_clear();
        (url.clone(), protocol, workload, connections, total, clock)
    } else {
        let command = args.stdio.clone().unwrap_or_default();
        let mut server =
            stdio::Server::start(&command, args.server_stderr).map_err(Setup::Transport)?;
        let found = match args.era {
            EraArg::Auto => Some(server.probe().await.map_err(Setup::Transport)?),
            EraArg::Modern | EraArg::Legacy => None,
        };
        let protocol = if legacy(args.era, found) {
            Protocol {
                legacy: true,
                version: server.handshake().await?,
            }
        } else {
            Protocol::modern()
        };
        let workload = workload_for(protocol.legacy)?;
        if workload.calls_tools() {
            // A tool the server does not have would fail every call of the run: refused now.
            let listed = server.tools(protocol.legacy).await;
            if let Err(e) = &listed {
                tracing::debug!(error = %e, "tools/list before the load");
            }
            tools::check(&workload, listed.as_ref())
                .map_err(|e| Setup::Protocol(anyhow::anyhow!(e)))?;
        }
        let clock = Arc::new(Clock::new(args.warmup, duration(args), args.requests));
        let bar = progress(
            clock.clone(),
            args.warmup + duration(args),
            args.requests.is_some() || args.json,
        );
        let stats = server
            .load(
                args.in_flight,
                workload.clone(),
                clock.clone(),
                protocol.legacy,
            )
            .await
            .map_err(Setup::Transport)?;
        bar.finish_and_clear();
        (
            format!("stdio: {command}"),
            protocol,
            workload,
            args.in_flight.max(1),
            stats,
            clock,
        )
    };
    Ok(Report::new(
        target,
        (protocol.era(), protocol.version),
        workload.describe(),
        concurrency,
        &stats,
        clock.window(),
        max_error_rate,
        clock.aborted(),
    ))
}

/// `--max-errors`: a share of the measured requests, as a percentage (`0.5%`) or a fraction
/// (`0.005`).
fn parse_rate(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let (number, scale) = match text.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (text, 1.0),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("--max-errors wants a share such as 1% or 0.01, not {text:?}"))?;
    let rate = value / scale;
    if !(0.0..=1.0).contains(&rate) {
        return Err(format!(
            "--max-errors must be between 0% and 100%, not {text:?}"
        ));
    }
    Ok(rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_limit_stops_the_clock() {
        let clock = Clock::new(Duration::ZERO, Duration::from_secs(60), Some(3));
        let mut n = 0;
        while let Some(ticket) = clock.next() {
            assert!(ticket.measured);
            clock.done(true);
            n += 1;
            assert!(n < 10);
        }
        assert_eq!(n, 3);
    }

    #[test]
    fn a_request_limit_is_exact_when_requests_overlap() {
        // Sixteen connections each take a ticket before any answer comes back: only the limit
        // may be measured, however the answers interleave.
        let clock = Clock::new(Duration::ZERO, Duration::from_secs(60), Some(5));
        let tickets: Vec<_> = (0..16).map_while(|_| clock.next()).collect();
        assert_eq!(tickets.len(), 5);
        assert!(clock.next().is_none());
    }

    #[test]
    fn warmup_requests_are_not_measured_and_do_not_use_the_limit() {
        let clock = Clock::new(Duration::from_secs(60), Duration::from_secs(1), Some(1));
        for _ in 0..10 {
            let ticket = clock.next().expect("warm-up continues");
            assert!(!ticket.measured);
        }
    }

    #[test]
    fn the_deadline_ends_a_run_that_sends_nothing() {
        let clock = Clock::new(Duration::ZERO, Duration::from_millis(1), None);
        std::thread::sleep(Duration::from_millis(5));
        assert!(clock.expired());
        assert!(clock.stopped());
        assert!(clock.next().is_none());
    }

    /// `--arg` as `kelson call` takes it, `--args` with its JSON object as before, and both mixed.
    #[test]
    fn call_arguments_come_as_pairs_or_json_objects() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            bench: BenchArgs,
        }
        let parse = |argv: &[&str]| {
            let mut all = vec!["bench", "--url", "http://127.0.0.1:1/mcp", "--call", "t"];
            all.extend_from_slice(argv);
            let args = <Cli as clap::Parser>::try_parse_from(all).expect("the flags parse");
            let text = call_arguments(&args.bench.args).expect("the arguments are good");
            serde_json::from_str::<serde_json::Value>(&text).unwrap()
        };
        assert_eq!(parse(&[]), serde_json::json!({}));
        assert_eq!(
            parse(&["--arg", "text=hi", "-a", "n=3", "--arg", "flags=[1,2]"]),
            serde_json::json!({"text": "hi", "n": 3, "flags": [1, 2]})
        );
        assert_eq!(
            parse(&["--args", r#"{"text": "hi", "n": 1}"#]),
            serde_json::json!({"text": "hi", "n": 1})
        );
        assert_eq!(
            parse(&["--args", r#"{"text": "42", "n": 1}"#, "--arg", "n=2"]),
            serde_json::json!({"text": "42", "n": 2})
        );
        assert_eq!(
            parse(&["--arg", "sql=a = b"]),
            serde_json::json!({"sql": "a = b"})
        );
        for bad in ["text", "=x", "[1]", "{\"a\": "] {
            let e = call_arguments(&[bad.to_owned()]).unwrap_err().to_string();
            assert!(e.starts_with("--arg "), "{bad}: {e}");
        }
    }

    #[test]
    fn error_shares_parse() {
        assert_eq!(parse_rate("0"), Ok(0.0));
        assert_eq!(parse_rate("1%"), Ok(0.01));
        assert_eq!(parse_rate("0.25"), Ok(0.25));
        assert!(parse_rate("150%").is_err());
        assert!(parse_rate("lots").is_err());
    }
}
