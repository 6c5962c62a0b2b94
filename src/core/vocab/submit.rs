//! What the agent's own code hands to the core to submit (messages, an
//! idempotency key, a custom body), why it can be refused, and the bounds
//! on what is kept.

use serde_json::{Map, Value};

use crate::protocol::UIMessage;

/// Finished submissions kept for `submission_status` (the oldest go first).
pub const KEPT_SUBMISSIONS: usize = 256;
/// The longest idempotency key accepted, in bytes.
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 256;

/// What `submit_messages` hands to the core.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubmitRequest {
    /// User messages to store and answer (a message without an id gets one).
    pub messages: Vec<UIMessage>,
    /// A second submit with the same key (and caller) and the same messages
    /// returns the first submission; other messages under it are refused.
    pub idempotency_key: Option<String>,
    /// Who the key belongs to: keys are compared only between submissions
    /// of the same caller (`None` and `Some("")` are the agent's own code).
    /// A named caller's submissions count toward the agent's request rate
    /// (`Limits::max_agent_requests_per_minute`); the agent's own do not.
    pub caller: Option<String>,
    /// The custom body `before_turn` sees, as a tab's request body.
    pub body: Option<Map<String, Value>>,
    /// How many delegated calls deep the submitted turn is (a parent's
    /// submission over RPC says; 0 for the agent's own). Kept with the
    /// queued turn, so it runs at this depth after an eviction too.
    pub delegation_depth: u32,
}

/// A digest of what a submission asked for (its messages as handed in and
/// its body), kept with its idempotency key: the same key with other
/// messages is a conflict, not a repeat. FNV-1a, 64 bits, in hex.
pub fn submission_digest(messages: &[UIMessage], body: Option<&Map<String, Value>>) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    feed(
        serde_json::to_string(messages)
            .unwrap_or_default()
            .as_bytes(),
    );
    feed(&[0]);
    if let Some(body) = body {
        feed(serde_json::to_string(body).unwrap_or_default().as_bytes());
    }
    format!("{hash:016x}")
}

/// How every refusal for want of request rate starts (a tab's, a
/// parent's, a submission's).
pub const RATE_REFUSAL_PREFIX: &str = "too many requests";

/// Why the agent's own code was refused; nothing was stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmitError(pub String);

impl SubmitError {
    /// The refusal was for want of request rate (a route answers it 429):
    /// a submission of a named caller past `RATE_LIMIT_PER_AGENT`.
    pub fn is_rate_limited(&self) -> bool {
        self.0.starts_with(RATE_REFUSAL_PREFIX)
    }
}

impl std::fmt::Display for SubmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SubmitError {}
