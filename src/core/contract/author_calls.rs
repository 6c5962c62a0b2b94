//! What the core asks the author's code to do for the agent as a whole
//! (beyond its chat): run a callable method for a connection, tell
//! `on_state_changed` of a stored change, hand a frame of a type no protocol
//! layer owns to the author's `on_message`. The host awaits each; a
//! callable's outcome comes back as `Event::CallableDone`.

use std::rc::Rc;

use serde_json::Value;

use crate::core::vocab::agent_api::StateSource;
use crate::core::vocab::ids::ConnId;

#[derive(Debug, Clone, PartialEq)]
pub enum AuthorCall {
    /// Run callable `method` with `args` (a JSON array) for `conn`; answer
    /// with `Event::CallableDone { conn, id, .. }`.
    RunCallable {
        conn: ConnId,
        id: String,
        method: String,
        args: Value,
    },
    /// The state was changed and stored (its frames already queued).
    StateChanged {
        state: Rc<Value>,
        source: StateSource,
    },
    /// A text frame of a type neither the chat nor the agent protocol uses.
    OtherFrame { conn: ConnId, text: String },
    /// `conn` went: stop its streaming calls `ids` (no reply is sent).
    CancelCalls { conn: ConnId, ids: Vec<String> },
}
