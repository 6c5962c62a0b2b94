//! The built-in `set_context` tool: offered when the agent declares a
//! context block the model may write (`AgentDefinition::context_blocks`),
//! it rewrites one block's whole text through the agent's handle, under the
//! approval rule the definition chooses (`set_context_approval`). A refused
//! write (an unknown or read-only block, a text over the block's size) is
//! the tool error the model reads.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::core::{ContextBlock, SET_CONTEXT_TOOL};

use crate::agent::tools::context::ToolContext;
use crate::agent::tools::ServerTool;
use crate::agent::AgentDefinition;

/// The tool's input.
#[derive(Deserialize, JsonSchema)]
pub struct SetContextInput {
    /// The block's name.
    pub name: String,
    /// The block's whole new text (it replaces the old).
    pub text: String,
}

/// The tool for `definition`'s blocks, or `None` when the model may write none.
pub fn set_context_tool<D: AgentDefinition>(definition: &D) -> Option<ServerTool> {
    let blocks: Vec<ContextBlock> = definition
        .context_blocks()
        .into_iter()
        .filter(|b| b.model_writes)
        .collect();
    if blocks.is_empty() {
        return None;
    }
    let names: Vec<String> = blocks
        .iter()
        .map(|b| format!("`{}` (at most {} bytes)", b.name, b.max_bytes))
        .collect();
    let description = format!(
        "Rewrite a context block the agent keeps across the conversation: {}. The text replaces the block's text.",
        names.join(", ")
    );
    let tool = ServerTool::new(
        SET_CONTEXT_TOOL,
        &description,
        |input: SetContextInput, ctx: ToolContext| async move {
            let Some(agent) = ctx.agent else {
                return Err("no agent to keep the block".to_string());
            };
            agent
                .with_core(|core, now| {
                    core.set_context_block_by_model(&input.name, &input.text, now)
                })
                .map_err(|e| e.to_string())?;
            Ok(json!({ "written": input.name, "bytes": input.text.len() }))
        },
    );
    Some(tool.needs_approval(definition.set_context_approval()))
}
