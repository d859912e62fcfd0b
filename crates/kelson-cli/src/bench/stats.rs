//! Latency and outcome accounting, one `Stats` per worker, merged at the end (no shared locks while
//! the load runs).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use kelson_jsonrpc::{Id, Message};
use serde::{Deserialize, Serialize};

/// Outcomes of the measured requests of one worker.
pub(crate) struct Stats {
    /// Latency in microseconds.
    pub(crate) latency: Histogram<u64>,
    pub(crate) ok: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    /// The first answer (or transport error) seen for each error class, shortened.
    pub(crate) samples: BTreeMap<String, String>,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Stats {
            // 1 µs to 10 minutes with 3 significant digits.
            latency: Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds"),
            ok: 0,
            errors: BTreeMap::new(),
            samples: BTreeMap::new(),
        }
    }

    /// One answered request: `answer` is what came back, kept as the sample of its error class
    /// when it is the first of that class.
    pub(crate) fn record(&mut self, took: Duration, outcome: Result<(), String>, answer: &[u8]) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1);
        // Saturate rather than lose a sample beyond the histogram's range.
        self.latency.saturating_record(micros);
        match outcome {
            Ok(()) => self.ok += 1,
            Err(class) => self.count_error(class, || sample(answer)),
        }
    }

    /// A request that failed on the way (`took` is `None` for a failed connect, which is not a
    /// request), with what went wrong as its sample.
    pub(crate) fn error(
        &mut self,
        took: Option<Duration>,
        class: &str,
        what: &dyn std::fmt::Display,
    ) {
        if let Some(took) = took {
            let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX).max(1);
            self.latency.saturating_record(micros);
        }
        self.count_error(class.to_owned(), || what.to_string());
    }

    fn count_error(&mut self, class: String, sample: impl FnOnce() -> String) {
        if !self.samples.contains_key(&class) {
            self.samples.insert(class.clone(), sample());
        }
        *self.errors.entry(class).or_default() += 1;
    }

    pub(crate) fn merge(&mut self, other: Stats) {
        self.latency
            .add(&other.latency)
            .expect("same histogram bounds");
        self.ok += other.ok;
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        for (k, v) in other.samples {
            self.samples.entry(k).or_insert(v);
        }
    }

    /// Requests that got an answer (or failed mid-flight); failed connects are not requests.
    pub(crate) fn total(&self) -> u64 {
        self.latency.len()
    }
}

/// What came back, short enough for a report line: valid UTF-8, whitespace runs folded, at most
/// 300 characters.
fn sample(answer: &[u8]) -> String {
    const MAX: usize = 300;
    let text = String::from_utf8_lossy(answer);
    let mut out = String::with_capacity(text.len().min(MAX + 3));
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() > MAX {
            let mut cut = MAX;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push_str("...");
            break;
        }
    }
    if out.is_empty() {
        out.push_str("(an empty body)");
    }
    out
}

/// The exit status an error class stands for, as the client commands use them: 1 the tool said
/// `isError`, 2 the server answered with something other than a result (a JSON-RPC error, a
/// result this client cannot use), 3 the request did not get an answer (connect, I/O, HTTP
/// status, a broken stream, a timeout).
pub(crate) fn exit_code(class: &str) -> u8 {
    if class == "tool_is_error" {
        1
    } else if class.starts_with("http_")
        || matches!(
            class,
            "connect" | "transport" | "timeout" | "invalid_sse" | "no_response_in_stream"
        )
    {
        3
    } else {
        2
    }
}

/// A hint for an error class, from its name and the sample answer.
pub(crate) fn hint(class: &str, sample: &str) -> Option<&'static str> {
    let legacy = "this looks like a handshake-era (2025) server: measure it with --era legacy (or \
                  leave out --era modern)";
    let lower = sample.to_ascii_lowercase();
    if class == "missing_result_type"
        || (class.starts_with("http_4")
            && (lower.contains("not initialized") || lower.contains("session")))
    {
        return Some(legacy);
    }
    Some(match class {
        "connect" => "is the server running, and is the address right?",
        "timeout" => "the server did not answer within 30 s",
        "tool_is_error" => "the tool ran and reported an error (isError): check --args",
        "input_required" => {
            "the server asked for input (elicitation, roots or sampling), which kelson bench does not answer"
        }
        "jsonrpc_-32601" => "the server does not offer this method",
        "jsonrpc_-32602" => {
            "the server refused the parameters: is the tool or URI right, and --args?"
        }
        "jsonrpc_-32022" => "the server does not speak revision 2026-07-28",
        _ if class.starts_with("http_404") => {
            "nothing answers at this path: is the URL's path right (kelson serve uses /mcp)?"
        }
        _ if class.starts_with("http_401") => {
            "the server wants authorization: pass it with --header 'Authorization: ...'"
        }
        _ if class.starts_with("http_403") => {
            "refused: a Host/Origin check (kelson serve --allowed-host) or authorization"
        }
        _ => return None,
    })
}

#[derive(Deserialize)]
struct ResultProbe<'a> {
    #[serde(rename = "resultType", borrow, default)]
    result_type: Option<Cow<'a, str>>,
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
}

/// Checks one JSON-RPC message that should be the final response to request `id`: anything but a
/// complete, non-error result is an error, named by its class. A legacy session's results have no
/// `resultType` (the handshake era has none), which a modern result must have.
pub(crate) fn check_response(message: &[u8], id: u64, legacy: bool) -> Result<(), String> {
    let expected = Id::Int(i64::try_from(id).unwrap_or(i64::MAX));
    match kelson_jsonrpc::decode(message) {
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
                        None if legacy => Ok(()),
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
    /// `modern`, or `legacy` for a handshake-era session per connection.
    pub(crate) era: &'static str,
    /// The revision measured: 2026-07-28, or the one `initialize` settled on.
    pub(crate) protocol_version: String,
    pub(crate) workload: String,
    pub(crate) concurrency: usize,
    pub(crate) requests: u64,
    pub(crate) ok: u64,
    pub(crate) seconds: f64,
    pub(crate) throughput: f64,
    pub(crate) latency_us: Latency,
    pub(crate) errors: BTreeMap<String, u64>,
    /// The first answer seen for each error class.
    pub(crate) error_samples: BTreeMap<String, String>,
    /// Whether every measured request got the expected answer (or the errors stayed within
    /// `--max-errors`).
    pub(crate) passed: bool,
    /// Why the run did not pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) failure: Option<String>,
    /// The exit status of the run: 0 passed, else that of the most frequent error class.
    pub(crate) exit_code: u8,
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
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        target: String,
        era: (&'static str, String),
        workload: String,
        concurrency: usize,
        stats: &Stats,
        window: Duration,
        max_error_rate: f64,
        aborted: Option<String>,
    ) -> Self {
        let h = &stats.latency;
        let seconds = window.as_secs_f64().max(1e-9);
        let failed: u64 = stats.errors.values().sum();
        // The class seen most often decides the exit status; ties go to the first by name.
        let worst = stats
            .errors
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(class, _)| class.as_str());
        let requests = stats.total();
        let rate = if requests == 0 {
            0.0
        } else {
            failed as f64 / requests as f64
        };
        let failure = if let Some(reason) = aborted {
            Some(reason)
        } else if requests == 0 {
            Some("no request completed in the measured window".to_owned())
        } else if failed > 0 && rate > max_error_rate {
            let class = worst.unwrap_or("error");
            // Printed on the terminal after `error:`: the server's answer, cleaned. The samples
            // themselves stay as received for --json.
            let sample = stats.samples.get(class).map_or("", String::as_str);
            Some(format!(
                "{failed} of {requests} requests failed ({:.1}%; most often {class}: {})",
                rate * 100.0,
                crate::client::clean_line(sample)
            ))
        } else {
            None
        };
        let exit_code = match (&failure, worst) {
            (None, _) => 0,
            (Some(_), Some(class)) => exit_code(class),
            (Some(_), None) => 3,
        };
        Report {
            target,
            era: era.0,
            protocol_version: era.1,
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
            error_samples: stats.samples.clone(),
            passed: failure.is_none(),
            failure,
            exit_code,
        }
    }

    pub(crate) fn print_human(&self) {
        let ms = |us: u64| us as f64 / 1000.0;
        // The revision is the one a legacy server's initialize result named.
        let version = crate::client::clean_line(&self.protocol_version);
        println!("target      {}", self.target);
        if self.era == "legacy" {
            println!("protocol    {version} (legacy: initialize once per connection)");
        } else {
            println!("protocol    {version} (modern)");
        }
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
                if let Some(sample) = self.error_samples.get(class) {
                    println!("    answer: {}", crate::client::clean_line(sample));
                    if let Some(hint) = hint(class, sample) {
                        println!("    hint:   {hint}");
                    }
                }
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
        assert_eq!(check_response(ok, 7, false), Ok(()));
        assert_eq!(check_response(ok, 8, false), Err("wrong_id".into()));
        let tool = br#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","isError":true,"content":[]}}"#;
        assert_eq!(check_response(tool, 7, false), Err("tool_is_error".into()));
        let err = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"x"}}"#;
        assert_eq!(check_response(err, 7, false), Err("jsonrpc_-32602".into()));
        let legacy = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        assert_eq!(
            check_response(legacy, 7, false),
            Err("missing_result_type".into())
        );
        assert_eq!(
            check_response(b"nope", 7, false),
            Err("invalid_json".into())
        );
    }

    #[test]
    fn legacy_results_count_as_success_and_their_errors_as_errors() {
        let ok = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        assert_eq!(check_response(ok, 7, true), Ok(()));
        assert_eq!(check_response(ok, 6, true), Err("wrong_id".into()));
        let tool = br#"{"jsonrpc":"2.0","id":7,"result":{"isError":true,"content":[]}}"#;
        assert_eq!(check_response(tool, 7, true), Err("tool_is_error".into()));
        let err = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"x"}}"#;
        assert_eq!(check_response(err, 7, true), Err("jsonrpc_-32601".into()));
        let request = br#"{"jsonrpc":"2.0","id":7,"method":"roots/list"}"#;
        assert_eq!(
            check_response(request, 7, true),
            Err("not_a_response".into())
        );
    }

    #[test]
    fn stats_merge() {
        let mut a = Stats::new();
        a.record(Duration::from_micros(100), Ok(()), b"{}");
        let mut b = Stats::new();
        b.record(
            Duration::from_micros(300),
            Err("x".into()),
            b"first  \n answer",
        );
        b.record(
            Duration::from_micros(200),
            Err("x".into()),
            b"second answer",
        );
        b.error(None, "connect", &"refused");
        a.merge(b);
        assert_eq!(a.total(), 3);
        assert_eq!(a.errors["connect"], 1);
        assert_eq!(a.errors["x"], 2);
        assert_eq!(a.samples["x"], "first answer");
        assert_eq!(a.samples["connect"], "refused");
        assert_eq!(a.latency.max(), 300);
    }

    #[test]
    fn samples_are_short() {
        let long = "é".repeat(400);
        let s = sample(long.as_bytes());
        assert!(s.len() <= 303 && s.ends_with("..."), "{s}");
        assert_eq!(sample(b""), "(an empty body)");
    }

    fn report(stats: &Stats, max: f64) -> Report {
        Report::new(
            "t".into(),
            ("modern", "2026-07-28".into()),
            "w".into(),
            1,
            stats,
            Duration::from_secs(1),
            max,
            None,
        )
    }

    #[test]
    fn a_run_passes_only_when_the_answers_are_the_expected_ones() {
        let mut stats = Stats::new();
        for _ in 0..99 {
            stats.record(Duration::from_micros(10), Ok(()), b"");
        }
        let all_good = report(&stats, 0.0);
        assert!(all_good.passed);
        assert_eq!(all_good.exit_code, 0);

        stats.record(
            Duration::from_micros(10),
            Err("jsonrpc_-32602".into()),
            b"bad",
        );
        let one_bad = report(&stats, 0.0);
        assert!(!one_bad.passed);
        assert_eq!(one_bad.exit_code, 2);
        assert!(one_bad.failure.as_deref().unwrap().contains("1 of 100"));
        // Within a tolerated share, the run passes.
        assert!(report(&stats, 0.01).passed);
        assert!(!report(&stats, 0.009).passed);
    }

    #[test]
    fn a_hostile_answer_is_inert_in_the_failure_line_and_kept_for_json() {
        let mut stats = Stats::new();
        stats.record(
            Duration::from_micros(10),
            Err("jsonrpc_-32603".into()),
            "boom\x1b[2J\x1b]52;c;eA==\x07\u{202e}".as_bytes(),
        );
        let r = report(&stats, 0.0);
        let failure = r.failure.as_deref().unwrap();
        assert!(
            failure.ends_with("most often jsonrpc_-32603: boom␛[2J␛]52;c;eA==␇<U+202E>)"),
            "{failure}"
        );
        // --json reports the answer as it came (JSON escapes the controls).
        assert_eq!(
            r.error_samples["jsonrpc_-32603"],
            "boom\x1b[2J\x1b]52;c;eA==\x07\u{202e}"
        );
    }

    #[test]
    fn the_most_frequent_class_decides_the_exit_status() {
        let mut stats = Stats::new();
        stats.record(Duration::from_micros(10), Err("tool_is_error".into()), b"");
        for _ in 0..3 {
            stats.record(
                Duration::from_micros(10),
                Err("http_404".into()),
                b"Not Found",
            );
        }
        let r = report(&stats, 0.0);
        assert_eq!(r.exit_code, 3);
        assert_eq!(r.error_samples["http_404"], "Not Found");
        assert!(hint("http_404", "").unwrap().contains("/mcp"));
        assert_eq!(exit_code("tool_is_error"), 1);
        assert_eq!(exit_code("missing_result_type"), 2);
        assert!(
            hint("http_400", "Bad Request: Server not initialized")
                .unwrap()
                .contains("2025")
        );
        let empty = report(&Stats::new(), 0.0);
        assert!(!empty.passed);
        assert_eq!(empty.exit_code, 3);
    }
}
