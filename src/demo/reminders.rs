//! The demo's reminder, on a named schedule: the callable `remind(text,
//! inSeconds)` schedules the callback `reminder` (schedule `reminder`, so a
//! new reminder replaces the last) and shows `⏳ text` under the state's
//! `reminder` field; when it is due, the callback shows `⏰ text` there, in
//! every tab.

use serde::Deserialize;
use serde_json::Value;

use crate::agent::{CallContext, Callable};

/// The latest a reminder may be set for, in seconds from now.
const MAX_DELAY_SECS: u64 = 24 * 3600;

#[derive(Deserialize, serde::Serialize)]
pub struct Reminder {
    pub text: String,
}

pub fn callable() -> Callable {
    Callable::new("remind", remind)
}

pub fn schedule_callback() -> crate::agent::handle::schedule_callback::ScheduleCallback {
    crate::agent::handle::schedule_callback::ScheduleCallback::new(
        "reminder",
        |reminder: Reminder, agent: crate::agent::AgentHandle| async move {
            let _ = show(&agent, &format!("⏰ {}", reminder.text));
        },
    )
}

/// Sets the state's `reminder` field; the new state.
fn show(agent: &crate::agent::AgentHandle, text: &str) -> Result<Value, String> {
    let mut state = match agent.state() {
        Some(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    state.insert("reminder".into(), Value::String(text.to_string()));
    let state = Value::Object(state);
    agent.set_state(state.clone())?;
    Ok(state)
}

async fn remind((text, in_secs): (String, u64), ctx: CallContext) -> Result<Value, String> {
    if text.trim().is_empty() || !(1..=MAX_DELAY_SECS).contains(&in_secs) {
        return Err(format!(
            "remind(text, inSeconds): a text and 1 to {MAX_DELAY_SECS} seconds"
        ));
    }
    let when = crate::core::ScheduleWhen::Delay(in_secs * 1000);
    let payload = Reminder { text: text.clone() };
    (ctx.agent.schedule("reminder", "reminder", when, payload)).map_err(|e| e.to_string())?;
    show(&ctx.agent, &format!("⏳ {text}"))
}
