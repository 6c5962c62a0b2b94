//! The delegation depth a turn was asked at (a parent's `chat()` or
//! submission: the parent's depth plus one) is kept with the turn wherever
//! it waits or is cut, so after a restart it runs at that depth, not at 0:
//! a parent's call queued behind another turn, a parent's submission, the
//! recovery of a delegated turn cut by the eviction, and the continuation
//! of a delegated answer. Its tools see the depth (`ToolContext`), and one
//! at the limit still may not delegate.

use crate::sim::*;
use durable_chat::core::{ConfigKey, SubmitRequest};
use durable_chat::protocol::UIMessage;
use serde_json::json;

fn rpc_chat(text: &str) -> String {
    json!({"type": "cf_agent_rpc_chat", "message": text, "clientTools": [], "executor": false})
        .to_string()
}

fn weather_call(id: &str) -> Reply {
    Reply::tool_call(id, "get_weather", json!({"city": "Oslo"}))
}

fn depths(sim: &Sim) -> Vec<u32> {
    sim.tool_depths.iter().map(|(_, depth)| *depth).collect()
}

/// Tab `a`'s turn streams (40 words, one each 20 ms) while what follows waits.
fn tab_turn_streaming(sim: &mut Sim) {
    sim.connect("a");
    sim.script(Reply::words(40).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.advance(100);
}

/// What the model says from the restart on: the waiting turn (which starts
/// on waking) calls `get_weather` and answers, then the tab's cut turn is
/// recovered.
fn script_after_restart(sim: &mut Sim) {
    sim.script(weather_call("c1"))
        .script(Reply::text("sunny"))
        .script(Reply::text("recovered"))
        .script_tool("get_weather", ToolReply::ok(json!({"tempC": 3})));
}

#[test]
fn a_queued_parent_call_runs_at_its_depth_after_a_restart() {
    let mut sim = Sim::new();
    tab_turn_streaming(&mut sim);
    sim.open_channel("parent");
    sim.call(|core, _| core.set_delegation_depth(&conn("parent"), 2));
    sim.send_channel("parent", rpc_chat("what is the weather?"));
    let queue = sim.store.config(ConfigKey::Queue).unwrap_or_default();
    assert!(queue.contains("\"delegationDepth\":2"), "{queue}");
    script_after_restart(&mut sim);
    sim.evict();
    sim.run_until_idle();
    assert_eq!(
        sim.tool_depths,
        [("get_weather".to_string(), 2)],
        "the parent's turn ran at the depth it was asked at"
    );
}

#[test]
fn a_submission_at_the_depth_limit_still_may_not_delegate_after_a_restart() {
    let mut sim = Sim::new();
    let limit = sim.core().config().settings.limits.max_delegation_depth as u32;
    tab_turn_streaming(&mut sim);
    let request = SubmitRequest {
        messages: vec![UIMessage::user_text("s1", "what is the weather?")],
        caller: Some("rpc".into()),
        delegation_depth: limit,
        ..Default::default()
    };
    sim.call(|core, now| core.submit(request, now))
        .expect("accepted");
    script_after_restart(&mut sim);
    sim.evict();
    sim.run_until_idle();
    assert_eq!(
        depths(&sim),
        [limit],
        "the submission's turn kept its depth"
    );
    let limits = sim.core().config().settings.limits;
    let refusal = limits.delegation_refusal(limit).unwrap_or_default();
    assert!(refusal.contains("MAX_DELEGATION_DEPTH"), "{refusal}");
    assert_eq!(limits.delegation_refusal(0), None, "a depth-0 turn may");
}

#[test]
fn a_delegated_turn_cut_by_an_eviction_is_recovered_at_its_depth() {
    let mut sim = Sim::new();
    sim.open_channel("parent");
    sim.call(|core, _| core.set_delegation_depth(&conn("parent"), 1));
    sim.script(Reply::words(40).every(20));
    sim.send_channel("parent", rpc_chat("what is the weather?"));
    sim.advance(100);
    // The recovery turn continues the cut answer and calls the tool.
    sim.script(weather_call("c1"))
        .script(Reply::text("sunny"))
        .script_tool("get_weather", ToolReply::ok(json!({"tempC": 3})));
    sim.evict();
    sim.run_until_idle();
    assert_eq!(
        depths(&sim),
        [1],
        "the recovery ran at the cut turn's depth"
    );
}

#[test]
fn the_continuation_of_a_delegated_answer_runs_at_its_depth_after_a_restart() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.open_channel("parent");
    sim.call(|core, _| core.set_delegation_depth(&conn("parent"), 2));
    // The parent's turn asks to delete a file: it waits for a person.
    sim.script(Reply::tool_call(
        "d1",
        "delete_file",
        json!({"path": "/tmp/x"}),
    ));
    sim.send_channel("parent", rpc_chat("clean up"));
    sim.run_until_idle();
    sim.evict();
    // A person approves in a tab: the continuation goes on with the answer.
    sim.script(weather_call("c1"))
        .script(Reply::text("done"))
        .script_tool("delete_file", ToolReply::ok(json!({"deleted": true})))
        .script_tool("get_weather", ToolReply::ok(json!({"tempC": 3})));
    sim.send("a", approval("d1", true, true));
    sim.run_until_idle();
    assert_eq!(
        sim.tool_depths,
        [
            ("delete_file".to_string(), 2),
            ("get_weather".to_string(), 2)
        ],
        "the continuation ran at the depth of the turn it continues"
    );
}

#[test]
fn after_a_clear_a_delegated_answer_is_still_continued_at_its_depth() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.open_channel("parent");
    sim.call(|core, _| core.set_delegation_depth(&conn("parent"), 2));
    sim.script(Reply::text("hello"));
    sim.send_channel("parent", rpc_chat("hi"));
    sim.run_until_idle();
    assert!(sim.store.config(ConfigKey::TurnDepth).is_some());
    sim.send("a", clear());
    sim.run_until_idle();
    assert!(
        sim.store.config(ConfigKey::TurnDepth).is_none(),
        "the clear took the row"
    );
    // The next delegated turn at the same depth writes it down again.
    sim.script(Reply::tool_call(
        "d1",
        "delete_file",
        json!({"path": "/tmp/x"}),
    ));
    sim.send_channel("parent", rpc_chat("clean up"));
    sim.run_until_idle();
    sim.evict();
    sim.script(Reply::text("done"))
        .script_tool("delete_file", ToolReply::ok(json!({"deleted": true})));
    sim.send("a", approval("d1", true, true));
    sim.run_until_idle();
    assert_eq!(depths(&sim), [2]);
}
