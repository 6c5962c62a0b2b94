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
    /// A second submit with the same key returns the first submission.
    pub idempotency_key: Option<String>,
    /// The custom body `before_turn` sees, as a tab's request body.
    pub body: Option<Map<String, Value>>,
}

/// Why the agent's own code was refused; nothing was stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmitError(pub String);

impl std::fmt::Display for SubmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SubmitError {}
