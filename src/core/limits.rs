//! How much a client may send and how long a model may stall: configurable
//! bounds, each answered with a clear error instead of a crash or a hang.

use crate::protocol::client::MAX_ID_BYTES;
use crate::protocol::{ChatRequest, ToolResult, UIMessage};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest incoming WebSocket frame, in bytes.
    pub max_frame_bytes: usize,
    /// Messages in one chat request.
    pub max_messages: usize,
    /// Parts in one message of a chat request.
    pub max_parts: usize,
    /// Size of one tool result's output (serialized), in bytes.
    pub max_tool_result_bytes: usize,
    /// Client tool schemas in one request.
    pub max_client_tools: usize,
    /// Turns waiting in the queue (the running one not counted).
    pub max_pending_turns: usize,
    /// A model stream with no event for this long fails the turn (0: never).
    pub model_stall_timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: 4 * 1024 * 1024,
            max_messages: 2_000,
            max_parts: 500,
            max_tool_result_bytes: 1024 * 1024,
            max_client_tools: 128,
            max_pending_turns: 32,
            model_stall_timeout_ms: 120_000,
        }
    }
}

impl Limits {
    /// An incoming frame of `bytes` bytes is not parsed when over the limit.
    pub fn check_frame_size(&self, bytes: usize) -> Result<(), String> {
        if bytes > self.max_frame_bytes {
            return Err(format!(
                "frame too large: {bytes} bytes (limit {})",
                self.max_frame_bytes
            ));
        }
        Ok(())
    }

    pub fn check_chat_request(&self, request: &ChatRequest) -> Result<(), String> {
        if request.messages.len() > self.max_messages {
            return Err(format!(
                "too many messages in one request: {} (limit {})",
                request.messages.len(),
                self.max_messages
            ));
        }
        self.check_messages(&request.messages)?;
        self.check_client_tools(request.client_tools.as_ref().map_or(0, Vec::len))
    }

    /// Each message's parts and id (the count of messages is the caller's).
    pub fn check_messages(&self, messages: &[UIMessage]) -> Result<(), String> {
        if let Some(m) = messages.iter().find(|m| m.parts.len() > self.max_parts) {
            return Err(format!(
                "message {} has too many parts: {} (limit {})",
                m.id,
                m.parts.len(),
                self.max_parts
            ));
        }
        if let Some(m) = messages.iter().find(|m| m.id.is_empty()) {
            return Err(format!("a {:?} message has an empty id", m.role));
        }
        if let Some(m) = messages.iter().find(|m| m.id.len() > MAX_ID_BYTES) {
            return Err(format!(
                "a message id is too long: {} bytes (limit {MAX_ID_BYTES})",
                m.id.len()
            ));
        }
        Ok(())
    }

    pub fn check_tool_result(&self, result: &ToolResult) -> Result<(), String> {
        let size =
            result.output.to_string().len() + result.error_text.as_ref().map_or(0, String::len);
        self.check_tool_result_size(&result.tool_call_id, size)?;
        self.check_client_tools(result.client_tools.as_ref().map_or(0, Vec::len))
    }

    /// A tool result's output (serialized) plus its error text, `size` bytes.
    pub fn check_tool_result_size(&self, tool_call_id: &str, size: usize) -> Result<(), String> {
        if size > self.max_tool_result_bytes {
            return Err(format!(
                "tool result for {tool_call_id} is too large: {size} bytes (limit {})",
                self.max_tool_result_bytes
            ));
        }
        Ok(())
    }

    pub fn check_client_tools(&self, count: usize) -> Result<(), String> {
        if count > self.max_client_tools {
            return Err(format!(
                "too many client tools: {count} (limit {})",
                self.max_client_tools
            ));
        }
        Ok(())
    }
}

/// The request id of a frame too large to parse, when it leads the frame
/// (as `useAgentChat` writes it: `{"id":"…",…`).
pub fn leading_request_id(text: &str) -> Option<String> {
    let head = text.get(..text.len().min(256)).unwrap_or("");
    let rest = head.strip_prefix("{\"id\":\"")?;
    let end = rest.find('"')?;
    let id = &rest[..end];
    let plain = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    plain.then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_id_over_the_id_limit_is_refused() {
        let request = |id: String| ChatRequest {
            messages: vec![crate::protocol::UIMessage::user_text(id, "hi")],
            trigger: crate::protocol::Trigger::Submit,
            client_tools: None,
            body: Default::default(),
        };
        let limits = Limits::default();
        assert!(limits
            .check_chat_request(&request("m".repeat(MAX_ID_BYTES)))
            .is_ok());
        let error = limits
            .check_chat_request(&request("m".repeat(MAX_ID_BYTES + 1)))
            .unwrap_err();
        assert!(error.contains("too long"), "{error}");
    }

    #[test]
    fn the_leading_id_of_an_oversized_frame_is_found_without_parsing_it() {
        assert_eq!(
            leading_request_id(r#"{"id":"Xy12Ab34","init":{"method":"POST","body":"…"#),
            Some("Xy12Ab34".into())
        );
        assert_eq!(leading_request_id(r#"{"type":"x","id":"a"}"#), None);
        assert_eq!(leading_request_id(r#"{"id":"<script>"}"#), None);
    }
}
