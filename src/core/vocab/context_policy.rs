//! How much of a long conversation each model request carries: a byte
//! budget and a number of messages, with their defaults.

/// How much of the conversation each model request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextPolicy {
    /// Estimated prompt bytes (text, tool inputs and results) a request may
    /// carry; older messages beyond it are left out. 0: no bound.
    pub max_bytes: usize,
    /// Conversation messages (as stored: a user message, an assistant answer
    /// with all its steps) a request may carry; older ones are left out.
    /// The newest user message and what follows it are always sent. 0: no bound.
    pub max_messages: usize,
}

/// About 100k tokens: within every current large-context model, far beyond
/// a short chat (which is never cut).
pub const DEFAULT_CONTEXT_BYTES: usize = 400_000;

/// About 100 exchanges: what a chat's next answer draws on, while the cost of
/// a turn (reading, converting and sending its context) stays the same
/// however long the conversation gets, even one of many short messages.
pub const DEFAULT_CONTEXT_MESSAGES: usize = 200;

impl Default for ContextPolicy {
    fn default() -> Self {
        ContextPolicy {
            max_bytes: DEFAULT_CONTEXT_BYTES,
            max_messages: DEFAULT_CONTEXT_MESSAGES,
        }
    }
}
