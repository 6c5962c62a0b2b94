//! A turn: from its start (prepared by the host, `before_turn`) through its
//! model calls, tool calls and their hooks, compaction and context cuts, to its
//! end (the answer stored, the terminal frames, the report owed to the author).
//! Calls only synced state below it; what the folders above must do after it
//! (a turn ended, a person answered, held tab results landed) it hands back
//! (`hand_back.rs`).
//!
//! Face (the methods of `Core` other folders may call; every other method
//! of this folder is private to it, checked by `scripts/check-layers.py`):
//! `abandon_turn`, `close_turn`, `end_turn`, `fail_remote_calls`, `flush_chunks`,
//! `forget_terminal_error`, `forget_turn_depth`, `last_turn_depth`, `live_stream_id`, `model_call_streamed`, `on_chat_error_decided`,
//! `on_model_event`, `on_model_failed`, `on_model_timer`, `on_remote_tool_done`,
//! `on_response_delivered`, `on_result_rewritten`, `on_summarized`, `on_tool_approval`,
//! `on_tool_deadline`, `on_tool_decided`, `on_tool_done`, `on_tool_result`, `on_turn_prepared`,
//! `reapply_stream_approvals`, `record_terminal_error`, `redeliver_owed_responses`, `reject`,
//! `report_response`, `request_ended`, `resume_pending_tab_results`, `send_final_error`,
//! `settle_submission`, `spender_of`, `start_turn`, `tokens_allow`.

mod active;
mod chunk_log;
mod compaction;
mod compaction_state;
mod context_blocks;
mod context_cut;
mod delegation;
mod end_frames;
mod ended;
mod error_decisions;
mod hand_back;
mod model_call;
mod phases;
mod prepare;
mod response_outbox;
mod step_reports;
mod structured_output;
mod terminal;
mod token_budgets;
mod tool_hooks;
mod tool_results;
mod tools;

pub(in crate::core) use active::ActiveTurn;
pub(in crate::core) use compaction_state::CompactionState;
pub(in crate::core) use ended::EndedTurns;
pub(in crate::core) use hand_back::{HandBack, HandedBack};
pub(in crate::core) use terminal::{
    caught_up_frame, cut_off_frame, failed_replay_frame, late_ack_frame,
};
