//! Admit: what comes in and what runs next. Chat requests, cancel and clear
//! from tabs, the agent's own submissions and saves, programmatic chats from a
//! parent, the channel of a sub-agent's calls, schedules and the author's alarm,
//! the owed continuation, and the serial queue whose pump is the one place that
//! decides which turn runs next. Calls turn (to start, end or refuse) and
//! synced state; never recovery.
//!
//! Face (the methods of `Core` other folders may call; every other method
//! of this folder is private to it, checked by `scripts/check-layers.py`):
//! `accepted_not_streaming`, `after_person_answered`, `after_turn`, `cancel_submission`,
//! `drop_continuation`, `fire_author_alarm`, `fire_schedules`, `on_cancel`, `on_channel_frame`,
//! `on_chat_request`, `on_clear`, `on_programmatic_chat`, `on_readonly_frame`, `on_schedule_ran`,
//! `pump`, `remember_client_tools`, `restart_cut_schedule_runs`, `save_messages`,
//! `schedule_author_alarm`, `settle_orphaned_submissions`, `try_start_continuation`.

mod author_alarm;
mod channel;
mod chat;
mod continuation;
mod declared_schedules;
mod inputs;
mod readonly;
mod request_rate;
mod saved_tool_parts;
mod schedules;
mod submission_admin;
mod submissions;

pub(in crate::core) use inputs::TabInputs;
pub(in crate::core) use request_rate::RequestRate;
