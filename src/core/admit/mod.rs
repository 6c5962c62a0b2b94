pub mod author_alarm;
pub mod channel;
pub mod chat;
pub mod continuation;
pub mod inputs;
pub mod saved_tool_parts;
pub mod submission_list;
pub mod submissions;
