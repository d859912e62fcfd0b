//! The server-to-client requests of handshake-era sessions that wait for their answers.

use std::collections::HashMap;
use std::sync::Mutex;

use kelson_jsonrpc::{ErrorObject, RawValue};
use tokio::sync::oneshot;

/// What an answer to a server-to-client request carries: the result, or the client's error.
pub(super) type Answer = Result<Box<RawValue>, ErrorObject>;

/// The server-to-client requests waiting for their answers, across every session and transport.
///
/// Each request is bound to whoever it was sent to: the principal of the request that asked (its
/// [`Principal::id`], empty when anonymous) and, where there is one, the session. Its id is 128
/// random bits of its own, so one id seen tells nothing of another. An answer is taken only from
/// the same principal on the same session; from anyone else it is refused exactly as an answer to
/// an unknown id is, and the request keeps waiting for its own client.
///
/// [`Principal::id`]: crate::Principal::id
#[derive(Default)]
pub(crate) struct Outbound {
    pending: Mutex<HashMap<String, Pending>>,
}

struct Pending {
    /// The session asked, when there is one (stateless legacy HTTP has none).
    session: Option<String>,
    /// The principal asked ([`Principal::id`](crate::Principal::id)).
    owner: String,
    answer: oneshot::Sender<Answer>,
}

/// A fresh server-to-client request id: `s-` and 128 bits from the operating system's CSPRNG.
fn request_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    let mut id = String::with_capacity(34);
    id.push_str("s-");
    for b in bytes {
        use std::fmt::Write as _;
        let _ = write!(id, "{b:02x}");
    }
    id
}

impl Outbound {
    pub(super) fn register(
        &self,
        session: Option<&str>,
        owner: String,
    ) -> (String, oneshot::Receiver<Answer>) {
        let (tx, rx) = oneshot::channel();
        let mut pending = self.pending.lock().expect("outbound lock");
        let id = loop {
            let id = request_id();
            if !pending.contains_key(&id) {
                break id;
            }
        };
        pending.insert(
            id.clone(),
            Pending {
                session: session.map(str::to_owned),
                owner,
                answer: tx,
            },
        );
        (id, rx)
    }

    pub(super) fn forget(&self, id: &str) {
        self.pending.lock().expect("outbound lock").remove(id);
    }

    /// How many server-to-client requests wait for an answer.
    pub(crate) fn waiting(&self) -> usize {
        self.pending.lock().expect("outbound lock").len()
    }

    /// Takes the request `id` if it waits for an answer from `owner` (a [`Principal::id`]) on
    /// `session`; a request sent to anyone else is left waiting.
    ///
    /// [`Principal::id`]: crate::Principal::id
    pub(super) fn take(
        &self,
        id: &str,
        session: Option<&str>,
        owner: &str,
    ) -> Option<oneshot::Sender<Answer>> {
        let mut pending = self.pending.lock().expect("outbound lock");
        let belongs = pending
            .get(id)
            .is_some_and(|p| p.session.as_deref() == session && p.owner == owner);
        if !belongs {
            return None;
        }
        pending.remove(id).map(|p| p.answer)
    }
}
