//! The stored shape of the agent's context blocks (`ConfigKey::ContextBlocks`):
//! each written block's text by name. What a block is and who may write it
//! is `vocab/context_block.rs`'s; the writes are `turn/context_blocks.rs`'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Each written block's text, by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextBlocksRow {
    pub blocks: BTreeMap<String, String>,
}
