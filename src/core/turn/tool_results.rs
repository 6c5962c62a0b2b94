//! Tool results and approvals from clients: applied to the waiting tool part
//! (in the streaming answer or in the stored message that owns it), told to
//! every tab, and handed to `continuation.rs` when they ask to continue.
//! A tab's result passes through `after_tool_call` first (awaited by the
//! host before it is applied): it is written down while it waits, so an
//! eviction meanwhile loses nothing (the wait is asked again after the
//! restart), no new turn starts before it lands (the turn would find its
//! call unanswered), and the tool deadline bounds the wait (the result is
//! then applied as the tab sent it).
//! A result settles only a call that was routed to a browser and waits for
//! it; an approval only a call that asked for one. Approvals given while
//! their answer still streams are written down on their own (no chunk
//! records them) until that answer is stored.

use crate::protocol::{
    server, ClientToolSchema, ToolPart, ToolResult, ToolState, UIMessage, UIMessageChunk,
};

use crate::core::contract::effects::{Effect, StoreOp, Timer};
use crate::core::data::transcript::{apply_approval, apply_tool_result};
use crate::core::rows::persisted::{
    ConfigKey, PendingToolResult, PendingToolResultsRow, StreamApprovals,
};
use crate::core::turn::hand_back::HandedBack;
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

impl Core {
    /// A tab's `cf_agent_tool_result`. Ignored (documented, as for unknown
    /// calls) unless it settles a call that waits for a browser: a server
    /// tool's call (running, or waiting for approval) and a call a parent's
    /// executor runs are not a tab's to answer. The frame's `clientTools` are
    /// taken only when the result is.
    pub(in crate::core) fn on_tool_result(&mut self, conn: ConnId, result: ToolResult) {
        if !self.awaits_browser_result(&result.tool_call_id) {
            return;
        }
        self.ask_tab_result_rewrite(conn, result);
        self.write_down_pending_results();
    }

    /// Asks the host's `after_tool_call` about a tab's result, under the
    /// tool deadline.
    fn ask_tab_result_rewrite(&mut self, conn: ConnId, result: ToolResult) {
        let (hooked, outcome) = self.browser_hook_call(&result);
        let call = self.next_call_id();
        self.tab_results_rewriting.push((call, conn, result));
        if let Some(ms) = Some(self.config.settings.tool_timeout_ms).filter(|ms| *ms > 0) {
            self.set_timer(Timer::ToolDeadline(call), self.now.saturating_add(ms));
        }
        self.effects.push(Effect::RewriteToolResult {
            call,
            tool: hooked,
            result: Box::new(outcome),
        });
    }

    /// After a restart, before cut streams are recovered: the tabs' results
    /// that were waiting on `after_tool_call` are asked about again (those
    /// whose call still waits, in a stored message or in a cut stream about
    /// to be stored), and turns wait for them.
    pub(in crate::core) fn resume_pending_tab_results(&mut self) {
        let pending = std::mem::take(&mut self.restored_tab_results);
        if pending.is_empty() {
            return;
        }
        for stored in pending {
            let result = ToolResult {
                tool_call_id: stored.tool_call_id,
                output: stored.output,
                error_text: stored.error_text,
                auto_continue: stored.auto_continue,
                client_tools: stored.client_tools,
            };
            let id = &result.tool_call_id;
            if self.awaits_browser_result(id) || self.recovery.cut_stream_names_call(id) {
                self.ask_tab_result_rewrite(ConnId::from(stored.conn), result);
            }
        }
        self.write_down_pending_results();
    }

    /// A tab's result whose `after_tool_call` did not answer within the tool
    /// deadline is applied as the tab sent it. False: `call` is not one.
    pub(in crate::core::turn) fn on_tab_result_deadline(
        &mut self,
        call: crate::core::vocab::ids::CallId,
    ) -> bool {
        let Some(result) = self
            .tab_results_rewriting
            .iter()
            .find(|(asked, _, _)| *asked == call)
            .map(|(_, _, r)| r)
        else {
            return false;
        };
        let unchanged = tab_outcome(result);
        self.on_tab_result_rewritten(call, &unchanged)
    }

    /// Stores the tabs' results waiting on `after_tool_call`.
    fn write_down_pending_results(&mut self) {
        let results: Vec<PendingToolResult> = self
            .tab_results_rewriting
            .iter()
            .map(|(_, conn, r)| PendingToolResult {
                conn: conn.to_string(),
                tool_call_id: r.tool_call_id.clone(),
                output: r.output.clone(),
                error_text: r.error_text.clone(),
                auto_continue: r.auto_continue,
                client_tools: r.client_tools.clone(),
            })
            .collect();
        let empty = results.is_empty();
        let row = PendingToolResultsRow { results };
        self.put_config_or_delete(ConfigKey::PendingToolResults, &row, empty);
    }

    /// The host's `after_tool_call` answered for a tab's result: applied if
    /// its call still waits for one (not when another result settled it
    /// meanwhile or the conversation was cleared). False: `call` is not a
    /// tab's result.
    pub(in crate::core::turn) fn on_tab_result_rewritten(
        &mut self,
        call: crate::core::vocab::ids::CallId,
        rewritten: &crate::core::vocab::hooks::ToolOutcome,
    ) -> bool {
        let Some(at) = self
            .tab_results_rewriting
            .iter()
            .position(|(asked, _, _)| *asked == call)
        else {
            return false;
        };
        let (_, conn, result) = self.tab_results_rewriting.remove(at);
        self.clear_timer(Timer::ToolDeadline(call));
        self.write_down_pending_results();
        if self.awaits_browser_result(&result.tool_call_id) {
            let (output, error_text) = split_outcome(rewritten.clone());
            self.apply_browser_result(conn, result, output, error_text);
        }
        // Turns held while it waited may start now.
        if self.tab_results_rewriting.is_empty() {
            self.handed_back.push(HandedBack::TabResultsLanded);
        }
        true
    }

    fn apply_browser_result(
        &mut self,
        conn: ConnId,
        result: ToolResult,
        output: serde_json::Value,
        error_text: Option<String>,
    ) {
        let applied = self.update_tool_part(&result.tool_call_id, |tool| {
            apply_tool_result(tool, &output, error_text.as_deref())
        });
        if !applied {
            return;
        }
        self.handed_back.push(HandedBack::PersonAnswered {
            conn,
            auto_continue: result.auto_continue,
            client_tools: result.client_tools.filter(|t| !t.is_empty()),
        });
    }

    /// A tab's result as the tool hooks see it: the call it settles and
    /// its outcome.
    fn browser_hook_call(
        &self,
        result: &ToolResult,
    ) -> (
        crate::core::vocab::hooks::ToolCall,
        crate::core::vocab::hooks::ToolOutcome,
    ) {
        let outcome = tab_outcome(result);
        let id = &result.tool_call_id;
        let describe = |t: &crate::protocol::ToolPart| {
            (t.tool_name.clone(), t.input.clone().unwrap_or_default())
        };
        let (name, input) = self
            .active
            .as_ref()
            .and_then(|a| {
                a.message
                    .tool_parts()
                    .find(|t| &t.tool_call_id == id)
                    .map(describe)
            })
            .or_else(|| {
                let owner = self.transcript.owner_of(id)?;
                let found = owner
                    .tool_parts()
                    .find(|t| &t.tool_call_id == id)
                    .map(describe);
                found
            })
            .unwrap_or_default();
        let call = self.hook_call(&result.tool_call_id, &name, input, true);
        (call, outcome)
    }

    /// Whether the call `tool_call_id` was routed to a browser and still
    /// waits for its result.
    fn awaits_browser_result(&self, tool_call_id: &str) -> bool {
        if let Some(active) = self.active.as_ref() {
            if let Some(tool) = active
                .message
                .tool_parts()
                .find(|t| t.tool_call_id == tool_call_id)
            {
                return !active.running_tools.contains_key(tool_call_id)
                    && self.waits_for_browser(tool, self.active_client_tools());
            }
        }
        self.transcript.owner_of(tool_call_id).is_some_and(|m| {
            m.tool_parts()
                .find(|t| t.tool_call_id == tool_call_id)
                .is_some_and(|tool| self.waits_for_browser(tool, self.inputs.client_tools()))
        })
    }

    /// A part waiting for its input's result whose tool is a client tool: one
    /// of `client_tools` that no protected server tool has the name of, or a
    /// name no server tool has (a call to an unknown tool is an input error,
    /// so such a waiting call was routed to a client).
    fn waits_for_browser(&self, tool: &ToolPart, client_tools: &[ClientToolSchema]) -> bool {
        tool.state == ToolState::InputAvailable
            && (self.config.tool(&tool.tool_name).is_none()
                || self.config.routes_to_client(&tool.tool_name, client_tools))
    }

    pub(in crate::core) fn on_tool_approval(
        &mut self,
        conn: ConnId,
        tool_call_id: &str,
        approved: bool,
        auto_continue: bool,
    ) {
        // An approval for a call that is unknown, settled or never asked is
        // ignored, as the reference server does (documented in the README).
        if self.update_tool_part(tool_call_id, |tool| apply_approval(tool, approved)) {
            self.handed_back.push(HandedBack::PersonAnswered {
                conn,
                auto_continue,
                client_tools: None,
            });
        }
    }

    /// Applies `update` to the waiting part with this id: in the streaming
    /// answer (it rides into the final persist) or in the stored owner message
    /// (persisted now). Every tab is told. Returns whether anything changed.
    fn update_tool_part(
        &mut self,
        tool_call_id: &str,
        update: impl Fn(&mut crate::protocol::ToolPart) -> bool,
    ) -> bool {
        if let Some(active) = self.active.as_mut() {
            if let Some(tool) = active.message.tool_part_mut(tool_call_id) {
                if !update(tool) {
                    return false;
                }
                let settled = settled_chunk(tool);
                let approved = tool.state == ToolState::ApprovalResponded;
                let message = active.message.clone();
                let request_id = active.turn.request_id.clone();
                // Logged like a server tool's result, so it survives an eviction.
                if let Some(chunk) = settled {
                    self.emit(chunk);
                }
                if approved {
                    self.note_stream_approval(request_id, tool_call_id);
                }
                self.broadcast_updated(&message);
                return true;
            }
        }
        let Some(entry) = self.transcript.owner_of_mut(tool_call_id) else {
            return false;
        };
        let Some(tool) = entry.message.tool_part_mut(tool_call_id) else {
            return false;
        };
        if !update(tool) {
            return false;
        }
        let entry = entry.clone();
        self.put_entry(&entry);
        self.broadcast_updated(&entry.message);
        true
    }

    fn note_stream_approval(&mut self, request_id: String, tool_call_id: &str) {
        let mut approvals = match self.stream_approvals.take() {
            Some(a) if a.request_id == request_id => a,
            _ => StreamApprovals {
                request_id,
                approved: Vec::new(),
            },
        };
        approvals.approved.push(tool_call_id.to_string());
        self.put_config(ConfigKey::StreamApprovals, &approvals);
        self.stream_approvals = Some(approvals);
    }

    /// The answer is stored (or gone): its approvals need no record of their own.
    pub(in crate::core::turn) fn forget_stream_approvals(&mut self) {
        if self.stream_approvals.take().is_some() {
            self.store(StoreOp::DeleteConfig {
                key: ConfigKey::StreamApprovals,
            });
        }
    }

    /// Applies the approvals written down for the cut stream `request_id` to
    /// the answer rebuilt from its chunk log.
    pub(in crate::core) fn reapply_stream_approvals(
        &mut self,
        request_id: &str,
        message: &mut UIMessage,
    ) {
        if let Some(approvals) = self
            .stream_approvals
            .as_ref()
            .filter(|a| a.request_id == request_id)
        {
            for id in &approvals.approved {
                if let Some(tool) = message.tool_part_mut(id) {
                    apply_approval(tool, true);
                }
            }
        }
        self.forget_stream_approvals();
    }

    fn broadcast_updated(&mut self, message: &UIMessage) {
        let to = self.conns.all();
        self.send_list_change(to, server::message_updated(message));
    }
}

/// A tab's result as the tool hooks see it: its output, or its error text.
fn tab_outcome(result: &ToolResult) -> crate::core::vocab::hooks::ToolOutcome {
    match &result.error_text {
        Some(text) => Err(text.clone()),
        None => Ok(result.output.clone()),
    }
}

/// A result as a tool part takes it: the output, or error text.
fn split_outcome(
    outcome: crate::core::vocab::hooks::ToolOutcome,
) -> (serde_json::Value, Option<String>) {
    match outcome {
        Ok(output) => (output, None),
        Err(text) => (serde_json::Value::Null, Some(text)),
    }
}

/// The chunk that records a settled tool part in a stream's log.
fn settled_chunk(tool: &ToolPart) -> Option<UIMessageChunk> {
    let tool_call_id = tool.tool_call_id.clone();
    match tool.state {
        ToolState::OutputAvailable => Some(UIMessageChunk::ToolOutputAvailable {
            tool_call_id,
            output: tool.output.clone().unwrap_or_default(),
        }),
        ToolState::OutputError => Some(UIMessageChunk::ToolOutputError {
            tool_call_id,
            error_text: tool.error_text.clone().unwrap_or_default(),
        }),
        ToolState::OutputDenied => Some(UIMessageChunk::ToolOutputDenied { tool_call_id }),
        _ => None,
    }
}
