//! Callable methods: a tab's RPC frames to the agent's methods, the calls in
//! flight per connection and their bounds, streaming replies, and the agent's
//! other frames. Calls turn (to refuse a frame) and synced state.
//!
//! Face (the methods of `Core` other folders may call; every other method
//! of this folder is private to it, checked by `scripts/check-layers.py`):
//! `drop_calls_of`, `on_agent_frame`, `on_callable_done`.

mod calls;
mod in_flight;
mod other_frames;

pub(in crate::core) use in_flight::CallsInFlight;
pub use in_flight::{
    MAX_CALLS_IN_FLIGHT, MAX_CALL_BYTES_IN_FLIGHT, MAX_CALL_FRAME_BYTES, MAX_CHUNK_BYTES,
};
