//! What is let in and when it runs.

mod author_alarm;
mod caller_budgets;
mod cancel_request;
mod channel;
mod clear;
mod concurrency;
mod continuation;
mod delegation;
mod programmatic;
mod readonly;
mod request_rate;
mod schedules;
mod submissions;
mod token_budget;
mod trust;
