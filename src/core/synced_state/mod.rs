pub mod state;
pub mod value;

pub use value::MAX_STATE_FRAME_BYTES;
