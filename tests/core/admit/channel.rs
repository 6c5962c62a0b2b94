//! A parent agent's channel as the child's core sees it: the frames of a
//! sub-agent `chat()` arrive as `Event::ChannelFrame`. A malformed or
//! oversized one is answered with an error frame on the channel and leaves
//! nothing stored; a good one runs the turn, answers a tool call, or cancels.

use crate::sim::*;
use serde_json::{json, Value};

fn rpc_chat(message: Value, tools: Value, executor: bool) -> String {
    json!({"type": "cf_agent_rpc_chat", "message": message, "clientTools": tools,
           "executor": executor})
    .to_string()
}

fn clock_tool() -> Value {
    json!([{"name": "parent_clock", "parameters": {"type": "object", "properties": {}}}])
}

fn started_id(sim: &Sim) -> String {
    let started = of_type(sim.frames("parent"), "cf_agent_rpc_started");
    assert_eq!(started.len(), 1, "one turn started");
    started[0]["requestId"]
        .as_str()
        .expect("a request id")
        .to_string()
}

#[test]
fn a_malformed_channel_frame_gets_an_error_frame_and_nothing_is_stored() {
    let mut sim = Sim::with(|config| config.settings.limits.max_client_tools = 1);
    sim.connect("tab");
    sim.open_channel("parent");
    sim.clear_frames();
    let two_tools = json!([{"name": "a"}, {"name": "b"}]);
    let cases = [
        ("not json".to_string(), "not valid JSON"),
        (
            r#"{"type":"cf_agent_rpc_chat"}"#.to_string(),
            "`message` is missing",
        ),
        (rpc_chat(json!(5), json!([]), false), "`message` must be"),
        (
            rpc_chat(json!({"id": "m1"}), json!([]), false),
            "`message`:",
        ),
        (
            rpc_chat(json!("hi"), json!("tools"), false),
            "`clientTools`",
        ),
        (
            rpc_chat(json!("hi"), two_tools, false),
            "too many client tools",
        ),
        (
            rpc_chat(
                json!({"id": "", "role": "user", "parts": []}),
                json!([]),
                false,
            ),
            "empty id",
        ),
        (
            r#"{"type":"cf_agent_rpc_tool_result","toolCallId":"c","output":1}"#.to_string(),
            "`callId` is missing",
        ),
        (
            r#"{"type":"cf_agent_chat_request_cancel","id":5}"#.to_string(),
            "`id` must be a string",
        ),
        (
            chat_request("r1", &[user("u1", "hi")]),
            "unknown frame type",
        ),
    ];
    for (frame, reason) in cases {
        sim.send_channel("parent", frame.clone());
        let answers = sim.take_frames("parent");
        assert_eq!(kinds(&answers), [CHAT_ERROR], "{frame}");
        let error = answers[0]["error"].as_str().unwrap_or_default();
        assert!(error.contains(reason), "{frame}: {error}");
    }
    assert!(sim.frames("tab").is_empty(), "tabs are told nothing");
    assert!(sim.store.ops.is_empty(), "nothing stored");
    assert!(sim.transcript().is_empty());
    assert!(sim.requests().is_empty(), "no turn started");

    // The channel stays usable: a good frame runs the turn.
    sim.script(Reply::text("Hello, parent."));
    sim.send_channel("parent", rpc_chat(json!("hello"), json!([]), false));
    sim.run_until_idle();
    let id = started_id(&sim);
    let done = terminal(sim.frames("parent"), &id).expect("the turn ended");
    assert_eq!(done["outcome"], "completed");
    let transcript = sim.transcript();
    assert_eq!(transcript.len(), 2);
    assert_eq!(transcript[0]["role"], "user");
    assert_eq!(transcript[0]["parts"][0]["text"], "hello");
    assert!(
        transcript[0]["id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "the core minted the message id"
    );
    assert_eq!(text_of(&transcript[1]), "Hello, parent.");
}

#[test]
fn an_oversized_channel_frame_is_refused_without_being_parsed() {
    let mut sim = Sim::with(|config| config.settings.limits.max_frame_bytes = 200);
    sim.open_channel("parent");
    sim.send_channel("parent", rpc_chat(json!("x".repeat(300)), json!([]), false));
    let answers = sim.take_frames("parent");
    assert_eq!(kinds(&answers), [CHAT_ERROR]);
    assert!(answers[0]["error"]
        .as_str()
        .is_some_and(|e| e.contains("frame too large")));
    assert!(sim.store.ops.is_empty());
}

#[test]
fn a_whole_message_from_the_parent_keeps_its_id() {
    let mut sim = Sim::new();
    sim.open_channel("parent");
    sim.script(Reply::text("ok"));
    sim.send_channel(
        "parent",
        rpc_chat(user("from-parent", "hi"), json!([]), false),
    );
    sim.run_until_idle();
    assert_eq!(sim.transcript()[0]["id"], "from-parent");
}

#[test]
fn the_parents_tool_result_frame_answers_the_call_and_the_turn_goes_on() {
    let mut sim = Sim::new();
    sim.open_channel("parent");
    sim.script(Reply::tool_call("call_1", "parent_clock", json!({})))
        .script(Reply::text("It is noon."))
        // The scripted executor never answers in time: the channel frame does.
        .script_tool("parent_clock", ToolReply::ok(json!({})).after(1_000_000));
    sim.send_channel(
        "parent",
        rpc_chat(json!("read the clock"), clock_tool(), true),
    );
    sim.advance(100);
    let call = sim.tools.runs_of("parent_clock")[0].call;
    let result = json!({"type": "cf_agent_rpc_tool_result", "callId": call,
                        "toolCallId": "call_1", "output": {"now": "12:00"}});
    sim.send_channel("parent", result.to_string());
    sim.run_until_idle();
    let id = started_id(&sim);
    let done = terminal(sim.frames("parent"), &id).expect("the turn ended");
    assert_eq!(done["outcome"], "completed");
    let answer = &sim.transcript()[1];
    let part = tool_part(answer, "call_1").expect("tool part");
    assert_eq!(part["state"], "output-available");
    assert_eq!(part["output"], json!({"now": "12:00"}));
    assert_eq!(text_of(answer), "It is noon.");
}

#[test]
fn a_cancel_on_the_channel_ends_the_turn_aborted() {
    let mut sim = Sim::new();
    sim.open_channel("parent");
    sim.script(Reply::words(200).every(20));
    sim.send_channel("parent", rpc_chat(json!("talk"), json!([]), false));
    sim.advance(200);
    let id = started_id(&sim);
    sim.send_channel(
        "parent",
        json!({"type": "cf_agent_chat_request_cancel", "id": id}).to_string(),
    );
    sim.run_until_idle();
    let done = terminal(sim.frames("parent"), &id).expect("the turn ended");
    assert_eq!(done["outcome"], "aborted");
}

#[test]
fn several_messages_on_a_channel_chat_are_stored_in_order_and_answered_once() {
    let mut sim = Sim::new();
    sim.open_channel("parent");
    sim.clear_frames();
    sim.script(Reply::text("Both read."));
    let messages = json!([
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "first"}]},
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "second"}]},
    ]);
    sim.send_channel("parent", rpc_chat(messages, json!([]), false));
    sim.run_until_idle();
    let _ = started_id(&sim);
    let transcript = sim.transcript();
    let ids: Vec<&str> = transcript.iter().filter_map(|m| m["id"].as_str()).collect();
    assert_eq!(ids.len(), 3, "{transcript:?}");
    assert_eq!(&ids[..2], ["u1", "u2"]);
    assert_eq!(text_of(&transcript[2]), "Both read.");
    let sent = sim.requests();
    assert_eq!(sent.len(), 1, "one turn answers both");
    let empty = rpc_chat(json!([]), json!([]), false);
    sim.send_channel("parent", empty);
    let refused = of_type(sim.frames("parent"), "cf_agent_chat_error");
    assert_eq!(refused.len(), 1, "an empty list is refused");
}
