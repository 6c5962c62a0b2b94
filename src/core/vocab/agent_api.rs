//! The agent as a whole, beyond its chat, as the core sees it: the initial
//! synced state and its validation hook, the names of the methods a
//! connected client may call (and which of them stream), and where a state
//! change came from.

use std::collections::BTreeSet;
use std::fmt;
use std::rc::Rc;

use serde_json::Value;

use crate::core::vocab::ids::ConnId;

/// Who changed the state: a connection's `setState`, or the agent's own code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateSource {
    Server,
    Connection(ConnId),
}

/// Decides a state change before it is stored: `Err(reason)` refuses it
/// (the tab that sent it is told `reason`; nothing is stored or broadcast).
pub type StateValidator = Rc<dyn Fn(&Value, &StateSource) -> Result<(), String>>;

/// The agent's synced state and callable methods, from its definition.
#[derive(Clone, Default)]
pub struct AgentApi {
    /// The state before anything set one (`None`: no state until one is set).
    pub initial_state: Option<Value>,
    pub validate_state: Option<StateValidator>,
    /// The methods a client may call by name (`rpc` frames).
    pub callables: BTreeSet<String>,
    /// Those of `callables` that stream: replies `done: false` before the
    /// last, and are cancelled when their caller's socket closes.
    pub streaming: BTreeSet<String>,
    /// Those of `callables` a readonly connection may call too
    /// (`Callable::readonly_safe`); any other is refused to it.
    pub readonly_safe: BTreeSet<String>,
}

impl fmt::Debug for AgentApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentApi")
            .field("initial_state", &self.initial_state)
            .field("validate_state", &self.validate_state.is_some())
            .field("callables", &self.callables)
            .field("streaming", &self.streaming)
            .field("readonly_safe", &self.readonly_safe)
            .finish()
    }
}
