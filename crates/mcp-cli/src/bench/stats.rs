//! Latency and outcome accounting, one `Stats` per worker, merged at the end (no shared locks while
//! the load runs).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use mcp_jsonrpc::{Id, Message};
use serde::{Deserialize, Serialize};

/// Outcomes of the measured requests of one worker.
pub(crate) struct Stats {
    /// Latency in microseconds.
    pub(crate) latency: Histogram<u64>,
    pub(crate) ok: u64,
    pub(crate) errors: BTreeMap<String, u64>,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Stats {
            // 1 µs to 10 minutes with 3 significant digits.
            latency: Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds"),
            ok: 0,
            errors: BTreeMap::new(),
        }
    }

    pub(crate) fn record(&mut self, took: Duration, outcome: Result<(), String>) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1);
        // Saturate rather than lose a sample beyond the histogram's range.
        self.latency.saturating_record(micros);
        match outcome {
            Ok(()) => self.ok += 1,
            Err(class) => *self.errors.entry(class).or_default() += 1,
        }
    }

    /// An error with no latency (a failed connect).
    pub(crate) fn error(&mut self, class: &str) {
        *self.errors.entry(class.to_owned()).or_default() += 1;
    }

    pub(crate) fn merge(&mut self, other: Stats) {
        self.latency
            .add(&other.latency)
            .expect("same histogram bounds");
        self.ok += other.ok;
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
    }

    /// Requests that got an answer (or failed mid-flight); failed connects are not requests.
    pub(crate) fn total(&self) -> u64 {
        self.latency.len()
    }
}

#[derive(Deserialize)]
struct ResultProbe<'a> {
    #[serde(rename = "resultType", borrow, default)]
    result_type: Option<Cow<'a, str>>,
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
}

/// Checks one JSON-RPC message that should be the final response to request `id`: anything but a
/// complete, non-error result is an error, named by its class.
pub(crate) fn check_response(message: &[u8], id: u64) -> Result<(), String> {
    let expected = Id::Int(i64::try_from(id).unwrap_or(i64::MAX));
    match mcp_jsonrpc::decode(message) {
        Ok(Message::Response(r)) => {
            if r.id.as_ref() != Some(&expected) {
                return Err("wrong_id".to_owned());
            }
            match r.outcome {
                Err(e) => Err(format!("jsonrpc_{}", e.code)),
                Ok(raw) => match serde_json::from_str::<ResultProbe<'_>>(raw.get()) {
                    Ok(p) if p.is_error == Some(true) => Err("tool_is_error".to_owned()),
                    Ok(p) => match p.result_type.as_deref() {
                        Some("complete") => Ok(()),
                        Some("input_required") => Err("input_required".to_owned()),
                        Some(_) => Err("unknown_result_type".to_owned()),
                        None => Err("missing_result_type".to_owned()),
                    },
                    Err(_) => Err("invalid_result".to_owned()),
                },
            }
        }
        Ok(_) => Err("not_a_response".to_owned()),
        Err(_) => Err("invalid_json".to_owned()),
    }
}

/// The machine-readable report (`--json`).
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) target: String,
    pub(crate) workload: String,
    pub(crate) concurrency: usize,
    pub(crate) requests: u64,
    pub(crate) ok: u64,
    pub(crate) seconds: f64,
    pub(crate) throughput: f64,
    pub(crate) latency_us: Latency,
    pub(crate) errors: BTreeMap<String, u64>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Latency {
    pub(crate) p50: u64,
    pub(crate) p90: u64,
    pub(crate) p99: u64,
    pub(crate) p999: u64,
    pub(crate) max: u64,
    pub(crate) mean: f64,
}

impl Report {
    pub(crate) fn new(
        target: String,
        workload: String,
        concurrency: usize,
        stats: &Stats,
        window: Duration,
    ) -> Self {
        let h = &stats.latency;
        let seconds = window.as_secs_f64().max(1e-9);
        Report {
            target,
            workload,
            concurrency,
            requests: stats.total(),
            ok: stats.ok,
            seconds,
            throughput: stats.total() as f64 / seconds,
            latency_us: Latency {
                p50: h.value_at_quantile(0.50),
                p90: h.value_at_quantile(0.90),
                p99: h.value_at_quantile(0.99),
                p999: h.value_at_quantile(0.999),
                max: h.max(),
                mean: h.mean(),
            },
            errors: stats.errors.clone(),
        }
    }

    pub(crate) fn print_human(&self) {
        let ms = |us: u64| us as f64 / 1000.0;
        println!("target      {}", self.target);
        println!("workload    {}", self.workload);
        println!("concurrency {}", self.concurrency);
        println!(
            "requests    {} in {:.2}s ({} ok, {} errors)",
            self.requests,
            self.seconds,
            self.ok,
            self.errors.values().sum::<u64>()
        );
        println!("throughput  {:.0} req/s", self.throughput);
        let l = &self.latency_us;
        println!(
            "latency     p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  p99.9 {:.3} ms  max {:.3} ms",
            ms(l.p50),
            ms(l.p90),
            ms(l.p99),
            ms(l.p999),
            ms(l.max)
        );
        if !self.errors.is_empty() {
            println!("errors:");
            for (class, count) in &self.errors {
                println!("  {class:<24} {count}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_classified() {
        let ok = br#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[]}}"#;
        assert_eq!(check_response(ok, 7), Ok(()));
        assert_eq!(check_response(ok, 8), Err("wrong_id".into()));
        let tool = br#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","isError":true,"content":[]}}"#;
        assert_eq!(check_response(tool, 7), Err("tool_is_error".into()));
        let err = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"x"}}"#;
        assert_eq!(check_response(err, 7), Err("jsonrpc_-32602".into()));
        let legacy = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        assert_eq!(check_response(legacy, 7), Err("missing_result_type".into()));
        assert_eq!(check_response(b"nope", 7), Err("invalid_json".into()));
    }

    #[test]
    fn stats_merge() {
        let mut a = Stats::new();
        a.record(Duration::from_micros(100), Ok(()));
        let mut b = Stats::new();
        b.record(Duration::from_micros(300), Err("x".into()));
        b.error("connect");
        a.merge(b);
        assert_eq!(a.total(), 2);
        assert_eq!(a.errors["connect"], 1);
        assert_eq!(a.latency.max(), 300);
    }
}
