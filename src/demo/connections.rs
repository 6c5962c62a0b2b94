//! The demo agent's connections: each tab's `?role=` (default `guest`) is
//! its own state and its tag, and a `viewer` is readonly (it watches every
//! stream and state change, and may change nothing). A `{"type":"ping"}`
//! frame is answered with `{"type":"pong","connection":<its state>}`, a
//! `{"type":"whoami"}` with `{"type":"whoami","id","tags","readonly"}`. When a tab leaves, the others are told
//! `{"type":"presence","left":<id>}`; when the state changes, every tab is
//! told `{"type":"state-changed","by":<connection id or "server">}`. The
//! callable `announce(text, tag?, inSeconds?)` sends
//! `{"type":"announcement","text"}` to every tab (or those of role `tag`),
//! now or from a schedule (the demo's route `POST …/announce` `{text, tag?}`
//! sends one now); `set_readonly(id, readonly)` (an `admin` tab
//! only) makes tab `id` readonly or writable.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::agent::handle::schedule_callback::ScheduleCallback;
use crate::agent::{AgentHandle, CallContext, Callable, Connection, RequestInfo};
use crate::core::{ScheduleWhen, StateSource};

/// The latest an announcement may be scheduled for, in seconds from now.
const MAX_DELAY_SECS: u64 = 24 * 3600;

/// The longest announcement, in bytes.
const MAX_TEXT_BYTES: usize = 1024;

fn role(request: &RequestInfo) -> &str {
    request.query_param("role").unwrap_or("guest")
}

/// A tab's tag: its role (a role no tag may hold is not a tag).
pub fn tags(request: &RequestInfo) -> Vec<String> {
    vec![role(request).to_string()]
}

pub fn readonly(request: &RequestInfo) -> bool {
    role(request) == "viewer"
}

pub fn on_connect(connection: &Connection, request: &RequestInfo) {
    let _ = connection.set_state(json!({ "role": role(request) }));
}

/// A frame's `type` alone: every other field is skipped without being built,
/// so a large frame of another type costs no memory beyond its text.
#[derive(serde::Deserialize)]
struct FrameType<'a> {
    #[serde(borrow, rename = "type")]
    kind: std::borrow::Cow<'a, str>,
}

pub fn on_message(connection: &Connection, text: &str, _agent: &AgentHandle) {
    let Ok(frame) = serde_json::from_str::<FrameType>(text) else {
        return;
    };
    let answer = match frame.kind.as_ref() {
        "ping" => json!({ "type": "pong", "connection": connection.state() }),
        "whoami" => json!({
            "type": "whoami",
            "id": connection.id(),
            "tags": connection.tags(),
            "readonly": connection.is_readonly(),
        }),
        _ => return,
    };
    let _ = connection.send(&answer.to_string());
}

pub fn on_close(connection: &Connection, agent: &AgentHandle) {
    let left = json!({ "type": "presence", "left": connection.id() });
    agent.broadcast(&left.to_string(), &[connection.id()]);
}

pub fn on_state_changed(source: &StateSource, agent: &AgentHandle) {
    let by = match source {
        StateSource::Server => "server",
        StateSource::Connection(id) => id,
    };
    let changed = json!({ "type": "state-changed", "by": by });
    agent.broadcast(&changed.to_string(), &[]);
}

#[derive(Deserialize, Serialize)]
pub struct Announcement {
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tag: Option<String>,
}

impl Announcement {
    /// A text of 1 to `MAX_TEXT_BYTES` bytes.
    pub fn check(&self) -> Result<(), String> {
        match self.text.trim().is_empty() || self.text.len() > MAX_TEXT_BYTES {
            true => Err(format!(
                "an announcement is a text of 1 to {MAX_TEXT_BYTES} bytes"
            )),
            false => Ok(()),
        }
    }
}

/// Sends the announcement now; how many tabs it reached.
pub fn announce_now(agent: &AgentHandle, announcement: &Announcement) -> usize {
    let frame = json!({ "type": "announcement", "text": announcement.text }).to_string();
    match &announcement.tag {
        Some(tag) => agent.broadcast_to_tag(tag, &frame, &[]),
        None => agent.broadcast(&frame, &[]),
    }
}

pub fn schedule_callback() -> ScheduleCallback {
    ScheduleCallback::new(
        "announce",
        |announcement: Announcement, agent: AgentHandle| async move {
            announce_now(&agent, &announcement);
        },
    )
}

async fn announce(
    (text, tag, in_secs): (String, Option<String>, Option<u64>),
    ctx: CallContext,
) -> Result<Value, String> {
    let announcement = Announcement { text, tag };
    announcement.check()?;
    match in_secs.unwrap_or(0) {
        0 => Ok(json!({ "sentTo": announce_now(&ctx.agent, &announcement) })),
        secs if secs <= MAX_DELAY_SECS => {
            let when = ScheduleWhen::Delay(secs * 1000);
            let agent = &ctx.agent;
            (agent.schedule("announcement", "announce", when, announcement))
                .map_err(|e| e.to_string())?;
            Ok(json!({ "scheduled": true }))
        }
        _ => Err(format!("announce: inSeconds at most {MAX_DELAY_SECS}")),
    }
}

async fn set_readonly((id, readonly): (String, bool), ctx: CallContext) -> Result<Value, String> {
    let Some(connection) = ctx.agent.connection(&id) else {
        return Err(format!("no open connection `{id}`"));
    };
    connection.set_readonly(readonly)?;
    Ok(json!({ "id": id, "readonly": readonly }))
}

fn is_admin(ctx: &CallContext) -> Result<(), String> {
    match ctx.connection.state() {
        Some(state) if state["role"] == "admin" => Ok(()),
        _ => Err("only an admin tab may do this".to_string()),
    }
}

pub fn callables() -> Vec<Callable> {
    vec![
        Callable::new("announce", announce),
        Callable::new("set_readonly", set_readonly).allow(is_admin),
    ]
}
