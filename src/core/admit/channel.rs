//! Frames from a parent agent's channel (a sub-agent `chat()`): each is held
//! to the limits of a tab's frame (size, ids, message parts, client tools,
//! tool output), then becomes the programmatic turn, the tool result or the
//! cancel it asks for. A malformed or oversized frame is answered with an
//! error frame on the channel, which stays open, and nothing is stored.

use crate::protocol::channel::{parse_parent_frame, ChatMessage, ParentFrame, RpcChat};
use crate::protocol::UIMessage;

use crate::core::vocab::ids::ConnId;
use crate::core::vocab::ids::IdKind;
use crate::core::vocab::limits::Limits;
use crate::core::Core;

impl Core {
    /// The turns a parent's call on channel `conn` asks for are `depth`
    /// delegated calls deep (what the parent said; 0 when it said nothing).
    pub fn set_delegation_depth(&mut self, conn: &ConnId, depth: u32) {
        self.conns.set_delegation_depth(conn, depth);
    }

    pub(in crate::core) fn on_channel_frame(&mut self, conn: ConnId, text: &str) {
        match parse_channel_frame(text, &self.config.settings.limits) {
            Ok(ParentFrame::Chat(RpcChat {
                message,
                client_tools,
                executor,
            })) => {
                let messages = match message {
                    ChatMessage::Text(text) => {
                        vec![UIMessage::user_text(self.new_id(IdKind::Message), text)]
                    }
                    ChatMessage::Message(message) => vec![message],
                    ChatMessage::Messages(messages) => messages,
                };
                self.on_programmatic_chat(Some(conn), messages, client_tools, executor);
            }
            Ok(ParentFrame::ToolResult(result)) => {
                self.on_remote_tool_done(&conn, result.call_id, &result.tool_call_id, result.result)
            }
            Ok(ParentFrame::Cancel { id }) => self.on_cancel(&id),
            Err(error) => self.reject(conn, None, &error),
        }
    }
}

/// A parent's frame, parsed and held to `limits`; the error is the text of
/// the error frame that answers it.
pub fn parse_channel_frame(text: &str, limits: &Limits) -> Result<ParentFrame, String> {
    limits.check_frame_size(text.len())?;
    limits.check_json_shape(text, "channel frame")?;
    let frame = parse_parent_frame(text).map_err(|e| e.to_string())?;
    match &frame {
        ParentFrame::Chat(chat) => {
            match &chat.message {
                ChatMessage::Message(message) => {
                    limits.check_messages(std::slice::from_ref(message))?
                }
                ChatMessage::Messages(messages) => limits.check_messages(messages)?,
                ChatMessage::Text(_) => {}
            }
            limits.check_client_tools(&chat.client_tools)?;
        }
        ParentFrame::ToolResult(result) => {
            let size = match &result.result {
                Ok(output) => output.to_string().len(),
                Err(error) => error.len(),
            };
            limits.check_tool_result_size(&result.tool_call_id, size)?;
        }
        ParentFrame::Cancel { .. } => {}
    }
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn small() -> Limits {
        Limits {
            max_frame_bytes: 2_000,
            max_parts: 2,
            max_tool_result_bytes: 100,
            max_client_tools: 1,
            ..Limits::default()
        }
    }

    fn chat(message: serde_json::Value, tools: serde_json::Value) -> String {
        json!({"type": "cf_agent_rpc_chat", "message": message, "clientTools": tools,
               "executor": true})
        .to_string()
    }

    fn refusal(text: &str) -> String {
        parse_channel_frame(text, &small()).expect_err(text)
    }

    #[test]
    fn frames_within_the_limits_are_taken() {
        let one_tool = json!([{"name": "parent_clock"}]);
        assert!(parse_channel_frame(&chat(json!("hi"), one_tool), &small()).is_ok());
        let result = json!({"type": "cf_agent_rpc_tool_result", "callId": 1,
                            "toolCallId": "c", "output": "x".repeat(90)});
        assert!(parse_channel_frame(&result.to_string(), &small()).is_ok());
    }

    #[test]
    fn an_oversized_frame_is_refused_before_it_is_parsed() {
        let text = format!("{{{}", "x".repeat(2_000));
        assert!(refusal(&text).contains("frame too large"));
    }

    #[test]
    fn the_message_and_tool_limits_of_a_tab_apply_to_a_channel_chat() {
        let two_tools = json!([{"name": "a"}, {"name": "b"}]);
        assert!(refusal(&chat(json!("hi"), two_tools)).contains("too many client tools"));
        let text_part = json!({"type": "text", "text": "x"});
        let many_parts = json!({"id": "m1", "role": "user",
                                "parts": [text_part, text_part, text_part]});
        assert!(refusal(&chat(many_parts, json!([]))).contains("too many parts"));
        let empty_id = json!({"id": "", "role": "user", "parts": []});
        assert!(refusal(&chat(empty_id, json!([]))).contains("empty id"));
        let long_id = json!({"id": "m".repeat(300), "role": "user", "parts": []});
        assert!(refusal(&chat(long_id, json!([]))).contains("too long"));
    }

    #[test]
    fn an_oversized_tool_output_or_error_is_refused() {
        let output = json!({"type": "cf_agent_rpc_tool_result", "callId": 1,
                            "toolCallId": "c", "output": "x".repeat(100)});
        assert!(refusal(&output.to_string()).contains("too large"));
        let error = json!({"type": "cf_agent_rpc_tool_result", "callId": 1,
                           "toolCallId": "c", "error": "x".repeat(101)});
        assert!(refusal(&error.to_string()).contains("too large"));
    }

    #[test]
    fn a_frame_holding_too_many_values_is_refused_before_it_is_built() {
        let limits = Limits {
            max_message_values: 100,
            ..Limits::default()
        };
        let message = json!({"id": "m1", "role": "user",
                             "parts": [{"type": "data-x", "data": vec![0; 200]}]});
        let error = parse_channel_frame(&chat(message, json!([])), &limits).expect_err("refused");
        assert_eq!(error, "channel frame: too many JSON values (limit 100)");
    }

    #[test]
    fn a_malformed_frame_is_refused_with_the_parser_reason() {
        assert!(refusal("{").contains("not valid JSON"));
        let no_call = r#"{"type":"cf_agent_rpc_tool_result","toolCallId":"c","output":1}"#;
        assert!(refusal(no_call).contains("`callId` is missing"));
    }
}
