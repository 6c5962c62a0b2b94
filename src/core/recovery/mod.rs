pub mod cut_stream;
pub mod evictions;
pub mod join_recovery;
pub mod resume;
pub mod state;
pub mod write_failure;
