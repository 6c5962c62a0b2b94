//! Frames from a readonly connection: a viewer that receives every stream
//! and state frame but may change nothing. What would change the agent is
//! refused with the error frame its kind uses (a chat request on its request
//! id, a state set as `cf_agent_state_error`, a call as a failed `rpc`
//! reply, any other chat frame as a chat error); the resume handshake, a
//! callable marked readonly-safe and frames of the author's own types go on
//! as from any tab (the author's `on_message` sees the connection and may
//! check it too).

use crate::protocol::agent_frames::{self, parse_agent_frame, AgentFrame};
use crate::protocol::client::{parse_client_frame_within, FrameBounds};
use crate::protocol::{types, ClientFrame, FrameError};

use crate::core::vocab::ids::ConnId;
use crate::core::Core;

/// The error a readonly connection is told (the `agents` SDK's words).
pub const READONLY_ERROR: &str = "Connection is readonly";

impl Core {
    pub(in crate::core) fn on_readonly_frame(&mut self, conn: ConnId, text: &str) {
        let limits = self.config.settings.limits;
        if text.len() > limits.max_frame_bytes {
            return self.on_frame(conn, text);
        }
        let bounds = FrameBounds {
            max_body_bytes: limits.max_body_bytes,
            max_tool_result_bytes: limits.max_tool_result_bytes,
            shape: limits.shape(),
        };
        match parse_client_frame_within(text, bounds) {
            Ok(ClientFrame::ChatRequest { id, .. }) => self.reject(conn, Some(id), READONLY_ERROR),
            Ok(
                ClientFrame::ToolResult(_)
                | ClientFrame::ToolApproval { .. }
                | ClientFrame::Clear
                | ClientFrame::Cancel { .. },
            ) => self.reject(conn, None, READONLY_ERROR),
            Err(FrameError::Unknown(kind)) if kind == types::STATE => {
                self.send_to(vec![conn], agent_frames::state_error(READONLY_ERROR))
            }
            Err(FrameError::Unknown(kind))
                if kind == types::RPC && text.len() <= crate::protocol::gate::CALL.max_bytes =>
            {
                match parse_agent_frame(&kind, text) {
                    Some(Ok(AgentFrame::Call { id, method, .. }))
                        if !(self.config.agent_api.callable(&method))
                            .is_some_and(|c| c.readonly_safe) =>
                    {
                        self.send_to(vec![conn], agent_frames::rpc_error(&id, READONLY_ERROR))
                    }
                    _ => self.on_frame(conn, text),
                }
            }
            // The resume handshake, documented ignores, the author's own
            // frame types and malformed frames: as from any tab.
            _ => self.on_frame(conn, text),
        }
    }
}
