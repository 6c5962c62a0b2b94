//! A write the store refuses is never silent: the batch is rolled back whole
//! (the stream's record and chunk log stay until the message replacing them
//! is written), the turn it belonged to ends with an error frame every tab
//! and a parent agent's channel see, and a restart settles the answer from
//! what stayed stored.

use crate::sim::*;
use serde_json::{json, Value};

/// Whether the one terminal frame of `id` a connection got ends it as failed
/// (`error`, or outcome `error` after an error frame), with the write's error.
fn failed(frames: &[Value], id: &str) -> bool {
    let done = terminal(frames, id).expect("the turn ended");
    let failed = done["error"] == true || done["outcome"] == "error";
    failed && error_text(frames, id).contains("could not save")
}

fn error_text(frames: &[Value], id: &str) -> String {
    responses(frames, id)
        .into_iter()
        .find(|f| f["error"] == true)
        .and_then(|f| f["body"].as_str().map(str::to_string))
        .unwrap_or_default()
}

#[test]
fn a_refused_answer_write_fails_the_turn_for_every_tab_and_keeps_the_chunk_log() {
    let mut sim = two_tabs();
    sim.script(Reply::words(30).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "tell me a story")]));
    sim.advance(300);
    assert!(!sim.store.chunk_log("r1").is_empty(), "chunks are logged");
    sim.store.rows_mut().fail_next_message_write = true;
    sim.run_until_idle();

    for tab in ["a", "b"] {
        let frames = sim.frames(tab);
        assert!(failed(frames, "r1"), "{tab}: {frames:?}");
    }
    // Nothing of the failed batch is stored; what recovers the answer is.
    assert_eq!(sim.store.message_ids(), ["u1"]);
    assert_eq!(sim.store.open_stream_ids(), ["r1"]);
    let logged = sim.store.chunk_log("r1");
    assert!(!logged.is_empty(), "the chunk log stays");
    let terminal = sim
        .store
        .config_json(durable_chat::core::ConfigKey::TerminalError)
        .expect("the failure is recorded for tabs that connect later");
    assert_eq!(terminal["requestId"], "r1");

    // A restart settles the answer from the chunk log and continues it.
    sim.script(Reply::text("the end."));
    sim.evict();
    sim.run_until_idle();
    let transcript = sim.store.transcript();
    assert_eq!(transcript.len(), 2);
    assert!(
        text_of(&transcript[1]).starts_with("w0 w1"),
        "{transcript:?}"
    );
    assert!(sim.store.open_stream_ids().is_empty());
}

#[test]
fn a_refused_turn_start_ends_that_turn_with_an_error_and_the_agent_carries_on() {
    let mut sim = two_tabs();
    sim.script(Reply::text("hi again"));
    sim.store.rows_mut().fail_next_message_write = true;
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    for tab in ["a", "b"] {
        assert!(failed(sim.frames(tab), "r1"), "{tab}");
    }
    assert!(
        sim.store.message_ids().is_empty(),
        "the refused batch left nothing"
    );
    assert!(sim.store.open_stream_ids().is_empty());
    assert!(
        sim.requests().is_empty(),
        "no model call is spent on a turn whose start was refused"
    );

    sim.send("a", chat_request("r2", &[user("u2", "hello again")]));
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), "r2").unwrap()["outcome"],
        "completed"
    );
    assert_eq!(text_of(sim.store.transcript().last().unwrap()), "hi again");
}

#[test]
fn a_parent_agent_sees_the_error_before_the_end_of_its_sub_agent_turn() {
    let mut sim = Sim::new();
    sim.connect("tab");
    sim.open_channel("parent");
    sim.script(Reply::words(10).every(20));
    let chat = json!({"type": "cf_agent_rpc_chat", "message": "go", "clientTools": [],
                      "executor": false});
    sim.send_channel("parent", chat.to_string());
    sim.advance(100);
    let started = of_type(sim.frames("parent"), "cf_agent_rpc_started");
    let id = started[0]["requestId"].as_str().unwrap().to_string();
    sim.store.rows_mut().fail_next_message_write = true;
    sim.run_until_idle();
    let frames = sim.frames("parent");
    let first_error = position_of(frames, |f| f["id"] == id.as_str() && f["error"] == true);
    let first_done = position_of(frames, |f| f["id"] == id.as_str() && f["done"] == true);
    assert!(first_error.is_some(), "the parent is told");
    assert!(
        first_error <= first_done,
        "the error comes no later than the end"
    );
    assert!(
        !responses(frames, &id)
            .iter()
            .any(|f| f["done"] == true && f["outcome"] == "completed"),
        "no completed end is sent for an answer that was not stored"
    );
    assert!(failed(sim.frames("tab"), &id));
}

#[test]
fn a_refused_write_no_turn_owns_is_told_to_every_connection() {
    let mut sim = two_tabs();
    sim.store.rows_mut().fail_writes = true;
    sim.send("a", clear());
    sim.store.rows_mut().fail_writes = false;
    for tab in ["a", "b"] {
        let errors = of_type(sim.frames(tab), "cf_agent_chat_error");
        assert_eq!(errors.len(), 1, "{tab}");
        assert!(errors[0]["error"]
            .as_str()
            .unwrap()
            .contains("could not save"));
    }
}

#[test]
fn after_a_refused_answer_write_what_is_served_is_what_is_stored() {
    let mut sim = two_tabs();
    sim.script(Reply::words(30).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "tell me a story")]));
    sim.advance(300);
    sim.store.rows_mut().fail_next_message_write = true;
    sim.run_until_idle();
    assert_eq!(sim.store.message_ids(), ["u1"]);

    // `get-messages`, and the transcript a tab that connects now is sent.
    let served: Vec<Value> = sim
        .core()
        .messages()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap_or_default())
        .collect();
    assert_eq!(
        served,
        sim.store.transcript(),
        "get-messages serves what is stored"
    );
    sim.connect("c");
    let c = sim.take_frames("c");
    let snapshot = of_type(&c, MESSAGES);
    assert_eq!(snapshot[0]["messages"], json!(sim.store.transcript()));
}
