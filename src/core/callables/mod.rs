pub mod calls;
pub mod in_flight;
pub mod other_frames;
