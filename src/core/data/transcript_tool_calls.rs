//! Tool calls in the stored conversation: finding the assistant message
//! holding one, a result or an approval landing on its part, and the repair
//! of calls that can no longer get a result before the model is called.

use serde_json::Value;

use super::Transcript;
use crate::core::data::accumulator::{settle_output, INTERRUPTED_TOOL_ERROR};
use crate::core::rows::persisted::Entry;
use crate::protocol::{Part, Role, ToolPart, ToolState, UIMessage};

pub const APPROVED_NOT_RUN_ERROR: &str =
    "The tool call was approved but did not run before the next turn started.";

impl Transcript {
    /// Calls of the latest answer a person approved that have not run yet.
    pub fn approved_calls(&self) -> Vec<&crate::protocol::ToolPart> {
        self.last_assistant()
            .map(|m| {
                m.tool_parts()
                    .filter(|t| t.state == ToolState::ApprovalResponded)
                    .filter(|t| t.approval.as_ref().and_then(|a| a.approved) == Some(true))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether an assistant message holds `tool_call_id` (the window, then
    /// the store's tool call index). Only assistants make tool calls: a tool
    /// part a client wrote into a user message is never the target of a
    /// result or an approval.
    pub fn has_tool_call(&self, tool_call_id: &str) -> bool {
        self.owner_of(tool_call_id).is_some()
    }

    /// The newest assistant message holding `tool_call_id` (the window, then
    /// the store's tool call index).
    pub fn owner_of(&self, tool_call_id: &str) -> Option<UIMessage> {
        let in_window = self
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && m.has_tool_call(tool_call_id));
        match in_window {
            Some(message) => Some(message.clone()),
            None if self.older => self
                .history
                .tool_call_owner(tool_call_id)
                .filter(|e| e.seq < self.window_start())
                .map(|e| e.message),
            None => None,
        }
    }

    /// The newest assistant message holding `tool_call_id`, loaded into the
    /// window when it is older (it is about to change).
    pub fn owner_of_mut(&mut self, tool_call_id: &str) -> Option<&mut Entry> {
        let in_window = self.entries.iter().rposition(|e| {
            e.message.role == Role::Assistant && e.message.has_tool_call(tool_call_id)
        });
        let index = match in_window {
            Some(i) => i,
            None if self.older => {
                let owner = self.history.tool_call_owner(tool_call_id)?;
                if owner.seq >= self.window_start() {
                    return None;
                }
                self.locate(&owner.message.id)?
            }
            None => return None,
        };
        self.entries.get_mut(index)
    }

    /// Rewrites every tool part that can no longer get a result, except the
    /// approved calls of the last assistant message when `keep_approved_tail`
    /// (a continuation is about to run them). Returns the entries changed.
    pub fn repair_unanswered(&mut self, keep_approved_tail: bool) -> Vec<Entry> {
        let last_assistant = self
            .entries
            .iter()
            .rposition(|e| e.message.role == Role::Assistant);
        let mut changed = Vec::new();
        for (index, entry) in self.entries.iter_mut().enumerate() {
            let is_tail = Some(index) == last_assistant;
            let mut touched = false;
            for part in &mut entry.message.parts {
                let Part::Tool(tool) = part else { continue };
                touched |= repair_part(tool, keep_approved_tail && is_tail);
            }
            if touched {
                changed.push(entry.clone());
            }
        }
        changed
    }
}

fn repair_part(tool: &mut ToolPart, keep_approved: bool) -> bool {
    match tool.state {
        ToolState::InputStreaming | ToolState::InputAvailable | ToolState::ApprovalRequested => {
            tool.set_error(INTERRUPTED_TOOL_ERROR);
            true
        }
        ToolState::ApprovalResponded if !keep_approved => {
            let approved = tool
                .approval
                .as_ref()
                .and_then(|a| a.approved)
                .unwrap_or(false);
            if approved {
                tool.set_error(APPROVED_NOT_RUN_ERROR);
            } else {
                tool.state = ToolState::OutputDenied;
            }
            true
        }
        _ => false,
    }
}

/// A result or error from a client lands on the first part still waiting for one.
pub fn apply_tool_result(tool: &mut ToolPart, output: &Value, error_text: Option<&str>) -> bool {
    // A call waiting for (or holding) an approval is a server tool's: only
    // its own run settles it.
    if tool.state != ToolState::InputAvailable {
        return false;
    }
    match error_text {
        Some(text) => tool.set_error(text),
        None => {
            settle_output(tool, output);
            tool.preliminary = Some(false);
        }
    }
    true
}

/// An approval decision lands only on a part that asked for one.
pub fn apply_approval(tool: &mut ToolPart, approved: bool) -> bool {
    if tool.state != ToolState::ApprovalRequested {
        return false;
    }
    let mut approval = tool.approval.clone().unwrap_or(crate::protocol::Approval {
        id: tool.tool_call_id.clone(),
        approved: None,
        reason: None,
    });
    approval.approved = Some(approved);
    tool.approval = Some(approval);
    tool.state = if approved {
        ToolState::ApprovalResponded
    } else {
        ToolState::OutputDenied
    };
    true
}

/// True while the latest assistant is mid-batch: some tool calls of its step
/// are settled and others still wait for a person.
pub fn is_mid_batch(message: &UIMessage) -> bool {
    let mut settled = false;
    let mut waiting = false;
    for tool in message.tool_parts() {
        settled |= tool.state.is_settled() || tool.state == ToolState::ApprovalResponded;
        waiting |= tool.state.awaits_human();
    }
    settled && waiting
}
