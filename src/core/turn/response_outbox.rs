//! The reports of ended turns the agent's `on_chat_response` has not yet
//! returned for: written in the same batch as the turn's end, sent to the
//! host as `Effect::TurnEnded`, sent again after a restart until the host
//! says the hook returned (`Event::ChatResponseDelivered`). So each report is
//! delivered at least once, also when an eviction cuts the hook.

use crate::core::contract::effects::Effect;
use crate::core::contract::log_event::LogEvent;
use crate::core::rows::persisted::{ConfigKey, OwedResponsesRow};
use crate::core::vocab::hooks::ChatResponse;
use crate::core::Core;

/// How many undelivered reports are kept; beyond it the oldest is dropped
/// (and logged), so a hook that never returns cannot grow the row forever.
pub const MAX_OWED_RESPONSES: usize = 32;

impl Core {
    /// Writes down `response` as owed (with the writes that end its turn).
    pub(in crate::core::turn) fn owe_response(&mut self, response: &ChatResponse) {
        if self.owed_responses.len() >= MAX_OWED_RESPONSES {
            let dropped = self.owed_responses.remove(0);
            self.log(LogEvent::ResponseDropped {
                request_id: dropped.request_id,
            });
        }
        self.owed_responses.push(response.clone());
        self.write_down_owed_responses();
    }

    /// `response` is owed and goes to the hook now.
    pub(in crate::core) fn report_response(&mut self, response: ChatResponse) {
        self.owe_response(&response);
        self.effects.push(Effect::TurnEnded(response));
    }

    /// The hook returned for `request_id`: that report is no longer owed.
    pub(in crate::core) fn on_response_delivered(&mut self, request_id: &str) {
        let Some(index) = self
            .owed_responses
            .iter()
            .position(|r| r.request_id == request_id)
        else {
            return;
        };
        self.owed_responses.remove(index);
        self.write_down_owed_responses();
    }

    /// After a restart: every report still owed goes to the hook again.
    pub(in crate::core) fn redeliver_owed_responses(&mut self) {
        for response in self.owed_responses.clone() {
            self.effects.push(Effect::TurnEnded(response));
        }
    }

    fn write_down_owed_responses(&mut self) {
        let row = OwedResponsesRow {
            responses: self.owed_responses.clone(),
        };
        let empty = row.responses.is_empty();
        self.put_config_or_delete(ConfigKey::OwedResponses, &row, empty);
    }
}
