//! What the tool hooks see of the running turn: the call a hook sees (in
//! the active turn), and the messages a server tool's context carries.

use serde_json::Value;

use crate::core::vocab::hooks::ToolCall;
use crate::core::Core;

impl Core {
    /// The call as the tool hooks see it, in the active turn.
    pub(in crate::core::turn) fn hook_call(
        &self,
        tool_call_id: &str,
        tool_name: &str,
        input: Value,
        client: bool,
    ) -> ToolCall {
        ToolCall {
            request_id: self
                .active
                .as_ref()
                .map(|a| a.turn.request_id.clone())
                .unwrap_or_default(),
            tool_call_id: tool_call_id.to_string(),
            tool_name: tool_name.to_string(),
            input,
            client,
        }
    }

    /// What a server tool's context carries: the last messages of the
    /// conversation, then the answer being written.
    pub fn turn_messages(&self) -> Vec<crate::protocol::UIMessage> {
        let mut messages: Vec<_> = self.transcript.iter().cloned().collect();
        if let Some(active) = &self.active {
            messages.retain(|m| m.id != active.message.id);
            messages.push(active.message.clone());
        }
        let keep = crate::core::vocab::turn_config::TURN_CONTEXT_MESSAGES;
        messages.split_off(messages.len().saturating_sub(keep))
    }

    /// The request id of the turn running now, if one is.
    pub fn running_request_id(&self) -> Option<String> {
        self.active.as_ref().map(|a| a.turn().request_id.clone())
    }
}
