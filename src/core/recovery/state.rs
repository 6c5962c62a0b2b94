//! What recovery after the fact keeps between events: streams found open at
//! start (recovered on `Event::Woke`), the cut stream still on offer to tabs
//! that join, the root request of the recovery chain in progress and that
//! chain's durable budget. Only the recovery behaviours (this folder) change
//! it; the rest of the core reads it and tells it when a new turn streams or
//! the history is cleared.

use crate::core::rows::persisted::{OpenStream, RecoveryBudget};

#[derive(Debug, Default)]
pub struct RecoveryState {
    /// A stream cut by an eviction (or broken off inside the isolate),
    /// replayable until a new turn streams; kept while its recovery runs.
    pub(in crate::core::recovery) orphan: Option<OpenStream>,
    /// Streams found open at start, recovered on `Event::Woke`.
    pub(in crate::core::recovery) cut_streams: Vec<OpenStream>,
    /// Root request id of the recovery in progress (tabs are told on connect).
    pub(in crate::core::recovery) recovering: Option<String>,
    pub(in crate::core::recovery) budget: Option<RecoveryBudget>,
}

impl RecoveryState {
    /// What a starting core found stored: open streams and a chain's budget.
    pub fn restored(cut_streams: Vec<OpenStream>, budget: Option<RecoveryBudget>) -> Self {
        RecoveryState {
            cut_streams,
            budget,
            ..RecoveryState::default()
        }
    }

    /// The cut stream on offer, if any.
    pub fn cut_stream(&self) -> Option<&OpenStream> {
        self.orphan.as_ref()
    }

    /// The root request of the recovery in progress, if any.
    pub fn recovering(&self) -> Option<&str> {
        self.recovering.as_deref()
    }

    /// A turn that is not this recovery's streams: the cut stream is no
    /// longer replayable.
    pub fn new_stream(&mut self) {
        self.orphan = None;
    }

    /// The history was cleared: nothing cut is replayable any more. A chain in
    /// progress ends with its turn, which the clear abandons.
    pub fn reset(&mut self) {
        self.orphan = None;
    }
}
