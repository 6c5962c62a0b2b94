//! What compaction keeps between steps: the summary in use (stored with the
//! place it covers up to) and whether the agent's hook declined to make one.
//! Changed only by compaction (`compaction.rs`) and a clear.

use crate::core::rows::persisted::Summary;

#[derive(Debug, Default)]
pub struct CompactionState {
    pub(in crate::core::turn) summary: Option<Summary>,
    pub(in crate::core::turn) declined: bool,
}

impl CompactionState {
    pub fn restored(summary: Option<Summary>) -> Self {
        CompactionState {
            summary,
            declined: false,
        }
    }

    /// The history was cleared: no summary, and the hook is asked again.
    pub fn reset(&mut self) {
        self.summary = None;
        self.declined = false;
    }
}
