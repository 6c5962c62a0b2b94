//! `on_chat_response` at least once: an ended turn's report is stored in the
//! same write batch as the turn's end, sent again after an eviction that
//! cut the hook before it returned, and forgotten once it returned; a clear
//! keeps what is owed; the stored reports are bounded.

use durable_chat::core::{ConfigKey, LogEvent, StoreOp};
use durable_chat::protocol::Outcome;

use crate::sim::*;

fn owed_request_ids(sim: &Sim) -> Vec<String> {
    let Some(row) = sim.store.config_json(ConfigKey::OwedResponses) else {
        return Vec::new();
    };
    row["responses"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|r| r["requestId"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// A sim whose `on_chat_response` takes `hook_ms` to return, one turn `r1`
/// ended and stored, the hook still running.
fn ended_turn_with_slow_hook(hook_ms: u64) -> Sim {
    let mut sim = Sim::new();
    sim.response_delay_ms = hook_ms;
    sim.connect("a");
    sim.script(Reply::text("hello back"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    while sim.responses.is_empty() && sim.step() {}
    sim
}

#[test]
fn the_report_is_stored_with_the_answer_and_forgotten_once_the_hook_returns() {
    let mut sim = ended_turn_with_slow_hook(5_000);
    assert_eq!(sim.responses.len(), 1);
    assert_eq!(owed_request_ids(&sim), vec!["r1".to_string()]);
    let answer = sim.responses[0].answer_id.clone().expect("an answer");
    let answer_batch = sim
        .store
        .batch_of(|op| matches!(op, StoreOp::PutMessage { message, .. } if message.id == answer));
    let owed_batch = sim.store.batch_of(
        |op| matches!(op, StoreOp::PutConfig { key, .. } if *key == ConfigKey::OwedResponses),
    );
    assert!(answer_batch.is_some(), "the answer was stored");
    assert_eq!(answer_batch, owed_batch, "one transaction for both");
    sim.run_until_idle();
    assert!(
        owed_request_ids(&sim).is_empty(),
        "delivered: no longer owed"
    );
    sim.evict();
    sim.run_until_idle();
    assert_eq!(
        sim.responses.len(),
        1,
        "a delivered report is not sent again"
    );
}

#[test]
fn an_eviction_before_the_hook_returns_delivers_the_report_again() {
    let mut sim = ended_turn_with_slow_hook(5_000);
    sim.advance(1_000);
    sim.evict();
    assert_eq!(sim.responses.len(), 2, "sent again on wake");
    let (first, again) = (&sim.responses[0], &sim.responses[1]);
    assert_eq!(again, first, "the same report");
    assert_eq!(again.outcome, Outcome::Completed);
    sim.run_until_idle();
    assert!(owed_request_ids(&sim).is_empty());
    sim.evict();
    sim.run_until_idle();
    assert_eq!(sim.responses.len(), 2, "once returned, never again");
}

#[test]
fn a_clear_keeps_the_reports_still_owed() {
    let mut sim = ended_turn_with_slow_hook(5_000);
    sim.send("a", clear());
    assert_eq!(owed_request_ids(&sim), vec!["r1".to_string()]);
    sim.evict();
    assert_eq!(sim.responses.len(), 2, "still delivered after the clear");
}

#[test]
fn a_hook_that_never_returns_holds_a_bounded_number_of_reports() {
    let mut sim = Sim::new();
    sim.response_delay_ms = u64::MAX / 2;
    sim.connect("a");
    let turns = 35;
    for n in 0..turns {
        sim.script(Reply::text("ok"));
        let (request, message) = (format!("r{n}"), format!("u{n}"));
        sim.send("a", chat_request(&request, &[user(&message, "hi")]));
        while sim.responses.len() <= n && sim.step() {}
    }
    let owed = owed_request_ids(&sim);
    assert_eq!(owed.len(), 32);
    assert_eq!(
        owed.first().map(String::as_str),
        Some("r3"),
        "oldest dropped"
    );
    let dropped = sim
        .log
        .iter()
        .filter(|e| matches!(e, LogEvent::ResponseDropped { .. }))
        .count();
    assert_eq!(dropped, 3);
}
