//! The core's behaviour, driven natively through the simulated host
//! (`sim`): one test binary whose modules follow the core's source folders.
//!
//! * `admit`: what is let in and when it runs (chat requests, message
//!   concurrency, submissions, continuation, a parent agent's channel and
//!   programmatic chat, the author's alarm, who may change what).
//! * `turn`: the running turn (text turns, server and client tools,
//!   approvals, tool and turn hooks, model retries, deadlines, compaction,
//!   the model context, files, large values, logs).
//! * `recovery`: a turn cut by an eviction or a broken stream (recovery,
//!   resume, join recovery, cut streams, the chunk log, refused writes,
//!   quarantined rows).
//! * `data`: the stored history and the transcript.
//! * `synced_state`: the agent's state, synced to every tab.
//! * `callables`: methods a tab calls over the socket; frames left to the author.

mod sim;

mod admit;
mod callables;
mod data;
mod recovery;
mod synced_state;
mod turn;
