//! `SyncedState`: the agent's current synced state, shared (`Rc`) with the
//! effects that carry it to the author's `on_state_changed`, and what to go
//! back to while its write is not yet known to be stored: a change's write
//! is queued with the core's effects, carried out when the host takes them,
//! and known stored once the host comes back without a failure.

use std::rc::Rc;

use serde_json::Value;

use crate::core::vocab::ids::ConnId;

/// The state before changes whose writes are not yet known to be stored,
/// and the tabs that made them (told if the write fails).
#[derive(Debug, Clone)]
pub struct Undo {
    pub before: Option<Rc<Value>>,
    pub tabs: Vec<ConnId>,
}
use crate::core::rows::row_limits::MAX_ROW_BYTES;

/// Room the stored row needs beyond the state's own JSON (`{"v":1,"state":…}`).
const ROW_OVERHEAD: usize = 32;

/// Largest state, measured as the frame that carries it
/// (`{"type":"cf_agent_state","state":…}`), in bytes: it must fit one stored
/// row. A tab's state frame over it is refused before it is parsed; its
/// JSON values are counted under the same budget (`protocol::gate::STATE`),
/// whoever sets the state, so the stored row read back on wake is within it.
pub const MAX_STATE_FRAME_BYTES: usize = crate::protocol::gate::STATE.max_bytes;

const _: () = assert!(MAX_STATE_FRAME_BYTES <= MAX_ROW_BYTES - ROW_OVERHEAD);

/// The current state, if the agent has one.
#[derive(Debug, Default)]
pub struct SyncedState {
    value: Option<Rc<Value>>,
    /// Changes made since the host last took the effects.
    queued: Option<Undo>,
    /// Changes whose writes the host is carrying out now.
    writing: Option<Undo>,
    /// How many times a state write failed and was undone.
    failed_writes: u64,
}

impl SyncedState {
    /// The stored state, else the definition's initial one.
    pub fn restored(stored: Option<Value>, initial: Option<&Value>) -> SyncedState {
        SyncedState {
            value: stored.or_else(|| initial.cloned()).map(Rc::new),
            ..SyncedState::default()
        }
    }

    pub fn get(&self) -> Option<&Value> {
        self.value.as_deref()
    }

    /// A change whose write is queued now (`tab`: the tab that sent it).
    pub fn replace(&mut self, state: Rc<Value>, tab: Option<ConnId>) {
        let before = self.value.replace(state);
        let undo = self.queued.get_or_insert(Undo {
            before,
            tabs: Vec::new(),
        });
        if let Some(tab) = tab {
            if !undo.tabs.contains(&tab) {
                undo.tabs.push(tab);
            }
        }
    }

    /// The host took the effects: the writes queued so far are carried out
    /// now, and those taken before are stored (a failure would have come
    /// back before this).
    pub fn writes_handed_over(&mut self) {
        self.writing = self.queued.take();
    }

    /// The writes being carried out failed: back to the state before them.
    /// `None`: no state change was among them.
    pub fn write_failed(&mut self) -> Option<Undo> {
        let undo = self.writing.take()?;
        self.value = undo.before.clone();
        self.failed_writes += 1;
        Some(undo)
    }

    /// How many state writes failed and were undone so far.
    pub fn failed_writes(&self) -> u64 {
        self.failed_writes
    }
}
