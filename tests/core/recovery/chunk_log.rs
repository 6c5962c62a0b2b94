//! The durable chunk log of a streaming turn: written in batches rather than
//! per token, with the first delta and settled tool results written at once,
//! and chunks too large to store sent live without a `seq`.

use crate::sim::*;
use durable_chat::model::{FinishReason, ModelEvent};
use serde_json::json;

#[test]
fn the_chunk_log_is_written_in_batches_not_per_token() {
    let mut sim = two_tabs();
    sim.script(Reply::words(1000).every(5));
    sim.send("a", chat_request("r1", &[user("u1", "long please")]));
    let mut max_lag = 0;
    while sim.step() {
        let live = live_chunks(sim.frames("a"), "r1").len();
        if let Some(logged) = sim.store.chunk_count("r1") {
            max_lag = max_lag.max(live - logged as usize);
        }
    }
    let writes = sim.store.chunk_writes();
    assert!(
        writes < 50,
        "{writes} chunk-log writes for a 1000-token reply"
    );
    assert!(
        max_lag <= 64,
        "the log lagged the stream by {max_lag} chunks"
    );
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}

#[test]
fn the_first_delta_is_logged_at_once() {
    let mut sim = two_tabs();
    sim.script(Reply::words(30).every(5));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    while live_chunks(sim.frames("a"), "r1")
        .iter()
        .all(|f| body(f)["type"] != "text-delta")
    {
        assert!(sim.step());
    }
    let log = sim.store.chunk_log("r1");
    assert_eq!(log.last().unwrap()["type"], "text-delta");
    assert_eq!(log.len(), live_chunks(sim.frames("a"), "r1").len());
}

#[test]
fn settled_tool_results_are_logged_at_once() {
    let mut sim = two_tabs();
    sim.script(Reply::tool_call(
        "call_1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script(Reply::words(5).every(5))
    .script_tool("get_weather", ToolReply::ok(json!({"tempC": 3})).after(100));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    let settled = |sim: &Sim| {
        live_chunks(sim.frames("a"), "r1")
            .iter()
            .any(|f| body(f)["type"] == "tool-output-available")
    };
    while !settled(&sim) {
        assert!(sim.step());
    }
    let log = sim.store.chunk_log("r1");
    let live = chunk_types(sim.frames("a"), "r1");
    let settled_at = live
        .iter()
        .position(|t| t == "tool-output-available")
        .unwrap();
    assert_eq!(
        log.len(),
        settled_at + 1,
        "everything up to the result is durable"
    );
    assert_eq!(log[settled_at]["type"], "tool-output-available");
}

#[test]
fn a_chunk_too_large_to_log_is_sent_live_without_seq_and_left_out_of_replay() {
    let mut sim = two_tabs();
    let big = "x".repeat(1_900_000);
    sim.script(Reply {
        events: vec![
            ModelEvent::TextDelta("before ".into()),
            ModelEvent::TextDelta(big.clone()),
            ModelEvent::TextDelta(" after".into()),
        ],
        end: End::Finish(FinishReason::Stop),
        every_ms: 10,
        usage: None,
    });
    sim.send("a", chat_request("r1", &[user("u1", "big")]));
    sim.advance(25);
    let a = sim.frames("a");
    let huge: Vec<&serde_json::Value> = live_chunks(a, "r1")
        .into_iter()
        .filter(|f| f["body"].as_str().unwrap().len() > 1_800_000)
        .collect();
    assert_eq!(huge.len(), 1);
    assert!(huge[0].get("seq").is_none());
    sim.connect("c");
    sim.send("c", resume_ack("r1"));
    sim.run_until_idle();
    let seqs: Vec<u64> = live_chunks(sim.frames("a"), "r1")
        .iter()
        .filter_map(|f| f["seq"].as_u64())
        .collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "no seq is consumed"
    );
    let c = sim.frames("c");
    assert!(replayed_chunks(c, "r1")
        .iter()
        .all(|f| f["body"].as_str().unwrap().len() < 1_000));
    let answer = sim.store.transcript()[1].clone();
    assert_eq!(
        text_of(&answer),
        format!("before {big} after"),
        "the whole message is stored"
    );
}
