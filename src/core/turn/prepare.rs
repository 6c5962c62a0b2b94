//! Preparing a turn: the context `before_turn` sees (trigger, custom body,
//! client tools, recent messages) and the host's answer to
//! `Effect::PrepareTurn`, which fixes the turn's settings before its first
//! model call. An answer for a turn that was cancelled, cleared or lost to
//! an eviction meanwhile is ignored (a recovered turn is prepared anew).

use crate::core::data::queue::QueuedTurn;
use crate::core::turn::active::TurnPhase;
use crate::core::vocab::ids::CallId;
use crate::core::vocab::turn_config::{TurnConfig, TurnContext, TURN_CONTEXT_MESSAGES};
use crate::core::Core;

impl Core {
    /// What `before_turn` sees of `turn`.
    pub(in crate::core) fn turn_context(&self, turn: &QueuedTurn) -> TurnContext {
        let total = self.transcript.iter().count();
        let messages = self
            .transcript
            .iter()
            .skip(total.saturating_sub(TURN_CONTEXT_MESSAGES))
            .cloned()
            .collect();
        TurnContext {
            request_id: turn.request_id.clone(),
            trigger: turn.trigger,
            continuation: turn.is_continuation(),
            from_parent: turn.executor.is_some() || turn.turn_tools.is_some(),
            messages,
            client_tools: turn
                .turn_tools
                .clone()
                .unwrap_or_else(|| self.inputs.client_tools().to_vec()),
            body: turn
                .body
                .clone()
                .unwrap_or_else(|| self.inputs.body().clone()),
        }
    }

    /// `before_turn` answered for the turn being prepared: its settings
    /// take what it chose and the turn runs.
    pub(in crate::core) fn on_turn_prepared(&mut self, turn: CallId, config: TurnConfig) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        if !matches!(active.phase, TurnPhase::Preparing(id) if id == turn) {
            return;
        }
        active.settings.apply(config);
        active.phase = TurnPhase::RunningApprovedCalls;
        self.run_turn();
    }
}
