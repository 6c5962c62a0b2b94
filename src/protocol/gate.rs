//! The one door for untrusted input: every byte that comes from outside the
//! agent's own code (tab frames, HTTP bodies, DO RPC arguments, model and
//! MCP responses, OAuth metadata, stored rows read back) is read through
//! here before anything is built from it. Each input kind has a declared
//! [`Budget`] in [`BUDGETS`] — its most bytes, JSON values and nesting —
//! which bounds what one input can make the agent hold in wasm memory
//! (a `serde_json::Value` costs tens of bytes however small its text).
//!
//! `scripts/check-gate.py` fails the test command when code outside this
//! module parses host input unbounded; the docs' limits table is checked
//! against [`BUDGETS`].

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::json_shape::{self, ShapeLimits};

/// What one input of a kind may cost: its text's bytes, the JSON values it
/// holds and how deeply they nest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// How errors and the docs name the input.
    pub name: &'static str,
    /// The most bytes of its text.
    pub max_bytes: usize,
    /// The most JSON values (arrays, objects, strings, numbers, literals).
    pub max_values: usize,
    /// The deepest nesting.
    pub max_depth: usize,
}

impl Budget {
    /// The shape part of the budget.
    pub fn shape(&self) -> ShapeLimits {
        ShapeLimits {
            max_values: self.max_values,
            max_depth: self.max_depth,
        }
    }
}

/// Why an input was refused at the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateError {
    /// Over the budget's bytes, values or depth.
    OverBudget(String),
    /// Within the budget but not the JSON expected.
    Invalid(String),
}

impl std::fmt::Display for GateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GateError::OverBudget(m) | GateError::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for GateError {}

impl From<GateError> for String {
    fn from(e: GateError) -> String {
        e.to_string()
    }
}

/// Refuses `text` when over `budget` in bytes, values or depth, without
/// building anything from it.
pub fn check(text: &str, budget: &Budget) -> Result<(), GateError> {
    check_as(text, budget, budget.name)
}

/// [`check`], naming the input `what` in the refusal.
pub fn check_as(text: &str, budget: &Budget, what: &str) -> Result<(), GateError> {
    check_bytes_as(text.len(), budget, what)?;
    json_shape::check(text, budget.shape(), what).map_err(GateError::OverBudget)
}

/// Refuses an input of `bytes` bytes over `budget` (before it is read).
pub fn check_bytes(bytes: usize, budget: &Budget) -> Result<(), GateError> {
    check_bytes_as(bytes, budget, budget.name)
}

/// [`check_bytes`], naming the input `what` in the refusal.
pub fn check_bytes_as(bytes: usize, budget: &Budget, what: &str) -> Result<(), GateError> {
    if bytes > budget.max_bytes {
        return Err(GateError::OverBudget(format!(
            "{what} too large: {bytes} bytes (limit {})",
            budget.max_bytes
        )));
    }
    Ok(())
}

/// Reads `text` as a `T` once it is within `budget`.
pub fn read_json<T: DeserializeOwned>(text: &str, budget: &Budget) -> Result<T, GateError> {
    read_json_as(text, budget, budget.name)
}

/// [`read_json`], naming the input `what` in the refusal.
pub fn read_json_as<T: DeserializeOwned>(
    text: &str,
    budget: &Budget,
    what: &str,
) -> Result<T, GateError> {
    check_as(text, budget, what)?;
    serde_json::from_str(text).map_err(|e| GateError::Invalid(format!("{what}: {e}")))
}

/// Reads `text` as a JSON value once it is within `budget`.
pub fn read_value(text: &str, budget: &Budget) -> Result<Value, GateError> {
    read_json(text, budget)
}

/// Reads bytes as UTF-8 JSON `T` once within `budget`.
pub fn read_json_bytes<T: DeserializeOwned>(bytes: &[u8], budget: &Budget) -> Result<T, GateError> {
    check_bytes(bytes.len(), budget)?;
    let text = std::str::from_utf8(bytes)
        .map_err(|_| GateError::Invalid(format!("{}: not UTF-8", budget.name)))?;
    read_json(text, budget)
}

/// The leading fields of `text` a small `T` names (e.g. a frame's id, to
/// answer a refusal on), the rest skipped without building any of it.
/// `None`: not JSON, or not a `T`.
pub fn read_head<'a, T: serde::Deserialize<'a>>(text: &'a str) -> Option<T> {
    serde_json::from_str(text).ok()
}

/// The synced state a tab (`cf_agent_state`) or an RPC caller sets, and the
/// stored state row read back on wake.
pub const STATE: Budget = Budget {
    name: "state",
    max_bytes: 2_000_000 - 4096,
    max_values: 50_000,
    max_depth: 64,
};

/// A tab's `rpc` frame (a callable call: its id, method and arguments) and
/// its arguments as the method reads them.
pub const CALL: Budget = Budget {
    name: "call frame",
    max_bytes: 256 * 1024,
    max_values: 50_000,
    max_depth: 64,
};

/// A chat request with the agent's default `Limits`: a tab's chat frame
/// (`max_frame_bytes`, `max_message_values`, `max_message_depth`), the
/// message and client tools of `chat()` over DO RPC, the messages of
/// `submitMessages`, `saveMessages` and `addMessages`. An agent's own
/// `Limits` replace these numbers (`Limits::budget`).
pub const CHAT: Budget = Budget {
    name: "chat request",
    max_bytes: 4 * 1024 * 1024,
    max_values: 300_000,
    max_depth: 64,
};

/// Any other argument of a DO RPC method (an idempotency key, a request or
/// submission id, an options object's fields).
pub const RPC_ARGUMENT: Budget = Budget {
    name: "RPC argument",
    max_bytes: 64 * 1024,
    max_values: 4_096,
    max_depth: 32,
};

/// What one input may make the agent hold in wasm memory at most, in
/// bytes: its text (once, as it crosses into wasm) and every value built
/// from it at [`VALUE_BYTES`] each.
pub const fn most_memory(budget: &Budget) -> usize {
    budget.max_bytes + budget.max_values * VALUE_BYTES
}

/// What one built JSON value may cost in wasm memory (a `serde_json::Value`
/// of 16 bytes on wasm32, its map entry or vector slot, its key and the
/// allocator's rounding), an upper figure for the docs' budgets.
pub const VALUE_BYTES: usize = 64;

/// One reply of an MCP server (a JSON body, or one message of an event
/// stream: its answer to a POST, or an event of the older HTTP+SSE
/// transport's standing stream).
pub const MCP_REPLY: Budget = Budget {
    name: "MCP reply",
    max_bytes: 4 * 1024 * 1024,
    max_values: 100_000,
    max_depth: 64,
};

/// An OAuth metadata document (protected resource, authorization server)
/// fetched for an MCP server.
pub const OAUTH_METADATA: Budget = Budget {
    name: "OAuth metadata",
    max_bytes: 64 * 1024,
    max_values: 2_000,
    max_depth: 16,
};

/// An authorization server's answer to a client registration or a token
/// request.
pub const OAUTH_ANSWER: Budget = Budget {
    name: "OAuth answer",
    ..OAUTH_METADATA
};

/// One event of a model's stream (a chunk of an OpenAI-compatible or
/// Workers AI reply).
pub const MODEL_EVENT: Budget = Budget {
    name: "model stream event",
    max_bytes: 8 * 1024 * 1024,
    max_values: 100_000,
    max_depth: 64,
};

/// The body of a model provider's error answer: read only this far, then
/// searched for its message.
pub const MODEL_ERROR_BODY: Budget = Budget {
    name: "model error body",
    max_bytes: 64 * 1024,
    max_values: 2_000,
    max_depth: 32,
};

/// An HTTP request body read as JSON by the crate's routes and an agent's
/// own (`agent::body::read_json`; each route may set fewer bytes).
pub const REQUEST_BODY: Budget = Budget {
    name: "request body",
    max_bytes: 4 * 1024 * 1024,
    max_values: 100_000,
    max_depth: 64,
};

/// What another agent answers a call over Durable Object RPC (a
/// sub-agent's tool call, a submission's status): as much as a tool result.
pub const AGENT_REPLY: Budget = Budget {
    name: "agent reply",
    max_bytes: 4 * 1024 * 1024,
    max_values: 300_000,
    max_depth: 64,
};

/// A model's tool call arguments (their bytes are also within the turn's
/// `max_model_stream_bytes`): as many values as a tool result may hold.
pub const MODEL_TOOL_INPUT: Budget = Budget {
    name: "tool call arguments",
    max_bytes: 4 * 1024 * 1024,
    max_values: 300_000,
    max_depth: 64,
};

/// Every input kind's budget, for the docs' limits table and its check.
pub const BUDGETS: &[Budget] = &[
    STATE,
    CALL,
    CHAT,
    RPC_ARGUMENT,
    MCP_REPLY,
    OAUTH_METADATA,
    OAUTH_ANSWER,
    MODEL_EVENT,
    MODEL_ERROR_BODY,
    REQUEST_BODY,
    AGENT_REPLY,
    MODEL_TOOL_INPUT,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_many_tiny_values_before_building() {
        let text = format!("{{\"a\":[{}0]}}", "0,".repeat(60_000));
        let err = read_value(&text, &STATE).unwrap_err();
        assert!(matches!(err, GateError::OverBudget(_)), "{err}");
    }

    #[test]
    fn reads_within_budget() {
        let v: Value = read_value(r#"{"count":1}"#, &STATE).unwrap();
        assert_eq!(v["count"], 1);
    }

    #[test]
    fn refuses_over_bytes() {
        let b = Budget {
            name: "x",
            max_bytes: 4,
            max_values: 10,
            max_depth: 4,
        };
        assert!(matches!(
            check("[1,2,3]", &b),
            Err(GateError::OverBudget(_))
        ));
    }
}
