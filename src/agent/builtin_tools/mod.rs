//! The tools the agent adds from its definition: `set_context` (the model
//! writes a context block, `AgentDefinition::context_blocks`) and
//! `search_context` (the model searches the whole stored history,
//! `AgentDefinition::searches_history`).

pub mod search_context;
pub mod set_context;
