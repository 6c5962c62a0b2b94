//! A turn cut by an eviction or a broken stream, and refused or unreadable rows.

mod chunk_log;
mod cut_stream;
mod evictions;
mod join_recovery;
mod quarantine;
mod resume;
mod write_failures;
