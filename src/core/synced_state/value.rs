//! `SyncedState`: the agent's current synced state, shared (`Rc`) with the
//! effects that carry it to the author's `on_state_changed`.

use std::rc::Rc;

use serde_json::Value;

use crate::core::rows::row_limits::MAX_ROW_BYTES;

/// Room the stored row needs beyond the state's own JSON (`{"v":1,"state":…}`).
const ROW_OVERHEAD: usize = 32;

/// Largest state, measured as the frame that carries it
/// (`{"type":"cf_agent_state","state":…}`), in bytes: it must fit one stored
/// row. A tab's state frame over it is refused before it is parsed.
pub const MAX_STATE_FRAME_BYTES: usize = MAX_ROW_BYTES - ROW_OVERHEAD;

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
