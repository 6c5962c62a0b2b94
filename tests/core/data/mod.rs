//! The stored history and the transcript.

mod cron;
mod history;
mod history_cap;
