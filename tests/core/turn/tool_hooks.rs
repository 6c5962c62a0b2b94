//! `before_tool_call` blocks a call (the model reads the message as its
//! result), changes its input or gives its result without running it, for
//! server and client tools; `after_tool_call` rewrites results of server
//! runs and of a tab's answers; a server run's abort signal fires when its
//! turn is cancelled.

use std::rc::Rc;

use crate::sim::*;
use durable_chat::core::{ToolCallDecision, ToolOutcome};
use serde_json::{json, Value};

fn hooked_sim() -> Sim {
    let mut sim = Sim::new();
    sim.decider.hook =
        Rc::new(
            |call| match (call.tool_name.as_str(), call.input["city"].as_str()) {
                ("get_weather", Some("Atlantis")) => {
                    ToolCallDecision::Block("Atlantis is not a real city.".into())
                }
                ("get_weather", Some("paris")) => ToolCallDecision::Input(json!({"city": "Paris"})),
                ("get_weather", Some("Cached")) => ToolCallDecision::Result(json!({"tempC": 1})),
                ("getLocation", _) if call.client && call.input["precise"] == true => {
                    ToolCallDecision::Block("Precise location is not shared.".into())
                }
                _ => ToolCallDecision::Allow,
            },
        );
    sim.rewriter.hook = Rc::new(|call, result: ToolOutcome| match result {
        Ok(Value::Object(mut map)) => {
            map.insert("checkedBy".into(), json!(call.tool_name));
            Ok(Value::Object(map))
        }
        other => other,
    });
    sim.connect("a");
    sim
}

fn weather_turn(sim: &mut Sim, city: &str) {
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({ "city": city }),
    ))
    .script(Reply::text("done"));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    sim.run_until_idle();
}

#[test]
fn a_blocked_server_call_is_not_run_and_the_model_reads_the_message() {
    let mut sim = hooked_sim();
    weather_turn(&mut sim, "Atlantis");
    assert!(sim.tools.runs_of("get_weather").is_empty());
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "c1").expect("recorded");
    assert_eq!(part["state"], "output-error");
    assert_eq!(part["errorText"], "Atlantis is not a real city.");
    assert_eq!(
        sim.last_request().tool_result("c1").as_deref(),
        Some("Atlantis is not a real city.")
    );
}

#[test]
fn a_substituted_input_is_what_runs_and_what_is_stored() {
    let mut sim = hooked_sim();
    sim.script_tool("get_weather", ToolReply::ok(json!({"tempC": 20})));
    weather_turn(&mut sim, "paris");
    let runs = sim.tools.runs_of("get_weather");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].input, json!({"city": "Paris"}));
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "c1").expect("recorded");
    assert_eq!(part["input"], json!({"city": "Paris"}));
    assert_eq!(
        part["output"],
        json!({"tempC": 20, "checkedBy": "get_weather"}),
        "after_tool_call rewrote the run's output"
    );
}

#[test]
fn a_substituted_result_settles_the_call_without_running_it() {
    let mut sim = hooked_sim();
    weather_turn(&mut sim, "Cached");
    assert!(sim.tools.runs_of("get_weather").is_empty());
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "c1").expect("recorded");
    assert_eq!(part["state"], "output-available");
    assert_eq!(part["output"]["tempC"], 1);
    assert_eq!(text_of(&stored[1]), "done");
}

#[test]
fn a_blocked_client_call_never_reaches_the_tab_as_a_call_to_run() {
    let mut sim = hooked_sim();
    sim.script(Reply::tool_call(
        "l1",
        "getLocation",
        json!({"precise": true}),
    ))
    .script(Reply::text("I cannot tell where you are."));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where am I?")],
            json!({"clientTools": location_tool()}),
        ),
    );
    sim.run_until_idle();
    let chunks = chunk_types(sim.frames("a"), "r1");
    let available = chunks.iter().position(|t| t == "tool-input-available");
    let settled = chunks.iter().position(|t| t == "tool-output-error");
    assert!(
        matches!((available, settled), (Some(a), Some(s)) if s == a + 1),
        "the call arrives settled: {chunks:?}"
    );
    let call = live_chunks(sim.frames("a"), "r1")
        .into_iter()
        .map(body)
        .find(|c| c["type"] == "tool-input-available")
        .expect("the call is streamed");
    assert_eq!(call["providerExecuted"], true, "so the tab does not run it");
    assert_eq!(
        sim.requests().len(),
        2,
        "the model goes on in the same turn"
    );
    assert_eq!(
        sim.last_request().tool_result("l1").as_deref(),
        Some("Precise location is not shared.")
    );
}

#[test]
fn a_tabs_result_passes_through_after_tool_call() {
    let mut sim = Sim::new();
    sim.rewriter.hook = Rc::new(|call, result: ToolOutcome| {
        if !call.client {
            return result;
        }
        result.map(|_| json!({"city": "somewhere"}))
    });
    sim.connect("a");
    client_call_turn(&mut sim, "r1", &["l1"]);
    sim.script(Reply::text("You are somewhere."));
    sim.send(
        "a",
        tool_result("l1", json!({"lat": 48.85, "lon": 2.35}), true),
    );
    sim.run_until_idle();
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "l1").expect("recorded");
    assert_eq!(part["output"], json!({"city": "somewhere"}));
    assert_eq!(
        sim.last_request().tool_result("l1").as_deref(),
        Some(r#"{"city":"somewhere"}"#)
    );
}

/// Tab "a" asks about the weather; the model calls `get_weather`, whose run
/// takes `ms`.
fn ask_a_slow_weather_tool(sim: &mut Sim, ms: u64) {
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script_tool("get_weather", ToolReply::ok(json!({"tempC": 3})).after(ms));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
}

#[test]
fn cancelling_a_turn_fires_its_running_tools_abort_signal() {
    let mut sim = Sim::new();
    sim.connect("a");
    ask_a_slow_weather_tool(&mut sim, 5_000);
    sim.advance(1_000);
    let run = sim.tools.runs_of("get_weather")[0].call;
    assert!(sim.aborted_tools.is_empty());
    sim.send("a", cancel("r1"));
    assert_eq!(sim.aborted_tools, vec![run]);
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "aborted"
    );
}

#[test]
fn a_run_past_its_deadline_has_its_abort_signal_fired() {
    let mut sim = Sim::with(|c| c.settings.tool_timeout_ms = 2_000);
    sim.connect("a");
    ask_a_slow_weather_tool(&mut sim, 60_000);
    sim.script(Reply::text("too slow"));
    sim.run_until_idle();
    let run = sim.tools.runs_of("get_weather")[0].call;
    assert_eq!(sim.aborted_tools, vec![run]);
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}
