//! One step's model call: the request built from the transcript, the events
//! of its stream turned into chunks (text, reasoning, tool calls), the stall
//! check, and what a failed call does (retry after a backoff when transient
//! and nothing was streamed yet, else end the turn with the error).

use crate::model::{FinishReason, ModelEvent, ModelFailure, ModelRequest};
use crate::protocol::{Outcome, UIMessage, UIMessageChunk};

use super::accumulator::has_content;
use super::context::{model_messages, turn_tools};
use super::effects::{CallId, Effect, Timer};
use super::stream::StepCall;
use super::Core;

impl Core {
    pub(super) fn begin_step(&mut self) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        active.step += 1;
        active.calls.clear();
        active.finish_reason = None;
        active.step_retries = 0;
        let system = active.system.clone();
        self.emit(UIMessageChunk::StartStep);
        let Some(active) = self.active.as_ref() else {
            return;
        };
        // The answer being written replaces its stored copy (a recovery continues one).
        let mut context: Vec<&UIMessage> = self
            .transcript
            .before(active.seq)
            .filter(|m| m.id != active.message.id)
            .collect();
        if has_content(&active.message) {
            context.push(&active.message);
        }
        let request = ModelRequest {
            settings: self.config.model.clone(),
            messages: model_messages(&system, &context),
            tools: turn_tools(&self.config.tools, self.active_client_tools()),
            headers: Vec::new(),
        };
        if let Some(active) = self.active.as_mut() {
            active.step_request = Some(request.clone());
        }
        self.send_model_call(request);
    }

    /// The retry timer fired: send the step's request again on a new call.
    pub(super) fn retry_model_call(&mut self) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        if !active.awaiting_retry {
            return;
        }
        let Some(request) = active.step_request.clone() else {
            return;
        };
        active.awaiting_retry = false;
        self.send_model_call(request);
    }

    /// Sends `request` as a new model call, which becomes the step's current
    /// one; its stall clock starts now.
    fn send_model_call(&mut self, request: ModelRequest) {
        let call = self.next_call_id();
        let now = self.now;
        let Some(active) = self.active.as_mut() else {
            return;
        };
        active.model_call = Some(call);
        active.call_streamed = false;
        active.last_model_event_at = now;
        self.arm_stall_check(now);
        self.effects.push(Effect::CallModel { call, request });
    }

    fn is_current_model_call(&self, call: CallId) -> bool {
        self.active.as_ref().and_then(|a| a.model_call) == Some(call)
    }

    pub(super) fn on_model_event(&mut self, call: CallId, event: ModelEvent) {
        if !self.is_current_model_call(call) {
            return;
        }
        if let Some(active) = self.active.as_mut() {
            active.last_model_event_at = self.now;
            active.call_streamed = true;
        }
        match event {
            ModelEvent::TextDelta(delta) => self.stream_text(delta, false),
            ModelEvent::ReasoningDelta(delta) => self.stream_text(delta, true),
            ModelEvent::ToolCallStarted { index, id, name } => {
                self.close_open_text();
                if let Some(active) = self.active.as_mut() {
                    active.calls.insert(
                        index,
                        StepCall {
                            id: id.clone(),
                            name: name.clone(),
                            arguments: String::new(),
                        },
                    );
                }
                self.emit(UIMessageChunk::ToolInputStart {
                    tool_call_id: id,
                    tool_name: name,
                });
            }
            ModelEvent::ToolCallArgumentsDelta { index, delta } => {
                let Some(call) = self.active.as_mut().and_then(|a| a.calls.get_mut(&index)) else {
                    return;
                };
                call.arguments.push_str(&delta);
                let tool_call_id = call.id.clone();
                self.emit(UIMessageChunk::ToolInputDelta {
                    tool_call_id,
                    input_text_delta: delta,
                });
            }
            ModelEvent::Finished { reason, .. } => self.on_step_streamed(reason),
        }
    }

    fn stream_text(&mut self, delta: String, reasoning: bool) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let (open, other) = if reasoning {
            (&active.reasoning_open, active.text_open.is_some())
        } else {
            (&active.text_open, active.reasoning_open.is_some())
        };
        let open_id = open.clone();
        if other {
            self.close_open_text();
        }
        let id = match open_id {
            Some(id) => id,
            None => {
                let Some(active) = self.active.as_mut() else {
                    return;
                };
                let id = active.part_id(if reasoning { "reasoning" } else { "text" });
                if reasoning {
                    active.reasoning_open = Some(id.clone());
                    self.emit(UIMessageChunk::ReasoningStart { id: id.clone() });
                } else {
                    active.text_open = Some(id.clone());
                    self.emit(UIMessageChunk::TextStart { id: id.clone() });
                }
                id
            }
        };
        self.emit(if reasoning {
            UIMessageChunk::ReasoningDelta { id, delta }
        } else {
            UIMessageChunk::TextDelta { id, delta }
        });
    }

    fn close_open_text(&mut self) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let text = active.text_open.take();
        let reasoning = active.reasoning_open.take();
        if let Some(id) = reasoning {
            self.emit(UIMessageChunk::ReasoningEnd { id });
        }
        if let Some(id) = text {
            self.emit(UIMessageChunk::TextEnd { id });
        }
    }

    /// The model finished a step: route each tool call (server run, approval,
    /// client) and end the step once every server tool is done.
    fn on_step_streamed(&mut self, reason: FinishReason) {
        self.close_open_text();
        let Some(active) = self.active.as_mut() else {
            return;
        };
        active.model_call = None;
        active.finish_reason = Some(reason);
        let calls: Vec<StepCall> = std::mem::take(&mut active.calls).into_values().collect();
        let mut handled = Vec::with_capacity(calls.len());
        for call in calls {
            self.route_tool_call(&call);
            handled.push(call);
        }
        if let Some(active) = self.active.as_mut() {
            active.calls = handled
                .into_iter()
                .enumerate()
                .map(|(i, c)| (i as u32, c))
                .collect();
        }
        self.maybe_finish_step();
    }

    /// One timer per stall window (not one per token): when it fires early
    /// because events kept coming, it is re-armed from the last event.
    fn arm_stall_check(&mut self, from: u64) {
        let timeout = self.config.limits.model_stall_timeout_ms;
        if timeout > 0 {
            self.set_timer(Timer::ModelStall, from + timeout);
        }
    }

    pub(super) fn on_model_stall_check(&mut self) {
        let Some(active) = self.active.as_ref() else {
            return;
        };
        if active.model_call.is_none() {
            return;
        }
        let timeout = self.config.limits.model_stall_timeout_ms;
        let last = active.last_model_event_at;
        if self.now.saturating_sub(last) >= timeout {
            let text = format!(
                "The model stream stalled: nothing arrived for {} s.",
                timeout as f64 / 1000.0
            );
            self.end_turn(Outcome::Error, Some(text));
        } else {
            self.arm_stall_check(last);
        }
    }

    /// A transient failure before the call streamed anything is retried after
    /// a backoff (the turn stays open and cancellable); anything else ends the
    /// turn with the failure's text.
    pub(super) fn on_model_failed(&mut self, call: CallId, failure: ModelFailure) {
        if !self.is_current_model_call(call) {
            return;
        }
        let policy = self.config.model_retry;
        let now = self.now;
        if let Some(active) = self.active.as_mut() {
            let delay = (failure.transient && !active.call_streamed)
                .then(|| policy.delay(active.step_retries + 1, failure.retry_after_ms))
                .flatten();
            if let Some(delay) = delay {
                active.step_retries += 1;
                active.model_call = None;
                active.awaiting_retry = true;
                self.set_timer(Timer::ModelRetry, now + delay);
                return;
            }
        }
        self.end_turn(Outcome::Error, Some(failure.text));
    }
}
