//! `mcp bench`: a protocol-aware load generator.
//!
//! It speaks MCP properly (standard headers, `_meta`, JSON or SSE answers) and counts anything but a
//! complete, non-error result as an error, by class. Latencies go into an HDR histogram per worker,
//! merged at the end; workers share only two atomic counters.

mod http;
mod stats;
mod stdio;
mod workload;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

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
    /// How long to measure, after the warm-up (e.g. 10s, 500ms, 1m).
    #[arg(long, short = 'd', default_value = "10s", value_parser = crate::flags::duration)]
    duration: Duration,
    /// Stop after this many measured requests instead of after --duration.
    #[arg(long, short = 'n')]
    requests: Option<u64>,
    /// Load sent before measuring starts.
    #[arg(long, default_value = "1s", value_parser = crate::flags::duration)]
    warmup: Duration,
    /// Workload: call this tool.
    #[arg(long, value_name = "TOOL")]
    call: Option<String>,
    /// Arguments for --call, as a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    args: String,
    /// Workload: tools/list.
    #[arg(long)]
    list_tools: bool,
    /// Workload: resources/read of this URI.
    #[arg(long, value_name = "URI")]
    read: Option<String>,
    /// Workload: a weighted mix such as `call=8,list=1,read=1` (uses --call/--args and --read).
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
}

/// The run's schedule, shared by every worker.
pub(crate) struct Clock {
    issued: AtomicU64,
    measured_done: AtomicU64,
    warmup_end: Instant,
    deadline: Option<Instant>,
    limit: Option<u64>,
    stop: AtomicBool,
    last_done: std::sync::Mutex<Instant>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Phase {
    Warmup,
    Measure,
}

impl Clock {
    fn new(warmup: Duration, duration: Duration, limit: Option<u64>) -> Self {
        let start = Instant::now();
        let warmup_end = start + warmup;
        Clock {
            issued: AtomicU64::new(0),
            measured_done: AtomicU64::new(0),
            warmup_end,
            deadline: limit.is_none().then(|| warmup_end + duration),
            limit,
            stop: AtomicBool::new(false),
            last_done: std::sync::Mutex::new(warmup_end),
        }
    }

    pub(crate) fn phase(&self, at: Instant) -> Phase {
        if at < self.warmup_end {
            Phase::Warmup
        } else {
            Phase::Measure
        }
    }

    /// The number of the next request, or `None` when the run is over.
    pub(crate) fn next(&self) -> Option<u64> {
        if self.stopped() {
            return None;
        }
        let now = Instant::now();
        if self.deadline.is_some_and(|d| now >= d) {
            self.stop.store(true, Ordering::Relaxed);
            return None;
        }
        if let Some(limit) = self.limit
            && now >= self.warmup_end
            && self.measured_done.load(Ordering::Relaxed) >= limit
        {
            self.stop.store(true, Ordering::Relaxed);
            return None;
        }
        Some(self.issued.fetch_add(1, Ordering::Relaxed))
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

    fn window(&self) -> Duration {
        // Requests that started before the deadline are counted when they finish, so the window
        // runs until the last of them.
        let last = *self.last_done.lock().expect("clock lock");
        let end = self.deadline.map_or(last, |d| d.max(last));
        end.saturating_duration_since(self.warmup_end)
    }
}

fn workload(args: &BenchArgs) -> anyhow::Result<workload::Workload> {
    if let Some(spec) = &args.mix {
        return workload::mix(spec, args.call.as_deref(), &args.args, args.read.as_deref());
    }
    let chosen = [args.call.is_some(), args.list_tools, args.read.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    if chosen != 1 {
        bail!("choose one workload: --call TOOL, --list-tools, --read URI, or --mix SPEC");
    }
    let template = if let Some(name) = &args.call {
        workload::call(name, &args.args)?
    } else if args.list_tools {
        workload::list_tools()?
    } else {
        workload::read(args.read.as_deref().unwrap_or_default())?
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

pub(crate) async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let workload = Arc::new(workload(&args)?);
    let clock = Arc::new(Clock::new(args.warmup, args.duration, args.requests));
    let bar = progress(
        clock.clone(),
        args.warmup + args.duration,
        args.requests.is_some(),
    );

    let (target, concurrency, stats) = if let Some(url) = &args.url {
        let extra = args
            .headers
            .iter()
            .map(|h| {
                let (k, v) = h.split_once(':').context("--header wants `Name: value`")?;
                Ok((k.trim().parse()?, v.trim().parse()?))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let target = Arc::new(http::Target::parse(url, &extra)?);
        let workers: Vec<_> = (0..args.connections.max(1))
            .map(|_| {
                tokio::spawn(http::worker(
                    target.clone(),
                    workload.clone(),
                    clock.clone(),
                ))
            })
            .collect();
        let mut total = Stats::new();
        for w in workers {
            total.merge(w.await.context("a worker failed")?);
        }
        (url.clone(), args.connections.max(1), total)
    } else {
        let command = args.stdio.clone().unwrap_or_default();
        let stats = stdio::run(
            &command,
            args.in_flight,
            workload.clone(),
            clock.clone(),
            args.server_stderr,
        )
        .await?;
        (format!("stdio: {command}"), args.in_flight.max(1), stats)
    };
    bar.finish_and_clear();
    let report = Report::new(
        target,
        workload.describe(),
        concurrency,
        &stats,
        clock.window(),
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        report.print_human();
    }
    if report.requests == 0 {
        bail!("no request completed in the measured window");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_limit_stops_the_clock() {
        let clock = Clock::new(Duration::ZERO, Duration::from_secs(60), Some(3));
        let mut n = 0;
        while clock.next().is_some() {
            clock.done(true);
            n += 1;
            assert!(n < 10);
        }
        assert_eq!(n, 3);
    }
}
