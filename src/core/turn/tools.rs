//! Where a turn's tool calls go: a server tool runs here, a client tool goes
//! to the parent agent's executor or waits for a browser, a tool that needs
//! approval waits for a person, an unknown tool or unreadable input (or one
//! over `gate::MODEL_TOOL_INPUT`, read before it is built) is an input
//! error the model reads; `before_tool_call` may block a call,
//! change its input or settle it first, and `after_tool_call` sees every
//! result of a run (inline, or awaited by the host before the result is
//! shown and stored). Also the approved calls a continuation runs
//! first, and tool runs ending (or lost with a parent's channel).

use serde_json::Value;

use crate::protocol::gate::{self, MODEL_TOOL_INPUT};
use crate::protocol::{ClientToolSchema, UIMessageChunk};

use crate::core::contract::effects::{Effect, Timer};
use crate::core::data::accumulator::normalize_input;
use crate::core::turn::active::{RunningTool, StepCall};
use crate::core::vocab::hooks::{ToolCall, ToolCallDecision, ToolOutcome};
use crate::core::vocab::ids::IdKind;
use crate::core::vocab::ids::{CallId, ConnId};
use crate::core::Core;

impl Core {
    /// A continuation first runs the calls a person approved. Returns true if any run.
    pub(in crate::core::turn) fn run_approved_calls(&mut self) -> bool {
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
            active.running_tools.insert(
                tool_call_id.to_string(),
                RunningTool {
                    call,
                    tool_name: tool_name.to_string(),
                    remote: remote.clone(),
                    deciding: None,
                    rewriting: None,
                },
            );
        }
        if let Some(ms) = self.run_timeout(tool_name, remote.is_some()) {
            self.set_timer(Timer::ToolDeadline(call), self.now.saturating_add(ms));
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
    pub(in crate::core::turn) fn active_client_tools(&self) -> &[ClientToolSchema] {
        match self
            .active
            .as_ref()
            .and_then(|a| a.turn.turn_tools.as_ref())
        {
            Some(tools) => tools,
            None => self.inputs.client_tools(),
        }
    }

    /// A parent's channel closed: its client tool runs will never answer.
    pub(in crate::core) fn fail_remote_calls(&mut self, conn: &str) {
        let Some(active) = self.active.as_ref() else {
            return;
        };
        let lost: Vec<(CallId, String)> = active
            .running_tools
            .iter()
            .filter(|(_, run)| run.remote.as_deref() == Some(conn))
            .map(|(id, run)| (run.call, id.clone()))
            .collect();
        for (call, tool_call_id) in lost {
            let text = "The caller went away before the tool returned.".to_string();
            self.on_tool_done(call, &tool_call_id, Err(text));
        }
    }

    /// The call is not run: an input error the model reads.
    pub(in crate::core::turn) fn refuse_tool_call(&mut self, call: &StepCall, error_text: String) {
        let input = gate::read_value(&call.arguments, &MODEL_TOOL_INPUT)
            .map(|v| normalize_input(&v))
            .unwrap_or_else(|_| serde_json::json!({}));
        self.emit(UIMessageChunk::ToolInputError {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input,
            error_text,
        });
    }

    pub(in crate::core::turn) fn route_tool_call(&mut self, call: &StepCall) {
        let parsed = if call.arguments.trim().is_empty() {
            Ok(serde_json::json!({}))
        } else {
            gate::read_value(&call.arguments, &MODEL_TOOL_INPUT)
        };
        let is_client = self
            .config
            .routes_to_client(&call.name, self.active_client_tools());
        let spec = self.config.tool(&call.name).cloned();
        // `before_turn` may have offered only some tools this turn.
        let opt_in = self.opt_in_only(&call.name, self.active_client_tools());
        let offered = self
            .active
            .as_ref()
            .is_none_or(|a| a.step_settings().offers(&call.name, opt_in));
        let error = match (&parsed, offered && (is_client || spec.is_some())) {
            (_, false) => Some(format!(
                "Model tried to call unavailable tool '{}'.",
                call.name
            )),
            (Err(e), true) => Some(format!("Invalid input for tool '{}': {e}", call.name)),
            (Ok(_), true) => None,
        };
        if let Some(error_text) = error {
            self.refuse_tool_call(call, error_text);
            return;
        }
        let input = normalize_input(&parsed.unwrap_or_default());
        // `before_tool_call` decides before a tab (or a parent) sees the
        // call, awaited by the host (`Effect::DecideToolCall`).
        let hooked = self.hook_call(&call.id, &call.name, input, is_client);
        self.ask_tool_decision(hooked);
    }

    /// Puts `hooked` among the step's running tools while the host runs a
    /// hook on it (`deciding`: `before_tool_call`; `rewriting`:
    /// `after_tool_call` over that result), under the tool's deadline.
    fn wait_on_host(
        &mut self,
        hooked: &ToolCall,
        deciding: Option<ToolCall>,
        rewriting: Option<ToolOutcome>,
    ) -> CallId {
        let call = self.next_call_id();
        if let Some(active) = self.active.as_mut() {
            active.running_tools.insert(
                hooked.tool_call_id.clone(),
                RunningTool {
                    call,
                    tool_name: hooked.tool_name.clone(),
                    remote: None,
                    deciding,
                    rewriting,
                },
            );
        }
        if let Some(ms) = self.run_timeout(&hooked.tool_name, hooked.client) {
            self.set_timer(Timer::ToolDeadline(call), self.now.saturating_add(ms));
        }
        call
    }

    /// The host awaits the agent's `before_tool_call`; the call waits in the
    /// step's running tools (under the tool deadline) until it answers.
    fn ask_tool_decision(&mut self, hooked: ToolCall) {
        let call = self.wait_on_host(&hooked, Some(hooked.clone()), None);
        self.effects
            .push(Effect::DecideToolCall { call, tool: hooked });
    }

    /// The host's answer to `Effect::DecideToolCall` (ignored when the call
    /// no longer waits: its turn ended, or its deadline passed).
    pub(in crate::core) fn on_tool_decided(&mut self, call: CallId, decision: ToolCallDecision) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let Some(tool_call_id) = active.running_tool_waiting(call, |run| run.deciding.is_some())
        else {
            return;
        };
        let Some(hooked) = active
            .running_tools
            .remove(&tool_call_id)
            .and_then(|run| run.deciding)
        else {
            return;
        };
        self.clear_timer(Timer::ToolDeadline(call));
        self.route_decided_call(hooked, decision);
        self.maybe_finish_step();
    }

    /// A call `before_tool_call` decided: settled by the decision, or sent
    /// where it runs (a server tool, a parent's executor, a tab, a person's
    /// approval first).
    fn route_decided_call(&mut self, hooked: ToolCall, decision: ToolCallDecision) {
        let is_client = hooked.client;
        let executor = self.active.as_ref().and_then(|a| a.turn.executor.clone());
        let spec = self.config.tool(&hooked.tool_name).cloned();
        let mut input = hooked.input.clone();
        let settled = match decision {
            ToolCallDecision::Allow => None,
            ToolCallDecision::Input(replaced) => {
                input = replaced;
                None
            }
            ToolCallDecision::Block(text) => Some(Err(text)),
            ToolCallDecision::Result(output) => Some(Ok(output)),
        };
        let id = hooked.tool_call_id.clone();
        self.emit(UIMessageChunk::ToolInputAvailable {
            tool_call_id: id.clone(),
            tool_name: hooked.tool_name.clone(),
            input: input.clone(),
            provider_executed: (is_client && settled.is_some()).then_some(true),
        });
        if let Some(result) = settled {
            self.settle_tool_call(ToolCall { input, ..hooked }, result);
            return;
        }
        let name = hooked.tool_name;
        match spec {
            _ if is_client => match executor {
                Some(conn) => self.run_tool(&id, &name, input, Some(conn)),
                None => self.note_waiting_on_person(),
            },
            Some(spec) if spec.approval.required_for(&input) => {
                let approval_id = self.new_id(IdKind::Approval);
                self.emit(UIMessageChunk::ToolApprovalRequest {
                    approval_id,
                    tool_call_id: id,
                });
                self.note_waiting_on_person();
            }
            Some(_) => self.run_tool(&id, &name, input, None),
            None => {}
        }
    }

    /// A tool run outlived its deadline: it ends as a tool error the model
    /// reads, and whatever it returns later is ignored.
    pub(in crate::core) fn on_tool_deadline(&mut self, call: CallId) {
        if self.on_tab_result_deadline(call) {
            return;
        }
        let Some((tool_call_id, tool_name, remote)) = self.active.as_ref().and_then(|a| {
            a.running_tools
                .iter()
                .find(|(_, run)| run.call == call)
                .map(|(id, run)| (id.clone(), run.tool_name.clone(), run.remote.is_some()))
        }) else {
            return;
        };
        let ms = self.run_timeout(&tool_name, remote).unwrap_or_default();
        if !remote {
            self.effects.push(Effect::AbortTools { calls: vec![call] });
        }
        let text = format!(
            "Tool '{tool_name}' did not finish within {} ms and was given up.",
            ms
        );
        self.on_tool_done(call, &tool_call_id, Err(text));
    }

    /// The deadline of one run: a client tool a parent runs has the
    /// settings' deadline, a server tool its own or the settings'.
    fn run_timeout(&self, tool_name: &str, remote: bool) -> Option<u64> {
        match remote {
            true => Some(self.config.settings.tool_timeout_ms).filter(|ms| *ms > 0),
            false => self.config.tool_timeout(tool_name),
        }
    }

    /// A parent's answer to a client tool call: taken only from the channel
    /// the call was sent on.
    pub(in crate::core) fn on_remote_tool_done(
        &mut self,
        conn: &str,
        call: CallId,
        tool_call_id: &str,
        result: Result<Value, String>,
    ) {
        let sent_here = self
            .active
            .as_ref()
            .and_then(|a| a.running_tools.get(tool_call_id))
            .is_some_and(|run| run.remote.as_deref() == Some(conn));
        if sent_here {
            self.on_tool_done(call, tool_call_id, result);
        }
    }

    pub(in crate::core) fn on_tool_done(
        &mut self,
        call: CallId,
        tool_call_id: &str,
        result: Result<Value, String>,
    ) {
        let Some(active) = self.active.as_mut() else {
            return;
        };
        if active.running_tools.get(tool_call_id).map(|run| run.call) != Some(call) {
            return;
        }
        let Some(run) = active.running_tools.remove(tool_call_id) else {
            return;
        };
        self.clear_timer(Timer::ToolDeadline(call));
        // Its `after_tool_call` never answered: the result stands as the
        // tool gave it.
        if let Some(unchanged) = run.rewriting {
            self.emit(tool_output_chunk(tool_call_id.to_string(), unchanged));
            self.maybe_finish_step();
            return;
        }
        // Its `before_tool_call` never answered: the call's input is shown
        // before the error that settles it.
        if let Some(hooked) = &run.deciding {
            self.emit(UIMessageChunk::ToolInputAvailable {
                tool_call_id: hooked.tool_call_id.clone(),
                tool_name: hooked.tool_name.clone(),
                input: hooked.input.clone(),
                provider_executed: hooked.client.then_some(true),
            });
        }
        let input = self
            .active
            .as_ref()
            .and_then(|a| {
                a.message
                    .tool_parts()
                    .find(|t| t.tool_call_id == tool_call_id)
            })
            .and_then(|t| t.input.clone())
            .unwrap_or_default();
        let hooked = self.hook_call(tool_call_id, &run.tool_name, input, run.remote.is_some());
        self.settle_tool_call(hooked, result);
        self.maybe_finish_step();
    }

    /// A call's result passes `after_tool_call`, awaited by the host
    /// (`Effect::RewriteToolResult`), then is shown and stored, the call
    /// staying in the step's running tools (under the tool's deadline)
    /// until it answers.
    fn settle_tool_call(&mut self, hooked: ToolCall, result: ToolOutcome) {
        if self.active.is_none() {
            return;
        }
        let call = self.wait_on_host(&hooked, None, Some(result.clone()));
        self.effects.push(Effect::RewriteToolResult {
            call,
            tool: hooked,
            result: Box::new(result),
        });
    }

    /// The host's answer to `Effect::RewriteToolResult` (ignored when the
    /// result no longer waits: its turn ended, or its deadline passed).
    pub(in crate::core) fn on_result_rewritten(&mut self, call: CallId, result: ToolOutcome) {
        if self.on_tab_result_rewritten(call, &result) {
            return;
        }
        let Some(active) = self.active.as_mut() else {
            return;
        };
        let Some(tool_call_id) = active.running_tool_waiting(call, |run| run.rewriting.is_some())
        else {
            return;
        };
        active.running_tools.remove(&tool_call_id);
        self.clear_timer(Timer::ToolDeadline(call));
        self.emit(tool_output_chunk(tool_call_id, result));
        self.maybe_finish_step();
    }
}

/// The chunk that settles a call with `result`.
fn tool_output_chunk(tool_call_id: String, result: ToolOutcome) -> UIMessageChunk {
    match result {
        Ok(output) => UIMessageChunk::ToolOutputAvailable {
            tool_call_id,
            output,
        },
        Err(error_text) => UIMessageChunk::ToolOutputError {
            tool_call_id,
            error_text,
        },
    }
}
