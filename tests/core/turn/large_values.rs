//! Values over production's row limit (2,000,000 bytes): the in-memory store
//! refuses any row over it exactly as production's SQLite does, so these
//! turns pass only because every large value is written in pieces; what a
//! restarted core reads back is byte-identical to what was stored.

use crate::sim::*;
use durable_chat::core::StoreOp;
use durable_chat::core::{MAX_ROW_BYTES, PIECE_BYTES};
use durable_chat::protocol::UIMessage;
use durable_chat::testing::MemStore;
use serde_json::{json, Value};

/// A JSON string of about `bytes` bytes, mixing multi-byte characters so a
/// split inside a character would show.
fn big_text(bytes: usize, tag: &str) -> String {
    let unit = format!("{tag}-é€😀-");
    unit.repeat(bytes / unit.len() + 1)
}

#[test]
fn three_large_client_tool_results_answered_automatically_survive_a_restart() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1", "c2", "c3"]);
    let outputs: Vec<Value> = (1..=3)
        .map(|n| json!({"blob": big_text(900_000, &format!("r{n}"))}))
        .collect();
    sim.script(Reply::text("got them all"));
    for (n, output) in outputs.iter().enumerate() {
        sim.send(
            "a",
            tool_result(&format!("c{}", n + 1), output.clone(), true),
        );
    }
    sim.run_until_idle();
    let before = sim.transcript();
    let calls = before
        .iter()
        .find(|m| tool_part(m, "c1").is_some())
        .expect("the call message");
    assert!(
        serde_json::to_string(calls).unwrap().len() > MAX_ROW_BYTES,
        "the message is over the row limit"
    );
    assert!(sim.store.largest_piece() <= PIECE_BYTES);

    sim.evict();
    sim.run_until_idle();
    let after = sim.transcript();
    assert_eq!(after, before, "read back byte-identical");
    for (n, output) in outputs.iter().enumerate() {
        let part = tool_part(&after[1], &format!("c{}", n + 1)).expect("the part");
        assert_eq!(part["output"], *output);
    }
    assert_eq!(text_of(after.last().unwrap()), "got them all");
}

#[test]
fn a_three_megabyte_server_tool_output_is_stored_whole() {
    let mut sim = two_tabs();
    let output = json!({"report": big_text(3_000_000, "s")});
    sim.script(Reply::tool_call(
        "call_1",
        "get_weather",
        json!({"city": "Big"}),
    ))
    .script(Reply::text("done"))
    .script_tool("get_weather", ToolReply::ok(output.clone()));
    sim.send("a", chat_request("r1", &[user("u1", "weather in Big?")]));
    sim.run_until_idle();
    sim.evict();
    sim.run_until_idle();
    let transcript = sim.transcript();
    let part = tool_part(&transcript[1], "call_1").expect("the tool part");
    assert_eq!(part["output"], output);
    assert!(sim.store.largest_piece() <= PIECE_BYTES);
}

#[test]
fn the_store_refuses_a_row_over_the_limit_as_production_does() {
    let mut store = MemStore::new();
    let record = durable_chat::core::StreamRecord {
        request_id: "r1".into(),
        message_id: "m1".into(),
        continuation: false,
        origin_message_ids: vec!["u".repeat(MAX_ROW_BYTES)],
        started_at: 0,
        recovery_root: None,
    };
    let refused = store.try_apply(&StoreOp::OpenStream(record));
    assert!(refused.is_err_and(|e| e.contains("too big")));
    assert!(store.open_stream_ids().is_empty(), "nothing was written");
    // A message of the same size is split and kept.
    let message = UIMessage::user_text("u1", "x".repeat(MAX_ROW_BYTES + 10));
    store
        .try_apply(&StoreOp::PutMessage {
            seq: 0,
            message: message.clone(),
        })
        .expect("split into pieces");
    assert_eq!(store.messages(), [message]);
}

#[test]
fn an_injected_write_failure_is_refused_and_keeps_nothing() {
    let mut store = MemStore::new();
    store.fail_writes = true;
    let message = UIMessage::user_text("u1", "hi");
    assert!(store
        .try_apply(&StoreOp::PutMessage { seq: 0, message })
        .is_err());
    assert!(store.message_ids().is_empty());
}
