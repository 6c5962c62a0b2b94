pub mod author_alarm;
pub mod channel;
pub mod chat;
pub mod continuation;
pub mod inputs;
pub mod schedules;
pub mod submission_list;
pub mod submissions;
