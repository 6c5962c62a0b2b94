//! Where a tab's text frame goes once its type is known: the agent's own
//! protocol (state, calls) here, a type no protocol layer uses to the
//! author's `on_message` (`AuthorCall::OtherFrame`).

use crate::protocol::agent_frames::{parse_agent_frame, AgentFrame};

use crate::core::contract::author_calls::AuthorCall;
use crate::core::contract::effects::Effect;
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

impl Core {
    /// A frame of type `kind` that the chat layer does not own.
    pub(in crate::core) fn on_agent_frame(&mut self, conn: ConnId, kind: &str, text: &str) {
        match parse_agent_frame(kind, text) {
            Some(Ok(AgentFrame::SetState { state })) => self.on_state_frame(conn, state),
            Some(Ok(AgentFrame::Call { id, method, args })) => {
                self.on_call(conn, id, method, args, text.len())
            }
            Some(Err(error)) => self.on_agent_frame_error(conn, error),
            None => self.effects.push(Effect::Author(AuthorCall::OtherFrame {
                conn,
                text: text.to_string(),
            })),
        }
    }
}
