//! The built-in `search_context` tool: offered when the definition asks for
//! it (`AgentDefinition::searches_history`), it searches the whole stored
//! history — not only the window the model sees — through the agent's
//! handle and answers with the best matches (message id, role, place, an
//! excerpt), bounded in hits and bytes.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::core::vocab::history_search::MAX_HITS;
use crate::core::SEARCH_CONTEXT_TOOL;

use crate::agent::tools::context::ToolContext;
use crate::agent::tools::ServerTool;
use crate::agent::AgentDefinition;

/// The tool's input.
#[derive(Deserialize, JsonSchema)]
pub struct SearchContextInput {
    /// Words to look for (any of them; the best matches come first).
    pub query: String,
    /// How many matches at most (default 5, at most 20).
    pub limit: Option<usize>,
}

/// The tool, or `None` when the definition does not search its history.
pub fn search_context_tool<D: AgentDefinition>(definition: &D) -> Option<ServerTool> {
    if !definition.searches_history() {
        return None;
    }
    let description = format!(
        "Search the whole conversation so far, including what is no longer shown to you, for messages with any of the query's words. Answers with at most {MAX_HITS} matches, best first: message id, role, place (larger: newer) and an excerpt with the matched words in [brackets]."
    );
    Some(ServerTool::new(
        SEARCH_CONTEXT_TOOL,
        &description,
        |input: SearchContextInput, ctx: ToolContext| async move {
            let Some(agent) = ctx.agent else {
                return Err("no agent to search".to_string());
            };
            let hits = agent.search_history(&input.query, input.limit)?;
            Ok(json!({ "hits": hits }))
        },
    ))
}
