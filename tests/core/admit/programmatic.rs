//! Programmatic turns: the agent's own `chat()` and `clear_messages()`, and a
//! parent agent's `chat()` over a channel with per-turn client tools run by
//! the parent's executor.

use crate::sim::*;
use durable_chat::core::{ConfigKey, Event};
use durable_chat::protocol::UIMessage;
use serde_json::{json, Value};

fn programmatic(sim: &mut Sim, channel: Option<&str>, text: &str, tools: Value, executor: bool) {
    sim.handle(Event::ProgrammaticChat {
        conn: channel.map(conn),
        message: UIMessage::user_text(format!("pm-{text}"), text),
        tools: serde_json::from_value(tools).expect("tool schemas"),
        executor,
    });
}

fn clock_tool() -> Value {
    json!([{"name": "parent_clock", "parameters": {"type": "object", "properties": {}}}])
}

#[test]
fn the_agents_own_chat_is_stored_and_streamed_to_every_tab() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim.script(Reply::text("Scheduled hello."));
    programmatic(&mut sim, None, "daily summary", json!([]), false);
    sim.run_until_idle();
    for tab in ["a", "b"] {
        let frames = sim.frames(tab).to_vec();
        let done: Vec<&Value> = frames.iter().filter(|f| f["done"] == json!(true)).collect();
        assert_eq!(done.len(), 1, "tab {tab} saw the turn end");
        assert_eq!(done[0]["outcome"], "completed");
        assert!(!chunk_types(&frames, done[0]["id"].as_str().unwrap_or_default()).is_empty());
    }
    let transcript = sim.transcript();
    assert_eq!(transcript.len(), 2);
    assert_eq!(transcript[0]["parts"][0]["text"], "daily summary");
    assert_eq!(text_of(&transcript[1]), "Scheduled hello.");
}

#[test]
fn the_agents_own_clear_tells_every_tab() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.connect("b");
    sim.script(Reply::text("hi"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    sim.clear_frames();
    sim.handle(Event::ClearHistory);
    for tab in ["a", "b"] {
        assert_eq!(kinds(sim.frames(tab)), ["cf_agent_chat_clear"], "tab {tab}");
    }
    assert!(sim.transcript().is_empty());
}

#[test]
fn a_parents_executor_runs_the_client_tool_and_the_child_model_continues_in_the_same_turn() {
    let mut sim = Sim::new();
    sim.open_channel("parent");
    sim.script(Reply::tool_call("call_1", "parent_clock", json!({})))
        .script(Reply::text("It is noon."))
        .script_tool(
            "parent_clock",
            ToolReply::ok(json!({"now": "12:00", "by": "coordinator"})),
        );
    programmatic(
        &mut sim,
        Some("parent"),
        "read the clock",
        clock_tool(),
        true,
    );
    sim.run_until_idle();
    let started = of_type(sim.frames("parent"), "cf_agent_rpc_started")[0]["requestId"].clone();
    let id = started.as_str().unwrap_or_default().to_string();
    assert_eq!(sim.tools.runs.len(), 1, "the executor ran once");
    let terminal = terminal(sim.frames("parent"), &id)
        .expect("the turn ended")
        .clone();
    assert_eq!(terminal["outcome"], "completed");
    assert_eq!(sim.requests().len(), 2, "one turn, two model steps");
    let transcript = sim.transcript();
    let answer = &transcript[1];
    assert_eq!(
        tool_part(answer, "call_1").expect("tool part")["state"],
        "output-available"
    );
    assert_eq!(text_of(answer), "It is noon.");
}

#[test]
fn a_failing_executor_becomes_an_output_error_and_the_turn_goes_on() {
    let mut sim = Sim::new();
    sim.open_channel("parent");
    sim.script(Reply::tool_call("call_1", "parent_clock", json!({})))
        .script(Reply::text("The clock refused."))
        .script_tool("parent_clock", ToolReply::err("the coordinator refused"));
    programmatic(
        &mut sim,
        Some("parent"),
        "read the clock",
        clock_tool(),
        true,
    );
    sim.run_until_idle();
    let answer = &sim.transcript()[1];
    let part = tool_part(answer, "call_1").expect("tool part");
    assert_eq!(part["state"], "output-error");
    assert_eq!(part["errorText"], "the coordinator refused");
    assert_eq!(text_of(answer), "The clock refused.");
}

#[test]
fn without_an_executor_the_call_dangles_and_per_call_tools_are_not_kept() {
    let mut sim = Sim::new();
    sim.open_channel("parent");
    sim.script(Reply::tool_call("call_1", "parent_clock", json!({})));
    programmatic(
        &mut sim,
        Some("parent"),
        "read the clock",
        clock_tool(),
        false,
    );
    sim.run_until_idle();
    assert!(sim.tools.runs.is_empty());
    let answer = &sim.transcript()[1];
    assert_eq!(
        tool_part(answer, "call_1").expect("tool part")["state"],
        "input-available"
    );
    assert!(
        sim.store.config(ConfigKey::ClientTools).is_none(),
        "never persisted"
    );
}

#[test]
fn a_parent_that_goes_away_mid_call_turns_the_call_into_an_error() {
    let mut sim = Sim::new();
    sim.open_channel("parent");
    sim.script(Reply::tool_call("call_1", "parent_clock", json!({})))
        .script(Reply::text("Went on without it."))
        .script_tool("parent_clock", ToolReply::ok(json!({})).after(10_000));
    programmatic(
        &mut sim,
        Some("parent"),
        "read the clock",
        clock_tool(),
        true,
    );
    sim.advance(100);
    sim.disconnect("parent");
    sim.run_until_idle();
    let answer = &sim.transcript()[1];
    assert_eq!(
        tool_part(answer, "call_1").expect("tool part")["state"],
        "output-error"
    );
    assert_eq!(text_of(answer), "Went on without it.");
}
