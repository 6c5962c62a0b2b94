//! Frames the agent sends, serialized once into the exact JSON text that goes
//! on every socket.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::message::UIMessage;
use super::types;

/// How a request ended, carried on terminal `done` frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Completed,
    Error,
    Aborted,
    Skipped,
    Recovering,
}

/// A `cf_agent_use_chat_response` frame. Optional flags are omitted when unset.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseFrame<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: &'a str,
    pub body: &'a str,
    pub done: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub continuation: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replay_complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_ids: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
}

impl<'a> ResponseFrame<'a> {
    pub fn new(id: &'a str, body: &'a str) -> Self {
        ResponseFrame {
            kind: types::USE_CHAT_RESPONSE,
            id,
            body,
            ..Default::default()
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// `chat_messages` for messages already serialized (each one JSON object).
pub fn chat_messages_json(messages: &[String], connect: bool) -> String {
    let mut frame = String::with_capacity(64 + messages.iter().map(|m| m.len() + 1).sum::<usize>());
    frame.push_str("{\"type\":\"");
    frame.push_str(types::CHAT_MESSAGES);
    frame.push_str("\",\"messages\":[");
    for (i, message) in messages.iter().enumerate() {
        if i > 0 {
            frame.push(',');
        }
        frame.push_str(message);
    }
    frame.push(']');
    if connect {
        frame.push_str(",\"connect\":true");
    }
    frame.push('}');
    frame
}

pub fn chat_messages(messages: &[UIMessage], connect: bool) -> String {
    #[derive(Serialize)]
    struct Frame<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        messages: &'a [UIMessage],
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        connect: bool,
    }
    serde_json::to_string(&Frame {
        kind: types::CHAT_MESSAGES,
        messages,
        connect,
    })
    .unwrap_or_default()
}

pub fn message_updated(message: &UIMessage) -> String {
    json!({"type": types::MESSAGE_UPDATED, "message": message}).to_string()
}

pub fn chat_clear() -> String {
    json!({"type": types::CHAT_CLEAR}).to_string()
}

pub fn identity(name: &str, agent: &str) -> String {
    json!({"type": types::IDENTITY, "name": name, "agent": agent}).to_string()
}

pub fn mcp_servers() -> String {
    json!({"type": types::MCP_SERVERS,
           "mcp": {"servers": {}, "tools": [], "prompts": [], "resources": []}})
    .to_string()
}

pub fn stream_resuming(id: &str, probe_id: Option<&str>) -> String {
    let mut frame = json!({"type": types::STREAM_RESUMING, "id": id});
    if let Some(p) = probe_id {
        frame["probeId"] = json!(p);
    }
    frame.to_string()
}

pub fn stream_pending(id: &str, probe_id: Option<&str>) -> String {
    let mut frame = json!({"type": types::STREAM_PENDING, "id": id});
    if let Some(p) = probe_id {
        frame["probeId"] = json!(p);
    }
    frame.to_string()
}

/// `reason`/`probeId` only on a direct answer to a probe; bare otherwise.
pub fn stream_resume_none(reason: Option<&str>, probe_id: Option<&str>) -> String {
    let mut frame = json!({"type": types::STREAM_RESUME_NONE});
    if let Some(r) = reason {
        frame["reason"] = json!(r);
    }
    if let Some(p) = probe_id {
        frame["probeId"] = json!(p);
    }
    frame.to_string()
}

pub fn chat_recovering(recovering: bool, id: &str) -> String {
    json!({"type": types::CHAT_RECOVERING, "recovering": recovering, "id": id}).to_string()
}

/// Answer to a frame that could not be taken and has no request id to answer on.
pub fn chat_error(error: &str) -> String {
    json!({"type": types::CHAT_ERROR, "error": error}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn chunk_frame_carries_only_the_flags_that_are_set() {
        let frame = ResponseFrame {
            seq: Some(3),
            ..ResponseFrame::new(
                "Xy12Ab34",
                r#"{"type":"text-delta","id":"t0","delta":"Hel"}"#,
            )
        };
        let v: Value = serde_json::from_str(&frame.to_json()).unwrap();
        assert_eq!(
            v,
            json!({"type":"cf_agent_use_chat_response","id":"Xy12Ab34",
                   "body":"{\"type\":\"text-delta\",\"id\":\"t0\",\"delta\":\"Hel\"}","done":false,"seq":3})
        );
    }

    #[test]
    fn terminal_frame_has_outcome_and_message_ids() {
        let ids = vec!["u1".to_string()];
        let frame = ResponseFrame {
            done: true,
            outcome: Some(Outcome::Completed),
            message_ids: Some(&ids),
            ..ResponseFrame::new("r1", "")
        };
        let v: Value = serde_json::from_str(&frame.to_json()).unwrap();
        assert_eq!(
            v,
            json!({"type":"cf_agent_use_chat_response","id":"r1","body":"","done":true,
                   "outcome":"completed","messageIds":["u1"]})
        );
    }

    #[test]
    fn resume_none_is_bare_unless_answering_a_probe() {
        assert_eq!(
            stream_resume_none(None, None),
            r#"{"type":"cf_agent_stream_resume_none"}"#
        );
        let v: Value = serde_json::from_str(&stream_resume_none(Some("idle"), Some("p1"))).unwrap();
        assert_eq!(
            v,
            json!({"type":"cf_agent_stream_resume_none","reason":"idle","probeId":"p1"})
        );
    }

    #[test]
    fn a_transcript_frame_of_serialized_messages_is_the_same_frame() {
        let messages = vec![
            UIMessage::user_text("u1", "hi \"there\""),
            UIMessage::assistant("a1"),
        ];
        let json: Vec<String> = messages
            .iter()
            .map(|m| serde_json::to_string(m).unwrap())
            .collect();
        for connect in [false, true] {
            assert_eq!(
                chat_messages_json(&json, connect),
                chat_messages(&messages, connect)
            );
        }
        assert_eq!(chat_messages_json(&[], false), chat_messages(&[], false));
    }
}
