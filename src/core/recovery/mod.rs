//! Recovery: a stream cut by an eviction or broken off inside the isolate is
//! continued, retried or given up on under a budget; a tab that connects or
//! probes is offered what it can resume; a failed store write is undone. The
//! top folder: it re-queues cut turns through admit and ends turns through
//! turn; nothing calls it but the dispatcher (`core/mod.rs`, `core/settle.rs`).
//!
//! Face (the methods of `Core` other folders may call; every other method
//! of this folder is private to it, checked by `scripts/check-layers.py`):
//! `finish_recovery`, `on_connect`, `on_heartbeat`, `on_model_failure`, `on_resume_ack`,
//! `on_resume_probe`, `on_store_write_failed`, `on_woke`.

mod cut_stream;
mod evictions;
mod join_recovery;
mod resume;
mod state;
mod write_failure;

pub(in crate::core) use state::RecoveryState;
