//! The exact frames `useAgentChat` sends (the test kit's
//! `client_frames`, re-exported), and functions that pick received frames by
//! type and by request id.

use serde_json::Value;

pub const RESPONSE: &str = "cf_agent_use_chat_response";
pub const MESSAGES: &str = "cf_agent_chat_messages";
pub const CLEAR: &str = "cf_agent_chat_clear";
pub const UPDATED: &str = "cf_agent_message_updated";
pub const RESUMING: &str = "cf_agent_stream_resuming";
pub const RESUME_NONE: &str = "cf_agent_stream_resume_none";
pub const PENDING: &str = "cf_agent_stream_pending";
pub const IDENTITY: &str = "cf_agent_identity";
pub const MCP: &str = "cf_agent_mcp_servers";
pub const CHAT_ERROR: &str = "cf_agent_chat_error";

// ---- frames a client sends ----

pub use durable_chat::test_kit::client_frames::*;

// ---- picking received frames ----

pub fn kind(frame: &Value) -> &str {
    frame["type"].as_str().unwrap_or("")
}

pub fn kinds(frames: &[Value]) -> Vec<&str> {
    frames.iter().map(kind).collect()
}

pub fn of_type<'a>(frames: &'a [Value], kind_name: &str) -> Vec<&'a Value> {
    frames.iter().filter(|f| kind(f) == kind_name).collect()
}

pub fn position_of(frames: &[Value], pred: impl Fn(&Value) -> bool) -> Option<usize> {
    frames.iter().position(pred)
}

/// Every `cf_agent_use_chat_response` frame of request `id`.
pub fn responses<'a>(frames: &'a [Value], id: &str) -> Vec<&'a Value> {
    frames
        .iter()
        .filter(|f| kind(f) == RESPONSE && f["id"] == id)
        .collect()
}

/// Live chunk frames of `id`: not done, not an error, not replayed.
pub fn live_chunks<'a>(frames: &'a [Value], id: &str) -> Vec<&'a Value> {
    responses(frames, id)
        .into_iter()
        .filter(|f| f["done"] == false && f.get("error").is_none() && f.get("replay").is_none())
        .collect()
}

/// Replayed chunk frames of `id` (not the `replayComplete` marker or a terminal frame).
pub fn replayed_chunks<'a>(frames: &'a [Value], id: &str) -> Vec<&'a Value> {
    responses(frames, id)
        .into_iter()
        .filter(|f| f["replay"] == true && f["done"] == false && f.get("replayComplete").is_none())
        .collect()
}

/// The parsed `UIMessageChunk` carried in a chunk frame's `body`.
pub fn body(frame: &Value) -> Value {
    let text = frame["body"].as_str().expect("frame has a string body");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text}"))
}

/// Whether `frame` is a chunk frame whose chunk is of type `chunk_type`.
pub fn chunk_is(frame: &Value, chunk_type: &str) -> bool {
    frame["body"]
        .as_str()
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .is_some_and(|chunk| chunk["type"] == chunk_type)
}

pub fn bodies(frames: &[&Value]) -> Vec<Value> {
    frames.iter().map(|f| body(f)).collect()
}

/// The chunk `type`s a tab saw live for request `id`, in order.
pub fn chunk_types(frames: &[Value], id: &str) -> Vec<String> {
    live_chunks(frames, id)
        .into_iter()
        .map(|f| body(f)["type"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The single terminal (`done:true`) frame of `id`; panics if there are several.
pub fn terminal<'a>(frames: &'a [Value], id: &str) -> Option<&'a Value> {
    let done: Vec<&Value> = responses(frames, id)
        .into_iter()
        .filter(|f| f["done"] == true)
        .collect();
    assert!(
        done.len() <= 1,
        "several terminal frames for {id}: {done:?}"
    );
    done.first().copied()
}

/// Ids of the messages of a transcript frame (`cf_agent_chat_messages`) or list.
pub fn ids_of(messages: &Value) -> Vec<String> {
    let list = messages.get("messages").unwrap_or(messages);
    list.as_array()
        .map(|l| {
            l.iter()
                .map(|m| m["id"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The first tool part with `toolCallId` in a message.
pub fn tool_part<'a>(message: &'a Value, tool_call_id: &str) -> Option<&'a Value> {
    message["parts"]
        .as_array()?
        .iter()
        .find(|p| p["toolCallId"] == tool_call_id)
}

/// Whether a message has a tool part with no result yet (neither
/// `output-available` nor `output-error`).
pub fn has_unsettled_tool_part(message: &Value) -> bool {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"].as_str().is_some_and(|t| t.starts_with("tool-")))
        .any(|p| {
            !matches!(
                p["state"].as_str(),
                Some("output-available" | "output-error")
            )
        })
}

/// The concatenated text parts of a message.
pub fn text_of(message: &Value) -> String {
    message["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p["type"] == "text")
                .map(|p| p["text"].as_str().unwrap_or(""))
                .collect()
        })
        .unwrap_or_default()
}

/// Distinct request ids of continuation frames a tab saw, in order.
pub fn continuation_ids(frames: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for f in of_type(frames, RESPONSE) {
        if f["continuation"] == true {
            let id = f["id"].as_str().unwrap().to_string();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

pub fn permutations(items: &[&'static str]) -> Vec<Vec<&'static str>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, first);
            out.push(tail);
        }
    }
    out
}
