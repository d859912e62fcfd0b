//! `kelson bench --soak`: a long, mixed load on an HTTP server that checks that the server's
//! resources stay flat. Workers send the workload on keep-alive connections; beside them, a
//! listener opens `subscriptions/listen` streams and drops them after a moment, and a vandal sends
//! calls and hangs up before the answer. Every few seconds a sampler reads the server's resident
//! memory and open file descriptors (from /proc, with `--pid`) and its live tasks (from its
//! metrics, with `--metrics`, the `mcp_runtime_tasks_alive` series). After the warm-up, the last
//! samples must be no higher than the first ones plus a small allowance: a leak of memory,
//! descriptors or tasks fails the run.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kelson_types::method_names;
use serde::Serialize;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::workload::Workload;

/// What the soak needs besides the workload.
pub(crate) struct Plan {
    pub(crate) url: String,
    pub(crate) connections: usize,
    pub(crate) warmup: Duration,
    pub(crate) duration: Duration,
    pub(crate) every: Duration,
    pub(crate) pid: Option<u32>,
    pub(crate) metrics: Option<String>,
    pub(crate) samples: Option<PathBuf>,
    pub(crate) headers: Vec<(http::HeaderName, http::HeaderValue)>,
}

/// One reading of the server's resources.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Sample {
    /// Seconds since the start.
    pub(crate) at: f64,
    pub(crate) rss_kib: Option<u64>,
    pub(crate) fds: Option<u64>,
    pub(crate) tasks: Option<u64>,
    /// Requests answered so far, and failed.
    pub(crate) answered: u64,
    pub(crate) failed: u64,
}

/// The soak's verdict on one resource.
#[derive(Debug, Serialize)]
pub(crate) struct Check {
    pub(crate) resource: &'static str,
    pub(crate) after_warmup: f64,
    pub(crate) at_end: f64,
    pub(crate) allowed: f64,
    pub(crate) flat: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct Outcome {
    pub(crate) url: String,
    pub(crate) seconds: f64,
    pub(crate) answered: u64,
    pub(crate) failed: u64,
    pub(crate) listen_streams: u64,
    pub(crate) abandoned_calls: u64,
    pub(crate) checks: Vec<Check>,
    pub(crate) samples: Vec<Sample>,
    pub(crate) passed: bool,
}

#[derive(Default)]
struct Counters {
    answered: AtomicU64,
    failed: AtomicU64,
    listens: AtomicU64,
    abandoned: AtomicU64,
}

/// The resident memory (KiB) and open descriptors of process `pid`.
fn proc_stats(pid: u32) -> (Option<u64>, Option<u64>) {
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        });
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()
        .map(|d| d.count() as u64);
    (rss, fds)
}

/// `mcp_runtime_tasks_alive` from the server's metrics.
async fn tasks(http: &reqwest::Client, metrics: &str) -> Option<u64> {
    let text = http.get(metrics).send().await.ok()?.text().await.ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("mcp_runtime_tasks_alive "))
        .and_then(|v| v.trim().parse().ok())
}

/// The request line and headers of a POST to `url`'s path, for the raw-socket clients.
fn raw_post(url: &reqwest::Url, method: &str, body: &[u8]) -> Vec<u8> {
    let host = url.host_str().unwrap_or("127.0.0.1");
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let mut out = format!(
        "POST {} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {}\r\n\
         Mcp-Method: {method}\r\nContent-Length: {}\r\n\r\n",
        url.path(),
        kelson_types::LATEST_PROTOCOL_VERSION,
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

pub(crate) async fn run(plan: Plan, workload: Arc<Workload>) -> anyhow::Result<Outcome> {
    let url = reqwest::Url::parse(&plan.url).context("--url")?;
    let addr = format!(
        "{}:{}",
        url.host_str().unwrap_or("127.0.0.1"),
        url.port_or_known_default().unwrap_or(80)
    );
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(plan.connections)
        .timeout(Duration::from_secs(30))
        .build()?;
    let started = Instant::now();
    let end = started + plan.warmup + plan.duration;
    let counters = Arc::new(Counters::default());
    let mut tasks_spawned = Vec::new();

    // The workload, on keep-alive connections.
    for w in 0..plan.connections.max(1) {
        let (http, url, workload, counters, headers) = (
            http.clone(),
            plan.url.clone(),
            workload.clone(),
            counters.clone(),
            plan.headers.clone(),
        );
        tasks_spawned.push(tokio::spawn(async move {
            let mut n = w as u64;
            while Instant::now() < end {
                let template = workload.pick(n);
                let mut request = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header(
                        "mcp-protocol-version",
                        kelson_types::LATEST_PROTOCOL_VERSION,
                    )
                    .header("mcp-method", template.method)
                    .body(template.body(n));
                if let Some(name) = &template.name_header {
                    request = request.header("mcp-name", name.clone());
                }
                for (k, v) in &headers {
                    request = request.header(k.clone(), v.clone());
                }
                let ok = match request.send().await {
                    Ok(response) if response.status().is_success() => response
                        .bytes()
                        .await
                        .is_ok_and(|b| !String::from_utf8_lossy(&b).contains("\"error\":{")),
                    _ => false,
                };
                let counter = if ok {
                    &counters.answered
                } else {
                    &counters.failed
                };
                counter.fetch_add(1, Ordering::Relaxed);
                n += plan_stride(plan.connections);
            }
        }));
    }

    // Listen streams that come and go.
    {
        let (url, addr, counters) = (url.clone(), addr.clone(), counters.clone());
        tasks_spawned.push(tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": method_names::SUBSCRIPTIONS_LISTEN,
                "params": {"notifications": {"toolsListChanged": true, "resourcesListChanged": true},
                           "_meta": {"io.modelcontextprotocol/protocolVersion": kelson_types::LATEST_PROTOCOL_VERSION,
                                     "io.modelcontextprotocol/clientCapabilities": {}}}})
            .to_string();
            let request = raw_post(&url, method_names::SUBSCRIPTIONS_LISTEN, body.as_bytes());
            let mut round = 0u64;
            while Instant::now() < end {
                round += 1;
                if let Ok(mut tcp) = tokio::net::TcpStream::connect(&addr).await
                    && tcp.write_all(&request).await.is_ok()
                {
                    let mut buf = [0u8; 2048];
                    let _ = tokio::time::timeout(Duration::from_secs(2), tcp.read(&mut buf)).await;
                    // Held for a moment, then dropped as a client that leaves does.
                    tokio::time::sleep(Duration::from_millis(50 + (round * 37) % 250)).await;
                    counters.listens.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }

    // Calls abandoned before their answer.
    {
        let (url, addr, counters, workload) = (
            url.clone(),
            addr.clone(),
            counters.clone(),
            workload.clone(),
        );
        tasks_spawned.push(tokio::spawn(async move {
            let mut n = 1u64 << 40;
            while Instant::now() < end {
                n += 1;
                let template = workload.pick(n);
                let request = raw_post(&url, template.method, &template.body(n));
                if let Ok(mut tcp) = tokio::net::TcpStream::connect(&addr).await
                    && tcp.write_all(&request).await.is_ok()
                {
                    counters.abandoned.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }

    // The sampler.
    let mut samples = Vec::new();
    let mut csv = match &plan.samples {
        Some(path) => {
            let mut file = std::fs::File::create(path)
                .with_context(|| format!("--samples {}", path.display()))?;
            writeln!(file, "seconds,rss_kib,fds,tasks,answered,failed")?;
            Some(file)
        }
        None => None,
    };
    loop {
        let now = Instant::now();
        let (rss_kib, fds) = plan.pid.map(proc_stats).unwrap_or((None, None));
        let tasks = match &plan.metrics {
            Some(m) => tasks(&http, m).await,
            None => None,
        };
        let sample = Sample {
            at: now.duration_since(started).as_secs_f64(),
            rss_kib,
            fds,
            tasks,
            answered: counters.answered.load(Ordering::Relaxed),
            failed: counters.failed.load(Ordering::Relaxed),
        };
        if let Some(file) = csv.as_mut() {
            let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
            writeln!(
                file,
                "{:.1},{},{},{},{},{}",
                sample.at,
                opt(sample.rss_kib),
                opt(sample.fds),
                opt(sample.tasks),
                sample.answered,
                sample.failed
            )?;
        }
        samples.push(sample);
        if now >= end {
            break;
        }
        tokio::time::sleep(plan.every.min(end.saturating_duration_since(now))).await;
    }
    for task in tasks_spawned {
        let _ = task.await;
    }

    let warm = plan.warmup.as_secs_f64();
    let checks = verdict(&samples, warm);
    let answered = counters.answered.load(Ordering::Relaxed);
    let failed = counters.failed.load(Ordering::Relaxed);
    let passed = checks.iter().all(|c| c.flat) && answered > 0;
    Ok(Outcome {
        url: plan.url,
        seconds: started.elapsed().as_secs_f64(),
        answered,
        failed,
        listen_streams: counters.listens.load(Ordering::Relaxed),
        abandoned_calls: counters.abandoned.load(Ordering::Relaxed),
        checks,
        samples,
        passed,
    })
}

/// Workers number their requests `w, w + stride, ...` so that ids never repeat.
fn plan_stride(connections: usize) -> u64 {
    connections.max(1) as u64
}

/// Flatness after warm-up: the mean of the last fifth of the samples against the mean of the
/// first fifth after the warm-up, with an allowance per resource (memory: 10% and 8 MiB, for
/// allocator caches that settle slowly; descriptors: 16, for connections of the moment; tasks:
/// 64, for requests in flight at the moment of a sample).
pub(crate) fn verdict(samples: &[Sample], warmup_seconds: f64) -> Vec<Check> {
    let after: Vec<&Sample> = samples.iter().filter(|s| s.at >= warmup_seconds).collect();
    let fifth = (after.len() / 5).max(1);
    let mut checks = Vec::new();
    let mut check = |resource: &'static str,
                     get: &dyn Fn(&Sample) -> Option<u64>,
                     allow: &dyn Fn(f64) -> f64| {
        let mean = |part: &[&Sample]| {
            let values: Vec<f64> = part
                .iter()
                .filter_map(|s| get(s))
                .map(|v| v as f64)
                .collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        if after.len() < 2 {
            return;
        }
        let (Some(first), Some(last)) =
            (mean(&after[..fifth]), mean(&after[after.len() - fifth..]))
        else {
            return;
        };
        let allowed = allow(first);
        checks.push(Check {
            resource,
            after_warmup: first,
            at_end: last,
            allowed,
            flat: last <= allowed,
        });
    };
    check("rss_kib", &|s| s.rss_kib, &|first| {
        (first * 1.10).max(first + 8.0 * 1024.0)
    });
    check("fds", &|s| s.fds, &|first| first + 16.0);
    check("tasks", &|s| s.tasks, &|first| first + 64.0);
    checks
}

impl Outcome {
    pub(crate) fn print_human(&self) {
        println!("soak       {} for {:.0} s", self.url, self.seconds);
        println!(
            "load       {} answered, {} failed; {} listen streams opened and dropped; {} calls abandoned",
            self.answered, self.failed, self.listen_streams, self.abandoned_calls
        );
        for c in &self.checks {
            println!(
                "{:<10} {:.0} after warm-up, {:.0} at the end (allowed {:.0}): {}",
                c.resource,
                c.after_warmup,
                c.at_end,
                c.allowed,
                if c.flat { "flat" } else { "GREW" }
            );
        }
        if self.checks.is_empty() {
            println!(
                "resources  not sampled: give --pid (memory, descriptors) and --metrics (tasks)"
            );
        }
        println!("{}", if self.passed { "PASSED" } else { "FAILED" });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(rss: &[u64]) -> Vec<Sample> {
        rss.iter()
            .enumerate()
            .map(|(i, &r)| Sample {
                at: i as f64,
                rss_kib: Some(r),
                fds: Some(20),
                tasks: Some(30),
                answered: i as u64,
                failed: 0,
            })
            .collect()
    }

    #[test]
    fn flat_resources_pass_and_a_steady_climb_fails() {
        // Warm-up growth (the first two samples) does not count.
        let flat = series(&[
            10_000, 40_000, 50_000, 50_500, 49_800, 50_200, 50_100, 50_000, 50_300, 50_100, 50_200,
            50_000,
        ]);
        assert!(verdict(&flat, 2.0).iter().all(|c| c.flat));
        let leak: Vec<u64> = (0..12).map(|i| 50_000 + i * 3_000).collect();
        let checks = verdict(&series(&leak), 2.0);
        let rss = checks.iter().find(|c| c.resource == "rss_kib").unwrap();
        assert!(!rss.flat, "{rss:?}");
        assert!(
            checks
                .iter()
                .filter(|c| c.resource != "rss_kib")
                .all(|c| c.flat)
        );
    }
}
