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
    orphan: Option<OpenStream>,
    /// Streams found open at start, recovered on `Event::Woke`.
    cut_streams: Vec<OpenStream>,
    /// Root request id of the recovery in progress (tabs are told on connect).
    recovering: Option<String>,
    budget: Option<RecoveryBudget>,
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

    /// The streams found open at start, taken out to be recovered.
    /// Whether a stream cut by the eviction (not yet recovered) holds a
    /// chunk naming tool call `tool_call_id`.
    pub(in crate::core) fn cut_stream_names_call(&self, tool_call_id: &str) -> bool {
        let quoted = format!("\"{tool_call_id}\"");
        self.cut_streams
            .iter()
            .any(|s| s.chunks.iter().any(|c| c.contains(&quoted)))
    }

    pub(in crate::core::recovery) fn take_cut_streams(&mut self) -> Vec<OpenStream> {
        std::mem::take(&mut self.cut_streams)
    }

    /// `cut` is the stream on offer to tabs that join (or none).
    pub(in crate::core::recovery) fn offer(&mut self, cut: Option<OpenStream>) {
        self.orphan = cut;
    }

    /// The recovery chain `root` is in progress (tabs are told so).
    pub(in crate::core::recovery) fn begin(&mut self, root: String) {
        self.recovering = Some(root);
    }

    /// The chain in progress ended: its root, if one was in progress.
    pub(in crate::core::recovery) fn end(&mut self) -> Option<String> {
        self.recovering.take()
    }

    /// Holds `budget` as the chain's (or none).
    pub(in crate::core::recovery) fn hold_budget(&mut self, budget: Option<RecoveryBudget>) {
        self.budget = budget;
    }

    /// The budget held, taken out (to be charged or deleted).
    pub(in crate::core::recovery) fn take_budget(&mut self) -> Option<RecoveryBudget> {
        self.budget.take()
    }

    /// The recovery turn closed: the cut stream it recovered is no longer
    /// offered (returned, for the turn to remember as ended).
    pub fn recovery_turn_closed(&mut self) -> Option<OpenStream> {
        self.orphan.take()
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
