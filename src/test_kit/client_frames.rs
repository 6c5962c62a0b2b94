//! The exact frames `useAgentChat` sends: a chat request (with `init.body`
//! as a JSON string), a tool result, an approval, the resume probe and ack,
//! a cancel and a clear. The test kit's tabs send them; tests may too.

use serde_json::{json, Map, Value};

/// A user `UIMessage` as the AI SDK builds it.
pub fn user(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}]})
}

/// `sendMessage`: the full client transcript, `trigger:"submit-message"`.
pub fn chat_request(id: &str, messages: &[Value]) -> String {
    chat_request_with(id, messages, json!({}))
}

/// A chat request with extra body keys (`clientTools`, custom body fields).
pub fn chat_request_with(id: &str, messages: &[Value], extra: Value) -> String {
    request_frame(id, messages, "submit-message", extra)
}

/// `regenerate()`: the transcript without the assistant being regenerated.
pub fn regenerate(id: &str, messages: &[Value]) -> String {
    request_frame(id, messages, "regenerate-message", json!({}))
}

fn request_frame(id: &str, messages: &[Value], trigger: &str, extra: Value) -> String {
    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(messages.to_vec()));
    body.insert("trigger".into(), json!(trigger));
    if let Value::Object(extra) = extra {
        body.extend(extra);
    }
    json!({
        "id": id,
        "init": {"method": "POST", "body": Value::Object(body).to_string()},
        "type": "cf_agent_use_chat_request"
    })
    .to_string()
}

pub fn tool_result(tool_call_id: &str, output: Value, auto_continue: bool) -> String {
    tool_result_with(tool_call_id, output, auto_continue, json!({}))
}

/// A tool result with extra keys (`clientTools`, `toolName`).
pub fn tool_result_with(tool_call_id: &str, output: Value, auto: bool, extra: Value) -> String {
    let mut frame = json!({
        "type": "cf_agent_tool_result",
        "toolCallId": tool_call_id,
        "toolName": "",
        "output": output,
        "autoContinue": auto
    });
    if let (Value::Object(frame), Value::Object(extra)) = (&mut frame, extra) {
        frame.extend(extra);
    }
    frame.to_string()
}

/// `addToolOutput({state:"output-error", errorText})`.
pub fn tool_error(tool_call_id: &str, error_text: &str, auto_continue: bool) -> String {
    json!({
        "type": "cf_agent_tool_result",
        "toolCallId": tool_call_id,
        "toolName": "",
        "output": null,
        "state": "output-error",
        "errorText": error_text,
        "autoContinue": auto_continue
    })
    .to_string()
}

pub fn approval(tool_call_id: &str, approved: bool, auto_continue: bool) -> String {
    json!({
        "type": "cf_agent_tool_approval",
        "toolCallId": tool_call_id,
        "approved": approved,
        "autoContinue": auto_continue
    })
    .to_string()
}

pub fn resume_probe(probe_id: &str) -> String {
    json!({"type": "cf_agent_stream_resume_request", "probeId": probe_id}).to_string()
}

pub fn resume_ack(id: &str) -> String {
    json!({"type": "cf_agent_stream_resume_ack", "id": id}).to_string()
}

pub fn cancel(id: &str) -> String {
    json!({"id": id, "type": "cf_agent_chat_request_cancel"}).to_string()
}

pub fn clear() -> String {
    json!({"type": "cf_agent_chat_clear"}).to_string()
}
