//! Callable methods: every `rpc` frame gets exactly one reply, on its id and
//! only to its caller: a declared method's outcome as the host reports it,
//! an error for an unknown method or a malformed frame, a refusal beyond the
//! calls one connection may have running. Frames of types no protocol layer
//! uses go to the author's `on_message`.

use crate::sim::*;
use durable_chat::core::{
    AuthorCall, CallableSpec, Event, MAX_CALLS_IN_FLIGHT, MAX_CALL_BYTES_IN_FLIGHT,
    MAX_CALL_FRAME_BYTES,
};
use serde_json::{json, Value};

fn with_methods() -> Sim {
    Sim::with(|config| {
        config.agent_api.callables = vec![CallableSpec::new("echo")];
    })
}

fn call(id: &str, method: &str, args: Value) -> String {
    json!({"type": "rpc", "id": id, "method": method, "args": args}).to_string()
}

fn runs(sim: &Sim) -> Vec<(String, String, Value)> {
    sim.author_calls
        .iter()
        .filter_map(|c| match c {
            AuthorCall::RunCallable {
                id, method, args, ..
            } => Some((id.clone(), method.clone(), args.clone())),
            _ => None,
        })
        .collect()
}

fn done(sim: &mut Sim, tab: &str, id: &str, result: Result<Value, String>) {
    sim.handle(Event::CallableDone {
        conn: conn(tab),
        id: id.into(),
        result,
    });
}

#[test]
fn a_declared_method_runs_and_its_result_is_the_one_reply_to_its_caller() {
    let mut sim = with_methods();
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim.send("a", call("c1", "echo", json!([{"x": 1}])));
    assert_eq!(
        runs(&sim),
        [("c1".into(), "echo".into(), json!([{"x": 1}]))]
    );
    assert!(
        sim.frames("a").is_empty(),
        "no reply before the method ends"
    );
    done(&mut sim, "a", "c1", Ok(json!({"x": 1})));
    assert_eq!(
        sim.frames("a"),
        [json!({"type":"rpc","id":"c1","success":true,"done":true,"result":{"x":1}})]
    );
    assert!(sim.frames("b").is_empty());
}

#[test]
fn a_failed_method_is_an_error_reply() {
    let mut sim = with_methods();
    sim.connect("a");
    sim.clear_frames();
    sim.send("a", call("c1", "echo", json!(["not", "one"])));
    done(
        &mut sim,
        "a",
        "c1",
        Err("Invalid arguments for method 'echo'".into()),
    );
    assert_eq!(
        sim.frames("a"),
        [
            json!({"type":"rpc","id":"c1","success":false,"error":"Invalid arguments for method 'echo'"})
        ]
    );
}

#[test]
fn an_unknown_method_is_answered_at_once_without_running_anything() {
    let mut sim = with_methods();
    sim.connect("a");
    sim.clear_frames();
    sim.send("a", call("c1", "launch", json!([])));
    assert_eq!(
        sim.frames("a"),
        [json!({"type":"rpc","id":"c1","success":false,"error":"Method launch does not exist"})]
    );
    assert!(runs(&sim).is_empty());
}

#[test]
fn malformed_calls_are_answered_never_dropped() {
    let mut sim = with_methods();
    sim.connect("a");
    sim.clear_frames();
    sim.send("a", r#"{"type":"rpc","id":"c1"}"#);
    sim.send(
        "a",
        r#"{"type":"rpc","id":"c2","method":"echo","args":{"a":1}}"#,
    );
    sim.send("a", r#"{"type":"rpc","method":"echo"}"#);
    let frames = sim.frames("a");
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0]["id"], "c1");
    assert_eq!(frames[0]["success"], false);
    assert!(frames[1]["error"].as_str().unwrap().contains("array"));
    assert_eq!(
        kind(&frames[2]),
        "cf_agent_chat_error",
        "no id to answer on"
    );
    assert!(runs(&sim).is_empty());
}

#[test]
fn calls_beyond_the_limit_in_flight_are_refused_until_one_ends() {
    let mut sim = with_methods();
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    for n in 0..MAX_CALLS_IN_FLIGHT {
        sim.send("a", call(&format!("c{n}"), "echo", json!([n])));
    }
    sim.send("a", call("over", "echo", json!([0])));
    let refused = sim.frames("a").last().unwrap().clone();
    assert_eq!(refused["id"], "over");
    assert!(refused["error"]
        .as_str()
        .unwrap()
        .contains("too many calls"));
    sim.send("b", call("other-tab", "echo", json!([0])));
    assert!(sim.frames("b").is_empty(), "the limit is per connection");
    done(&mut sim, "a", "c0", Ok(json!(0)));
    sim.send("a", call("again", "echo", json!([1])));
    assert_eq!(runs(&sim).last().unwrap().0, "again");
}

#[test]
fn a_call_frame_over_the_frame_limit_is_refused_on_its_id_and_never_runs() {
    let mut sim = with_methods();
    sim.connect("a");
    sim.clear_frames();
    let big = "x".repeat(MAX_CALL_FRAME_BYTES);
    sim.send("a", call("big", "echo", json!([big])));
    let frames = sim.frames("a");
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0]["id"], "big");
    assert_eq!(frames[0]["success"], false);
    assert!(frames[0]["error"]
        .as_str()
        .unwrap()
        .starts_with("call frame too large"));
    assert!(runs(&sim).is_empty());
    // Without a usable id the refusal is an error frame.
    let text = format!(
        r#"{{"type":"rpc","method":"echo","args":["{}"]}}"#,
        "x".repeat(MAX_CALL_FRAME_BYTES)
    );
    sim.send("a", text);
    assert_eq!(kind(&sim.frames("a")[1]), "cf_agent_chat_error");
    // The socket is fine: a small call still runs.
    sim.send("a", call("small", "echo", json!([1])));
    assert_eq!(runs(&sim).last().unwrap().0, "small");
}

#[test]
fn call_bytes_beyond_the_limit_in_flight_are_refused_until_one_ends() {
    let mut sim = with_methods();
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    // Frames just under the frame limit: the byte budget runs out before the count does.
    let arg = "x".repeat(MAX_CALL_FRAME_BYTES - 100);
    let fits = MAX_CALL_BYTES_IN_FLIGHT / call("c0", "echo", json!([arg])).len();
    assert!(fits < MAX_CALLS_IN_FLIGHT);
    for n in 0..fits {
        sim.send("a", call(&format!("c{n}"), "echo", json!([arg])));
    }
    assert_eq!(runs(&sim).len(), fits);
    sim.send("a", call("over", "echo", json!([arg])));
    let refused = sim.frames("a").last().unwrap().clone();
    assert_eq!(refused["id"], "over");
    assert!(refused["error"]
        .as_str()
        .unwrap()
        .contains("too many call bytes in flight"));
    sim.send("b", call("other-tab", "echo", json!([arg])));
    assert_eq!(
        runs(&sim).last().unwrap().0,
        "other-tab",
        "the budget is per connection"
    );
    done(&mut sim, "a", "c0", Ok(json!(0)));
    sim.send("a", call("again", "echo", json!([arg])));
    assert_eq!(runs(&sim).last().unwrap().0, "again");
}

#[test]
fn a_reply_for_a_caller_that_left_is_not_sent() {
    let mut sim = with_methods();
    sim.connect("a");
    sim.send("a", call("c1", "echo", json!([1])));
    sim.disconnect("a");
    done(&mut sim, "a", "c1", Ok(json!(1)));
    assert!(sim.misdelivered.is_empty());
}

#[test]
fn frames_of_other_types_go_to_the_author_and_nothing_is_sent() {
    let mut sim = with_methods();
    sim.connect("a");
    sim.clear_frames();
    let text = r#"{"type":"cursor","x":3}"#;
    sim.send("a", text);
    assert!(sim.frames("a").is_empty());
    assert!(matches!(
        sim.author_calls.last(),
        Some(AuthorCall::OtherFrame { conn, text: t }) if &**conn == "a" && t == text
    ));
}
