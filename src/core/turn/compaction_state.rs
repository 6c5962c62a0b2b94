//! What compaction keeps between steps: the summary in use (stored with the
//! place it covers up to), whether the agent's summarizer declined to make one,
//! and how many messages the last logged context cut left out. Changed only
//! through these methods, by the running turn and a clear.

use crate::core::rows::persisted::Summary;

#[derive(Debug, Default)]
pub struct CompactionState {
    summary: Option<Summary>,
    declined: bool,
    /// How many messages the last logged context cut left out (a trimmed
    /// context is logged when the cut moves, not on every request).
    logged_cut: Option<usize>,
}

impl CompactionState {
    pub fn restored(summary: Option<Summary>) -> Self {
        CompactionState {
            summary,
            ..CompactionState::default()
        }
    }

    /// The summary in use, if any.
    pub(in crate::core::turn) fn summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    /// The summarizer declined: it is not asked again until a clear.
    pub(in crate::core::turn) fn declined(&self) -> bool {
        self.declined
    }

    pub(in crate::core::turn) fn decline(&mut self) {
        self.declined = true;
    }

    /// The hook wrote `summary`, which replaces the one in use.
    pub(in crate::core::turn) fn replace_summary(&mut self, summary: Summary) {
        self.summary = Some(summary);
    }

    /// A step's context left out `omitted` messages: true when that is
    /// not the cut last logged (which it becomes).
    pub(in crate::core::turn) fn cut_moved(&mut self, omitted: usize) -> bool {
        let moved = self.logged_cut != Some(omitted);
        self.logged_cut = Some(omitted);
        moved
    }

    /// The history was cleared: no summary, and the hook is asked again.
    pub fn reset(&mut self) {
        self.summary = None;
        self.declined = false;
        self.logged_cut = None;
    }
}
