//! Streaming callables and the bounds on calls in flight: a streaming
//! method's chunks reach only its caller, in order, before its one final
//! reply; nothing is sent for a call that ended or whose caller left, and a
//! caller leaving cancels its streaming calls (not its plain ones). The
//! arguments a connection's running calls hold are bounded in bytes, a call
//! id runs once at a time, and a chunk over its limit is refused.

use crate::sim::*;
use durable_chat::core::{AuthorCall, CallableSpec, Event, MAX_CHUNK_BYTES};
use serde_json::{json, Value};

fn with_streams() -> Sim {
    Sim::with(|config| {
        config.agent_api.callables = vec![
            CallableSpec::new("echo"),
            CallableSpec::new("ticks").streaming(),
        ];
    })
}

fn call(id: &str, method: &str, args: Value) -> String {
    json!({"type": "rpc", "id": id, "method": method, "args": args}).to_string()
}

fn chunk(sim: &mut Sim, tab: &str, id: &str, value: Value) -> Result<(), String> {
    sim.call(|core, _| core.send_call_chunk(tab, id, &value))
}

fn done(sim: &mut Sim, tab: &str, id: &str, result: Result<Value, String>) {
    sim.handle(Event::CallableDone {
        conn: conn(tab),
        id: id.into(),
        result,
    });
}

fn cancelled(sim: &Sim) -> Vec<(String, Vec<String>)> {
    sim.author_calls
        .iter()
        .filter_map(|c| match c {
            AuthorCall::CancelCalls { conn, ids } => Some((conn.to_string(), ids.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_streaming_methods_chunks_reach_its_caller_in_order_before_the_final_reply() {
    let mut sim = with_streams();
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim.send("a", call("s1", "ticks", json!([2])));
    chunk(&mut sim, "a", "s1", json!(1)).unwrap();
    chunk(&mut sim, "a", "s1", json!({"tick": 2})).unwrap();
    done(&mut sim, "a", "s1", Ok(json!({"ticks": 2})));
    assert_eq!(
        sim.frames("a"),
        [
            json!({"type":"rpc","id":"s1","success":true,"done":false,"result":1}),
            json!({"type":"rpc","id":"s1","success":true,"done":false,"result":{"tick":2}}),
            json!({"type":"rpc","id":"s1","success":true,"done":true,"result":{"ticks":2}}),
        ]
    );
    assert!(sim.frames("b").is_empty(), "only the caller hears of it");
    // Once ended, the stream takes nothing more.
    assert!(chunk(&mut sim, "a", "s1", json!(3)).is_err());
    assert_eq!(sim.frames("a").len(), 3);
}

#[test]
fn a_plain_method_cannot_stream_and_another_connection_cannot_reach_a_stream() {
    let mut sim = with_streams();
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim.send("a", call("p1", "echo", json!([1])));
    sim.send("a", call("s1", "ticks", json!([1])));
    assert!(chunk(&mut sim, "a", "p1", json!(1)).is_err());
    assert!(chunk(&mut sim, "b", "s1", json!(1)).is_err());
    assert!(chunk(&mut sim, "a", "nope", json!(1)).is_err());
    assert!(sim.frames("a").is_empty());
    assert!(sim.frames("b").is_empty());
}

#[test]
fn a_caller_leaving_cancels_its_streaming_calls_and_nothing_more_is_sent() {
    let mut sim = with_streams();
    sim.connect("a");
    sim.connect("b");
    sim.send("a", call("s1", "ticks", json!([5])));
    sim.send("a", call("s2", "ticks", json!([5])));
    sim.send("a", call("p1", "echo", json!([1])));
    sim.send("b", call("s1", "ticks", json!([5])));
    chunk(&mut sim, "a", "s1", json!(1)).unwrap();
    sim.disconnect("a");
    assert_eq!(
        cancelled(&sim),
        [("a".to_string(), vec!["s1".to_string(), "s2".to_string()])],
        "the streaming calls of the caller that left, not its plain call, not b's"
    );
    assert!(chunk(&mut sim, "a", "s1", json!(2)).is_err());
    done(&mut sim, "a", "p1", Ok(json!(1)));
    done(&mut sim, "a", "s2", Ok(json!(null)));
    assert!(sim.misdelivered.is_empty(), "{:?}", sim.misdelivered);
    // A new socket under the same id does not get the old calls' replies.
    sim.connect("a");
    sim.clear_frames();
    done(&mut sim, "a", "s1", Ok(json!(5)));
    assert!(sim.frames("a").is_empty());
    // b's stream of the same id goes on.
    chunk(&mut sim, "b", "s1", json!(1)).unwrap();
}

#[test]
fn a_call_id_runs_once_at_a_time_and_an_oversized_chunk_is_refused() {
    let mut sim = with_streams();
    sim.connect("a");
    sim.clear_frames();
    sim.send("a", call("s1", "ticks", json!([1])));
    sim.send("a", call("s1", "echo", json!([1])));
    let refused = sim.take_frames("a");
    assert_eq!(refused.len(), 1);
    assert!(refused[0]["error"]
        .as_str()
        .unwrap()
        .contains("already running"));
    let huge = "y".repeat(MAX_CHUNK_BYTES);
    let error = chunk(&mut sim, "a", "s1", json!(huge)).unwrap_err();
    assert!(error.contains("chunk too large"), "{error}");
    assert!(sim.frames("a").is_empty());
    chunk(&mut sim, "a", "s1", json!("small")).unwrap();
    assert_eq!(sim.frames("a").len(), 1, "the stream goes on");
}
