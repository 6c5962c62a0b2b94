//! The agent's context blocks (`vocab/context_block.rs`): their stored text
//! (restored on wake, written through `ConfigKey::ContextBlocks`), writes
//! from the model's `set_context` and from code (bounded, named), and the
//! block section each step's system prompt ends with. A block changes the
//! start of the request only when it is written, so a provider's prompt
//! cache holds between writes.

use crate::core::rows::context_blocks_row::ContextBlocksRow;
use crate::core::rows::persisted::ConfigKey;
use crate::core::vocab::context_block::{ContextBlock, ContextBlockError, SET_CONTEXT_TOOL};
use crate::core::Core;

impl Core {
    /// Each declared block with its text now, in declaration order.
    pub fn context_blocks(&self) -> Vec<(ContextBlock, String)> {
        self.config
            .context_blocks
            .iter()
            .map(|block| {
                let text = self
                    .context_texts
                    .get(&block.name)
                    .cloned()
                    .unwrap_or_else(|| block.initial.clone());
                (block.clone(), text)
            })
            .collect()
    }

    /// Writes block `name` (the author's code: any declared block).
    pub fn set_context_block(
        &mut self,
        name: &str,
        text: &str,
        now_ms: u64,
    ) -> Result<(), ContextBlockError> {
        self.write_context_block(name, text, now_ms, false)
    }

    /// Writes block `name` for the model's `set_context`: only blocks the
    /// model may write.
    pub fn set_context_block_by_model(
        &mut self,
        name: &str,
        text: &str,
        now_ms: u64,
    ) -> Result<(), ContextBlockError> {
        self.write_context_block(name, text, now_ms, true)
    }

    fn write_context_block(
        &mut self,
        name: &str,
        text: &str,
        now_ms: u64,
        by_model: bool,
    ) -> Result<(), ContextBlockError> {
        self.now = self.now.max(now_ms);
        let block = self
            .config
            .context_blocks
            .iter()
            .find(|b| b.name == name)
            .ok_or_else(|| ContextBlockError::Unknown(name.to_string()))?;
        if by_model && !block.model_writes {
            return Err(ContextBlockError::ReadOnly(name.to_string()));
        }
        if text.len() > block.max_bytes {
            return Err(ContextBlockError::TooLong {
                name: name.to_string(),
                max: block.max_bytes,
                given: text.len(),
            });
        }
        if self.context_texts.get(name).map(String::as_str) == Some(text) {
            return Ok(());
        }
        self.context_texts
            .insert(name.to_string(), text.to_string());
        let row = ContextBlocksRow {
            blocks: self.context_texts.clone(),
        };
        self.put_config(ConfigKey::ContextBlocks, &row);
        Ok(())
    }

    /// `system` followed by the blocks (none declared: `system` as it is).
    pub(in crate::core::turn) fn system_with_blocks(&self, system: &str) -> String {
        let blocks = self.context_blocks();
        if blocks.is_empty() {
            return system.to_string();
        }
        let mut out = system.to_string();
        let writable = blocks.iter().any(|(b, _)| b.model_writes);
        out.push_str("\n\n# Context blocks\n");
        out.push_str("Kept across the whole conversation");
        if writable {
            out.push_str(&format!(
                "; rewrite one with the `{SET_CONTEXT_TOOL}` tool when what it should hold changes"
            ));
        }
        out.push_str(".\n");
        for (block, text) in blocks {
            out.push_str(&format!(
                "\n<context_block name=\"{}\" description=\"{}\" bytes=\"{}/{}\"{}>\n{}\n</context_block>\n",
                block.name,
                block.description,
                text.len(),
                block.max_bytes,
                if block.model_writes { "" } else { " read_only=\"true\"" },
                text
            ));
        }
        out
    }
}
