//! The history cap (`Limits::max_stored_messages`): past it the oldest
//! stored messages are deleted, never the exchange a tab is looking at, and
//! a tab that still shows deleted messages does not bring them back.

use crate::sim::*;
use durable_chat::core::StoreOp;
use serde_json::{json, Value};

/// `pairs` stored question/answer pairs (answer `a<i>` holding the settled
/// tool call `old_<i>`), the agent restarted on them with the history cap
/// at `keep`.
fn seeded(pairs: usize, keep: usize) -> Sim {
    let mut sim = Sim::with(|c| c.settings.limits.max_stored_messages = keep);
    seed_history(&mut sim, pairs, 1);
    sim
}

fn stored_ids(sim: &Sim) -> Vec<String> {
    sim.store
        .transcript()
        .iter()
        .map(|m| m["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn ask(sim: &mut Sim, request: &str, messages: &[Value]) {
    sim.script(Reply::text("noted"));
    sim.send("a", chat_request(request, messages));
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), request).map(|t| t["outcome"].clone()),
        Some(json!("completed"))
    );
}

#[test]
fn the_oldest_messages_beyond_the_cap_are_deleted_after_each_turn() {
    let mut sim = seeded(3, 6);
    sim.connect("a");
    ask(&mut sim, "r1", &[user("u3", "one more")]);
    let ids = stored_ids(&sim);
    assert_eq!(ids.len(), 6, "{ids:?}");
    assert_eq!(
        ids[..4],
        ["u1", "a1", "u2", "a2"],
        "the oldest pair went: {ids:?}"
    );
    assert_eq!(ids[4], "u3");
    let history = sim.store.history();
    assert!(
        history.tool_call_owner("old_0").is_none(),
        "its tool call index row went with it"
    );
    assert!(history.tool_call_owner("old_1").is_some());
    assert_eq!(
        sim.core().messages().len(),
        6,
        "get-messages serves what is stored"
    );

    // A restart sees the same conversation.
    sim.evict();
    assert_eq!(stored_ids(&sim), ids);
    sim.connect("b");
    let snapshot = of_type(sim.frames("b"), "cf_agent_chat_messages");
    let sent = ids_of(&snapshot.last().expect("a connect snapshot")["messages"]);
    assert_eq!(sent, ids);
}

#[test]
fn a_long_history_is_cut_from_the_store_without_reading_it() {
    let mut sim = seeded(3_000, 100);
    sim.connect("a");
    let before = sim.store.history_reads().0;
    ask(&mut sim, "r1", &[user("new", "and now?")]);
    let read = sim.store.history_reads().0 - before;
    assert!(read < 200, "rows read: {read}");
    let ids = stored_ids(&sim);
    assert_eq!(ids.len(), 100);
    assert_eq!(ids[0], "u2951", "{:?}", &ids[..4]);
    assert_eq!(ids[98], "new");

    // The next turn keeps the bound (the count is not re-read stale).
    ask(&mut sim, "r2", &[user("newer", "and then?")]);
    let ids = stored_ids(&sim);
    assert_eq!(ids.len(), 100);
    assert_eq!(ids[0], "u2952");
}

#[test]
fn a_tab_posting_deleted_messages_again_does_not_store_them() {
    let mut sim = seeded(3, 4);
    sim.connect("a");
    // The stock client posts its whole transcript, deleted messages included.
    let mut posted: Vec<Value> = (0..3)
        .flat_map(|i| {
            [
                user(&format!("u{i}"), &format!("question {i}")),
                json!({"id": format!("a{i}"), "role": "assistant", "parts": [{"type": "text", "text": format!("answer {i}")}]}),
            ]
        })
        .collect();
    posted.push(user("u3", "one more"));
    ask(&mut sim, "r1", &posted);
    let ids = stored_ids(&sim);
    assert_eq!(ids, ["u2", "a2", "u3", ids[3].as_str()], "{ids:?}");

    posted.push(
        json!({"id": ids[3], "role": "assistant", "parts": [{"type": "text", "text": "noted"}]}),
    );
    posted.push(user("u4", "last one"));
    ask(&mut sim, "r2", &posted);
    let ids = stored_ids(&sim);
    assert_eq!(ids.len(), 4);
    assert_eq!(ids[..3], ["u3", ids[1].as_str(), "u4"], "{ids:?}");
    assert!(!ids.iter().any(|id| id == "u0" || id == "u1"));
}

#[test]
fn the_exchange_being_answered_stays_whatever_the_cap() {
    let mut sim = seeded(2, 1);
    sim.connect("a");
    ask(&mut sim, "r1", &[user("u2", "keep me")]);
    let ids = stored_ids(&sim);
    assert_eq!(ids.len(), 2, "the newest question and its answer: {ids:?}");
    assert_eq!(ids[0], "u2");
    let answer = &sim.store.transcript()[1];
    assert_eq!(answer["role"], "assistant");
    assert_eq!(text_of(answer), "noted");
}

#[test]
fn without_a_cap_nothing_is_deleted() {
    let mut sim = seeded(40, 0);
    sim.connect("a");
    ask(&mut sim, "r1", &[user("new", "hello")]);
    assert_eq!(stored_ids(&sim).len(), 82);
    assert_eq!(
        sim.store
            .count(|op| matches!(op, StoreOp::DropMessagesBefore { .. })),
        0
    );
}

#[test]
fn the_transcript_frame_at_the_end_of_a_turn_already_leaves_the_deleted_messages_out() {
    let mut sim = seeded(3, 6);
    sim.connect("a");
    ask(&mut sim, "r1", &[user("u3", "one more")]);
    let frames = of_type(sim.frames("a"), "cf_agent_chat_messages");
    let last = ids_of(&frames.last().expect("a transcript frame")["messages"]);
    assert_eq!(last, stored_ids(&sim));
}
