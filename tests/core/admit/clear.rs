//! A clear of the history deletes the chat's rows and nothing else: the
//! name the agent is addressed by, its synced state, the author's alarm,
//! its schedules, the reports owed to `on_chat_response` and the tokens
//! spent under a token limit survive it and a restart after it
//! (`ConfigKey::SURVIVES_CLEAR`).

use durable_chat::core::{ConfigKey, Event, ScheduleRequest, ScheduleWhen};
use serde_json::{json, Value};

use crate::sim::*;

const DAY: u64 = 86_400_000;

#[test]
fn what_is_not_chat_state_survives_a_clear_and_a_restart() {
    let mut sim = Sim::with(|config| {
        config.agent_api.initial_state = Some(json!({"n": 0}));
        config.settings.limits.max_agent_tokens_per_day = 1_000_000;
        config.settings.limits.max_caller_tokens_per_day = 1_000_000;
        // A limit on: the request rates are stored.
        config.settings.limits.max_agent_requests_per_minute = 1_000;
    });
    sim.response_delay_ms = 60_000; // the hook is still running at the clear
    sim.handle(Event::Named {
        name: "room-7".into(),
    });
    sim.connect("a");
    sim.send(
        "a",
        json!({"type": "cf_agent_state", "state": {"n": 5}}).to_string(),
    );
    sim.call(|core, now| core.schedule_alarm(Some(now + DAY), now));
    let reminder = ScheduleRequest {
        name: "remind".into(),
        callback: "remind".into(),
        payload: json!({}),
        when: ScheduleWhen::Delay(DAY),
    };
    sim.call(|core, now| core.schedule(reminder, now))
        .expect("scheduled");
    sim.script(Reply::text("hello back"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    while sim.responses.is_empty() && sim.step() {}
    sim.send("a", clear());
    assert!(sim.store.message_ids().is_empty(), "the history is gone");
    for key in ConfigKey::SURVIVES_CLEAR {
        assert!(
            sim.store.config(key).is_some(),
            "{key:?} survives the clear"
        );
    }

    sim.disconnect("a");
    sim.evict();
    sim.connect("b");
    let b = sim.take_frames("b");
    assert_eq!(
        sim.store.config(ConfigKey::InstanceName),
        Some("room-7"),
        "the instance name the host wakes with survived"
    );
    let state: Vec<&Value> = b.iter().filter(|f| f["type"] == "cf_agent_state").collect();
    assert_eq!(state[0]["state"], json!({"n": 5}), "the state survived");
    assert_eq!(
        sim.responses
            .iter()
            .filter(|r| r.request_id == "r1")
            .count(),
        2,
        "the owed report is delivered again after the restart"
    );
    sim.advance(2 * DAY);
    assert_eq!(sim.schedule_runs.len(), 1, "the schedule ran");
    assert_eq!(sim.author_alarms.len(), 1, "the author's alarm fired");
}
