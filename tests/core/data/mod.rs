//! The stored history and the transcript.

mod history;
