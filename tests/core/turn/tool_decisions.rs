//! `before_tool_call` awaited by the host:
//! each call waits for `Event::ToolCallDecided` before it runs, is shown or
//! settled; a block or a substituted input applies as with the inline hook;
//! several calls of one step are decided apart and the step ends after the
//! last; a late answer for a cancelled turn is ignored; a hook that never
//! answers is settled by the tool deadline.

use std::rc::Rc;

use crate::sim::*;
use durable_chat::core::{CoreConfig, ToolCallDecision};
use serde_json::json;

fn deciding_sim(adjust: impl FnOnce(&mut CoreConfig)) -> Sim {
    let mut sim = Sim::with(|c| {
        adjust(c);
    });
    sim.decider.delay_ms = 500;
    sim.decider.hook = Rc::new(|call| match call.input["city"].as_str() {
        Some("Atlantis") => ToolCallDecision::Block("Atlantis is not a real city.".into()),
        Some("paris") => ToolCallDecision::Input(json!({"city": "Paris"})),
        _ => ToolCallDecision::Allow,
    });
    sim.connect("a");
    sim
}

fn weather_call(sim: &mut Sim, calls: &[(&str, &str)]) {
    let calls: Vec<_> = calls
        .iter()
        .map(|(id, city)| (*id, "get_weather", json!({ "city": city })))
        .collect();
    sim.script(Reply::tool_calls(&calls))
        .script(Reply::text("done"));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
}

#[test]
fn a_call_waits_for_the_decision_then_runs() {
    let mut sim = deciding_sim(|_| {});
    sim.script_tool("get_weather", ToolReply::ok(json!({"tempC": 20})));
    weather_call(&mut sim, &[("c1", "Oslo")]);
    sim.advance(400);
    assert_eq!(sim.decided.len(), 1, "the host was asked");
    assert_eq!(sim.decided[0].tool_name, "get_weather");
    assert!(
        sim.tools.runs_of("get_weather").is_empty(),
        "not run before the answer"
    );
    sim.run_until_idle();
    assert_eq!(sim.tools.runs_of("get_weather").len(), 1);
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "c1").expect("recorded");
    assert_eq!(part["output"], json!({"tempC": 20}));
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended")["outcome"],
        "completed"
    );
}

#[test]
fn a_block_or_a_new_input_decided_later_applies_as_inline() {
    let mut sim = deciding_sim(|_| {});
    sim.script_tool("get_weather", ToolReply::ok(json!({"tempC": 20})));
    weather_call(&mut sim, &[("c1", "Atlantis"), ("c2", "paris")]);
    sim.run_until_idle();
    let runs = sim.tools.runs_of("get_weather");
    assert_eq!(runs.len(), 1, "only the allowed call ran");
    assert_eq!(runs[0].input, json!({"city": "Paris"}));
    let stored = sim.transcript();
    let blocked = tool_part(&stored[1], "c1").expect("recorded");
    assert_eq!(blocked["state"], "output-error");
    assert_eq!(blocked["errorText"], "Atlantis is not a real city.");
    assert_eq!(
        tool_part(&stored[1], "c2").expect("recorded")["input"],
        json!({"city": "Paris"})
    );
    assert_eq!(
        sim.last_request().tool_result("c1").as_deref(),
        Some("Atlantis is not a real city."),
        "the next step came after both calls were settled"
    );
    assert_eq!(sim.model.requests.len(), 2);
}

#[test]
fn a_decision_for_a_cancelled_turn_is_ignored() {
    let mut sim = deciding_sim(|_| {});
    weather_call(&mut sim, &[("c1", "Oslo")]);
    sim.advance(100);
    assert_eq!(sim.decided.len(), 1);
    sim.send("a", cancel("r1"));
    sim.run_until_idle();
    assert!(sim.tools.runs_of("get_weather").is_empty());
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended")["outcome"],
        "aborted"
    );
}

#[test]
fn a_hook_that_never_answers_is_settled_by_the_tool_deadline() {
    let mut sim = deciding_sim(|c| c.settings.tool_timeout_ms = 2_000);
    sim.decider.delay_ms = 60_000;
    weather_call(&mut sim, &[("c1", "Oslo")]);
    sim.run_until_idle();
    assert!(sim.tools.runs_of("get_weather").is_empty());
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "c1").expect("recorded");
    assert_eq!(part["state"], "output-error");
    assert_eq!(part["input"], json!({"city": "Oslo"}), "its input is shown");
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended")["outcome"],
        "completed"
    );
}

#[test]
fn an_eviction_while_a_call_is_decided_is_recovered_and_the_turn_ends() {
    let mut sim = deciding_sim(|_| {});
    sim.script_tool("get_weather", ToolReply::ok(json!({"tempC": 20})));
    weather_call(&mut sim, &[("c1", "Oslo")]);
    sim.script(Reply::text("recovered answer"));
    sim.advance(100);
    assert_eq!(sim.decided.len(), 1, "the decision is pending");
    assert!(sim.tools.runs_of("get_weather").is_empty());
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
