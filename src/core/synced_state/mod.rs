pub mod state;
pub mod value;

pub use state::MAX_STATE_FRAME_BYTES;
