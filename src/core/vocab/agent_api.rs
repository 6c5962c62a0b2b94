//! The agent as a whole, beyond its chat, as the core sees it: the initial
//! synced state and its validation hook, the methods a connected client may
//! call (a [`CallableSpec`] each), and where a state change came from.

use std::fmt;
use std::rc::Rc;

use serde_json::Value;

use crate::core::vocab::callable_spec::CallableSpec;
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
    /// The methods a client may call by name (`rpc` frames), one spec each.
    pub callables: Vec<CallableSpec>,
}

impl AgentApi {
    /// The method a client calls `name`, if the agent has one.
    pub fn callable(&self, name: &str) -> Option<&CallableSpec> {
        self.callables.iter().find(|c| c.name == name)
    }
}

impl fmt::Debug for AgentApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentApi")
            .field("initial_state", &self.initial_state)
            .field("validate_state", &self.validate_state.is_some())
            .field("callables", &self.callables)
            .finish()
    }
}
