//! A tab's text frame as the core takes it: refused when it is over the
//! frame limit, parsed within the body and tool-result limits, and handed to
//! the behaviour it asks for (a chat request, a tool result or approval, a
//! cancel, a clear, a resume); a frame of no chat type goes to the agent's
//! state and calls, else to the author's code, and a malformed one is
//! answered on its request id when it has one.

use crate::protocol::client::{frame_id, parse_client_frame_within, FrameBounds};
use crate::protocol::{ClientFrame, FrameError};

use crate::core::vocab::limits;
use crate::core::{ConnId, Core};

impl Core {
    /// A frame of `bytes` over the frame limit (`head`: its first bytes),
    /// refused on its request id when it leads the frame.
    pub(in crate::core) fn refuse_large_frame(&mut self, conn: ConnId, bytes: usize, head: &str) {
        let error = format!(
            "frame too large: {bytes} bytes (limit {})",
            self.config.settings.limits.max_frame_bytes
        );
        self.reject(conn, limits::leading_request_id(head), &error);
    }

    pub(in crate::core) fn on_frame(&mut self, conn: ConnId, text: &str) {
        let limits = self.config.settings.limits;
        if text.len() > limits.max_frame_bytes {
            return self.refuse_large_frame(conn, text.len(), text);
        }
        let bounds = FrameBounds {
            max_body_bytes: limits.max_body_bytes,
            max_tool_result_bytes: limits.max_tool_result_bytes,
            shape: limits.shape(),
        };
        match parse_client_frame_within(text, bounds) {
            Ok(ClientFrame::ChatRequest { id, request }) => {
                match limits.check_chat_request(&request) {
                    Ok(()) => self.on_chat_request(conn, id, request),
                    Err(error) => self.reject(conn, Some(id), &error),
                }
            }
            Ok(ClientFrame::ToolResult(result)) => match limits.check_tool_result(&result) {
                Ok(()) => self.on_tool_result(conn, result),
                Err(error) => self.reject(conn, None, &error),
            },
            Ok(ClientFrame::Cancel { id }) => self.on_cancel(&id),
            Ok(ClientFrame::Clear) => self.on_clear(Some(conn)),
            Ok(ClientFrame::ToolApproval {
                tool_call_id,
                approved,
                auto_continue,
            }) => self.on_tool_approval(conn, &tool_call_id, approved, auto_continue),
            Ok(ClientFrame::ResumeRequest { probe_id }) => self.on_resume_probe(conn, probe_id),
            Ok(ClientFrame::ResumeAck { id }) => self.on_resume_ack(conn, &id),
            // Documented ignores: transcript pushes (the server owns history;
            // the pushing tab's list now differs from the store, so its next
            // turn's end sends it the transcript) and non-POST chat requests.
            Ok(ClientFrame::MessagesPush) => self.conns.lists_differ(&[conn]),
            Ok(ClientFrame::NotPost) => {}
            // Not a chat frame: the agent's state and calls, else the author's.
            Err(FrameError::Unknown(kind)) => self.on_agent_frame(conn, &kind, text),
            Err(error) => self.reject_frame(conn, text, &error.to_string()),
        }
    }

    /// A malformed chat frame: answer on its request id when it has one, so
    /// the requesting tab's stream ends with the error; otherwise an error frame.
    fn reject_frame(&mut self, conn: ConnId, text: &str, error: &str) {
        self.reject(conn, frame_id(text), error);
    }
}
