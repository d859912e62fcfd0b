//! The audit log: one JSON object per line for every call that reached the gateway, allowed or not.
//!
//! A line says who called (the principal's issuer and subject, never a token), which upstream and
//! tool, how big the arguments were and their SHA-256 (so that a call can be matched with what a
//! host recorded without the log holding the data), the policy's decision, the outcome and how
//! long it took. The arguments themselves are recorded only when configured. Lines are written
//! by one thread in order, several at a time under load, so a slow disk delays the log, never a
//! call.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

/// What the policy decided about a call.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Allowed without asking.
    Allowed,
    /// Allowed after the person approved it.
    Approved,
    /// The person declined or cancelled the approval.
    Declined,
    /// Over the rate limit.
    RateLimited,
    /// Arguments over the size limit.
    TooLarge,
    /// The upstream's definition changed and is not accepted yet.
    PinRefused,
}

/// How a call ended.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The upstream answered with a result.
    Ok,
    /// The upstream answered with a result that is a tool error (`isError`).
    ToolError,
    /// The upstream answered with a JSON-RPC error.
    Error,
    /// The upstream could not be reached or failed.
    Unavailable,
    /// The upstream did not answer in time.
    Timeout,
    /// The caller cancelled.
    Cancelled,
    /// The gateway did not forward the call (see the decision).
    Refused,
    /// The call waits for the person's input.
    InputRequired,
}

/// One line.
#[derive(Debug, Serialize)]
pub struct Record {
    /// Milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// The principal's id (`issuer#subject`), empty for an anonymous caller.
    pub principal: String,
    /// The upstream's name.
    pub upstream: String,
    /// The tool's name as exposed.
    pub tool: String,
    /// Bytes of the arguments' JSON.
    pub argument_bytes: usize,
    /// SHA-256 of the arguments' JSON, in hex.
    pub argument_sha256: String,
    /// The arguments, when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The policy's decision.
    pub decision: Decision,
    /// How the call ended.
    pub outcome: Outcome,
    /// What went wrong, when something did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// From arrival to answer, in milliseconds.
    pub duration_ms: f64,
}

/// Where records go.
#[derive(Clone, Debug)]
pub struct AuditLog {
    sink: Option<mpsc::UnboundedSender<Record>>,
    arguments: bool,
}

/// Where the lines are written.
#[derive(Clone, Debug)]
pub enum AuditTarget {
    /// Appended to this file.
    File(PathBuf),
    /// Written to stderr.
    Stderr,
}

impl AuditLog {
    /// A log that records nothing.
    pub fn off() -> AuditLog {
        AuditLog {
            sink: None,
            arguments: false,
        }
    }

    /// A log written to `target` by a task of its own; `arguments` records the arguments too.
    /// The file is opened now, so that a path that cannot be written stops the start.
    pub fn start(target: AuditTarget, arguments: bool) -> std::io::Result<AuditLog> {
        let mut out: Box<dyn Write + Send> = match &target {
            AuditTarget::File(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)?;
                }
                Box::new(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)?,
                )
            }
            AuditTarget::Stderr => Box::new(std::io::stderr()),
        };
        let (tx, mut rx) = mpsc::unbounded_channel::<Record>();
        std::thread::Builder::new()
            .name("kelson-audit".into())
            .spawn(move || {
                // Under load records arrive faster than one write each: every record waiting is
                // written into one buffer and the buffer goes out in one write, so the log costs
                // a write per burst rather than per call, and is complete on disk after each.
                let mut buffer = Vec::with_capacity(8 * 1024);
                while let Some(record) = rx.blocking_recv() {
                    buffer.clear();
                    let mut next = Some(record);
                    while let Some(record) = next {
                        serde_json::to_writer(&mut buffer, &record).expect("records serialize");
                        buffer.push(b'\n');
                        next = if buffer.len() < 1 << 20 {
                            rx.try_recv().ok()
                        } else {
                            None
                        };
                    }
                    if let Err(e) = out.write_all(&buffer).and_then(|()| out.flush()) {
                        tracing::error!("the audit log cannot be written: {e}");
                    }
                }
            })?;
        Ok(AuditLog {
            sink: Some(tx),
            arguments,
        })
    }

    /// Whether records are kept at all.
    pub fn enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// Whether arguments are recorded.
    pub fn records_arguments(&self) -> bool {
        self.arguments
    }

    /// Queues one record.
    pub fn record(&self, record: Record) {
        if let Some(sink) = &self.sink {
            let _ = sink.send(record);
        }
    }
}

/// The size and SHA-256 of some JSON text.
pub fn fingerprint(json: &str) -> (usize, String) {
    (
        json.len(),
        crate::pins::hex(&Sha256::digest(json.as_bytes())),
    )
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A duration in milliseconds with three decimals.
pub fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}
