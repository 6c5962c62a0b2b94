//! Where a tab's text frame goes once its type is known: the agent's own
//! protocol (state, calls) here, a type no protocol layer uses to the
//! author's `on_message` (`AuthorCall::OtherFrame`). A state or call frame
//! larger than what it may hold is refused by its length, before any of it
//! is parsed.

use crate::protocol::agent_frames::{self, parse_agent_frame, AgentFrame};
use crate::protocol::types;

use crate::core::callables::in_flight::MAX_CALL_FRAME_BYTES;
use crate::core::synced_state::MAX_STATE_FRAME_BYTES;

use crate::core::contract::author_calls::AuthorCall;
use crate::core::contract::effects::Effect;
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

impl Core {
    /// A frame of type `kind` that the chat layer does not own.
    pub(in crate::core) fn on_agent_frame(&mut self, conn: ConnId, kind: &str, text: &str) {
        if kind == types::RPC && text.len() > MAX_CALL_FRAME_BYTES {
            let error = format!(
                "call frame too large: {} bytes (limit {MAX_CALL_FRAME_BYTES})",
                text.len()
            );
            let frame = match agent_frames::call_id(text) {
                Some(id) => agent_frames::rpc_error(&id, &error),
                None => return self.reject(conn, None, &error),
            };
            return self.send_to(vec![conn], frame);
        }
        if kind == types::STATE && text.len() > MAX_STATE_FRAME_BYTES {
            let error = format!(
                "state too large: {} bytes (limit {MAX_STATE_FRAME_BYTES})",
                text.len()
            );
            return self.send_to(vec![conn], agent_frames::state_error(&error));
        }
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
