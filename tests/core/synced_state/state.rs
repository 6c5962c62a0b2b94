//! The synced state: sent on connect after an identity that says it
//! follows; a tab's `setState` is validated, stored and sent to every other
//! tab; a refusal reaches only the sender and changes nothing; the agent's
//! own change reaches every tab; the state survives an eviction and a clear.

use std::rc::Rc;

use crate::sim::*;
use durable_chat::core::{AuthorCall, ConfigKey, StateSource};
use serde_json::{json, Value};

fn set_state(state: Value) -> String {
    json!({"type": "cf_agent_state", "state": state}).to_string()
}

fn with_state(initial: Value) -> Sim {
    Sim::with(|config| config.agent_api.initial_state = Some(initial))
}

fn stored_state(sim: &Sim) -> Option<Value> {
    sim.store
        .config_json(ConfigKey::AgentState)
        .map(|row| row["state"].clone())
}

fn state_changes(sim: &Sim) -> Vec<(Value, StateSource)> {
    sim.author_calls
        .iter()
        .filter_map(|call| match call {
            AuthorCall::StateChanged { state, source } => {
                Some((Value::clone(state), source.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn without_a_state_a_tab_gets_a_plain_identity_and_no_state_frame() {
    let mut sim = Sim::new();
    sim.connect("a");
    let identity = of_type(sim.frames("a"), "cf_agent_identity")[0].clone();
    assert_eq!(identity.get("stateFollows"), None);
    assert!(of_type(sim.frames("a"), "cf_agent_state").is_empty());
}

#[test]
fn a_tab_gets_the_state_right_after_an_identity_that_says_it_follows() {
    let mut sim = with_state(json!({}));
    sim.connect("a");
    let kinds = kinds(sim.frames("a"));
    let at = kinds
        .iter()
        .position(|k| *k == "cf_agent_identity")
        .unwrap();
    assert_eq!(kinds[at + 1], "cf_agent_state");
    assert_eq!(sim.frames("a")[at]["stateFollows"], true);
    assert_eq!(sim.frames("a")[at + 1]["state"], json!({}));
    assert_eq!(stored_state(&sim), None, "the initial state is not written");
}

#[test]
fn a_tabs_change_is_stored_and_sent_to_every_other_tab() {
    let mut sim = with_state(json!({}));
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim.send("a", set_state(json!({"count": 1})));
    assert!(sim.frames("a").is_empty(), "the sender already has it");
    assert_eq!(
        sim.frames("b"),
        [json!({"type": "cf_agent_state", "state": {"count": 1}})]
    );
    assert_eq!(stored_state(&sim), Some(json!({"count": 1})));
    assert_eq!(sim.core().state(), Some(&json!({"count": 1})));
    assert_eq!(
        state_changes(&sim),
        [(json!({"count": 1}), StateSource::Connection(Rc::from("a")))]
    );
}

#[test]
fn a_refused_change_is_told_to_its_tab_only_and_changes_nothing() {
    let mut sim = Sim::with(|config| {
        config.agent_api.initial_state = Some(json!({"count": 0}));
        config.agent_api.validate_state = Some(Rc::new(|next: &Value, _: &StateSource| match next
            ["count"]
            .as_i64()
        {
            Some(n) if n >= 0 => Ok(()),
            _ => Err("count must not be negative".to_string()),
        }));
    });
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim.send("a", set_state(json!({"count": -1})));
    assert_eq!(
        sim.frames("a"),
        [json!({"type": "cf_agent_state_error", "error": "State update rejected"})],
        "the agents SDK's text"
    );
    let logged: Vec<String> = sim.log.iter().map(|e| e.to_string()).collect();
    assert!(
        logged
            .iter()
            .any(|l| l.contains("state change refused from=a")
                && l.contains("count must not be negative")),
        "the reason is logged: {logged:?}"
    );
    assert!(sim.frames("b").is_empty(), "nothing broadcast");
    assert_eq!(stored_state(&sim), None, "nothing stored");
    assert_eq!(sim.core().state(), Some(&json!({"count": 0})));
    assert!(state_changes(&sim).is_empty());
    sim.send("a", set_state(json!({"count": 2})));
    assert_eq!(of_type(sim.frames("b"), "cf_agent_state").len(), 1);
}

#[test]
fn the_agents_own_change_reaches_every_tab() {
    let mut sim = with_state(json!({}));
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim.set_state(json!({"topic": "rust"})).unwrap();
    for tab in ["a", "b"] {
        assert_eq!(
            sim.frames(tab),
            [json!({"type": "cf_agent_state", "state": {"topic": "rust"}})]
        );
    }
    assert_eq!(
        state_changes(&sim),
        [(json!({"topic": "rust"}), StateSource::Server)]
    );
}

#[test]
fn the_state_survives_an_eviction_and_a_chat_clear() {
    let mut sim = with_state(json!({}));
    sim.connect("a");
    sim.send("a", set_state(json!({"notes": ["milk"]})));
    sim.send("a", clear());
    sim.evict();
    assert_eq!(sim.core().state(), Some(&json!({"notes": ["milk"]})));
    sim.connect("late");
    let state = of_type(sim.frames("late"), "cf_agent_state")[0].clone();
    assert_eq!(state["state"], json!({"notes": ["milk"]}));
}

#[test]
fn a_first_change_gives_an_agent_without_initial_state_a_state() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.send("a", set_state(json!(42)));
    sim.evict();
    sim.connect("b");
    let identity = of_type(sim.frames("b"), "cf_agent_identity")[0].clone();
    assert_eq!(identity["stateFollows"], true);
    assert_eq!(of_type(sim.frames("b"), "cf_agent_state")[0]["state"], 42);
}

#[test]
fn a_state_over_the_row_limit_is_refused_and_a_frame_without_state_is_answered() {
    let mut sim = with_state(json!({}));
    sim.connect("a");
    sim.clear_frames();
    let big = "x".repeat(durable_chat::core::MAX_ROW_BYTES);
    assert!(sim.set_state(json!({ "big": big })).is_err());
    assert_eq!(stored_state(&sim), None);
    assert!(sim.frames("a").is_empty());
    sim.send("a", r#"{"type":"cf_agent_state"}"#);
    let error = of_type(sim.frames("a"), "cf_agent_state_error")[0].clone();
    assert!(error["error"]
        .as_str()
        .unwrap()
        .contains("`state` is missing"));
    assert_eq!(sim.core().state(), Some(&json!({})));
}

#[test]
fn a_tabs_change_whose_write_fails_is_undone_and_told_to_that_tab() {
    let mut sim = with_state(json!({"count": 0}));
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim.store.rows_mut().fail_writes = true;
    sim.send("a", set_state(json!({"count": 1})));
    sim.store.rows_mut().fail_writes = false;
    assert_eq!(
        sim.core().state(),
        Some(&json!({"count": 0})),
        "not kept in memory"
    );
    assert_eq!(
        sim.frames("a"),
        [
            json!({"type": "cf_agent_state_error", "error": "State update rejected"}),
            json!({"type": "cf_agent_state", "state": {"count": 0}}),
        ],
        "refused, and given the state as stored"
    );
    assert!(sim.frames("b").is_empty(), "the broadcast was held back");
    assert!(
        state_changes(&sim).is_empty(),
        "on_state_changed not called"
    );
    assert_eq!(stored_state(&sim), None);
    assert_eq!(sim.core().state_write_failures(), 1);
    // The next change is stored and sent as usual; a restart keeps it.
    sim.send("a", set_state(json!({"count": 2})));
    assert_eq!(
        sim.frames("b"),
        [json!({"type": "cf_agent_state", "state": {"count": 2}})]
    );
    sim.evict();
    assert_eq!(sim.core().state(), Some(&json!({"count": 2})));
}

#[test]
fn the_agents_own_change_whose_write_fails_is_undone_and_reaches_no_tab() {
    let mut sim = with_state(json!({"v": 1}));
    sim.connect("a");
    sim.clear_frames();
    sim.store.rows_mut().fail_writes = true;
    let _ = sim.set_state(json!({"v": 2}));
    sim.store.rows_mut().fail_writes = false;
    assert_eq!(sim.core().state(), Some(&json!({"v": 1})));
    assert_eq!(
        sim.core().state_write_failures(),
        1,
        "the handle reports it"
    );
    assert!(sim.frames("a").is_empty(), "no tab saw it, no chat error");
    assert!(state_changes(&sim).is_empty());
    let logged: Vec<String> = sim.log.iter().map(|e| e.to_string()).collect();
    assert!(
        logged
            .iter()
            .any(|l| l.contains("state change refused from=server")),
        "{logged:?}"
    );
}

#[test]
fn a_state_frame_longer_than_the_state_limit_is_refused_before_it_is_read() {
    let mut sim = with_state(json!({}));
    sim.connect("a");
    sim.clear_frames();
    // Padding makes the frame long while the state it carries is tiny: only
    // a refusal by the frame's length, before parsing, refuses this one.
    let padding = " ".repeat(durable_chat::core::MAX_STATE_FRAME_BYTES);
    sim.send(
        "a",
        format!(r#"{{"type":"cf_agent_state","state":{{"n":1}}{padding}}}"#),
    );
    let error = of_type(sim.frames("a"), "cf_agent_state_error")[0].clone();
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .starts_with("state too large"),
        "{error}"
    );
    assert_eq!(sim.core().state(), Some(&json!({})));
    assert_eq!(stored_state(&sim), None);
}

/// A state of `n` tiny values (`{"zeros":[0,0,…]}`).
fn zeros(n: usize) -> Value {
    json!({ "zeros": vec![0; n] })
}

#[test]
fn a_state_of_too_many_values_is_refused_whoever_sets_it() {
    let limit = durable_chat::protocol::gate::STATE.max_values;
    let mut sim = with_state(json!({}));
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    // Well under the byte limit, over the value count: refused before it is built.
    sim.send("a", set_state(zeros(limit + 1)));
    let error = of_type(sim.frames("a"), "cf_agent_state_error")[0].clone();
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("too many JSON values (limit 50000)"),
        "{error}"
    );
    assert!(of_type(sim.frames("b"), "cf_agent_state").is_empty());
    // The agent's own code is held to the same count, so a stored row always
    // reads back on wake.
    let refused = sim.set_state(zeros(limit + 1)).unwrap_err();
    assert!(refused.contains("too many JSON values"), "{refused}");
    assert_eq!(stored_state(&sim), None);
    assert_eq!(sim.core().state(), Some(&json!({})));
    // Within the count it is taken.
    sim.send("a", set_state(zeros(limit - 10)));
    assert_eq!(stored_state(&sim), Some(zeros(limit - 10)));
}

#[test]
fn a_stored_state_row_over_the_count_is_quarantined_on_wake_not_built() {
    let limit = durable_chat::protocol::gate::STATE.max_values;
    let mut sim = with_state(json!({"start": true}));
    sim.connect("a");
    sim.send("a", set_state(json!({"n": 1})));
    // A row as an older release could have written it: under the byte limit,
    // over the value count.
    let row = json!({"v": 1, "state": zeros(limit * 2)}).to_string();
    sim.store
        .rows_mut()
        .corrupt("chat_config", ConfigKey::AgentState.as_str(), &row);
    sim.evict();
    sim.run_until_idle();
    let quarantined = sim.store.quarantined();
    assert_eq!(quarantined.len(), 1);
    assert!(
        quarantined[0].reason.contains("too many JSON values"),
        "{}",
        quarantined[0].reason
    );
    assert_eq!(quarantined[0].value, row, "nothing of it is lost");
    assert_eq!(sim.core().state(), Some(&json!({"start": true})));
}
