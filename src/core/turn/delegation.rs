//! How many delegated calls deep each turn runs (a parent's `chat()` or
//! submission makes a turn one deeper than the parent's; at
//! `Limits::max_delegation_depth` its tools call no further agent). A
//! waiting turn keeps its depth in its queue row; a started turn's depth is
//! written down (`ConfigKey::TurnDepth`) before it streams, so a recovery of
//! it and a continuation of its answer run at the same depth after an
//! eviction, never back at 0.

use crate::core::rows::persisted::{ConfigKey, TurnDepthRow};
use crate::core::Core;

impl Core {
    /// How many delegated calls deep the running turn is (0 with none
    /// running): what its tools' `ToolContext::delegation_depth` says.
    pub fn running_delegation_depth(&self) -> u32 {
        self.active
            .as_ref()
            .map_or(0, |active| active.turn.delegation_depth)
    }

    /// The depth of the turn started last, which a recovery of that turn and
    /// a continuation of its answer run at.
    pub(in crate::core) fn last_turn_depth(&self) -> u32 {
        self.turn_depth
    }

    /// A clear: no answer is left to continue at a depth (its row goes with
    /// the clear).
    pub(in crate::core) fn forget_turn_depth(&mut self) {
        self.turn_depth = 0;
    }

    /// A turn `depth` deep starts: written down when it differs from the
    /// last one's (0 is the absent row).
    pub(in crate::core::turn) fn note_turn_depth(&mut self, depth: u32) {
        if depth == self.turn_depth {
            return;
        }
        self.turn_depth = depth;
        self.put_config_or_delete(ConfigKey::TurnDepth, &TurnDepthRow { depth }, depth == 0);
    }
}
