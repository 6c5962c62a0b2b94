//! The alarm the agent's own code schedules: it runs once when due, on the
//! Durable Object's single alarm shared with a running turn's heartbeat;
//! it survives an eviction, a later schedule replaces it, and it can be
//! cancelled.

use crate::sim::*;
use durable_chat::core::{ConfigKey, Event};

fn schedule(sim: &mut Sim, at: Option<u64>) {
    sim.schedule_alarm(at);
}

#[test]
fn a_scheduled_alarm_runs_once_when_due() {
    let mut sim = Sim::new();
    schedule(&mut sim, Some(5_000));
    assert!(sim.store.config(ConfigKey::AuthorAlarm).is_some(), "stored");
    sim.advance(4_999);
    assert!(sim.author_alarms.is_empty());
    sim.advance(10_000);
    assert_eq!(sim.author_alarms, [5_000]);
    assert!(
        sim.store.config(ConfigKey::AuthorAlarm).is_none(),
        "its row is gone"
    );
    assert_eq!(sim.core().scheduled_alarm(), None);
}

#[test]
fn a_scheduled_alarm_survives_an_eviction() {
    let mut sim = Sim::new();
    schedule(&mut sim, Some(60_000));
    sim.advance(1_000);
    sim.evict();
    assert_eq!(sim.core().scheduled_alarm(), Some(60_000));
    sim.advance(100_000);
    assert_eq!(sim.author_alarms, [60_000]);
}

#[test]
fn a_later_schedule_replaces_the_alarm_and_none_cancels_it() {
    let mut sim = Sim::new();
    schedule(&mut sim, Some(5_000));
    schedule(&mut sim, Some(8_000));
    sim.advance(20_000);
    assert_eq!(sim.author_alarms, [8_000]);
    schedule(&mut sim, Some(30_000));
    schedule(&mut sim, None);
    sim.advance(60_000);
    assert_eq!(sim.author_alarms, [8_000], "cancelled");
    assert!(sim.store.config(ConfigKey::AuthorAlarm).is_none());
}

#[test]
fn a_clear_keeps_the_alarm() {
    let mut sim = Sim::new();
    schedule(&mut sim, Some(9_000));
    sim.handle(Event::ClearHistory);
    sim.evict();
    sim.advance(10_000);
    assert_eq!(sim.author_alarms, [9_000]);
}

#[test]
fn the_alarm_and_a_running_turns_heartbeat_share_the_durable_alarm() {
    let mut sim = Sim::new();
    sim.connect("a");
    schedule(&mut sim, Some(500));
    sim.script(Reply::words(200).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "long story")]));
    sim.advance(600);
    assert_eq!(sim.author_alarms, [500], "ran while the turn streams");
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
    assert_eq!(sim.author_alarms, [500]);
}

#[test]
fn an_alarm_set_by_event_is_stored_and_runs_once_when_due() {
    let mut sim = Sim::new();
    sim.handle(Event::AuthorAlarmSet { at_ms: Some(5_000) });
    assert!(sim.store.config(ConfigKey::AuthorAlarm).is_some(), "stored");
    assert_eq!(sim.core().scheduled_alarm(), Some(5_000));
    sim.advance(10_000);
    assert_eq!(sim.author_alarms, [5_000]);
    sim.handle(Event::AuthorAlarmSet {
        at_ms: Some(20_000),
    });
    sim.handle(Event::AuthorAlarmSet { at_ms: None });
    assert!(
        sim.store.config(ConfigKey::AuthorAlarm).is_none(),
        "cancelled"
    );
    sim.advance(30_000);
    assert_eq!(sim.author_alarms, [5_000], "a cancelled alarm never runs");
}
