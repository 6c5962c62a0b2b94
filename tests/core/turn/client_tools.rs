//! Client tools and automatic continuation: sticky tool lists, routing a call
//! to the browser, applying results, the batch barrier (exactly one
//! continuation per completed batch, in every order) and the live resume
//! handshake of the tab that owns a continuation.

use crate::sim::*;
use durable_chat::core::{ConfigKey, TurnTrigger};
use serde_json::{json, Value};

#[test]
fn client_tools_are_sticky_until_replaced_or_cleared() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    assert!(sim
        .last_request()
        .tool_names()
        .contains(&"getLocation".into()));
    assert_eq!(
        sim.store.config_json(ConfigKey::ClientTools),
        Some(location_tool())
    );

    sim.script(Reply::text("ok"));
    sim.send("a", chat_request("r2", &[user("u2", "absent keeps them")]));
    sim.run_until_idle();
    assert!(sim
        .last_request()
        .tool_names()
        .contains(&"getLocation".into()));

    client_call_turn(&mut sim, "r3", &["c3"]);
    sim.send(
        "a",
        tool_result_with(
            "c3",
            json!(1),
            false,
            json!({"clientTools": [{"name": "getTimezone"}]}),
        ),
    );
    sim.script(Reply::text("ok"));
    sim.send("a", chat_request("r4", &[user("u4", "replaced")]));
    sim.run_until_idle();
    let names = sim.last_request().tool_names();
    assert!(names.contains(&"getTimezone".into()) && !names.contains(&"getLocation".into()));

    sim.script(Reply::text("ok"));
    sim.send(
        "a",
        chat_request_with("r5", &[user("u5", "cleared")], json!({"clientTools": []})),
    );
    sim.run_until_idle();
    assert_eq!(
        sim.last_request().tool_names(),
        ["get_weather", "delete_file"]
    );
    assert_eq!(sim.store.config_json(ConfigKey::ClientTools), None);
}

#[test]
fn client_tools_and_body_survive_a_restart_and_drive_the_continuation() {
    // `before_turn` is asked for every turn; `sim.prepared` keeps what it saw.
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::tool_call("c1", "getLocation", json!({})));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where?")],
            json!({"clientTools": location_tool(), "room": "x"}),
        ),
    );
    sim.run_until_idle();
    sim.evict();
    assert!(!sim.core().is_busy());
    sim.send("a", resume_probe("p1"));
    assert_eq!(
        sim.take_frames("a").last().unwrap()["reason"],
        "idle",
        "a parked client call is not a live stream"
    );
    sim.script(Reply::text("You are in Paris."));
    sim.send("a", tool_result("c1", json!({"city": "Paris"}), true));
    sim.run_until_idle();
    let request = sim.last_request();
    assert!(request.tool_names().contains(&"getLocation".into()));
    assert_eq!(
        request.tool_result("c1").as_deref(),
        Some(r#"{"city":"Paris"}"#)
    );
    let seen: Vec<_> = sim
        .prepared
        .iter()
        .map(|ctx| {
            let body = Value::Object(ctx.body.clone());
            (ctx.continuation, ctx.trigger, ctx.client_tools.len(), body)
        })
        .collect();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1],
        (true, TurnTrigger::AutoContinuation, 1, json!({"room": "x"}))
    );
}

#[test]
fn a_client_tool_replaces_a_server_tool_of_the_same_name() {
    let mut sim = two_tabs();
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Rome"}),
    ));
    let tools = json!([{"name": "get_weather", "description": "browser weather"}]);
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "weather?")],
            json!({"clientTools": tools}),
        ),
    );
    sim.run_until_idle();
    assert!(sim.tools.runs.is_empty(), "the server tool does not run");
    let request = sim.last_request();
    assert_eq!(
        request
            .tool_names()
            .iter()
            .filter(|n| *n == "get_weather")
            .count(),
        1
    );
    assert_eq!(
        request.tool("get_weather").unwrap().description,
        "browser weather"
    );
    let part = tool_part(&sim.store.transcript()[1], "c1").unwrap().clone();
    assert_eq!(part["state"], "input-available");
}

#[test]
fn a_client_call_is_streamed_persisted_input_available_and_the_turn_completes() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    for tab in ["a", "b"] {
        let types = chunk_types(sim.frames(tab), "r1");
        for t in [
            "tool-input-start",
            "tool-input-delta",
            "tool-input-available",
        ] {
            assert!(types.contains(&t.to_string()), "{tab} missed {t}");
        }
        assert_eq!(
            terminal(sim.frames(tab), "r1").unwrap()["outcome"],
            "completed"
        );
    }
    let part = tool_part(&sim.store.transcript()[1], "c1").unwrap().clone();
    assert_eq!(part["type"], "tool-getLocation");
    assert_eq!(part["state"], "input-available");
    assert_eq!(part["input"], json!({"precise": true}));
    assert_eq!(
        sim.requests().len(),
        1,
        "the agent waits without calling the model again"
    );
    assert!(
        !sim.core().is_busy(),
        "nothing blocks while the browser works"
    );
    assert!(sim
        .armed()
        .iter()
        .all(|(t, _)| *t != durable_chat::core::Timer::Continuation));
}

#[test]
fn a_tool_result_is_persisted_and_broadcast_to_every_tab_including_the_sender() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.clear_frames();
    sim.send("a", tool_result("c1", json!({"lat": 1}), false));
    for tab in ["a", "b"] {
        let updated = of_type(sim.frames(tab), UPDATED);
        assert_eq!(updated.len(), 1, "{tab}");
        let part = tool_part(&updated[0]["message"], "c1").unwrap();
        assert_eq!(part["state"], "output-available");
        assert_eq!(part["output"], json!({"lat": 1}));
        assert_eq!(part["preliminary"], false);
    }
    let stored = tool_part(&sim.store.transcript()[1], "c1").unwrap().clone();
    assert_eq!(stored["state"], "output-available");
    sim.advance(10_000);
    assert_eq!(
        sim.requests().len(),
        1,
        "autoContinue:false does not continue"
    );
}

#[test]
fn an_error_result_marks_the_part_output_error() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1", "c2"]);
    sim.send("a", tool_error("c1", "User declined", false));
    let no_text = json!({"type": "cf_agent_tool_result", "toolCallId": "c2", "output": null,
                         "state": "output-error", "autoContinue": false});
    sim.send("a", no_text.to_string());
    let answer = &sim.store.transcript()[1];
    let c1 = tool_part(answer, "c1").unwrap();
    assert_eq!(
        (c1["state"].as_str(), c1["errorText"].as_str()),
        (Some("output-error"), Some("User declined"))
    );
    let c2 = tool_part(answer, "c2").unwrap();
    assert_eq!(c2["errorText"], "Tool execution denied by user");
    assert_eq!(of_type(sim.frames("b"), UPDATED).len(), 2);
}

#[test]
fn a_result_for_an_unknown_call_broadcasts_nothing_and_continues_nothing() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.clear_frames();
    let writes = sim.store.ops.len();
    sim.send("a", tool_result("nope", json!(1), true));
    sim.advance(10_000);
    assert!(sim.frames("a").is_empty() && sim.frames("b").is_empty());
    assert_eq!(sim.store.ops.len(), writes);
    assert_eq!(sim.requests().len(), 1);
    assert!(!sim.core().is_busy());
}

#[test]
fn a_result_that_arrives_while_its_turn_streams_rides_into_the_persisted_message() {
    let mut sim = two_tabs();
    sim.script(Reply::tool_calls(&[
        ("c1", "getLocation", json!({})),
        ("s1", "get_weather", json!({"city": "Oslo"})),
    ]))
    .script_tool("get_weather", ToolReply::ok(json!({"tempC": 3})).after(300))
    .script(Reply::text("Oslo, 3C."));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where and how warm?")],
            json!({"clientTools": location_tool()}),
        ),
    );
    sim.advance(10);
    assert!(chunk_types(sim.frames("a"), "r1").contains(&"tool-input-available".to_string()));
    assert!(
        terminal(sim.frames("a"), "r1").is_none(),
        "the server tool still runs"
    );
    sim.send("a", tool_result("c1", json!({"city": "Oslo"}), true));
    let updated = of_type(sim.frames("b"), UPDATED);
    assert_eq!(
        tool_part(&updated[0]["message"], "c1").unwrap()["state"],
        "output-available"
    );
    sim.run_until_idle();
    let first = sim.store.transcript()[1].clone();
    assert_eq!(
        tool_part(&first, "c1").unwrap()["output"],
        json!({"city": "Oslo"})
    );
    assert_eq!(
        tool_part(&first, "s1").unwrap()["state"],
        "output-available"
    );
    assert_eq!(sim.requests().len(), 2, "one continuation after the turn");
    assert_eq!(continuation_ids(sim.frames("b")).len(), 1);
    assert_eq!(
        sim.requests()[1].tool_result("c1").as_deref(),
        Some(r#"{"city":"Oslo"}"#)
    );
}
