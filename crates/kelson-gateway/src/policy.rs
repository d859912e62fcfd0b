//! The policy as the gateway applies it: which tools are exposed at all (a denied tool is neither
//! listed nor callable by any name, since it is never registered), which need the person's
//! approval, and the limits of a call.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kelson_types::Tool;

use crate::config::{PolicyConfig, RateLimit};
use crate::glob;

/// The compiled `[policy]`.
#[derive(Debug, Default)]
pub struct Policy {
    config: PolicyConfig,
    limiter: Option<Limiter>,
}

/// Why a tool is not exposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hidden {
    /// `allow` is given and does not match.
    NotAllowed,
    /// `deny` matches.
    Denied,
    /// `read_only` is on and the upstream does not annotate the tool read-only.
    NotReadOnly,
}

impl Policy {
    /// The policy of `config`.
    pub fn new(config: PolicyConfig) -> Policy {
        let limiter = config.rate_limit.map(Limiter::new);
        Policy { config, limiter }
    }

    /// Whether `tool`, exposed as `name`, is exposed at all.
    pub fn exposes(&self, name: &str, tool: &Tool) -> Result<(), Hidden> {
        if glob::any(&self.config.deny, name) {
            return Err(Hidden::Denied);
        }
        if !self.config.allow.is_empty() && !glob::any(&self.config.allow, name) {
            return Err(Hidden::NotAllowed);
        }
        if self.config.read_only
            && !tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false)
        {
            return Err(Hidden::NotReadOnly);
        }
        Ok(())
    }

    /// Whether calls to `name` need the person's approval.
    pub fn needs_approval(&self, name: &str) -> bool {
        glob::any(&self.config.approve, name)
    }

    /// The largest arguments object, in bytes of JSON.
    pub fn max_argument_bytes(&self) -> Option<usize> {
        self.config.max_argument_bytes
    }

    /// The largest result, in bytes of JSON.
    pub fn max_result_bytes(&self) -> Option<usize> {
        self.config.max_result_bytes
    }

    /// Takes one call of `principal` to `tool` from the rate limit; `Err` carries how long until
    /// the next call would be allowed.
    pub fn admit(&self, principal: &str, tool: &str) -> Result<(), Duration> {
        match &self.limiter {
            Some(l) => l.admit(principal, tool, Instant::now()),
            None => Ok(()),
        }
    }

    /// The configured rate limit.
    pub fn rate_limit(&self) -> Option<RateLimit> {
        self.config.rate_limit
    }
}

/// A token bucket per principal and tool: `calls` tokens, refilled evenly over `per`, so a burst
/// of the whole allowance is allowed and then one call every `per / calls`.
#[derive(Debug)]
struct Limiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<(String, String), Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets untouched this long are full again and are dropped, so memory follows the active
/// callers rather than every caller ever seen.
const SWEEP_EVERY: usize = 4096;

impl Limiter {
    fn new(limit: RateLimit) -> Limiter {
        Limiter {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn admit(&self, principal: &str, tool: &str, now: Instant) -> Result<(), Duration> {
        let capacity = f64::from(self.limit.calls);
        let rate = capacity / self.limit.per.as_secs_f64();
        let mut buckets = self.buckets.lock().expect("limiter lock");
        if buckets.len() >= SWEEP_EVERY {
            let per = self.limit.per;
            buckets.retain(|_, b| now.duration_since(b.at) < per);
        }
        let bucket = buckets
            .entry((principal.to_owned(), tool.to_owned()))
            .or_insert(Bucket {
                tokens: capacity,
                at: now,
            });
        let elapsed = now.duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / rate))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glob::Glob;
    use serde_json::json;

    fn tool(read_only: Option<bool>) -> Tool {
        let mut t = json!({"name": "t", "inputSchema": {"type": "object"}});
        if let Some(r) = read_only {
            t["annotations"] = json!({"readOnlyHint": r});
        }
        serde_json::from_value(t).unwrap()
    }

    #[test]
    fn deny_wins_over_allow_and_read_only_trusts_only_the_annotation() {
        let policy = Policy::new(PolicyConfig {
            allow: vec![Glob::new("db_*"), Glob::new("echo")],
            deny: vec![Glob::new("db_execute")],
            read_only: false,
            ..PolicyConfig::default()
        });
        assert_eq!(policy.exposes("db_query", &tool(None)), Ok(()));
        assert_eq!(
            policy.exposes("db_execute", &tool(None)),
            Err(Hidden::Denied)
        );
        assert_eq!(
            policy.exposes("files_read", &tool(None)),
            Err(Hidden::NotAllowed)
        );
        let ro = Policy::new(PolicyConfig {
            read_only: true,
            ..PolicyConfig::default()
        });
        assert_eq!(ro.exposes("x", &tool(Some(true))), Ok(()));
        assert_eq!(
            ro.exposes("x", &tool(Some(false))),
            Err(Hidden::NotReadOnly)
        );
        assert_eq!(ro.exposes("x", &tool(None)), Err(Hidden::NotReadOnly));
    }

    #[test]
    fn the_rate_limit_is_per_principal_and_tool_and_refills() {
        let limiter = Limiter::new(RateLimit {
            calls: 2,
            per: Duration::from_secs(10),
        });
        let t0 = Instant::now();
        assert!(limiter.admit("alice", "t", t0).is_ok());
        assert!(limiter.admit("alice", "t", t0).is_ok());
        let wait = limiter.admit("alice", "t", t0).unwrap_err();
        assert!(wait > Duration::from_secs(4) && wait <= Duration::from_secs(5));
        // Another principal, another tool: their own allowance.
        assert!(limiter.admit("bob", "t", t0).is_ok());
        assert!(limiter.admit("alice", "u", t0).is_ok());
        // Five seconds later one call's worth has come back.
        assert!(
            limiter
                .admit("alice", "t", t0 + Duration::from_secs(5))
                .is_ok()
        );
        assert!(
            limiter
                .admit("alice", "t", t0 + Duration::from_secs(5))
                .is_err()
        );
    }
}
