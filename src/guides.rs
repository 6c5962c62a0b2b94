//! The guides, one module each: the pages of `docs/guides/` as the crate's
//! docs show them, so that docs.rs has them and `cargo test --doc` compiles
//! and runs their Rust examples. The text is the guide's own (its links
//! rewritten for these pages by `build.rs`); a new guide gets a module here
//! and a line in the crate's front page (`tests/guides_doc.rs` checks both).

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/writing-an-agent.md"))]
pub mod writing_an_agent {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/tools-and-approval.md"))]
pub mod tools_and_approval {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/hooks.md"))]
pub mod hooks {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/state-and-callables.md"))]
pub mod state_and_callables {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/storage-and-schedules.md"))]
pub mod storage_and_schedules {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/submissions.md"))]
pub mod submissions {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/sub-agents.md"))]
pub mod sub_agents {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/many-chats.md"))]
pub mod many_chats {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/long-conversations.md"))]
pub mod long_conversations {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/mcp.md"))]
pub mod mcp {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/testing-your-agent.md"))]
pub mod testing_your_agent {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/models.md"))]
pub mod models {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/configuration.md"))]
pub mod configuration {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/coming-from-think.md"))]
pub mod coming_from_think {}

#[doc = include_str!(concat!(env!("OUT_DIR"), "/guides/wire-protocol.md"))]
pub mod wire_protocol {}
