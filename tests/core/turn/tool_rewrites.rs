//! `after_tool_call` awaited by the host:
//! a result waits for `Event::ToolResultRewritten` before it is shown,
//! stored and read by the model; a result settled by `before_tool_call` and
//! a tab's result pass it too; a late answer for a cancelled turn is
//! ignored; a hook that never answers leaves the result as the tool gave it
//! once the tool's deadline passes; an eviction meanwhile is recovered.

use std::rc::Rc;

use crate::sim::*;
use durable_chat::core::{ConfigKey, CoreConfig, ToolCallDecision};
use serde_json::json;

fn rewriting_sim(adjust: impl FnOnce(&mut CoreConfig)) -> Sim {
    let mut sim = Sim::with(|c| {
        adjust(c);
    });
    sim.rewriter.delay_ms = 500;
    sim.rewriter.hook = Rc::new(|call, result| match call.tool_name.as_str() {
        "get_weather" => result.map(|_| json!({"tempC": 21, "source": "cache"})),
        "getLocation" => result.map(|_| json!({"city": "somewhere"})),
        _ => result,
    });
    sim.connect("a");
    sim
}

fn ask_weather(sim: &mut Sim) {
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script(Reply::text("done"))
    .script_tool("get_weather", ToolReply::ok(json!({"tempC": 3})));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
}

fn shown_output(sim: &Sim, tool_call_id: &str) -> Option<serde_json::Value> {
    bodies(&live_chunks(sim.frames("a"), "r1"))
        .into_iter()
        .find(|c| c["type"] == "tool-output-available" && c["toolCallId"] == tool_call_id)
        .map(|c| c["output"].clone())
}

#[test]
fn a_result_waits_for_the_hook_then_the_model_reads_the_rewrite() {
    let mut sim = rewriting_sim(|_| {});
    ask_weather(&mut sim);
    sim.advance(300);
    assert_eq!(sim.tools.runs_of("get_weather").len(), 1, "the tool ran");
    assert_eq!(sim.rewritten.len(), 1, "the host was asked");
    assert_eq!(sim.rewritten[0].0.tool_name, "get_weather");
    assert_eq!(sim.rewritten[0].0.input, json!({"city": "Oslo"}));
    assert_eq!(sim.rewritten[0].1, Ok(json!({"tempC": 3})));
    assert_eq!(
        shown_output(&sim, "c1"),
        None,
        "not shown before the answer"
    );
    assert_eq!(sim.model.requests.len(), 1, "the next step waits");
    sim.run_until_idle();
    let rewritten = json!({"tempC": 21, "source": "cache"});
    assert_eq!(shown_output(&sim, "c1"), Some(rewritten.clone()));
    let stored = sim.transcript();
    assert_eq!(
        tool_part(&stored[1], "c1").expect("recorded")["output"],
        rewritten
    );
    assert_eq!(
        sim.last_request().tool_result("c1").as_deref(),
        Some(r#"{"tempC":21,"source":"cache"}"#)
    );
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended")["outcome"],
        "completed"
    );
}

#[test]
fn a_result_given_by_before_tool_call_passes_the_hook_too() {
    let mut sim = rewriting_sim(|_| {});
    sim.decider.hook = Rc::new(|_| ToolCallDecision::Result(json!({"tempC": 0})));
    ask_weather(&mut sim);
    sim.run_until_idle();
    assert!(sim.tools.runs_of("get_weather").is_empty(), "never run");
    assert_eq!(sim.rewritten.len(), 1);
    assert_eq!(sim.rewritten[0].1, Ok(json!({"tempC": 0})));
    let stored = sim.transcript();
    assert_eq!(
        tool_part(&stored[1], "c1").expect("recorded")["output"],
        json!({"tempC": 21, "source": "cache"})
    );
}

/// A turn whose client tool call `l1` a tab has just answered (the hook
/// takes 500 ms), the answer after it scripted.
fn tab_answers_location() -> Sim {
    let mut sim = rewriting_sim(|_| {});
    client_call_turn(&mut sim, "r1", &["l1"]);
    sim.script(Reply::text("You are somewhere."));
    sim.send(
        "a",
        tool_result("l1", json!({"lat": 48.85, "lon": 2.35}), true),
    );
    sim
}

#[test]
fn a_tabs_result_is_applied_once_the_hook_answers() {
    let mut sim = tab_answers_location();
    sim.advance(300);
    assert_eq!(sim.rewritten.len(), 1, "the host was asked");
    assert!(sim.rewritten[0].0.client);
    assert_eq!(
        sim.model.requests.len(),
        1,
        "nothing continues before the answer"
    );
    let before = sim.transcript();
    let waiting = tool_part(&before[1], "l1").expect("recorded");
    assert_eq!(waiting["state"], "input-available", "not applied yet");
    sim.run_until_idle();
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "l1").expect("recorded");
    assert_eq!(part["output"], json!({"city": "somewhere"}));
    assert_eq!(
        sim.last_request().tool_result("l1").as_deref(),
        Some(r#"{"city":"somewhere"}"#)
    );
}

#[test]
fn a_tabs_result_waiting_on_the_hook_survives_an_eviction() {
    let mut sim = tab_answers_location();
    sim.advance(100);
    assert!(
        sim.store.config(ConfigKey::PendingToolResults).is_some(),
        "written down while the hook runs"
    );
    sim.evict(); // the hook's answer is lost with the isolate
    sim.run_until_idle();
    assert_eq!(
        sim.rewritten.len(),
        2,
        "the host is asked again after the restart"
    );
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "l1").expect("recorded");
    assert_eq!(part["output"], json!({"city": "somewhere"}));
    assert_eq!(
        sim.last_request().tool_result("l1").as_deref(),
        Some(r#"{"city":"somewhere"}"#),
        "the continuation read the result"
    );
    assert_eq!(text_of(stored.last().unwrap()), "You are somewhere.");
    assert!(sim.store.config(ConfigKey::PendingToolResults).is_none());
}

#[test]
fn a_new_message_waits_for_a_tabs_result_still_on_the_hook() {
    let mut sim = rewriting_sim(|_| {});
    client_call_turn(&mut sim, "r1", &["l1"]);
    sim.send(
        "a",
        tool_result("l1", json!({"lat": 48.85, "lon": 2.35}), false),
    );
    sim.script(Reply::text("Noted."));
    let history = sim.transcript();
    let mut next = history.clone();
    next.push(user("u2", "and now?"));
    sim.send("a", chat_request("r2", &next));
    sim.run_until_idle();
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "l1").expect("recorded");
    assert_eq!(
        part["output"],
        json!({"city": "somewhere"}),
        "the result landed, not an interrupted call"
    );
}

#[test]
fn a_rewrite_for_a_cancelled_turn_is_ignored() {
    let mut sim = rewriting_sim(|_| {});
    ask_weather(&mut sim);
    sim.advance(100);
    assert_eq!(sim.rewritten.len(), 1);
    sim.send("a", cancel("r1"));
    sim.run_until_idle();
    assert_eq!(
        shown_output(&sim, "c1"),
        None,
        "the late rewrite never shows"
    );
    assert_eq!(sim.model.requests.len(), 1, "no further step");
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended")["outcome"],
        "aborted"
    );
}

#[test]
fn a_hook_that_never_answers_leaves_the_result_as_it_came() {
    let mut sim = rewriting_sim(|c| c.settings.tool_timeout_ms = 2_000);
    sim.rewriter.delay_ms = 60_000;
    ask_weather(&mut sim);
    sim.run_until_idle();
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "c1").expect("recorded");
    assert_eq!(part["state"], "output-available");
    assert_eq!(part["output"], json!({"tempC": 3}), "the tool's own result");
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended")["outcome"],
        "completed"
    );
}

#[test]
fn an_eviction_while_a_result_is_rewritten_is_recovered_and_the_turn_ends() {
    let mut sim = rewriting_sim(|_| {});
    ask_weather(&mut sim);
    sim.script(Reply::text("recovered answer"));
    sim.advance(300);
    assert_eq!(sim.rewritten.len(), 1, "the rewrite is pending");
    sim.evict();
    sim.run_until_idle();
    let ended = sim.frames("a").iter().any(|f| f["done"] == true);
    assert!(ended, "the turn ended after the restart");
    let stored = sim.transcript();
    assert_eq!(stored.len(), 2, "one answer stored");
    assert!(
        !has_unsettled_tool_part(&stored[1]),
        "no call is left unsettled: {}",
        stored[1]
    );
}
