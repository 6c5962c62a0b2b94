//! The demo agent's connection hooks: each tab's socket keeps its `?role=`
//! (default `guest`) as its own state, and a `{"type":"ping"}` frame is
//! answered with `{"type":"pong","connection":<that state>}`.

use serde_json::{json, Value};

use crate::agent::{AgentHandle, Connection, RequestInfo};

pub fn on_connect(connection: &Connection, request: &RequestInfo) {
    let role = request.query_param("role").unwrap_or("guest");
    let _ = connection.set_state(json!({ "role": role }));
}

pub fn on_message(connection: &Connection, text: &str, _agent: &AgentHandle) {
    let is_ping = serde_json::from_str::<Value>(text)
        .is_ok_and(|frame| frame.get("type").and_then(Value::as_str) == Some("ping"));
    if is_ping {
        let pong = json!({ "type": "pong", "connection": connection.state() });
        let _ = connection.send(&pong.to_string());
    }
}
