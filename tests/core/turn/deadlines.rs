//! Deadlines of tool runs, on virtual time: a server tool (or a client tool a
//! parent agent runs) that outlives its deadline ends as a tool error the
//! model reads, the turn goes on, and the late result is ignored.

use crate::sim::*;
use serde_json::{json, Value};

/// The error text the tabs were sent for request `id`.
fn turn_error(frames: &[serde_json::Value], id: &str) -> String {
    responses(frames, id)
        .iter()
        .find(|f| f["error"] == true)
        .and_then(|f| f["body"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn weather_turn(sim: &mut Sim, tool_delay_ms: u64) {
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script(Reply::text("The weather service is slow."))
    .script_tool(
        "get_weather",
        ToolReply::ok(json!({"sky": "late"})).after(tool_delay_ms),
    );
    sim.connect("a");
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
}

#[test]
fn a_server_tool_past_the_default_deadline_becomes_a_tool_error_the_model_reads() {
    let mut sim = Sim::new();
    weather_turn(&mut sim, 10_000_000);
    sim.advance(299_000);
    assert_eq!(sim.requests().len(), 1, "still waiting at 299 s");
    sim.run_until_idle();
    let answer = &sim.transcript()[1];
    let part = tool_part(answer, "c1").unwrap();
    assert_eq!(part["state"], "output-error");
    let error = part["errorText"].as_str().unwrap();
    assert!(error.contains("did not finish within 300000 ms"), "{error}");
    assert_eq!(sim.requests().len(), 2, "the model read the error");
    assert!(sim
        .last_request()
        .tool_result("c1")
        .unwrap()
        .contains("did not finish"));
    assert_eq!(text_of(answer), "The weather service is slow.");
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}

#[test]
fn a_tool_deadline_can_be_set_per_tool_and_a_run_in_time_is_untouched() {
    let mut sim = Sim::with(|c| c.tools[0] = c.tools[0].clone().timeout_ms(1_000));
    weather_turn(&mut sim, 999);
    sim.run_until_idle();
    let part = tool_part(&sim.transcript()[1], "c1").unwrap().clone();
    assert_eq!(part["output"], json!({"sky": "late"}));

    let mut sim = Sim::with(|c| c.tools[0] = c.tools[0].clone().timeout_ms(1_000));
    weather_turn(&mut sim, 1_001);
    sim.advance(999);
    assert_eq!(sim.requests().len(), 1);
    sim.advance(1);
    sim.run_until_idle();
    let part = tool_part(&sim.transcript()[1], "c1").unwrap().clone();
    assert_eq!(part["state"], "output-error");
    assert!(part.get("output").is_none(), "the late result is ignored");
}

#[test]
fn a_zero_deadline_means_none() {
    let mut sim = Sim::with(|c| c.settings.tool_timeout_ms = 0);
    weather_turn(&mut sim, 10_000_000);
    sim.run_until_idle();
    let part = tool_part(&sim.transcript()[1], "c1").unwrap().clone();
    assert_eq!(part["output"], json!({"sky": "late"}));
}

#[test]
fn a_parent_that_never_answers_its_client_tool_call_is_given_up() {
    let mut sim = Sim::with(|c| c.settings.tool_timeout_ms = 5_000);
    sim.open_channel("parent");
    sim.script(Reply::tool_call("call_1", "parent_clock", json!({})))
        .script(Reply::text("No clock."))
        .script_tool("parent_clock", ToolReply::ok(json!({})).after(1_000_000));
    let chat = json!({"type": "cf_agent_rpc_chat", "message": "clock",
                      "clientTools": [{"name": "parent_clock"}], "executor": true});
    sim.send_channel("parent", chat.to_string());
    sim.run_until_idle();
    let answer = &sim.transcript()[1];
    let part = tool_part(answer, "call_1").unwrap();
    assert_eq!(part["state"], "output-error");
    assert_eq!(text_of(answer), "No clock.");
}

#[test]
fn a_model_that_trickles_past_the_call_deadline_ends_the_turn_with_an_error() {
    let mut sim = Sim::with(|c| c.settings.limits.model_call_timeout_ms = 1_000);
    sim.connect("a");
    sim.script(Reply::words(200).every(10));
    sim.send("a", chat_request("r1", &[user("u1", "talk slowly")]));
    sim.advance(999);
    assert!(
        terminal(sim.frames("a"), "r1").is_none(),
        "still streaming at 999 ms"
    );
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("the turn ended")["outcome"],
        "error"
    );
    let error = turn_error(sim.frames("a"), "r1");
    assert!(error.contains("did not finish within 1 s"), "{error}");
    assert!(
        sim.now < 2_000,
        "ended at the deadline, not when the model stopped"
    );
    assert_eq!(sim.open_model_calls(), 0, "the call was aborted");
}

#[test]
fn a_model_that_streams_past_the_byte_limit_ends_the_turn_with_an_error() {
    let mut sim = Sim::with(|c| c.settings.limits.max_model_stream_bytes = 100);
    sim.connect("a");
    sim.script(Reply::words(200));
    sim.send("a", chat_request("r1", &[user("u1", "talk a lot")]));
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("the turn ended")["outcome"],
        "error"
    );
    let error = turn_error(sim.frames("a"), "r1");
    assert!(error.contains("more than 100 bytes"), "{error}");
    sim.script(Reply::text("short"));
    sim.send("a", chat_request("r2", &[user("u2", "short please")]));
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), "r2").unwrap()["outcome"],
        "completed"
    );
}

#[test]
fn tool_calls_past_the_step_limit_are_input_errors_the_model_reads() {
    let mut sim = Sim::with(|c| c.settings.limits.max_tool_calls_per_step = 2);
    sim.connect("a");
    let calls: Vec<(String, Value)> = (0..4)
        .map(|i| (format!("c{i}"), json!({"city": format!("C{i}")})))
        .collect();
    let script: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "get_weather", args.clone()))
        .collect();
    sim.script(Reply::tool_calls(&script))
        .script(Reply::text("done"));
    for _ in 0..2 {
        sim.script_tool("get_weather", ToolReply::ok(json!("ok")));
    }
    sim.send("a", chat_request("r1", &[user("u1", "four cities")]));
    sim.run_until_idle();
    assert_eq!(sim.tools.runs_of("get_weather").len(), 2);
    let answer = &sim.transcript()[1];
    for id in ["c2", "c3"] {
        let part = tool_part(answer, id).unwrap();
        assert_eq!(part["state"], "output-error");
        assert!(part["errorText"]
            .as_str()
            .unwrap()
            .contains("Too many tool calls"));
    }
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}
