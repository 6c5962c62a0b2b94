//! The agent's synced state: its value, a tab's `setState` and the agent's
//! own `set_state` (validated, stored, broadcast), the connect frames, and the
//! undo of a change whose write failed. The bottom folder: it calls no other.
//!
//! Face (the methods of `Core` other folders may call; every other method
//! of this folder is private to it, checked by `scripts/check-layers.py`):
//! `on_state_frame`, `on_state_write_failed`, `send_identity_and_state`.

mod state;
mod value;

pub(in crate::core) use value::SyncedState;
pub use value::MAX_STATE_FRAME_BYTES;
