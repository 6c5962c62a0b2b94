//! The model options a turn can set, and the agent's defaults for them:
//! `top_p`, `seed`, stop sequences, structured output and provider options
//! reach the step's request (the turn's over the agent's, the next turn back
//! to the agent's); `stop_when` ends a turn after a step that called a
//! named tool, or after a number of steps.

use std::rc::Rc;

use durable_chat::core::{CoreConfig, StopWhen, TurnConfig, TurnTrigger};
use durable_chat::model::StructuredOutput;
use durable_chat::protocol::Outcome;
use serde_json::{json, Map, Value};

use crate::sim::*;

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn prepared_sim(adjust: impl FnOnce(&mut CoreConfig)) -> Sim {
    let mut sim = Sim::with(|c| {
        adjust(c);
    });
    sim.connect("a");
    sim
}

fn order_schema() -> StructuredOutput {
    StructuredOutput::new(
        "order",
        json!({"type": "object", "properties": {"id": {"type": "string"}},
               "required": ["id"], "additionalProperties": false}),
    )
}

/// A turn submitted with `{"json": true}` in its body asks for structured
/// output and its own sampling options; any other turn is left as is.
fn json_turns_sim() -> Sim {
    let mut sim = prepared_sim(|c| {
        c.settings.model.seed = Some(1);
        c.settings.model.stop = vec!["STOP".into()];
        c.settings.model.provider_options =
            object(json!({"reasoning_effort": "medium", "service_tier": "flex"}));
    });
    sim.preparer.hook = Rc::new(|ctx| {
        if ctx.trigger != TurnTrigger::Submit || !ctx.body.contains_key("json") {
            return TurnConfig::default();
        }
        TurnConfig {
            top_p: Some(0.9),
            seed: Some(42),
            stop: Some(Vec::new()),
            structured_output: Some(order_schema()),
            provider_options: object(json!({"reasoning_effort": "low"})),
            ..TurnConfig::default()
        }
    });
    sim
}

#[test]
fn a_turns_options_reach_its_request_over_the_agents_and_the_next_turn_has_the_agents() {
    let mut sim = json_turns_sim();
    sim.script(Reply::text("{\"id\":\"A-1\"}"));
    sim.send(
        "a",
        chat_request_with("r1", &[user("u1", "order?")], json!({"json": true})),
    );
    sim.run_until_idle();
    let settings = &sim.last_request().request.settings;
    assert_eq!(settings.top_p, Some(0.9));
    assert_eq!(settings.seed, Some(42));
    assert!(settings.stop.is_empty(), "the turn sent no stop sequences");
    assert_eq!(settings.structured_output, Some(order_schema()));
    assert_eq!(
        settings.provider_options,
        object(json!({"reasoning_effort": "low", "service_tier": "flex"})),
        "a key the turn names replaces the agent's; the others stay"
    );

    sim.script(Reply::text("plain"));
    sim.send("a", chat_request("r2", &[user("u2", "again")]));
    sim.run_until_idle();
    let settings = &sim.last_request().request.settings;
    assert_eq!(settings.top_p, None);
    assert_eq!(settings.seed, Some(1));
    assert_eq!(settings.stop, vec!["STOP".to_string()]);
    assert_eq!(settings.structured_output, None);
    assert_eq!(
        settings.provider_options,
        object(json!({"reasoning_effort": "medium", "service_tier": "flex"}))
    );
}

#[test]
fn every_step_of_a_turn_carries_its_options() {
    let mut sim = json_turns_sim();
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script(Reply::text("{\"id\":\"A-2\"}"))
    .script_tool("get_weather", ToolReply::ok(json!("rain")));
    sim.send(
        "a",
        chat_request_with("r1", &[user("u1", "order?")], json!({"json": true})),
    );
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2);
    for call in sim.requests() {
        assert_eq!(
            call.request.settings.structured_output,
            Some(order_schema())
        );
        assert_eq!(call.request.settings.seed, Some(42));
    }
}

#[test]
fn stop_when_a_named_tool_was_called_ends_the_turn_after_that_step() {
    let mut sim = prepared_sim(|_| {});
    sim.preparer.hook = Rc::new(|_| TurnConfig {
        stop_when: vec![StopWhen::ToolCalled("get_weather".into())],
        ..TurnConfig::default()
    });
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script_tool("get_weather", ToolReply::ok(json!({"tempC": 4})));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    sim.run_until_idle();

    assert_eq!(sim.requests().len(), 1, "no step after the named tool");
    assert_eq!(sim.tools.runs_of("get_weather").len(), 1, "the tool ran");
    let types = chunk_types(sim.frames("a"), "r1");
    assert_eq!(
        &types[types.len() - 3..],
        ["tool-output-available", "finish-step", "finish"]
    );
    let answer = &sim.transcript()[1];
    let part = tool_part(answer, "c1").expect("the call is kept");
    assert_eq!(part["state"], "output-available");
    assert_eq!(part["output"], json!({"tempC": 4}));
    assert_eq!(sim.responses[0].outcome, Outcome::Completed);
    assert_eq!(sim.responses[0].steps, 1);
}

#[test]
fn stop_when_another_tool_was_called_lets_the_turn_go_on() {
    let mut sim = prepared_sim(|_| {});
    sim.preparer.hook = Rc::new(|_| TurnConfig {
        stop_when: vec![StopWhen::ToolCalled("send_invoice".into())],
        ..TurnConfig::default()
    });
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script(Reply::text("Cold."))
    .script_tool("get_weather", ToolReply::ok(json!({"tempC": 4})));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2);
    assert_eq!(text_of(&sim.transcript()[1]), "Cold.");
}

#[test]
fn the_agents_step_count_condition_ends_every_turn_of_a_looping_model() {
    let mut sim = Sim::with(|c| {
        c.settings.stop_when = vec![StopWhen::StepCount(2)];
    });
    sim.connect("a");
    for i in 0..3 {
        sim.script(Reply::tool_call(
            &format!("c{i}"),
            "get_weather",
            json!({"city": "Loop"}),
        ))
        .script_tool("get_weather", ToolReply::ok(json!(i)));
    }
    sim.send("a", chat_request("r1", &[user("u1", "loop")]));
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2, "stopped after two steps of ten");
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}

#[test]
fn a_turn_picks_its_provider_and_gateway_metadata_and_the_next_turn_has_the_agents() {
    let mut sim = prepared_sim(|c| {
        c.settings.model.gateway_metadata = object(json!({"app": "support"}));
    });
    sim.preparer.hook = Rc::new(|ctx| match ctx.body.get("provider") {
        Some(Value::String(name)) => TurnConfig {
            provider: Some(name.clone()),
            gateway_metadata: object(json!({"user": "u-7"})),
            ..TurnConfig::default()
        },
        _ => TurnConfig::default(),
    });
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script(Reply::text("rain"))
    .script_tool("get_weather", ToolReply::ok(json!("rain")));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "weather?")],
            json!({"provider": "anthropic"}),
        ),
    );
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2);
    for call in sim.requests() {
        let settings = &call.request.settings;
        assert_eq!(
            settings.provider.as_deref(),
            Some("anthropic"),
            "every step"
        );
        assert_eq!(
            settings.gateway_metadata,
            object(json!({"app": "support", "user": "u-7"}))
        );
    }

    sim.script(Reply::text("plain"));
    sim.send("a", chat_request("r2", &[user("u2", "again")]));
    sim.run_until_idle();
    let settings = &sim.last_request().request.settings;
    assert_eq!(settings.provider, None);
    assert_eq!(settings.gateway_metadata, object(json!({"app": "support"})));
}

#[test]
fn a_structured_answer_is_checked_against_its_schema_and_a_mismatch_fails_the_turn() {
    let mut sim = json_turns_sim();
    sim.script(Reply::text("```json\n{\"id\":\"A-1\"}\n```"));
    let body = json!({"json": true});
    sim.send(
        "a",
        chat_request_with("r1", &[user("u1", "order?")], body.clone()),
    );
    sim.run_until_idle();
    let done = |sim: &Sim, id: &str| {
        sim.frames("a")
            .iter()
            .find(|f| f["id"] == id && f["done"] == true)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        done(&sim, "r1")["outcome"],
        "completed",
        "a fenced answer that fits"
    );

    sim.script(Reply::text("{\"id\": 7, \"extra\": true}"));
    sim.send(
        "a",
        chat_request_with("r2", &[user("u2", "another")], body.clone()),
    );
    sim.run_until_idle();
    assert_eq!(done(&sim, "r2")["outcome"], "error");
    let errors: Vec<String> = sim
        .frames("a")
        .iter()
        .filter(|f| f["id"] == "r2" && f["error"] == true)
        .filter_map(|f| f["body"].as_str().map(str::to_string))
        .collect();
    assert!(
        errors.iter().any(|e| e
            .contains("does not follow the schema `order`: $.id: expected string, found integer")),
        "{errors:?}"
    );

    sim.script(Reply::text("not json at all"));
    sim.send(
        "a",
        chat_request_with("r3", &[user("u3", "once more")], body),
    );
    sim.run_until_idle();
    assert_eq!(done(&sim, "r3")["outcome"], "error");

    sim.script(Reply::text("plain words"));
    sim.send("a", chat_request("r4", &[user("u4", "no schema")]));
    sim.run_until_idle();
    assert_eq!(
        done(&sim, "r4")["outcome"],
        "completed",
        "a turn without a schema is not checked"
    );
}
