//! Preparing a turn: the context `before_turn` sees (trigger, custom body,
//! client tools, recent messages), sent with `Effect::PrepareTurn`; the
//! host's answer moves the turn on in `phases.rs`.

use crate::core::data::queue::QueuedTurn;
use crate::core::vocab::turn_config::{TurnContext, TURN_CONTEXT_MESSAGES};
use crate::core::Core;

impl Core {
    /// What `before_turn` sees of `turn`.
    pub(in crate::core::turn) fn turn_context(&self, turn: &QueuedTurn) -> TurnContext {
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
}
