//! Rows that no longer decode — a corrupt message, stream record, chunk-log
//! row or config row, or a row of a newer shape version than this release
//! reads — are moved to the quarantine with the reason when the agent
//! starts, once, and the agent carries on; rows of the shapes older releases
//! wrote are read as before.

use crate::sim::*;
use durable_chat::core::{ConfigKey, StoreOp};
use durable_chat::protocol::UIMessage;
use serde_json::json;

/// A sim with one finished turn (`u1` answered).
fn answered() -> Sim {
    let mut sim = two_tabs();
    sim.script(Reply::text("first answer"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    sim
}

/// The agent still answers a new turn.
fn carries_on(sim: &mut Sim, request_id: &str) {
    sim.script(Reply::text("still here"));
    let id = format!("u-{request_id}");
    sim.send(
        "a",
        chat_request(request_id, &[user(&id, "are you there?")]),
    );
    sim.run_until_idle();
    let end = terminal(sim.frames("a"), request_id).expect("the turn ended");
    assert_eq!(end["outcome"], "completed");
    assert_eq!(
        text_of(sim.store.transcript().last().unwrap()),
        "still here"
    );
}

fn sources(sim: &Sim) -> Vec<(&'static str, String)> {
    sim.store
        .quarantined()
        .iter()
        .map(|row| (row.source, row.key.clone()))
        .collect()
}

#[test]
fn a_corrupt_config_row_of_each_kind_is_quarantined_and_the_agent_carries_on() {
    for key in [
        ConfigKey::Queue,
        ConfigKey::Continuation,
        ConfigKey::Recovery,
        ConfigKey::TerminalError,
        ConfigKey::StreamApprovals,
        ConfigKey::ClientTools,
        ConfigKey::CustomBody,
    ] {
        let mut sim = answered();
        sim.store
            .rows_mut()
            .corrupt("chat_config", key.as_str(), "{not json");
        sim.evict();
        sim.run_until_idle();
        assert_eq!(
            sources(&sim),
            [("chat_config", key.as_str().to_string())],
            "{key:?}"
        );
        assert!(!sim.store.quarantined()[0].reason.is_empty());
        assert_eq!(sim.store.quarantined()[0].value, "{not json");
        assert_eq!(sim.store.config(key), None, "{key:?} left its table");
        carries_on(&mut sim, "r2");
        sim.evict();
        assert_eq!(sim.store.quarantined().len(), 1, "{key:?}: moved once");
    }
}

#[test]
fn a_corrupt_message_is_quarantined_and_the_rest_of_the_transcript_is_read() {
    let mut sim = answered();
    let answer = sim.store.message_ids()[1].clone();
    sim.store
        .rows_mut()
        .corrupt("chat_messages", &answer, "[1,2");
    sim.evict();
    assert_eq!(sources(&sim), [("chat_messages", answer)]);
    assert_eq!(sim.store.message_ids(), ["u1"]);
    carries_on(&mut sim, "r2");
}

#[test]
fn an_unreadable_stream_record_is_settled_with_its_chunks_and_the_agent_carries_on() {
    let mut sim = two_tabs();
    sim.script(Reply::words(30).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "a story")]));
    sim.advance(300);
    assert!(sim.store.chunk_count("r1").is_some_and(|n| n > 0));
    sim.store
        .rows_mut()
        .corrupt("chat_streams", "r1", "{\"requestId\":5}");
    sim.evict();
    sim.run_until_idle();
    assert_eq!(sources(&sim), [("chat_streams", "r1".to_string())]);
    assert!(sim.store.open_stream_ids().is_empty());
    assert!(!sim.store.has_chunk_rows(), "its chunk rows are removed");
    carries_on(&mut sim, "r2");
}

#[test]
fn an_unreadable_chunk_row_is_quarantined_and_the_rest_of_the_log_recovers() {
    let mut sim = two_tabs();
    sim.script(Reply::words(30).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "a story")]));
    sim.advance(300);
    sim.store
        .rows_mut()
        .corrupt("chat_stream_chunks", "r1:0", "{oops");
    sim.script(Reply::text("the end."));
    sim.evict();
    sim.run_until_idle();
    assert_eq!(sources(&sim), [("chat_stream_chunks", "r1:0".to_string())]);
    assert!(
        sim.store.open_stream_ids().is_empty(),
        "the stream was settled"
    );
    carries_on(&mut sim, "r2");
}

#[test]
fn rows_of_a_newer_shape_version_are_quarantined_not_misread() {
    let mut sim = answered();
    let newer_queue = r#"{"v":2,"items":[{"requestId":"rq","trigger":"submit","messageIds":["u1"],"submittedAt":1}]}"#;
    sim.store
        .rows_mut()
        .corrupt("chat_config", ConfigKey::Queue.as_str(), newer_queue);
    sim.store.rows_mut().corrupt(
        "chat_config",
        ConfigKey::Continuation.as_str(),
        r#"{"v":7,"owed":true}"#,
    );
    sim.evict();
    sim.run_until_idle();
    let rows = sim.store.quarantined();
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .all(|row| row.reason.contains("newer than this release")));
    assert_eq!(sim.requests().len(), 1, "neither row was acted on");
    carries_on(&mut sim, "r2");
}

#[test]
fn rows_this_release_writes_carry_a_shape_version() {
    let mut sim = two_tabs();
    sim.script(Reply::words(30).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "a story")]));
    sim.script(Reply::text("second"));
    sim.send("b", chat_request("r2", &[user("u2", "and another")]));
    sim.advance(100);
    let queue = sim.store.config(ConfigKey::Queue).expect("r2 waits");
    assert!(queue.starts_with(r#"{"v":1,"items":["#), "{queue}");
    let record = sim.store.open_stream("r1").expect("r1 streams");
    assert!(record.to_row().contains(r#""v":1"#));
    sim.run_until_idle();
    let error = sim.store.config(ConfigKey::TerminalError);
    assert_eq!(error, None, "no failure recorded");
}

#[test]
fn rows_of_the_shapes_older_releases_wrote_are_read() {
    // A queue row as a bare list and a stream record without a version,
    // as releases before shape versions wrote them.
    let mut sim = answered();
    let store = sim.store.rows_mut();
    store.apply(&StoreOp::PutMessage {
        seq: 10,
        message: UIMessage::user_text("u9", "queued before the upgrade"),
    });
    store.corrupt(
        "chat_config",
        ConfigKey::Queue.as_str(),
        &json!([{"requestId": "rq", "trigger": "submit", "messageIds": ["u9"], "submittedAt": 1}])
            .to_string(),
    );
    sim.script(Reply::text("answered after the upgrade"));
    sim.evict();
    sim.run_until_idle();
    assert!(sim.store.quarantined().is_empty());
    assert_eq!(
        text_of(sim.store.transcript().last().unwrap()),
        "answered after the upgrade"
    );
    assert!(sim
        .last_request()
        .user_texts()
        .contains(&"queued before the upgrade".to_string()));
}

#[test]
fn a_stream_record_of_a_newer_shape_is_quarantined_and_its_stream_settled() {
    let mut sim = two_tabs();
    sim.script(Reply::words(30).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "a story")]));
    sim.advance(300);
    let newer = r#"{"v":2,"requestId":"r1","messageId":"m","continuation":false,"originMessageIds":["u1"],"startedAt":0}"#;
    sim.store.rows_mut().corrupt("chat_streams", "r1", newer);
    sim.evict();
    sim.run_until_idle();
    let rows = sim.store.quarantined();
    assert_eq!(rows.len(), 1);
    assert!(rows[0].reason.contains("newer than this release"));
    assert!(sim.store.open_stream_ids().is_empty());
    assert!(!sim.store.has_chunk_rows());
    carries_on(&mut sim, "r2");
}
