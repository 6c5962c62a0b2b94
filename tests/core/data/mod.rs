//! The stored history, the transcript and the stored turn queue.

mod cron;
mod history;
mod history_cap;
mod queue;
