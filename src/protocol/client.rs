//! Frames a browser (or any client) sends: parsing and validation.
//!
//! Parsing never panics. A frame of a chat type that is malformed yields a
//! `FrameError` the agent answers with an error frame; a frame of a type the
//! chat layer does not own is `Unknown` (documented ignore).
//!
//! Parsing is bounded by what a frame needs, not by what it carries: its
//! fields are first read as raw JSON text (`raw_fields`), only the fields a
//! frame's type uses are built into values, and the parts with their own
//! byte limit (a chat request's custom body, a tool result's output) are
//! measured as text and refused before they are built (`FrameBounds`).

use std::borrow::Cow;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::json_shape::{self, ShapeLimits};
use super::json_string;
use super::message::UIMessage;
use super::posted_message::read_posted_message;
use super::types;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientToolSchema {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Submit,
    Regenerate,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<UIMessage>,
    pub trigger: Trigger,
    /// `None`: absent (keep the stored list); `Some(vec![])`: clear it.
    pub client_tools: Option<Vec<ClientToolSchema>>,
    /// Every other body key, exposed to the agent as the custom body.
    pub body: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub tool_call_id: String,
    pub output: Value,
    /// `Some(text)` when the client reported `state:"output-error"`.
    pub error_text: Option<String>,
    pub auto_continue: bool,
    pub client_tools: Option<Vec<ClientToolSchema>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ClientFrame {
    ChatRequest {
        id: String,
        request: ChatRequest,
    },
    Cancel {
        id: String,
    },
    Clear,
    ToolResult(ToolResult),
    ToolApproval {
        tool_call_id: String,
        approved: bool,
        auto_continue: bool,
    },
    ResumeRequest {
        probe_id: Option<String>,
    },
    ResumeAck {
        id: String,
    },
    /// A transcript push; this agent does not take history from clients.
    MessagesPush,
    /// A chat request whose `init.method` is not POST: ignored, as the reference does.
    NotPost,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrameError {
    #[error("frame is not valid JSON")]
    NotJson,
    #[error("frame has no string `type`")]
    NoType,
    /// Not a chat frame; left to the agent's own handler.
    #[error("unknown frame type `{0}`")]
    Unknown(String),
    #[error("invalid {frame} frame: {reason}")]
    Invalid { frame: &'static str, reason: String },
    /// A part of the frame is over its limit (refused before it is built).
    #[error("{0}")]
    TooLarge(String),
}

/// Default error text of a client tool result sent with `state:"output-error"`.
pub const DEFAULT_TOOL_ERROR: &str = "Tool execution denied by user";

/// Longest id (request id, `toolCallId`, `probeId`, message id) a client may
/// send, in bytes. A request id is echoed on every frame of its turn, so an
/// unbounded one would multiply the size of everything the agent sends.
pub const MAX_ID_BYTES: usize = 256;

pub(super) fn invalid(frame: &'static str, reason: impl Into<String>) -> FrameError {
    FrameError::Invalid {
        frame,
        reason: reason.into(),
    }
}

/// A required, non-empty string of at most `MAX_ID_BYTES` (an id).
pub(super) fn string_field(
    obj: &Map<String, Value>,
    key: &str,
    frame: &'static str,
) -> Result<String, FrameError> {
    match obj.get(key) {
        Some(Value::String(s)) if s.len() > MAX_ID_BYTES => Err(invalid(
            frame,
            format!(
                "`{key}` is too long: {} bytes (limit {MAX_ID_BYTES})",
                s.len()
            ),
        )),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(invalid(frame, format!("`{key}` is empty"))),
        Some(_) => Err(invalid(frame, format!("`{key}` must be a string"))),
        None => Err(invalid(frame, format!("`{key}` is missing"))),
    }
}

fn bool_field(obj: &Map<String, Value>, key: &str, default: bool) -> bool {
    obj.get(key).and_then(Value::as_bool).unwrap_or(default)
}

/// An optional client tool list: absent or `null` is `None`, anything but
/// a list of tool schemas is an error.
pub(super) fn client_tools(
    value: Option<&Value>,
    frame: &'static str,
) -> Result<Option<Vec<ClientToolSchema>>, FrameError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value::<Vec<ClientToolSchema>>(v.clone())
            .map(Some)
            .map_err(|e| invalid(frame, format!("`clientTools`: {e}"))),
    }
}

/// Byte limits a frame's parts are held to before they are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameBounds {
    /// A chat request's custom body (its keys other than `messages`,
    /// `trigger` and `clientTools`), measured as sent.
    pub max_body_bytes: usize,
    /// A tool result's `output`, measured as sent.
    pub max_tool_result_bytes: usize,
    /// The values and nesting a chat request's body (its messages, tools
    /// and custom body) or a tool result's `output` may hold, counted in
    /// its text before anything of it is built (`json_shape`).
    pub shape: ShapeLimits,
}

impl FrameBounds {
    /// No limit beyond the frame's own size.
    pub const NONE: FrameBounds = FrameBounds {
        max_body_bytes: usize::MAX,
        max_tool_result_bytes: usize::MAX,
        shape: ShapeLimits::NONE,
    };
}

/// Refuses `text` (`what`) when it holds more values or nesting than
/// `limits`, before any of it is built.
fn within_shape(text: &str, limits: ShapeLimits, what: &str) -> Result<(), FrameError> {
    json_shape::check(text, limits, what).map_err(FrameError::TooLarge)
}

/// A frame's top-level fields as raw JSON text, in order (a repeated key
/// is read as its last, as a whole read does).
struct RawFields<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for RawFields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = RawFields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: &'de RawValue = map.next_value()?;
                    fields.push((key, value));
                }
                Ok(RawFields(fields))
            }
        }
        d.deserialize_map(Fields)
    }
}

impl<'a> RawFields<'a> {
    fn read(text: &'a str) -> Result<RawFields<'a>, FrameError> {
        if !text.trim_start().starts_with('{') {
            return match serde_json::from_str::<&RawValue>(text) {
                Ok(_) => Err(FrameError::NoType),
                Err(_) => Err(FrameError::NotJson),
            };
        }
        serde_json::from_str(text).map_err(|_| FrameError::NotJson)
    }

    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The named fields built into an object; every other field is skipped
    /// without being built.
    fn object(&self, keys: &[&str]) -> Result<Map<String, Value>, FrameError> {
        let mut obj = Map::new();
        for key in keys {
            if let Some(raw) = self.get(key) {
                let value = serde_json::from_str(raw.get()).map_err(|_| FrameError::NotJson)?;
                obj.insert((*key).to_string(), value);
            }
        }
        Ok(obj)
    }
}

pub fn parse_client_frame(text: &str) -> Result<ClientFrame, FrameError> {
    parse_client_frame_within(text, FrameBounds::NONE)
}

/// As `parse_client_frame`, holding a frame's parts to `bounds` before they
/// are built.
pub fn parse_client_frame_within(
    text: &str,
    bounds: FrameBounds,
) -> Result<ClientFrame, FrameError> {
    // The type is read first, skipping every other field without building
    // it: only a frame of a type the chat layer parses is read whole, so a
    // frame it does not own (or ignores) costs no memory beyond its text.
    // A frame the short read cannot place (not an object, a repeated `type`
    // or one that is not a string, too deep, not JSON) is read whole at once.
    let (kind, mut whole) = match frame_type(text) {
        Some(Some(kind)) => (kind, None),
        Some(None) => return Err(FrameError::NoType),
        None => {
            within_shape(text, bounds.shape, "frame")?;
            let obj = whole_object(text)?;
            let Some(Value::String(kind)) = obj.get("type") else {
                return Err(FrameError::NoType);
            };
            (Cow::Owned(kind.clone()), Some(obj))
        }
    };
    // A frame whose type was read short is read field by field; one read
    // whole already (its type could not be placed otherwise) is used as is.
    let mut fields = || match whole.take() {
        Some(obj) => Ok(Fields::Whole(obj)),
        None => RawFields::read(text).map(Fields::Raw),
    };
    match kind.as_ref() {
        types::USE_CHAT_REQUEST => parse_chat_request(fields()?, bounds),
        types::CHAT_REQUEST_CANCEL => Ok(ClientFrame::Cancel {
            id: string_field(&fields()?.object(&["id"])?, "id", "cancel")?,
        }),
        types::CHAT_CLEAR => Ok(ClientFrame::Clear),
        types::TOOL_RESULT => parse_tool_result(fields()?, bounds),
        types::TOOL_APPROVAL => {
            let obj = fields()?.object(&["toolCallId", "approved", "autoContinue"])?;
            Ok(ClientFrame::ToolApproval {
                tool_call_id: string_field(&obj, "toolCallId", "tool approval")?,
                approved: match obj.get("approved") {
                    Some(Value::Bool(b)) => *b,
                    _ => return Err(invalid("tool approval", "`approved` must be a boolean")),
                },
                auto_continue: bool_field(&obj, "autoContinue", false),
            })
        }
        types::STREAM_RESUME_REQUEST => Ok(ClientFrame::ResumeRequest {
            probe_id: fields()?
                .object(&["probeId"])?
                .get("probeId")
                .and_then(Value::as_str)
                .filter(|p| p.len() <= MAX_ID_BYTES)
                .map(str::to_string),
        }),
        types::STREAM_RESUME_ACK => Ok(ClientFrame::ResumeAck {
            id: string_field(&fields()?.object(&["id"])?, "id", "resume ack")?,
        }),
        types::CHAT_MESSAGES => Ok(ClientFrame::MessagesPush),
        other => Err(FrameError::Unknown(other.to_string())),
    }
}

/// A chat frame's fields: as raw text (the usual case), or an object read
/// whole when its type could only be found that way.
enum Fields<'a> {
    Raw(RawFields<'a>),
    Whole(Map<String, Value>),
}

impl<'a> Fields<'a> {
    /// The named fields built into an object.
    fn object(&self, keys: &[&str]) -> Result<Map<String, Value>, FrameError> {
        match self {
            Fields::Raw(raw) => raw.object(keys),
            Fields::Whole(obj) => Ok(keys
                .iter()
                .filter_map(|k| obj.get(*k).map(|v| ((*k).to_string(), v.clone())))
                .collect()),
        }
    }

    /// One field's JSON text, measured and parsed only by the caller.
    fn text(&self, key: &str) -> Option<Cow<'a, str>> {
        match self {
            Fields::Raw(raw) => raw.get(key).map(|v| Cow::Borrowed(v.get())),
            Fields::Whole(obj) => obj.get(key).map(|v| Cow::Owned(v.to_string())),
        }
    }
}

/// The `id` of a frame, read without building anything else of it.
pub fn frame_id(text: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow, default)]
        id: Option<Cow<'a, str>>,
    }
    serde_json::from_str::<Head>(text)
        .ok()?
        .id
        .map(Cow::into_owned)
}

/// The frame's `type`, read without building the rest of the frame:
/// `Some(None)` for an object without one, `None` when the short read cannot
/// tell (the caller then reads the frame whole, which decides).
fn frame_type(text: &str) -> Option<Option<Cow<'_, str>>> {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow, rename = "type", default)]
        kind: Option<Cow<'a, str>>,
    }
    if !text.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str::<Head>(text)
        .ok()
        .map(|head| head.kind)
}

/// The whole frame as a JSON object.
fn whole_object(text: &str) -> Result<Map<String, Value>, FrameError> {
    match serde_json::from_str(text) {
        Ok(Value::Object(obj)) => Ok(obj),
        Ok(_) => Err(FrameError::NoType),
        Err(_) => Err(FrameError::NotJson),
    }
}

fn parse_chat_request(fields: Fields, bounds: FrameBounds) -> Result<ClientFrame, FrameError> {
    const FRAME: &str = "chat request";
    let id = string_field(&fields.object(&["id"])?, "id", FRAME)?;
    // `init` is read field by field too, and its body (a JSON string that
    // holds the request's JSON) unescaped into one buffer of its size.
    let not_object = || invalid(FRAME, "`init` must be an object");
    let init_text = fields.text("init").ok_or_else(not_object)?;
    let init = RawFields::read(&init_text).map_err(|_| not_object())?;
    if init
        .object(&["method"])?
        .get("method")
        .and_then(Value::as_str)
        != Some("POST")
    {
        return Ok(ClientFrame::NotPost);
    }
    let body_raw = init
        .get("body")
        .filter(|raw| raw.get().starts_with('"'))
        .ok_or_else(|| invalid(FRAME, "`init.body` must be a JSON string"))?;
    let body_text = json_string::decode(body_raw.get()).ok_or(FrameError::NotJson)?;
    let body_text = body_text.as_str();
    let body = match RawFields::read(body_text) {
        Ok(body) => body,
        Err(_) => return Err(invalid(FRAME, "`init.body` is not a JSON object")),
    };
    // The custom body is every other key; it is measured as sent and
    // refused before any of it is built.
    const OWN_KEYS: [&str; 3] = ["messages", "trigger", "clientTools"];
    let custom: Vec<(&String, &RawValue)> = body
        .0
        .iter()
        .filter(|(k, _)| !OWN_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k, *v))
        .collect();
    let custom_bytes: usize = custom
        .iter()
        .map(|(k, v)| k.len() + v.get().len() + 4)
        .sum::<usize>()
        + 1;
    if !custom.is_empty() && custom_bytes > bounds.max_body_bytes {
        return Err(FrameError::TooLarge(format!(
            "custom body too large: {custom_bytes} bytes (limit {})",
            bounds.max_body_bytes
        )));
    }
    // Everything of the body that is built (messages, client tools, custom
    // body) is counted before any of it is: a body within its bytes may
    // still hold millions of tiny values.
    within_shape(body_text, bounds.shape, "chat request body")?;
    let messages = match body
        .get("messages")
        .map(|raw| serde_json::from_str::<Vec<&RawValue>>(raw.get()))
    {
        Some(Ok(items)) => {
            let mut messages = Vec::with_capacity(items.len());
            for (index, item) in items.into_iter().enumerate() {
                let message = read_posted_message(item.get())
                    .map_err(|e| invalid(FRAME, format!("message {index} of `init.body`: {e}")))?;
                messages.push(message);
            }
            messages
        }
        _ => return Err(invalid(FRAME, "`messages` must be an array")),
    };
    let trigger = match body
        .get("trigger")
        .map(|raw| serde_json::from_str::<Value>(raw.get()))
    {
        Some(Ok(Value::String(t))) if t == "regenerate-message" => Trigger::Regenerate,
        _ => Trigger::Submit,
    };
    let tools = body.object(&["clientTools"])?;
    let client_tools = client_tools(tools.get("clientTools"), FRAME)?;
    let mut custom_body = Map::new();
    for (key, raw) in custom {
        let value = serde_json::from_str(raw.get())
            .map_err(|_| invalid(FRAME, "`init.body` is not a JSON object"))?;
        custom_body.insert(key.clone(), value);
    }
    Ok(ClientFrame::ChatRequest {
        id,
        request: ChatRequest {
            messages,
            trigger,
            client_tools,
            body: custom_body,
        },
    })
}

fn parse_tool_result(fields: Fields, bounds: FrameBounds) -> Result<ClientFrame, FrameError> {
    const FRAME: &str = "tool result";
    let obj = fields.object(&[
        "toolCallId",
        "state",
        "errorText",
        "autoContinue",
        "clientTools",
    ])?;
    let tool_call_id = string_field(&obj, "toolCallId", FRAME)?;
    let is_error = obj.get("state").and_then(Value::as_str) == Some("output-error");
    let error_text = is_error.then(|| {
        obj.get("errorText")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .unwrap_or(DEFAULT_TOOL_ERROR)
            .to_string()
    });
    // The output is measured as sent and refused before it is built.
    let output = match fields.text("output") {
        Some(text) if text.len() > bounds.max_tool_result_bytes => {
            return Err(FrameError::TooLarge(format!(
                "tool result for {tool_call_id} is too large: {} bytes (limit {})",
                text.len(),
                bounds.max_tool_result_bytes
            )))
        }
        Some(text) => {
            within_shape(
                &text,
                bounds.shape,
                &format!("tool result for {tool_call_id}"),
            )?;
            serde_json::from_str(&text).map_err(|_| FrameError::NotJson)?
        }
        None => Value::Null,
    };
    Ok(ClientFrame::ToolResult(ToolResult {
        tool_call_id,
        output,
        error_text,
        auto_continue: bool_field(&obj, "autoContinue", false),
        client_tools: client_tools(obj.get("clientTools"), FRAME)?,
    }))
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
