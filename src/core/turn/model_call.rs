//! One step's model call: the request built from the transcript, the events
//! of its stream turned into chunks (text, reasoning, tool calls), the stall
//! check, and what a failed call does (retry after a backoff when transient
//! and nothing was streamed yet; asked again once with less context when the
//! provider says the request is too long; else the agent's `on_chat_error`
//! may send it again within the same budget, or the turn ends). Phase
//! changes go through the transitions in `phases.rs`.

use crate::model::{FinishReason, ModelEvent, ModelFailure, ModelMessage, ModelRequest, Usage};
use crate::protocol::{Outcome, UIMessage, UIMessageChunk};

use crate::core::contract::effects::Timer;
use crate::core::contract::log_event::LogEvent;
use crate::core::data::accumulator::has_content;
use crate::core::data::context::{finish_model_messages, model_messages, turn_tools};
use crate::core::data::context_window;
use crate::core::turn::active::{FailedCall, ModelCall, StepCall, StepRequest, TurnPhase};
use crate::core::turn::context_cut::ContextBounds;
use crate::core::vocab::hooks::ChatError;
use crate::core::vocab::ids::CallId;
use crate::core::vocab::step_config::{StepConfig, StepContext};
use crate::core::vocab::turn_config::TurnTrigger;
use crate::core::Core;

/// A turn whose request the model refused as too long, even with half of it left out.
pub const CONTEXT_TOO_LONG: &str =
    "The conversation is too long for the model, even with older messages left out";

impl Core {
    pub(in crate::core::turn) fn begin_step(&mut self) {
        // Every turn's every step, however it was asked for (a tab, a
        // parent, a submission, the agent's own code, a continuation).
        let allowed = match self.active.as_ref() {
            Some(active) => self.tokens_allow(&active.spender, Some(&active.spent)),
            None => Ok(()),
        };
        if let Err(text) = allowed {
            self.end_turn(Outcome::Error, Some(text));
            return;
        }
        let Some(active) = self.active.as_mut() else {
            return;
        };
        active.steps += 1;
        self.emit(UIMessageChunk::StartStep);
        self.prepare_step();
        self.enter_calling_model(StepRequest {
            budget: self.config.settings.context.max_bytes,
            sent_bytes: 0,
            retries: 0,
            narrowed: false,
            sent_files: false,
            without_files: false,
        });
    }

    /// The step's request: the conversation up to the answer being written
    /// (which replaces its stored copy: a recovery continues one), within
    /// `context_budget` bytes (see `context_window.rs`; 0: no bound). A
    /// window that leaves out another number of messages than the last one
    /// logged is logged when `log_trim`.
    pub(in crate::core::turn) fn step_request(
        &mut self,
        context_budget: usize,
        log_trim: bool,
    ) -> Option<ModelRequest> {
        let compacted = self.compacted_step_context(context_budget);
        let (request, omitted) = self.build_step_request(context_budget, compacted)?;
        // Logged when the cut moves: a long conversation trims every request.
        if omitted > 0 && log_trim && self.compaction.cut_moved(omitted) {
            let request_id = self.active.as_ref()?.turn.request_id.clone();
            self.log(LogEvent::ContextTrimmed {
                request_id,
                omitted,
                kept_bytes: context_window::estimated_bytes(&request.messages),
                budget: context_budget,
            });
        }
        Some(request)
    }

    /// The step's request and how many messages its window left out
    /// (`compacted`: the messages with a summary, when the agent compacts).
    fn build_step_request(
        &self,
        context_budget: usize,
        compacted: Option<Vec<ModelMessage>>,
    ) -> Option<(ModelRequest, usize)> {
        let active = self.active.as_ref()?;
        let mut context: Vec<&UIMessage> = self
            .transcript
            .before(active.seq)
            .filter(|m| m.id != active.message.id)
            .collect();
        if has_content(&active.message) {
            context.push(&active.message);
        }
        let turn = active.step_settings();
        let system = self.system_with_blocks(&turn.system);
        let (messages, earlier) = match compacted {
            Some(messages) => (messages, 0),
            None => {
                let bounds = ContextBounds {
                    bytes: context_budget,
                    messages: self.config.settings.context.max_messages,
                };
                let cut = self.cut_context(&system, &context, bounds);
                let mut messages = model_messages(&system, &[]);
                messages.extend(cut.messages);
                finish_model_messages(&mut messages);
                (messages, cut.omitted)
            }
        };
        let client_tools = self.active_client_tools();
        let mut tools = turn_tools(&self.config.tools, client_tools);
        tools.retain(|t| turn.offers(&t.name, self.opt_in_only(&t.name, client_tools)));
        let (messages, omitted) = context_window::fit_after(messages, context_budget, earlier);
        let request = ModelRequest {
            settings: turn.model.clone(),
            messages,
            tool_choice: (!tools.is_empty())
                .then(|| turn.tool_choice.clone())
                .flatten(),
            tools,
            headers: turn.headers.clone(),
        };
        Some((request, omitted))
    }

    /// Asks `before_step` (when the agent has one) what the step about to
    /// start changes; the step's request and its tool routing use it.
    fn prepare_step(&mut self) {
        let Some(hook) = self.config.hooks.before_step.clone() else {
            return;
        };
        let Some(active) = self.active.as_mut() else {
            return;
        };
        active.step_settings = None;
        let context = StepContext {
            request_id: active.turn.request_id.clone(),
            trigger: active.turn.trigger,
            step: active.steps,
            model: active.settings.model.model.clone(),
            previous_tool_calls: active.last_step_tools.clone(),
            usage: active.usage,
        };
        let config = hook(&context);
        if config != StepConfig::default() {
            active.step_settings = Some(config.applied_to(&active.settings));
        }
    }

    /// A server tool offered only when a turn adds it (a client tool of the
    /// same name that replaces it is offered as usual).
    pub(in crate::core::turn) fn opt_in_only(
        &self,
        name: &str,
        client_tools: &[crate::protocol::ClientToolSchema],
    ) -> bool {
        self.config.tool(name).is_some_and(|t| t.opt_in)
            && !self.config.routes_to_client(name, client_tools)
    }

    /// The step's messages with a summary in place of what does not fit
    /// (see `compaction.rs`), when the agent summarizes.
    fn compacted_step_context(&mut self, budget: usize) -> Option<Vec<crate::model::ModelMessage>> {
        if !self.config.summarize_by_host {
            return None;
        }
        let (system, recent) = self.step_conversation()?;
        self.compacted_context(&system, &recent, budget)
    }

    /// The step's system prompt and the window's messages before the answer
    /// (with the answer so far), with their places, oldest first.
    pub(in crate::core::turn) fn step_conversation(
        &self,
    ) -> Option<(String, Vec<(u64, UIMessage)>)> {
        let active = self.active.as_ref()?;
        let mut recent: Vec<(u64, UIMessage)> = self
            .transcript
            .entries_before(active.seq)
            .filter(|(_, m)| m.id != active.message.id)
            .map(|(seq, m)| (seq, m.clone()))
            .collect();
        if has_content(&active.message) {
            recent.push((active.seq, active.message.clone()));
        }
        Some((
            self.system_with_blocks(&active.step_settings().system),
            recent,
        ))
    }

    /// The provider refused the request as too long for the model: the step
    /// is asked again once, with half the context the refused request held.
    /// Returns false when that was tried already (the turn then fails).
    fn retry_with_less_context(&mut self, refused: &StepRequest, reason: &str) -> bool {
        let sent = refused.sent_bytes;
        let budget = sent / 2;
        if refused.narrowed || budget == 0 {
            return false;
        }
        if let Some(active) = self.active.as_ref() {
            let event = LogEvent::ContextOverflow {
                request_id: active.turn.request_id.clone(),
                sent_bytes: sent,
                budget,
                reason: reason.to_string(),
            };
            self.log(event);
        }
        self.enter_calling_model(StepRequest {
            budget,
            sent_bytes: sent,
            retries: refused.retries,
            narrowed: true,
            sent_files: false,
            without_files: refused.without_files,
        });
        self.active.as_ref().and_then(|a| a.model_call()).is_some()
    }

    /// The retry timer fired: send the step's request again on a new call.
    fn retry_model_call(&mut self) {
        let request = match self.active.as_ref().map(|a| &a.phase) {
            Some(TurnPhase::WaitingToRetry(request)) => request.clone(),
            _ => return,
        };
        self.enter_calling_model(request);
    }

    /// The step's model call in flight, if it is `call`.
    fn current_model_call(&self, call: CallId) -> Option<&ModelCall> {
        self.active
            .as_ref()
            .and_then(|a| a.model_call())
            .filter(|c| c.id == call)
    }

    pub(in crate::core) fn on_model_event(&mut self, call: CallId, event: ModelEvent) {
        let Some(current) = self
            .active
            .as_mut()
            .and_then(|a| a.model_call_mut())
            .filter(|c| c.id == call)
        else {
            return;
        };
        let first = !std::mem::replace(&mut current.streamed, true);
        self.arm_stall_check();
        let bytes = match &event {
            ModelEvent::TextDelta(d) | ModelEvent::ReasoningDelta(d) => d.len(),
            ModelEvent::ToolCallArgumentsDelta { delta, .. } => delta.len(),
            _ => 0,
        };
        if !self.count_model_bytes(bytes) {
            return;
        }
        self.apply_model_event(event);
        if first {
            self.update_requester_list();
        }
    }

    /// One event of the step's model stream, turned into chunks.
    fn apply_model_event(&mut self, event: ModelEvent) {
        match event {
            ModelEvent::TextDelta(delta) => self.stream_text(delta, false),
            ModelEvent::ReasoningDelta(delta) => self.stream_text(delta, true),
            ModelEvent::ToolCallStarted { index, id, name } => {
                self.close_open_text();
                let id = self.unique_tool_call_id(id);
                if let Some(call) = self.active.as_mut().and_then(|a| a.model_call_mut()) {
                    call.calls.insert(
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
                let Some(call) = self
                    .active
                    .as_mut()
                    .and_then(|a| a.model_call_mut())
                    .and_then(|c| c.calls.get_mut(&index))
                else {
                    return;
                };
                call.arguments.push_str(&delta);
                let tool_call_id = call.id.clone();
                self.emit(UIMessageChunk::ToolInputDelta {
                    tool_call_id,
                    input_text_delta: delta,
                });
            }
            ModelEvent::Finished { reason, usage } => self.on_step_streamed(reason, usage),
        }
    }

    fn stream_text(&mut self, delta: String, reasoning: bool) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let (open, other) = if reasoning {
            (&active.open.reasoning, active.open.text.is_some())
        } else {
            (&active.open.text, active.open.reasoning.is_some())
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
                let id = active
                    .open
                    .new_id(if reasoning { "reasoning" } else { "text" });
                if reasoning {
                    active.open.reasoning = Some(id.clone());
                    self.emit(UIMessageChunk::ReasoningStart { id: id.clone() });
                } else {
                    active.open.text = Some(id.clone());
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
        let text = active.open.text.take();
        let reasoning = active.open.reasoning.take();
        if let Some(id) = reasoning {
            self.emit(UIMessageChunk::ReasoningEnd { id });
        }
        if let Some(id) = text {
            self.emit(UIMessageChunk::TextEnd { id });
        }
    }

    /// The model finished a step: route each tool call (server run, approval,
    /// client) and end the step once every server tool is done.
    fn on_step_streamed(&mut self, reason: FinishReason, usage: Option<Usage>) {
        self.close_open_text();
        let calls = self.enter_running_tools(reason, usage);
        let limit = self.config.settings.limits.max_tool_calls_per_step;
        for (n, call) in calls.iter().enumerate() {
            if limit > 0 && n >= limit {
                let text = format!(
                    "Too many tool calls in one step (limit {limit}); this one was not run."
                );
                self.refuse_tool_call(call, text);
            } else {
                self.route_tool_call(call);
            }
        }
        self.maybe_finish_step();
    }

    /// The stall check is due one stall window after the call's last event
    /// (moving a deadline in the core's timer table costs the host nothing).
    pub(in crate::core::turn) fn arm_stall_check(&mut self) {
        let timeout = self.config.settings.limits.model_stall_timeout_ms;
        if timeout > 0 {
            self.set_timer(Timer::ModelStall, self.now + timeout);
        }
    }

    pub(in crate::core) fn on_model_timer(&mut self, timer: Timer) {
        match timer {
            Timer::ModelStall => self.on_model_stalled(),
            Timer::ModelRetry => self.retry_model_call(),
            Timer::ModelDeadline if self.deciding_error() => self.on_error_decision_overrun(),
            Timer::ModelDeadline => self.on_model_overrun(format!(
                "The model call did not finish within {} s.",
                self.config.settings.limits.model_call_timeout_ms as f64 / 1000.0
            )),
            _ => {}
        }
    }

    /// The model call ran past a bound: the turn ends with `text`.
    fn on_model_overrun(&mut self, text: String) {
        if self.active.as_ref().and_then(|a| a.model_call()).is_some() {
            self.fail_model_call_in_flight(text, false, None, true);
        }
    }

    /// The step's model call failed for good: the agent's `on_chat_error`
    /// may send it again (when it streamed nothing and the step's retry
    /// budget is left, after at least the policy's backoff); otherwise the
    /// turn ends with `text`.
    fn fail_model_call(&mut self, text: String, transient: bool, retry_after_ms: Option<u64>) {
        self.fail_model_call_in_flight(text, transient, retry_after_ms, false);
    }

    /// As `fail_model_call`; `in_flight`: the call is still streaming (a
    /// stall or an overrun) and is aborted when it is sent again.
    fn fail_model_call_in_flight(
        &mut self,
        text: String,
        transient: bool,
        retry_after_ms: Option<u64>,
        in_flight: bool,
    ) {
        let Some(call) = self.active.as_ref().and_then(|a| a.model_call()) else {
            self.end_turn(Outcome::Error, Some(text));
            return;
        };
        let request = call.request.clone();
        let policy = self.config.settings.model_retry;
        let backoff = (!call.streamed)
            .then(|| policy.delay(request.retries + 1, retry_after_ms))
            .flatten();
        let error = ChatError {
            request_id: self
                .active
                .as_ref()
                .map(|a| a.turn.request_id.clone())
                .unwrap_or_default(),
            trigger: self
                .active
                .as_ref()
                .map_or(TurnTrigger::Submit, |a| a.turn.trigger),
            error: text.clone(),
            transient,
            retryable: backoff.is_some(),
            retries: request.retries,
        };
        let failed = FailedCall {
            request,
            text,
            backoff,
        };
        self.ask_error_disposition(failed, error, in_flight);
    }

    /// Counts what the model streamed in this turn; false (and the turn is
    /// ended) once it passes the limit.
    fn count_model_bytes(&mut self, bytes: usize) -> bool {
        let limit = self.config.settings.limits.max_model_stream_bytes;
        let Some(active) = self.active.as_mut() else {
            return false;
        };
        active.model_bytes = active.model_bytes.saturating_add(bytes);
        if limit > 0 && active.model_bytes > limit {
            self.on_model_overrun(format!(
                "The model streamed more than {limit} bytes in one turn."
            ));
            return false;
        }
        true
    }

    fn on_model_stalled(&mut self) {
        if self.active.as_ref().and_then(|a| a.model_call()).is_none() {
            return;
        }
        let timeout = self.config.settings.limits.model_stall_timeout_ms;
        let text = format!(
            "The model stream stalled: nothing arrived for {} s.",
            timeout as f64 / 1000.0
        );
        self.fail_model_call_in_flight(text, true, None, true);
    }

    /// Whether the running turn's model call `call` streamed anything
    /// (`None`: it is not the current call).
    pub(in crate::core) fn model_call_streamed(&self, call: CallId) -> Option<bool> {
        self.current_model_call(call).map(|c| c.streamed)
    }

    /// A transient failure before the call streamed anything is retried after
    /// a backoff (the turn stays open and cancellable); anything else ends the
    /// turn with the failure's text. (A stream cut after it streamed is
    /// recovery's: `Core::on_model_failure`.)
    pub(in crate::core) fn on_model_failed(&mut self, call: CallId, failure: ModelFailure) {
        let Some(current) = self.current_model_call(call) else {
            return;
        };
        if failure.context_overflow && !current.streamed {
            let refused = current.request.clone();
            if self.retry_with_less_context(&refused, &failure.text) {
                return;
            }
            let text = format!("{CONTEXT_TOO_LONG} ({})", failure.text);
            self.fail_model_call(text, false, None);
            return;
        }
        if !failure.transient
            && !current.streamed
            && current.request.sent_files
            && !current.request.without_files
        {
            // A provider that cannot take a file refuses the whole request:
            // the step is sent once more with each file as a text note.
            let mut request = current.request.clone();
            request.without_files = true;
            request.retries = request.retries.saturating_sub(1);
            if let Some(active) = self.active.as_ref() {
                let event = LogEvent::ModelRetry {
                    request_id: active.turn.request_id.clone(),
                    attempt: request.retries + 1,
                    delay_ms: 0,
                    reason: format!("sent again without its files: {}", failure.text),
                };
                self.log(event);
            }
            self.enter_waiting_to_retry(request, self.now);
            return;
        }
        let policy = self.config.settings.model_retry;
        let delay = (failure.transient && !current.streamed)
            .then(|| policy.delay(current.request.retries + 1, failure.retry_after_ms))
            .flatten();
        match delay {
            Some(delay) => {
                let request = current.request.clone();
                if let Some(active) = self.active.as_ref() {
                    let event = LogEvent::ModelRetry {
                        request_id: active.turn.request_id.clone(),
                        attempt: request.retries + 1,
                        delay_ms: delay,
                        reason: failure.text.clone(),
                    };
                    self.log(event);
                }
                self.enter_waiting_to_retry(request, self.now + delay);
            }
            None => self.fail_model_call(failure.text, failure.transient, failure.retry_after_ms),
        }
    }
}

impl Core {
    /// A provider that omits call ids gets `call_<index>` from the decoder,
    /// which repeats in every step; a call id already used in this turn or
    /// stored gets a suffix (`call_0-2`), so a result or an approval can
    /// only ever reach the call it names.
    fn unique_tool_call_id(&self, id: String) -> String {
        let taken = |candidate: &str| {
            let in_turn = self.active.as_ref().is_some_and(|a| {
                a.message.has_tool_call(candidate)
                    || a.model_call()
                        .is_some_and(|c| c.calls.values().any(|s| s.id == candidate))
            });
            in_turn || self.transcript.has_tool_call(candidate)
        };
        if !taken(&id) {
            return id;
        }
        (2u32..)
            .map(|n| format!("{id}-{n}"))
            .find(|candidate| !taken(candidate))
            .unwrap_or(id)
    }
}
