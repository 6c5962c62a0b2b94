//! The demo agent's connection hooks: each tab's socket keeps its `?role=`
//! (default `guest`) as its own state, and a `{"type":"ping"}` frame is
//! answered with `{"type":"pong","connection":<that state>}`.

use serde_json::json;

use crate::agent::{AgentHandle, Connection, RequestInfo};

pub fn on_connect(connection: &Connection, request: &RequestInfo) {
    let role = request.query_param("role").unwrap_or("guest");
    let _ = connection.set_state(json!({ "role": role }));
}

/// A frame's `type` alone: every other field is skipped without being built,
/// so a large frame of another type costs no memory beyond its text.
#[derive(serde::Deserialize)]
struct FrameType<'a> {
    #[serde(borrow, rename = "type")]
    kind: std::borrow::Cow<'a, str>,
}

pub fn on_message(connection: &Connection, text: &str, _agent: &AgentHandle) {
    let is_ping = serde_json::from_str::<FrameType>(text).is_ok_and(|frame| frame.kind == "ping");
    if is_ping {
        let pong = json!({ "type": "pong", "connection": connection.state() });
        let _ = connection.send(&pong.to_string());
    }
}
