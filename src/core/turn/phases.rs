//! The running turn: its phase (being prepared by the agent's `before_turn`,
//! running approved calls, calling the model,
//! waiting to retry, running the step's tools) with every transition between
//! phases in this file, how a turn starts, how a step ends and whether
//! another follows, and how the turn ends (stored, aborted or abandoned).
//! The model call of a step is in `model_call.rs`, tool routing in
//! `tools.rs`, the streamed chunks in `chunk_log.rs`, terminal frames in
//! `terminal.rs`.

use std::collections::BTreeMap;

use crate::model::{FinishReason, Usage};
use crate::protocol::{server, Outcome, UIMessage, UIMessageChunk};

use crate::core::contract::effects::{Effect, StoreOp, Timer};
use crate::core::contract::log_event::{LogEvent, TurnEnd};
use crate::core::data::accumulator::{close_dangling_text, has_content};
use crate::core::data::context_window;
use crate::core::data::queue::QueuedTurn;
use crate::core::data::token_budget::estimated_tokens;
use crate::core::logging::trigger_label;
use crate::core::rows::persisted::StreamRecord;
use crate::core::turn::active::ChunkLog;
use crate::core::turn::active::{
    ActiveTurn, ModelCall, OpenParts, StepCall, StepEnd, StepRequest, TurnPhase,
};
use crate::core::turn::hand_back::HandedBack;
use crate::core::vocab::hooks::ChatResponse;
use crate::core::vocab::ids::CallId;
use crate::core::vocab::ids::IdKind;
use crate::core::vocab::log_level::LogLevel;
use crate::core::vocab::turn_config::{TurnConfig, TurnSettings};
use crate::core::Core;

impl Core {
    /// The request id a resuming tab would be offered, if a stream is replayable.
    pub(in crate::core) fn live_stream_id(&self) -> Option<String> {
        match (&self.active, self.recovery.cut_stream()) {
            (Some(a), _) => Some(a.turn.request_id.clone()),
            (None, Some(o)) => Some(o.record.request_id.clone()),
            _ => None,
        }
    }

    pub(in crate::core) fn start_turn(&mut self, turn: QueuedTurn) {
        let continuation = turn.is_continuation();
        let repaired = self.transcript.repair_unanswered(continuation);
        for entry in &repaired {
            self.put_entry(entry);
        }
        if !repaired.is_empty() {
            self.broadcast_transcript(None);
        }
        let settings = self.turn_settings();
        // `before_turn` prepares every turn, awaited by the host.
        let prepare_call = self.next_call_id();
        let context = self.turn_context(&turn);
        let resumed = turn
            .resume_message
            .as_deref()
            .and_then(|id| self.transcript.get(id));
        let message = match resumed {
            Some(message) => message,
            None => UIMessage::assistant(self.new_id(IdKind::Message)),
        };
        let message_id = message.id.clone();
        let seq = self.transcript.take_reserved(&turn.request_id);
        self.note_turn_depth(turn.delegation_depth);
        self.store(StoreOp::OpenStream(StreamRecord {
            request_id: turn.request_id.clone(),
            message_id: message_id.clone(),
            continuation,
            origin_message_ids: turn.message_ids.clone(),
            started_at: self.now,
            recovery_root: turn.recovery_root.clone(),
        }));
        let heartbeat_at = self.now + self.config.settings.recovery.heartbeat_ms;
        self.set_timer(Timer::Heartbeat, heartbeat_at);
        // The cut stream stays on offer while its recovery runs (`join_recovery.rs`).
        if !turn.is_recovery() {
            self.recovery.new_stream();
        }
        let request_id = turn.request_id.clone();
        let start_metadata = self.start_metadata(&turn);
        let by = self.started_by(&turn);
        let spender = self.spender_of(&by);
        self.log(LogEvent::TurnStarted {
            request_id: request_id.clone(),
            trigger: trigger_label(&turn),
            queued: self.queue.len(),
            waited_ms: self.now.saturating_sub(turn.submitted_at),
            by,
        });
        self.active = Some(ActiveTurn {
            turn,
            message,
            seq,
            settings,
            steps: 0,
            phase: TurnPhase::Preparing(prepare_call),
            running_tools: BTreeMap::new(),
            open: OpenParts::default(),
            log: ChunkLog::default(),
            model_bytes: 0,
            started_at: self.now,
            usage: None,
            step_settings: None,
            last_step_tools: Vec::new(),
            spender,
            spent: Default::default(),
            requester_updated: false,
        });
        // Tabs waiting for this stream are offered it; they get chunks after their ACK.
        for conn in self.conns.take_parked() {
            self.conns.offer_resume(&conn);
            self.send_to(vec![conn], server::stream_resuming(&request_id, None));
        }
        self.emit(UIMessageChunk::Start {
            message_id: (!continuation).then_some(message_id),
            message_metadata: start_metadata,
        });
        self.effects.push(Effect::PrepareTurn {
            turn: prepare_call,
            context,
        });
    }

    /// The turn is prepared: a continuation first runs the calls a person
    /// approved, then the model speaks.
    pub(in crate::core::turn) fn run_turn(&mut self) {
        if self.active.as_ref().is_some_and(|a| a.continuation()) && self.run_approved_calls() {
            return;
        }
        self.begin_step();
    }

    /// The agent's settings for a turn (what its `before_turn` chooses is
    /// applied when the host answers `Effect::PrepareTurn`).
    fn turn_settings(&self) -> TurnSettings {
        TurnSettings {
            system: self.config.system_prompt.clone(),
            max_steps: self.config.settings.max_steps.max(1),
            model: self.config.settings.model.clone(),
            headers: Vec::new(),
            tools: None,
            add_tools: Vec::new(),
            remove_tools: Vec::new(),
            tool_choice: None,
            stop_when: self.config.settings.stop_when.clone(),
            step_tools: None,
        }
    }

    /// Phase transition: `before_turn` answered for the turn being prepared,
    /// its settings take what it chose and the turn runs. An answer for a
    /// turn cancelled, cleared or lost to an eviction meanwhile is ignored.
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

    /// Phase transition: the step's model call starts (a step's first call or a retry).
    pub(in crate::core::turn) fn enter_calling_model(&mut self, mut request: StepRequest) {
        let first_call = request.retries == 0 && !request.narrowed;
        if first_call && self.enter_summarizing(&request) {
            return;
        }
        let Some(mut model_request) =
            self.step_request(request.budget, first_call || request.narrowed)
        else {
            return;
        };
        if request.without_files {
            crate::model::files::files_as_notes(&mut model_request);
        }
        request.sent_files = model_request.messages.iter().any(
            |m| matches!(m, crate::model::ModelMessage::User { files, .. } if !files.is_empty()),
        );
        request.sent_bytes = context_window::estimated_bytes(&model_request.messages);
        if first_call && self.logs(LogLevel::Debug) {
            if let Some(active) = self.active.as_ref() {
                let event = LogEvent::StepStarted {
                    request_id: active.turn.request_id.clone(),
                    step: active.steps,
                    context_bytes: request.sent_bytes,
                };
                self.log(event);
            }
        }
        let id = self.next_call_id();
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let streamed_from = active.model_bytes;
        active.phase = TurnPhase::CallingModel(ModelCall {
            id,
            request,
            streamed: false,
            calls: BTreeMap::new(),
            streamed_from,
        });
        self.clear_timer(Timer::ModelRetry);
        self.arm_stall_check();
        let deadline = self.config.settings.limits.model_call_timeout_ms;
        if deadline > 0 {
            self.set_timer(Timer::ModelDeadline, self.now.saturating_add(deadline));
        }
        self.effects.push(Effect::CallModel {
            call: id,
            request: Box::new(model_request),
        });
    }

    /// Phase transition: the model call failed transiently and is sent again at `at`.
    pub(in crate::core::turn) fn enter_waiting_to_retry(
        &mut self,
        mut request: StepRequest,
        at: u64,
    ) {
        request.retries += 1;
        self.leave_model_call(TurnPhase::WaitingToRetry(request));
        self.set_timer(Timer::ModelRetry, at);
    }

    /// Phase transition: the model finished the step; the calls it streamed
    /// are returned for routing.
    pub(in crate::core::turn) fn enter_running_tools(
        &mut self,
        finish_reason: FinishReason,
        usage: Option<Usage>,
    ) -> Vec<StepCall> {
        let Some(active) = self.active.as_mut() else {
            return Vec::new();
        };
        let streamed = active.model_bytes;
        let (calls, estimate) = match &mut active.phase {
            TurnPhase::CallingModel(call) => (
                std::mem::take(&mut call.calls),
                estimated_tokens(
                    call.request.sent_bytes,
                    streamed.saturating_sub(call.streamed_from),
                ),
            ),
            _ => (BTreeMap::new(), 0),
        };
        self.count_step_usage(usage);
        let tokens = usage.map_or(estimate, |u| u.total_tokens());
        if let Some(active) = self.active.as_mut() {
            active.spent.spend(self.now, tokens);
            let spender = active.spender.clone();
            self.spend_tokens(&spender, tokens);
        }
        self.leave_model_call(TurnPhase::RunningTools(StepEnd {
            finish_reason,
            called_tools: !calls.is_empty(),
            tool_names: calls.values().map(|c| c.name.clone()).collect(),
            usage,
            waits_on_person: false,
        }));
        calls.into_values().collect()
    }

    /// Phase transition out of calling the model: the call's stall check and
    /// deadline go with it. Returns the call that was in flight, if any.
    pub(in crate::core::turn) fn leave_model_call(&mut self, next: TurnPhase) -> Option<CallId> {
        let left = self.active.as_mut()?.replace_phase(next);
        self.clear_timer(Timer::ModelStall);
        self.clear_timer(Timer::ModelDeadline);
        left
    }

    /// A call of this step waits for a person: no further step follows.
    pub(in crate::core::turn) fn note_waiting_on_person(&mut self) {
        if let Some(TurnPhase::RunningTools(end)) = self.active.as_mut().map(|a| &mut a.phase) {
            end.waits_on_person = true;
        }
    }

    /// A tool run ended: the phase moves on once nothing runs any more — the
    /// model speaks after the approved calls, and a step ends after its tools.
    pub(in crate::core::turn) fn maybe_finish_step(&mut self) {
        let Some(active) = self.active.as_ref() else {
            return;
        };
        if !active.running_tools.is_empty() {
            return;
        }
        let (end, more) = match &active.phase {
            TurnPhase::RunningApprovedCalls => {
                self.begin_step();
                return;
            }
            TurnPhase::Preparing(_)
            | TurnPhase::CallingModel(_)
            | TurnPhase::WaitingToRetry(_)
            | TurnPhase::DecidingError { .. }
            | TurnPhase::Summarizing { .. } => return,
            TurnPhase::RunningTools(end) => (
                end.clone(),
                end.called_tools
                    && !end.waits_on_person
                    && active.steps < active.settings.max_steps
                    && !active.settings.stops_after(active.steps, &end.tool_names),
            ),
        };
        self.emit(UIMessageChunk::FinishStep);
        self.report_step_end(&end, more);
        if let Some(active) = self.active.as_mut() {
            active.last_step_tools = end.tool_names.clone();
        }
        if more {
            self.begin_step();
            return;
        }
        if let Err(text) = self.check_structured_output() {
            self.end_turn(Outcome::Error, Some(text));
            return;
        }
        let message_metadata = self.finish_metadata();
        self.emit(UIMessageChunk::Finish {
            finish_reason: Some(finish_reason_text(end.finish_reason).to_string()),
            message_metadata,
        });
        self.end_turn(Outcome::Completed, None);
    }

    /// Ends the active turn: persist the answer, send the transcript, then the
    /// terminal frame; what runs next is decided once the event is done
    /// (handed back: `turn/hand_back.rs`).
    pub(in crate::core) fn end_turn(&mut self, outcome: Outcome, error: Option<String>) {
        let Some(turn) = self.close_turn(outcome, error) else {
            return;
        };
        self.handed_back.push(HandedBack::TurnEnded {
            recovery: turn.is_recovery(),
        });
    }

    /// Ends the active turn's stream (the answer persisted, the transcript
    /// and the terminal frame sent, a failure recorded) and returns the
    /// ended turn; starts nothing.
    pub(in crate::core) fn close_turn(
        &mut self,
        outcome: Outcome,
        error: Option<String>,
    ) -> Option<QueuedTurn> {
        let waits_on_person = matches!(
            self.active.as_ref().map(|a| &a.phase),
            Some(TurnPhase::RunningTools(StepEnd {
                waits_on_person: true,
                ..
            }))
        );
        let mut active = self.take_active()?;
        let end = match outcome {
            Outcome::Completed if waits_on_person => TurnEnd::WaitingForPerson,
            Outcome::Completed | Outcome::Skipped => TurnEnd::Completed,
            Outcome::Aborted => TurnEnd::Aborted,
            Outcome::Error => TurnEnd::Failed,
            Outcome::Recovering => TurnEnd::Recovering,
        };
        self.log_turn_ended(&active, end, error.clone());
        let request_id = active.turn.request_id.clone();
        let continuation = active.continuation();
        let message_ids = active.turn.message_ids.clone();
        if let Some(text) = &error {
            let to = self.conns.chat();
            self.send_turn_error(to, &request_id, text, &message_ids, continuation);
        }
        close_dangling_text(&mut active.message);
        let persist = has_content(&active.message)
            && !(outcome == Outcome::Error
                && !active.log.saw_delta
                && active.message.tool_parts().next().is_none());
        if persist {
            let entry = self
                .transcript
                .insert_at(active.seq, active.message.clone());
            self.put_entry(&entry);
        }
        let response = ChatResponse {
            request_id: request_id.clone(),
            trigger: active.turn.trigger,
            continuation,
            outcome,
            message_ids: message_ids.clone(),
            answer_id: persist.then(|| active.message.id.clone()),
            error: error.clone(),
            usage: active.usage,
            steps: active.steps,
        };
        self.store(StoreOp::CloseStream {
            request_id: request_id.clone(),
        });
        // A turn that ends `recovering` is not over: its recovery continues
        // the answer, and the author hears of it once, when that one ends.
        // The report is owed in the same batch as the answer's save.
        let reported = outcome != Outcome::Recovering;
        if reported {
            self.owe_response(&response);
        }
        if persist {
            self.send_turn_end_lists(&active.turn, outcome, active.seq, active.requester_updated);
        }
        self.remember_finished(&request_id, &message_ids, outcome);
        self.ended.closed(crate::core::turn::active::ClosedTurn {
            request_id: request_id.clone(),
            message_ids: message_ids.clone(),
            continuation,
        });
        let to = self.conns.chat();
        self.request_ended(to, &request_id, outcome, Some(&message_ids), continuation);
        if let Some(text) = error {
            let chunks = active.log.bodies.iter().map(|b| b.to_string()).collect();
            self.record_terminal_error(request_id, text, message_ids, chunks, continuation);
        }
        if reported {
            self.effects.push(Effect::TurnEnded(response));
        }
        Some(active.turn)
    }

    /// A clear while a turn runs: it ends `aborted` and nothing of it is kept.
    pub(in crate::core) fn abandon_turn(&mut self) {
        let Some(active) = self.take_active() else {
            return;
        };
        self.log_turn_ended(&active, TurnEnd::Aborted, Some("history cleared".into()));
        let continuation = active.continuation();
        let message_ids = (!continuation).then_some(active.turn.message_ids.clone());
        let to = self.conns.chat();
        self.request_ended(
            to,
            &active.turn.request_id,
            Outcome::Aborted,
            message_ids.as_deref(),
            continuation,
        );
        let response = ChatResponse {
            request_id: active.turn.request_id.clone(),
            trigger: active.turn.trigger,
            continuation,
            outcome: Outcome::Aborted,
            message_ids: active.turn.message_ids.clone(),
            answer_id: None,
            error: None,
            usage: active.usage,
            steps: active.steps,
        };
        // Owed before the clear that called this, whose delete keeps the
        // owed reports' row.
        self.report_response(response);
    }

    /// Takes the active turn out, stopping what only it needed: its model
    /// call, its timers, its written-down approvals and pending resume offers.
    fn take_active(&mut self) -> Option<ActiveTurn> {
        let mut active = self.active.take()?;
        if let Some(call) = active.replace_phase(TurnPhase::RunningApprovedCalls) {
            self.effects.push(Effect::AbortModel { call });
        }
        let given_up: Vec<CallId> = active
            .running_tools
            .values()
            .filter(|run| run.remote.is_none())
            .map(|run| run.call)
            .collect();
        if !given_up.is_empty() {
            self.effects.push(Effect::AbortTools { calls: given_up });
        }
        let deadlines = active
            .running_tools
            .values()
            .map(|run| Timer::ToolDeadline(run.call));
        for timer in [
            Timer::FlushChunks,
            Timer::Heartbeat,
            Timer::ModelStall,
            Timer::ModelRetry,
            Timer::ModelDeadline,
        ]
        .into_iter()
        .chain(deadlines.collect::<Vec<_>>())
        {
            self.clear_timer(timer);
        }
        self.forget_stream_approvals();
        self.conns.clear_pending_resume();
        if active.turn.is_recovery() {
            self.retire_cut_stream();
        }
        Some(active)
    }

    /// The recovery turn closed: the cut stream it recovered is no longer
    /// offered, and a late ACK for it is answered like one for any ended
    /// request, with the outcome its own replay ends with (`aborted`),
    /// whenever the ACK comes.
    fn retire_cut_stream(&mut self) {
        if let Some(cut) = self.recovery.recovery_turn_closed() {
            let ids = cut.record.origin_message_ids;
            self.remember_finished(&cut.record.request_id, &ids, Outcome::Aborted);
        }
    }

    fn log_turn_ended(&mut self, active: &ActiveTurn, end: TurnEnd, reason: Option<String>) {
        self.log(LogEvent::TurnEnded {
            request_id: active.turn.request_id.clone(),
            end,
            steps: active.steps,
            duration_ms: self.now.saturating_sub(active.started_at),
            model_bytes: active.model_bytes,
            usage: active.usage,
            reason,
        });
    }

    pub(in crate::core::turn) fn remember_finished(
        &mut self,
        request_id: &str,
        message_ids: &[String],
        outcome: Outcome,
    ) {
        self.ended
            .remember_finished(request_id, message_ids, outcome);
    }
}

fn finish_reason_text(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool-calls",
        FinishReason::ContentFilter => "content-filter",
        FinishReason::Other => "other",
    }
}
