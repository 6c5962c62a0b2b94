//! `before_turn` shapes one turn's model requests: the model, sampling,
//! extra headers and which tools are offered; a tool the turn does not
//! offer cannot be called, and the next turn is back to the agent's settings.

mod sim;

use std::rc::Rc;

use durable_chat::core::{TurnConfig, TurnTrigger};
use serde_json::json;
use sim::*;

fn restricted_sim() -> Sim {
    Sim::with(|c| {
        c.before_turn = Some(Rc::new(|ctx| {
            if ctx.trigger != TurnTrigger::Submit || !ctx.body.contains_key("tenant") {
                return TurnConfig::default();
            }
            TurnConfig {
                model: Some("bigger-model".into()),
                temperature: Some(0.2),
                max_tokens: Some(99),
                headers: vec![("x-tenant".into(), "acme".into())],
                tools: Some(vec!["get_weather".into()]),
                ..TurnConfig::default()
            }
        }))
    })
}

#[test]
fn the_hook_chooses_model_sampling_headers_and_tools_for_its_turn_only() {
    let mut sim = restricted_sim();
    sim.connect("a");
    sim.script(Reply::text("hi"));
    sim.send(
        "a",
        chat_request_with("r1", &[user("u1", "hello")], json!({"tenant": "acme"})),
    );
    sim.run_until_idle();
    let request = &sim.last_request().request;
    assert_eq!(request.settings.model, "bigger-model");
    assert_eq!(request.settings.temperature, Some(0.2));
    assert_eq!(request.settings.max_tokens, Some(99));
    assert_eq!(
        request.headers,
        vec![("x-tenant".to_string(), "acme".to_string())]
    );
    assert_eq!(sim.last_request().tool_names(), vec!["get_weather"]);

    sim.script(Reply::text("plain"));
    sim.send("a", chat_request("r2", &[user("u2", "again")]));
    sim.run_until_idle();
    let request = &sim.last_request().request;
    assert_eq!(
        request.settings.model, "test-model",
        "the next turn uses the agent's model"
    );
    assert!(request.headers.is_empty());
    assert_eq!(
        sim.last_request().tool_names(),
        vec!["get_weather", "delete_file"]
    );
}

#[test]
fn a_tool_the_turn_does_not_offer_is_an_input_error_the_model_reads() {
    let mut sim = restricted_sim();
    sim.connect("a");
    sim.script(Reply::tool_call("d1", "delete_file", json!({"path": "x"})))
        .script(Reply::text("ok"));
    sim.send(
        "a",
        chat_request_with("r1", &[user("u1", "delete x")], json!({"tenant": "acme"})),
    );
    sim.run_until_idle();
    let answer = &sim.transcript()[1];
    let part = tool_part(answer, "d1").expect("the call is recorded");
    assert_eq!(part["state"], "output-error");
    assert!(part["errorText"]
        .as_str()
        .unwrap_or_default()
        .contains("unavailable tool"));
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}
