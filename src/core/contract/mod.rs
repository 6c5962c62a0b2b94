pub mod author_calls;
pub mod carry_out;
pub mod effects;
pub mod history;
pub mod log_event;
pub mod transcript_frame;
