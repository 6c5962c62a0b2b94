//! `UIMessageChunk`: the AI SDK stream chunks carried (as JSON text) in the
//! `body` of `cf_agent_use_chat_response` frames, and logged for replay.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum UIMessageChunk {
    #[serde(rename_all = "camelCase")]
    Start {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    StartStep,
    FinishStep,
    TextStart {
        id: String,
    },
    TextDelta {
        id: String,
        delta: String,
    },
    TextEnd {
        id: String,
    },
    ReasoningStart {
        id: String,
    },
    ReasoningDelta {
        id: String,
        delta: String,
    },
    ReasoningEnd {
        id: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolInputStart {
        tool_call_id: String,
        tool_name: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolInputDelta {
        tool_call_id: String,
        input_text_delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolInputAvailable {
        tool_call_id: String,
        tool_name: String,
        input: Value,
        /// Set on a client tool's call the agent settled itself
        /// (`before_tool_call`): the client does not run it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_executed: Option<bool>,
    },
    #[serde(rename_all = "camelCase")]
    ToolInputError {
        tool_call_id: String,
        tool_name: String,
        input: Value,
        error_text: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolApprovalRequest {
        approval_id: String,
        tool_call_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolOutputAvailable {
        tool_call_id: String,
        output: Value,
    },
    #[serde(rename_all = "camelCase")]
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolOutputDenied {
        tool_call_id: String,
    },
    #[serde(rename_all = "camelCase")]
    MessageMetadata {
        message_metadata: Value,
    },
    #[serde(rename_all = "camelCase")]
    Finish {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    Abort {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Error {
        error_text: String,
    },
}

impl UIMessageChunk {
    /// Settled tool results are written to the chunk log at once.
    pub fn settles_a_tool(&self) -> bool {
        matches!(
            self,
            UIMessageChunk::ToolOutputAvailable { .. }
                | UIMessageChunk::ToolOutputError { .. }
                | UIMessageChunk::ToolOutputDenied { .. }
                | UIMessageChunk::ToolInputError { .. }
        )
    }

    pub fn to_json(&self) -> String {
        // Serializing these plain enums cannot fail; an empty object is a safe fallback.
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chunks_use_the_ai_sdk_type_strings_and_field_names() {
        let cases = [
            (
                UIMessageChunk::Start {
                    message_id: Some("m1".into()),
                    message_metadata: None,
                },
                json!({"type":"start","messageId":"m1"}),
            ),
            (UIMessageChunk::StartStep, json!({"type":"start-step"})),
            (
                UIMessageChunk::TextDelta {
                    id: "t0".into(),
                    delta: "Hel".into(),
                },
                json!({"type":"text-delta","id":"t0","delta":"Hel"}),
            ),
            (
                UIMessageChunk::ToolInputDelta {
                    tool_call_id: "c1".into(),
                    input_text_delta: "{\"ci".into(),
                },
                json!({"type":"tool-input-delta","toolCallId":"c1","inputTextDelta":"{\"ci"}),
            ),
            (
                UIMessageChunk::ToolApprovalRequest {
                    approval_id: "ap1".into(),
                    tool_call_id: "c1".into(),
                },
                json!({"type":"tool-approval-request","approvalId":"ap1","toolCallId":"c1"}),
            ),
            (
                UIMessageChunk::Finish {
                    finish_reason: Some("stop".into()),
                    message_metadata: None,
                },
                json!({"type":"finish","finishReason":"stop"}),
            ),
            (
                UIMessageChunk::Finish {
                    finish_reason: Some("stop".into()),
                    message_metadata: Some(json!({"model": "m"})),
                },
                json!({"type":"finish","finishReason":"stop","messageMetadata":{"model":"m"}}),
            ),
            (
                UIMessageChunk::MessageMetadata {
                    message_metadata: json!({"step": 1}),
                },
                json!({"type":"message-metadata","messageMetadata":{"step":1}}),
            ),
        ];
        for (chunk, expected) in cases {
            let text = chunk.to_json();
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), expected);
            assert_eq!(
                serde_json::from_str::<UIMessageChunk>(&text).unwrap(),
                chunk
            );
        }
    }
}
