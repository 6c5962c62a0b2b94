//! `SyncedState`: the agent's current synced state, shared (`Rc`) with the
//! effects that carry it to the author's `on_state_changed`.

use std::rc::Rc;

use serde_json::Value;

/// The current state, if the agent has one.
#[derive(Debug, Default)]
pub struct SyncedState {
    value: Option<Rc<Value>>,
}

impl SyncedState {
    /// The stored state, else the definition's initial one.
    pub fn restored(stored: Option<Value>, initial: Option<&Value>) -> SyncedState {
        SyncedState {
            value: stored.or_else(|| initial.cloned()).map(Rc::new),
        }
    }

    pub fn get(&self) -> Option<&Value> {
        self.value.as_deref()
    }

    /// The state, shared.
    pub fn shared(&self) -> Option<Rc<Value>> {
        self.value.clone()
    }

    pub fn replace(&mut self, state: Rc<Value>) {
        self.value = Some(state);
    }
}
