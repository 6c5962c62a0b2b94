//! What a step's model call that failed for good becomes: sent again after
//! a wait (`ErrorDisposition::Retry`, when the call may be repeated) or the
//! turn's end with the error. The agent's `on_chat_error` decides, inline or
//! awaited by the host (`Effect::DecideChatError`, answered with
//! `Event::ChatErrorDecided`) while the turn waits, bounded by the model
//! call's deadline.

use crate::protocol::Outcome;

use crate::core::contract::effects::{Effect, Timer};
use crate::core::contract::log_event::LogEvent;
use crate::core::turn::active::{FailedCall, TurnPhase};
use crate::core::vocab::hooks::{ChatError, ErrorDisposition};
use crate::core::vocab::ids::CallId;
use crate::core::Core;

impl Core {
    /// The host runs `on_chat_error`; the turn waits in `DecidingError`
    /// (a call still streaming is aborted first).
    pub(in crate::core::turn) fn ask_error_disposition(
        &mut self,
        failed: FailedCall,
        error: ChatError,
        in_flight: bool,
    ) {
        let call = self.next_call_id();
        let left = self.leave_model_call(TurnPhase::DecidingError { call, failed });
        if let (true, Some(model)) = (in_flight, left) {
            self.effects.push(Effect::AbortModel { call: model });
        }
        let bound = self.config.settings.limits.model_call_timeout_ms;
        if bound > 0 {
            self.set_timer(Timer::ModelDeadline, self.now.saturating_add(bound));
        }
        self.effects.push(Effect::DecideChatError { call, error });
    }

    /// The host's answer to `Effect::DecideChatError` (ignored unless the
    /// turn still waits for this one: a cancelled turn has ended).
    pub(in crate::core) fn on_chat_error_decided(
        &mut self,
        call: CallId,
        disposition: ErrorDisposition,
    ) {
        let failed = match self.active.as_ref().map(|a| &a.phase) {
            Some(TurnPhase::DecidingError {
                call: asked,
                failed,
            }) if *asked == call => failed.clone(),
            _ => return,
        };
        self.clear_timer(Timer::ModelDeadline);
        self.apply_error_disposition(failed, disposition, None);
    }

    /// Whether the turn waits for the host's `on_chat_error`.
    pub(in crate::core::turn) fn deciding_error(&self) -> bool {
        matches!(
            self.active.as_ref().map(|a| &a.phase),
            Some(TurnPhase::DecidingError { .. })
        )
    }

    /// `on_chat_error` did not answer within the model call's deadline: the
    /// turn ends with the call's error.
    pub(in crate::core::turn) fn on_error_decision_overrun(&mut self) {
        let text = match self.active.as_ref().map(|a| &a.phase) {
            Some(TurnPhase::DecidingError { failed, .. }) => failed.text.clone(),
            _ => return,
        };
        self.end_turn(Outcome::Error, Some(text));
    }

    /// A retry the call allows waits at least its backoff (at most the
    /// longest wait a provider may ask for), then sends it again; anything
    /// else ends the turn. `abort`: the failed call still streams.
    pub(in crate::core::turn) fn apply_error_disposition(
        &mut self,
        failed: FailedCall,
        disposition: ErrorDisposition,
        abort: Option<CallId>,
    ) {
        let FailedCall {
            request,
            text,
            backoff,
        } = failed;
        match (disposition, backoff) {
            (ErrorDisposition::Retry { after_ms }, Some(backoff)) => {
                let wait = after_ms.clamp(backoff, backoff.max(crate::model::MAX_RETRY_AFTER_MS));
                let request_id = self
                    .active
                    .as_ref()
                    .map(|a| a.turn.request_id.clone())
                    .unwrap_or_default();
                self.log(LogEvent::ModelRetry {
                    request_id,
                    attempt: request.retries + 1,
                    delay_ms: wait,
                    reason: text,
                });
                self.enter_waiting_to_retry(request, self.now + wait);
                if let Some(call) = abort {
                    self.effects.push(Effect::AbortModel { call });
                }
            }
            _ => self.end_turn(Outcome::Error, Some(text)),
        }
    }
}
