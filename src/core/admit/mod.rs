pub mod author_alarm;
pub mod channel;
pub mod chat;
pub mod continuation;
pub mod submissions;
