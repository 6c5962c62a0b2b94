//! What `save_messages` may store in the tool parts of an assistant (or
//! system) message: a call that is settled (a result, an error or a
//! denial), or a part exactly as the agent already stores it under the same
//! message id. A call still waiting (for its input, a browser or a person)
//! or holding an approval is only ever written by the agent's own turn and a
//! person's `cf_agent_tool_approval`; a saved copy could otherwise make a
//! continuation run a call no person approved.

use crate::protocol::{Role, ToolPart, ToolState, UIMessage};

use crate::core::vocab::submit::SubmitError;
use crate::core::Core;

impl Core {
    /// Refuses `messages` if one of their tool parts could stand for a
    /// decision no person made (see the module header); nothing is stored.
    pub(in crate::core::admit) fn check_saved_tool_parts(
        &self,
        messages: &[UIMessage],
    ) -> Result<(), SubmitError> {
        for message in messages.iter().filter(|m| m.role != Role::User) {
            let stored = message
                .tool_parts()
                .next()
                .and_then(|_| self.transcript.get(&message.id));
            for part in message.tool_parts() {
                let unchanged = stored
                    .as_ref()
                    .and_then(|m| m.tool_parts().find(|t| t.tool_call_id == part.tool_call_id))
                    .is_some_and(|stored| stored == part);
                if unchanged {
                    continue;
                }
                if let Some(why) = refusal(part) {
                    return Err(SubmitError(format!(
                        "save_messages refused tool call {:?} of message {:?}: {why}",
                        part.tool_call_id, message.id
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Why a new or changed tool part may not be saved, if it may not.
fn refusal(part: &ToolPart) -> Option<String> {
    if !part.state.is_settled() {
        return Some(format!(
            "it is in state {}; only settled calls (output-available, output-error, \
             output-denied) can be saved, a pending call is made by the agent's own turn",
            state_name(part.state)
        ));
    }
    let approved = part.approval.as_ref().and_then(|a| a.approved) == Some(true);
    approved.then(|| {
        "it is marked approved; an approval is recorded only when a person answers the \
         agent's approval request"
            .to_string()
    })
}

fn state_name(state: ToolState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
