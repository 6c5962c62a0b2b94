//! The parent ↔ child channel of a sub-agent `chat()` (a Durable-Object-to-
//! Durable-Object WebSocket): the typed frames each side sends, serialised to
//! their exact JSON, and parsers that refuse a malformed frame with a clear
//! error instead of defaulting its fields.
//!
//! Parent → child: `cf_agent_rpc_chat {message, clientTools, executor}` opens
//! a turn, `cf_agent_rpc_tool_result {callId, toolCallId, output|error}`
//! answers a tool call, `cf_agent_chat_request_cancel {id}` aborts the turn.
//! Child → parent: `cf_agent_rpc_started {requestId}`, `cf_agent_rpc_tool_call
//! {callId, toolCallId, toolName, input}`, the `cf_agent_use_chat_response`
//! frames a tab receives, and `cf_agent_chat_error` for a refused frame. The
//! limits that depend on the agent's settings (frame size, message parts,
//! client tool count, tool output size) are applied by the core (core/channel.rs).

use serde::Serialize;
use serde_json::{Map, Value};

use super::client::{client_tools, invalid, string_field};
use super::message::UIMessage;
use super::server::Outcome;
use super::types;
use super::{ClientToolSchema, FrameError};

/// What a parent asks its child to answer: plain text (the child mints the
/// message id), a whole message, or several messages stored in order before
/// the one turn that answers them (sent as an array).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ChatMessage {
    Text(String),
    Message(UIMessage),
    Messages(Vec<UIMessage>),
}

impl From<&str> for ChatMessage {
    fn from(text: &str) -> Self {
        ChatMessage::Text(text.to_string())
    }
}

impl From<String> for ChatMessage {
    fn from(text: String) -> Self {
        ChatMessage::Text(text)
    }
}

impl From<UIMessage> for ChatMessage {
    fn from(message: UIMessage) -> Self {
        ChatMessage::Message(message)
    }
}

/// `cf_agent_rpc_chat`: one turn of the child for the parent.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcChat {
    pub message: ChatMessage,
    /// Client tools for this turn only.
    pub client_tools: Vec<ClientToolSchema>,
    /// The parent runs calls to `client_tools` (otherwise they are left dangling).
    pub executor: bool,
}

/// `cf_agent_rpc_tool_result`: the parent's answer to one `cf_agent_rpc_tool_call`.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcToolResult {
    pub call_id: u64,
    pub tool_call_id: String,
    /// `Err(text)` is sent as `error`, `Ok(output)` as `output`.
    pub result: Result<Value, String>,
}

/// A frame a parent sends on the channel.
#[derive(Debug, Clone, PartialEq)]
pub enum ParentFrame {
    Chat(RpcChat),
    ToolResult(RpcToolResult),
    /// Aborts the turn with this request id.
    Cancel {
        id: String,
    },
}

/// `cf_agent_rpc_tool_call`: the child's model called one of the parent's tools.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcToolCall {
    pub call_id: u64,
    pub tool_call_id: String,
    pub tool_name: String,
    pub input: Value,
}

/// A `cf_agent_use_chat_response` frame as the parent reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelResponse {
    pub id: String,
    /// A `UIMessageChunk` as JSON, the error text, or empty on a terminal frame.
    pub body: String,
    pub done: bool,
    pub error: bool,
    pub outcome: Option<Outcome>,
}

/// A frame a child sends on the channel, as its parent reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildFrame {
    Started {
        request_id: String,
    },
    ToolCall(RpcToolCall),
    Response(ChannelResponse),
    /// `cf_agent_chat_error`: the child refused the parent's last frame.
    Refused {
        error: String,
    },
    /// A frame meant for tabs (transcript broadcasts and the like).
    Other,
}

// ---- serialisers ----

impl ParentFrame {
    /// The frame's JSON text, as it goes on the channel.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct ChatWire<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            message: &'a ChatMessage,
            client_tools: &'a [ClientToolSchema],
            executor: bool,
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct ToolResultWire<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            call_id: u64,
            tool_call_id: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            output: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'a str>,
        }
        #[derive(Serialize)]
        struct CancelWire<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            id: &'a str,
        }
        let text = match self {
            ParentFrame::Chat(chat) => serde_json::to_string(&ChatWire {
                kind: types::RPC_CHAT,
                message: &chat.message,
                client_tools: &chat.client_tools,
                executor: chat.executor,
            }),
            ParentFrame::ToolResult(result) => serde_json::to_string(&ToolResultWire {
                kind: types::RPC_TOOL_RESULT,
                call_id: result.call_id,
                tool_call_id: &result.tool_call_id,
                output: result.result.as_ref().ok(),
                error: result.result.as_ref().err().map(String::as_str),
            }),
            ParentFrame::Cancel { id } => serde_json::to_string(&CancelWire {
                kind: types::CHAT_REQUEST_CANCEL,
                id,
            }),
        };
        text.unwrap_or_default()
    }
}

/// First frame on a parent's channel: the request id of its turn.
pub fn rpc_started(request_id: &str) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Wire<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        request_id: &'a str,
    }
    serde_json::to_string(&Wire {
        kind: types::RPC_STARTED,
        request_id,
    })
    .unwrap_or_default()
}

/// Asks the parent to run one of the turn's client tools.
pub fn rpc_tool_call(call: u64, tool_call_id: &str, tool_name: &str, input: &Value) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Wire<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        call_id: u64,
        tool_call_id: &'a str,
        tool_name: &'a str,
        input: &'a Value,
    }
    serde_json::to_string(&Wire {
        kind: types::RPC_TOOL_CALL,
        call_id: call,
        tool_call_id,
        tool_name,
        input,
    })
    .unwrap_or_default()
}

// ---- parsers ----

/// The object and `type` of a frame; every channel frame is a typed object.
fn typed_object(text: &str) -> Result<(String, Map<String, Value>), FrameError> {
    let value: Value = serde_json::from_str(text).map_err(|_| FrameError::NotJson)?;
    let Value::Object(mut obj) = value else {
        return Err(FrameError::NoType);
    };
    match obj.remove("type") {
        Some(Value::String(kind)) => Ok((kind, obj)),
        _ => Err(FrameError::NoType),
    }
}

/// Parses a frame a parent sent. Every frame of another type is an error: the
/// channel carries nothing but this protocol.
pub fn parse_parent_frame(text: &str) -> Result<ParentFrame, FrameError> {
    let (kind, mut obj) = typed_object(text)?;
    match kind.as_str() {
        types::RPC_CHAT => parse_chat(&mut obj).map(ParentFrame::Chat),
        types::RPC_TOOL_RESULT => parse_tool_result(&mut obj).map(ParentFrame::ToolResult),
        types::CHAT_REQUEST_CANCEL => Ok(ParentFrame::Cancel {
            id: string_field(&obj, "id", "channel cancel")?,
        }),
        _ => Err(FrameError::Unknown(kind)),
    }
}

fn parse_chat(obj: &mut Map<String, Value>) -> Result<RpcChat, FrameError> {
    const FRAME: &str = "channel chat";
    let message = match obj.remove("message") {
        Some(Value::String(text)) => ChatMessage::Text(text),
        Some(value @ Value::Object(_)) => ChatMessage::Message(chat_message(value)?),
        Some(Value::Array(list)) if !list.is_empty() => ChatMessage::Messages(
            list.into_iter()
                .map(chat_message)
                .collect::<Result<_, _>>()?,
        ),
        Some(_) => {
            return Err(invalid(
                FRAME,
                "`message` must be a string or a message object (or a non-empty list of them)",
            ))
        }
        None => return Err(invalid(FRAME, "`message` is missing")),
    };
    Ok(RpcChat {
        message,
        client_tools: client_tools(obj.get("clientTools"), FRAME)?.unwrap_or_default(),
        executor: optional_bool(obj, "executor", FRAME)?.unwrap_or(false),
    })
}

/// One message of a channel chat.
fn chat_message(value: Value) -> Result<UIMessage, FrameError> {
    serde_json::from_value(value).map_err(|e| invalid("channel chat", format!("`message`: {e}")))
}

fn parse_tool_result(obj: &mut Map<String, Value>) -> Result<RpcToolResult, FrameError> {
    const FRAME: &str = "channel tool result";
    let call_id = call_id(obj, FRAME)?;
    let tool_call_id = string_field(obj, "toolCallId", FRAME)?;
    let result = match (obj.remove("output"), obj.remove("error")) {
        (Some(output), None) => Ok(output),
        (None, Some(Value::String(error))) => Err(error),
        (None, Some(_)) => return Err(invalid(FRAME, "`error` must be a string")),
        (Some(_), Some(_)) => return Err(invalid(FRAME, "has both `output` and `error`")),
        (None, None) => return Err(invalid(FRAME, "needs `output` or `error`")),
    };
    Ok(RpcToolResult {
        call_id,
        tool_call_id,
        result,
    })
}

/// Parses a frame a child sent. Frames meant for tabs other than the
/// responses (transcript broadcasts and the like) are `Other`.
pub fn parse_child_frame(text: &str) -> Result<ChildFrame, FrameError> {
    let (kind, mut obj) = typed_object(text)?;
    match kind.as_str() {
        types::RPC_STARTED => Ok(ChildFrame::Started {
            request_id: string_field(&obj, "requestId", "channel started")?,
        }),
        types::RPC_TOOL_CALL => {
            const FRAME: &str = "channel tool call";
            Ok(ChildFrame::ToolCall(RpcToolCall {
                call_id: call_id(&obj, FRAME)?,
                tool_call_id: string_field(&obj, "toolCallId", FRAME)?,
                tool_name: text_field(&mut obj, "toolName", FRAME)?,
                input: obj
                    .remove("input")
                    .ok_or_else(|| invalid(FRAME, "`input` is missing"))?,
            }))
        }
        types::USE_CHAT_RESPONSE => {
            const FRAME: &str = "chat response";
            let outcome = match obj.remove("outcome") {
                None | Some(Value::Null) => None,
                Some(value) => Some(
                    serde_json::from_value(value)
                        .map_err(|e| invalid(FRAME, format!("`outcome`: {e}")))?,
                ),
            };
            Ok(ChildFrame::Response(ChannelResponse {
                id: text_field(&mut obj, "id", FRAME)?,
                body: text_field(&mut obj, "body", FRAME)?,
                done: optional_bool(&obj, "done", FRAME)?
                    .ok_or_else(|| invalid(FRAME, "`done` is missing"))?,
                error: optional_bool(&obj, "error", FRAME)?.unwrap_or(false),
                outcome,
            }))
        }
        types::CHAT_ERROR => Ok(ChildFrame::Refused {
            error: text_field(&mut obj, "error", "chat error")?,
        }),
        _ => Ok(ChildFrame::Other),
    }
}

// ---- fields ----

fn call_id(obj: &Map<String, Value>, frame: &'static str) -> Result<u64, FrameError> {
    match obj.get("callId") {
        Some(value) => value
            .as_u64()
            .ok_or_else(|| invalid(frame, "`callId` must be a non-negative integer")),
        None => Err(invalid(frame, "`callId` is missing")),
    }
}

/// A required string that may be empty and has no length limit of its own.
fn text_field(
    obj: &mut Map<String, Value>,
    key: &str,
    frame: &'static str,
) -> Result<String, FrameError> {
    match obj.remove(key) {
        Some(Value::String(text)) => Ok(text),
        Some(_) => Err(invalid(frame, format!("`{key}` must be a string"))),
        None => Err(invalid(frame, format!("`{key}` is missing"))),
    }
}

/// An optional boolean: absent or `null` is `None`, another type an error.
fn optional_bool(
    obj: &Map<String, Value>,
    key: &str,
    frame: &'static str,
) -> Result<Option<bool>, FrameError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(invalid(frame, format!("`{key}` must be a boolean"))),
    }
}

#[cfg(test)]
mod tests;
