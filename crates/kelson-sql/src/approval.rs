//! Write approval: the user confirms the exact statement through MRTR elicitation, and each
//! approval runs at most one statement.
//!
//! spec 2026-07-28 [basic/patterns/mrtr][spec]: the runtime seals `requestState` and binds it to
//! the tool name and arguments (so an approval is for this statement and these parameters only),
//! the principal and an expiry. That does not by itself make a state single-use, and the spec says
//! a server whose state must be consumed at most once MUST enforce that itself. Here it must, so:
//! - the first round asks under a fresh, unguessable input key kept in the sealed state, so an
//!   answer the client sends before being asked (no `requestState`) can never match it;
//! - an answer counts only when the request carries a verified state (`state_nonce()` is `Some`);
//! - the state's nonce is recorded before the statement runs, and a state whose nonce was recorded
//!   is refused, so a retried or replayed request cannot run the write twice.
//!
//! [spec]: https://modelcontextprotocol.io/specification/2026-07-28/basic/patterns/mrtr

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kelson_server::{HandlerError, RequestContext};
use kelson_types::{
    BooleanSchema, ElicitAction, ElicitRequestFormParams, ElicitValue, RequestedSchema,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The form field the user ticks to approve.
pub(crate) const APPROVE_FIELD: &str = "approve";

/// What the handler keeps in the sealed state between rounds.
#[derive(Debug, Serialize, Deserialize)]
struct Pending {
    /// The input key the approval was asked under.
    key: String,
}

/// The user's decision.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Approved, under the state with this nonce.
    Approved { nonce: String },
    /// Not approved; the text says how, for the model.
    NotApproved(&'static str),
}

fn random_key() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    let mut key = String::from("approve_sql_");
    for b in bytes {
        key.push_str(&format!("{b:02x}"));
    }
    key
}

/// The confirmation form: the exact statement and parameters, and one box to tick.
pub(crate) fn form(
    database: &str,
    engine: &str,
    sql: &str,
    params: &[Value],
) -> ElicitRequestFormParams {
    let params = if params.is_empty() {
        "none".to_owned()
    } else {
        Value::Array(params.to_vec()).to_string()
    };
    let message = format!(
        "Approve this SQL statement on database \"{database}\" ({engine})? It runs once, in a \
         transaction of its own, and may change or delete data.\n\n{sql}\n\nParameters: {params}"
    );
    let schema = RequestedSchema::new().required_property(
        APPROVE_FIELD,
        BooleanSchema {
            default: Some(false),
            ..BooleanSchema::new()
        }
        .with_title("Run this statement")
        .with_description("Tick to run the statement exactly as shown, once."),
    );
    ElicitRequestFormParams::new(message, schema)
}

/// Asks for, or reads, the user's approval of the statement this request carries.
///
/// Stops with `input_required` until a verified answer is there, and with -32021 when the client
/// did not declare form elicitation on this request.
pub(crate) fn confirm(
    ctx: &mut RequestContext,
    form: ElicitRequestFormParams,
) -> Result<Decision, HandlerError> {
    let pending = match ctx.state_nonce() {
        Some(_) => ctx.round_state::<Pending>(),
        None => None,
    };
    let Some(pending) = pending else {
        // No verified state: this server has not asked in this exchange, so nothing the request
        // carries can be an answer. Ask under a key nobody can have answered.
        let key = random_key();
        ctx.set_round_state(Pending { key: key.clone() })?;
        ctx.elicit(&key, form)?;
        return Err(HandlerError::failed(
            "An approval arrived for a question that was never asked; nothing was run. Call execute again.",
        ));
    };
    let answer = ctx.elicit(&pending.key, form)?;
    let nonce = ctx
        .state_nonce()
        .expect("checked above: the state was verified")
        .to_owned();
    Ok(match answer.action {
        ElicitAction::Accept => {
            let ticked = answer
                .content
                .as_ref()
                .and_then(|c| c.get(APPROVE_FIELD))
                .and_then(ElicitValue::as_bool)
                == Some(true);
            if ticked {
                Decision::Approved { nonce }
            } else {
                Decision::NotApproved(
                    "the user submitted the form without ticking the approval box",
                )
            }
        }
        ElicitAction::Decline => Decision::NotApproved("the user declined"),
        ElicitAction::Cancel => Decision::NotApproved("the user dismissed the confirmation"),
    })
}

/// Why an approval could not be used.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Spent {
    /// This approval already ran (or tried to run) its statement.
    AlreadyUsed,
    /// Too many approvals are outstanding to remember another.
    Full,
    /// The shared ledger could not record it (so nothing runs). Only the ledgers of the SQLite
    /// and PostgreSQL features record outside memory.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    Unavailable(String),
}

/// The nonces of approvals already used, each kept until the state carrying it has expired.
#[derive(Debug)]
pub(crate) struct UsedApprovals {
    used: Mutex<HashMap<String, Instant>>,
    capacity: usize,
}

/// Extra time a nonce is remembered past its state's lifetime, for clock differences between the
/// sealer's wall clock and this monotonic one.
const SLACK: Duration = Duration::from_secs(60);

impl UsedApprovals {
    pub(crate) fn new(capacity: usize) -> Self {
        UsedApprovals {
            used: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// Records `nonce` as used, unless it already was. `state_ttl` is the server's state lifetime:
    /// the state carrying the nonce was issued before now, so it expires within `state_ttl` from now,
    /// after which the runtime refuses it anyway and the nonce can be forgotten.
    pub(crate) fn consume(&self, nonce: &str, state_ttl: Duration) -> Result<(), Spent> {
        let now = Instant::now();
        let mut used = self.used.lock().expect("approvals lock");
        if used.get(nonce).is_some_and(|until| *until > now) {
            return Err(Spent::AlreadyUsed);
        }
        if used.len() >= self.capacity {
            used.retain(|_, until| *until > now);
            if used.len() >= self.capacity {
                return Err(Spent::Full);
            }
        }
        used.insert(nonce.to_owned(), now + state_ttl + SLACK);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_used_once() {
        let approvals = UsedApprovals::new(10);
        let ttl = Duration::from_secs(600);
        assert_eq!(approvals.consume("a", ttl), Ok(()));
        assert_eq!(approvals.consume("a", ttl), Err(Spent::AlreadyUsed));
        assert_eq!(approvals.consume("b", ttl), Ok(()));
    }

    #[test]
    fn memory_is_bounded_and_expired_nonces_are_forgotten() {
        let approvals = UsedApprovals::new(2);
        let long = Duration::from_secs(600);
        assert_eq!(approvals.consume("a", long), Ok(()));
        assert_eq!(approvals.consume("b", long), Ok(()));
        // Full of live nonces: refuse rather than forget one that could come back.
        assert_eq!(approvals.consume("c", long), Err(Spent::Full));
        assert_eq!(approvals.consume("a", long), Err(Spent::AlreadyUsed));

        // Entries past their expiry make room.
        {
            let mut used = approvals.used.lock().unwrap();
            let past = Instant::now().checked_sub(Duration::from_secs(1)).unwrap();
            for until in used.values_mut() {
                *until = past;
            }
        }
        assert_eq!(approvals.consume("c", long), Ok(()));
        assert_eq!(approvals.used.lock().unwrap().len(), 1);
    }

    #[test]
    fn keys_are_fresh() {
        let a = random_key();
        assert_ne!(a, random_key());
        assert!(a.starts_with("approve_sql_") && a.len() == 12 + 32);
    }

    #[test]
    fn the_form_shows_the_exact_statement() {
        let f = form(
            "shop",
            "SQLite",
            "DELETE FROM t WHERE id = ?1",
            &[serde_json::json!(7)],
        );
        assert!(f.message.contains("\n\nDELETE FROM t WHERE id = ?1\n\n"));
        assert!(f.message.contains("Parameters: [7]"));
        assert!(f.requested_schema.get(APPROVE_FIELD).is_some());
        assert_eq!(
            f.requested_schema.required.as_deref(),
            Some(&[APPROVE_FIELD.to_owned()][..])
        );
    }
}
