//! The test kit (`durable_chat::test_kit`) running this repository's demo
//! agent natively: a turn streamed to a tab, a tool, an approval, the
//! synced state and its callables, a schedule on the virtual clock and an
//! eviction mid-turn recovered — the agent's real definition, in memory.

mod connections;
mod demo;
mod directory;
mod submissions;
