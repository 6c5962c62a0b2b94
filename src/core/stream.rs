//! One running turn: its state, the agentic loop over steps and server tools
//! (each step's model call is in `model_call.rs`), the chunks it streams
//! (applied to the assistant message, logged with `seq`, broadcast
//! once-serialized), the batched chunk log, and how a turn ends.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use crate::model::{FinishReason, ModelRequest};
use crate::protocol::{server, Outcome, ResponseFrame, UIMessage, UIMessageChunk};

use super::accumulator::{apply_chunk, close_dangling_text, has_content, normalize_input};
use super::config::TurnContext;
use super::effects::{CallId, ConfigKey, ConnId, Effect, StoreOp, StreamRecord, Timer};
use super::ids::IdKind;
use super::turns::QueuedTurn;
use super::{Core, TerminalError};

/// Chunks larger than this are sent live but not logged (and get no `seq`).
const MAX_LOGGED_CHUNK: usize = 1_800_000;

#[derive(Debug)]
pub(super) struct StepCall {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) arguments: String,
}

#[derive(Debug)]
pub(super) struct ActiveTurn {
    pub turn: QueuedTurn,
    pub message: UIMessage,
    /// The answer's place in the transcript, reserved when the turn starts so
    /// it follows the messages it answers even if newer ones arrive meanwhile.
    pub(super) seq: u64,
    pub(super) continuation: bool,
    pub(super) system: String,
    pub(super) max_steps: u32,
    pub(super) step: u32,
    pub(super) model_call: Option<CallId>,
    /// The current step's request, kept to send again after a transient failure.
    pub(super) step_request: Option<ModelRequest>,
    /// Retries of the current step's model call so far.
    pub(super) step_retries: u32,
    /// The current model call has produced at least one event.
    pub(super) call_streamed: bool,
    /// A failed model call waits for `Timer::ModelRetry`.
    pub(super) awaiting_retry: bool,
    pub(super) calls: BTreeMap<u32, StepCall>,
    /// Tool runs in flight, by tool call id: the call and, for a client tool
    /// run by a parent agent, the channel it went to.
    pub(super) running_tools: BTreeMap<String, (CallId, Option<ConnId>)>,
    pub(super) waiting_on_human: bool,
    pub(super) text_open: Option<String>,
    pub(super) reasoning_open: Option<String>,
    pub(super) next_part: u32,
    pub(super) finish_reason: Option<FinishReason>,
    pub(super) last_model_event_at: u64,
    /// Every logged chunk body of this stream, for replay.
    pub log: Vec<Rc<str>>,
    pub(super) flushed: usize,
    pub(super) flush_armed: bool,
    pub(super) saw_delta: bool,
}

impl ActiveTurn {
    pub(super) fn part_id(&mut self, prefix: &str) -> String {
        self.next_part += 1;
        format!("{prefix}-{}", self.next_part)
    }
}

impl Core {
    /// The request id a resuming tab would be offered, if a stream is replayable.
    pub(super) fn live_stream_id(&self) -> Option<String> {
        match (&self.active, &self.orphan) {
            (Some(a), _) => Some(a.turn.request_id.clone()),
            (None, Some(o)) => Some(o.record.request_id.clone()),
            _ => None,
        }
    }

    pub(super) fn start_turn(&mut self, turn: QueuedTurn) {
        let continuation = turn.is_continuation();
        let repaired = self.transcript.repair_unanswered(continuation);
        for entry in &repaired {
            self.put_entry(entry);
        }
        if !repaired.is_empty() {
            self.broadcast_transcript(None);
        }
        let (system, max_steps) = self.turn_settings(&turn);
        let resumed = turn
            .resume_message
            .as_deref()
            .and_then(|id| self.transcript.get(id))
            .cloned();
        let message = match resumed {
            Some(message) => message,
            None => UIMessage::assistant(self.new_id(IdKind::Message)),
        };
        let message_id = message.id.clone();
        let seq = self.transcript.take_reserved(&turn.request_id);
        self.store(StoreOp::OpenStream(StreamRecord {
            request_id: turn.request_id.clone(),
            message_id: message_id.clone(),
            continuation,
            origin_message_ids: turn.message_ids.clone(),
            started_at: self.now,
            recovery_root: turn.recovery_root.clone(),
        }));
        let heartbeat_at = self.now + self.config.recovery.heartbeat_ms;
        self.set_timer(Timer::Heartbeat, heartbeat_at);
        self.orphan = None;
        let request_id = turn.request_id.clone();
        self.active = Some(ActiveTurn {
            turn,
            message,
            seq,
            continuation,
            system,
            max_steps,
            step: 0,
            model_call: None,
            step_request: None,
            step_retries: 0,
            call_streamed: false,
            awaiting_retry: false,
            calls: BTreeMap::new(),
            running_tools: BTreeMap::new(),
            waiting_on_human: false,
            text_open: None,
            reasoning_open: None,
            next_part: 0,
            finish_reason: None,
            last_model_event_at: 0,
            log: Vec::new(),
            flushed: 0,
            flush_armed: false,
            saw_delta: false,
        });
        // Tabs waiting for this stream are offered it; they get chunks after their ACK.
        for conn in self.conns.take_parked() {
            if let Some(state) = self.conns.state_mut(&conn) {
                state.pending_resume = true;
            }
            self.send_to(vec![conn], server::stream_resuming(&request_id, None));
        }
        self.emit(UIMessageChunk::Start {
            message_id: (!continuation).then_some(message_id),
            message_metadata: None,
        });
        if continuation && self.run_approved_calls() {
            return;
        }
        self.begin_step();
    }

    fn turn_settings(&self, turn: &QueuedTurn) -> (String, u32) {
        let mut system = self.config.system_prompt.clone();
        let mut max_steps = self.config.max_steps;
        if let Some(hook) = self.config.before_turn.clone() {
            let messages: Vec<&UIMessage> = self.transcript.iter().collect();
            let config = hook(&TurnContext {
                request_id: &turn.request_id,
                trigger: turn.trigger,
                continuation: turn.is_continuation(),
                messages: &messages,
                client_tools: &self.client_tools,
                body: &self.body,
            });
            system = config.system.unwrap_or(system);
            max_steps = config.max_steps.unwrap_or(max_steps);
        }
        (system, max_steps.max(1))
    }

    /// A continuation first runs the calls a person approved. Returns true if any run.
    fn run_approved_calls(&mut self) -> bool {
        let approved: Vec<(String, String, Value)> = self
            .transcript
            .approved_calls()
            .into_iter()
            .map(|t| {
                let input = t.input.clone().unwrap_or_else(|| serde_json::json!({}));
                (t.tool_call_id.clone(), t.tool_name.clone(), input)
            })
            .collect();
        for (tool_call_id, tool_name, input) in &approved {
            self.run_tool(tool_call_id, tool_name, input.clone(), None);
        }
        !approved.is_empty()
    }

    /// Runs a server tool here, or a client tool on the parent agent's channel.
    fn run_tool(
        &mut self,
        tool_call_id: &str,
        tool_name: &str,
        input: Value,
        remote: Option<ConnId>,
    ) {
        let call = self.next_call_id();
        if let Some(active) = self.active.as_mut() {
            active
                .running_tools
                .insert(tool_call_id.to_string(), (call, remote.clone()));
        }
        let tool_call_id = tool_call_id.to_string();
        let tool_name = tool_name.to_string();
        self.effects.push(match remote {
            Some(conn) => Effect::CallRemoteTool {
                call,
                conn,
                tool_call_id,
                tool_name,
                input,
            },
            None => Effect::RunTool {
                call,
                tool_call_id,
                tool_name,
                input,
            },
        });
    }

    /// The client tools of the active turn: its own (a sub-agent call) or the stored list.
    pub(super) fn active_client_tools(&self) -> &[crate::protocol::ClientToolSchema] {
        match self
            .active
            .as_ref()
            .and_then(|a| a.turn.turn_tools.as_ref())
        {
            Some(tools) => tools,
            None => &self.client_tools,
        }
    }

    /// A parent's channel closed: its client tool runs will never answer.
    pub(super) fn fail_remote_calls(&mut self, conn: &str) {
        let Some(active) = self.active.as_ref() else {
            return;
        };
        let lost: Vec<(CallId, String)> = active
            .running_tools
            .iter()
            .filter(|(_, (_, remote))| remote.as_deref() == Some(conn))
            .map(|(id, (call, _))| (*call, id.clone()))
            .collect();
        for (call, tool_call_id) in lost {
            let text = "The caller went away before the tool returned.".to_string();
            self.on_tool_done(call, &tool_call_id, Err(text));
        }
    }

    pub(super) fn route_tool_call(&mut self, call: &StepCall) {
        let parsed = if call.arguments.trim().is_empty() {
            Ok(serde_json::json!({}))
        } else {
            serde_json::from_str::<Value>(&call.arguments)
        };
        let is_client = self
            .active_client_tools()
            .iter()
            .any(|t| t.name == call.name);
        let executor = self.active.as_ref().and_then(|a| a.turn.executor.clone());
        let spec = self.config.tool(&call.name).cloned();
        let error = match (&parsed, is_client || spec.is_some()) {
            (_, false) => Some(format!(
                "Model tried to call unavailable tool '{}'.",
                call.name
            )),
            (Err(e), true) => Some(format!("Invalid input for tool '{}': {e}", call.name)),
            (Ok(_), true) => None,
        };
        if let Some(error_text) = error {
            let input = parsed
                .map(|v| normalize_input(&v))
                .unwrap_or_else(|_| serde_json::json!({}));
            self.emit(UIMessageChunk::ToolInputError {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                input,
                error_text,
            });
            return;
        }
        let input = normalize_input(&parsed.unwrap_or_default());
        self.emit(UIMessageChunk::ToolInputAvailable {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: input.clone(),
        });
        match spec {
            _ if is_client => match executor {
                Some(conn) => self.run_tool(&call.id, &call.name, input, Some(conn)),
                None => self.set_waiting_on_human(),
            },
            Some(spec) if spec.approval.required_for(&input) => {
                let approval_id = self.new_id(IdKind::Approval);
                self.emit(UIMessageChunk::ToolApprovalRequest {
                    approval_id,
                    tool_call_id: call.id.clone(),
                });
                self.set_waiting_on_human();
            }
            Some(_) => self.run_tool(&call.id, &call.name, input, None),
            None => {}
        }
    }

    fn set_waiting_on_human(&mut self) {
        if let Some(active) = self.active.as_mut() {
            active.waiting_on_human = true;
        }
    }

    pub(super) fn on_tool_done(
        &mut self,
        call: CallId,
        tool_call_id: &str,
        result: Result<Value, String>,
    ) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        if active.running_tools.get(tool_call_id).map(|(c, _)| *c) != Some(call) {
            return;
        }
        active.running_tools.remove(tool_call_id);
        let tool_call_id = tool_call_id.to_string();
        self.emit(match result {
            Ok(output) => UIMessageChunk::ToolOutputAvailable {
                tool_call_id,
                output,
            },
            Err(error_text) => UIMessageChunk::ToolOutputError {
                tool_call_id,
                error_text,
            },
        });
        self.maybe_finish_step();
    }

    pub(super) fn maybe_finish_step(&mut self) {
        let Some(active) = self.active.as_ref() else {
            return;
        };
        if !active.running_tools.is_empty() || active.model_call.is_some() {
            return;
        }
        if active.step == 0 {
            // A continuation's approved calls are done: now the model speaks.
            self.begin_step();
            return;
        }
        self.emit(UIMessageChunk::FinishStep);
        let Some(active) = self.active.as_ref() else {
            return;
        };
        let more =
            !active.calls.is_empty() && !active.waiting_on_human && active.step < active.max_steps;
        if more {
            self.begin_step();
            return;
        }
        let reason = active.finish_reason.unwrap_or(FinishReason::Stop);
        self.emit(UIMessageChunk::Finish {
            finish_reason: Some(finish_reason_text(reason).to_string()),
        });
        self.end_turn(Outcome::Completed, None);
    }

    /// Applies, logs and broadcasts one chunk of the active stream.
    pub(super) fn emit(&mut self, chunk: UIMessageChunk) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        if !apply_chunk(&mut active.message, &chunk) {
            self.apply_cross_message(&chunk);
        }
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let body: Rc<str> = Rc::from(chunk.to_json());
        let logged = body.len() <= MAX_LOGGED_CHUNK;
        let seq = logged.then_some(active.log.len() as u64);
        let frame = ResponseFrame {
            seq,
            continuation: active.continuation,
            ..ResponseFrame::new(&active.turn.request_id, &body)
        }
        .to_json();
        let first_delta = !active.saw_delta
            && matches!(
                chunk,
                UIMessageChunk::TextDelta { .. } | UIMessageChunk::ReasoningDelta { .. }
            );
        active.saw_delta |= first_delta;
        if logged {
            active.log.push(body);
        }
        let urgent = first_delta
            || chunk.settles_a_tool()
            || matches!(
                chunk,
                UIMessageChunk::ToolInputAvailable { .. }
                    | UIMessageChunk::ToolApprovalRequest { .. }
            );
        let unflushed = active.log.len() - active.flushed;
        let arm = !urgent && unflushed > 0 && !active.flush_armed;
        if arm {
            active.flush_armed = true;
        }
        let to = self.conns.chat();
        self.send_to(to, frame);
        if urgent || unflushed >= self.config.flush.max_chunks {
            self.flush_chunks();
        } else if arm {
            let at = self.now + self.config.flush.max_delay_ms;
            self.set_timer(Timer::FlushChunks, at);
        }
    }

    /// A result for a call owned by an earlier message (an approved call run by
    /// a continuation): patch that message, persist it, tell every tab.
    fn apply_cross_message(&mut self, chunk: &UIMessageChunk) {
        let tool_call_id = match chunk {
            UIMessageChunk::ToolOutputAvailable { tool_call_id, .. }
            | UIMessageChunk::ToolOutputError { tool_call_id, .. }
            | UIMessageChunk::ToolOutputDenied { tool_call_id } => tool_call_id,
            _ => return,
        };
        let Some(entry) = self.transcript.owner_of_mut(tool_call_id) else {
            return;
        };
        let before = entry.message.clone();
        apply_chunk(&mut entry.message, chunk);
        if entry.message == before {
            return;
        }
        let entry = entry.clone();
        self.put_entry(&entry);
        let to = self.conns.all();
        self.send_to(to, server::message_updated(&entry.message));
    }

    pub(super) fn flush_chunks(&mut self) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        active.flush_armed = false;
        if active.flushed >= active.log.len() {
            return;
        }
        let bodies = active.log[active.flushed..].to_vec();
        let first_seq = active.flushed as u64;
        active.flushed = active.log.len();
        let request_id = active.turn.request_id.clone();
        self.store(StoreOp::AppendChunks {
            request_id,
            first_seq,
            bodies,
        });
    }

    /// Ends the active turn: persist the answer, send the transcript, then the
    /// terminal frame; then start whatever waits.
    pub(super) fn end_turn(&mut self, outcome: Outcome, error: Option<String>) {
        let Some(mut active) = self.active.take() else {
            return;
        };
        if let Some(call) = active.model_call.take() {
            self.effects.push(Effect::AbortModel { call });
        }
        self.clear_turn_timers();
        self.forget_stream_approvals();
        let request_id = active.turn.request_id.clone();
        let message_ids = Some(active.turn.message_ids.as_slice());
        self.conns.clear_pending_resume();
        if let Some(text) = &error {
            let frame = ResponseFrame {
                error: true,
                continuation: active.continuation,
                message_ids: message_ids.filter(|ids| !ids.is_empty()),
                ..ResponseFrame::new(&request_id, text)
            }
            .to_json();
            let to = self.conns.chat();
            self.send_to(to, frame);
        }
        close_dangling_text(&mut active.message);
        let persist = has_content(&active.message)
            && !(outcome == Outcome::Error
                && !active.saw_delta
                && active.message.tool_parts().next().is_none());
        if persist {
            let entry = self
                .transcript
                .insert_at(active.seq, active.message.clone());
            self.put_entry(&entry);
        }
        self.store(StoreOp::CloseStream {
            request_id: request_id.clone(),
        });
        if persist {
            self.broadcast_transcript(None);
        }
        let ids: Vec<String> = message_ids.map(<[String]>::to_vec).unwrap_or_default();
        self.remember_finished(&request_id, &ids);
        let to = self.conns.chat();
        self.send_terminal(to, &request_id, outcome, Some(&ids), active.continuation);
        if let Some(text) = error {
            let record = TerminalError {
                request_id,
                text,
                message_ids: ids,
                chunks: active.log.iter().map(|b| b.to_string()).collect(),
                continuation: active.continuation,
            };
            self.put_config(ConfigKey::TerminalError, &record);
            self.terminal_error = Some(record);
        }
        if active.turn.is_recovery() {
            self.finish_recovery();
        }
        self.after_turn();
    }

    fn remember_finished(&mut self, request_id: &str, message_ids: &[String]) {
        const REMEMBERED: usize = 32;
        if self.finished.len() == REMEMBERED {
            self.finished.pop_front();
        }
        self.finished
            .push_back((request_id.to_string(), message_ids.to_vec()));
    }

    /// The timers that only mean something while a turn runs.
    fn clear_turn_timers(&mut self) {
        for timer in [
            Timer::FlushChunks,
            Timer::Heartbeat,
            Timer::ModelStall,
            Timer::ModelRetry,
        ] {
            self.effects.push(Effect::ClearTimer { timer });
        }
    }

    /// A clear while a turn runs: it ends `aborted` and nothing of it is kept.
    pub(super) fn abandon_turn(&mut self) {
        let Some(mut active) = self.active.take() else {
            return;
        };
        if let Some(call) = active.model_call.take() {
            self.effects.push(Effect::AbortModel { call });
        }
        self.clear_turn_timers();
        self.forget_stream_approvals();
        self.conns.clear_pending_resume();
        let message_ids = (!active.continuation).then_some(active.turn.message_ids.clone());
        let to = self.conns.chat();
        self.send_terminal(
            to,
            &active.turn.request_id,
            Outcome::Aborted,
            message_ids.as_deref(),
            active.continuation,
        );
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
