//! `before_step`: before each model step the author's hook may change that
//! step's model, system prompt, tools and tool choice, knowing the step's
//! number and the tools the model called in the step before; the next step
//! is back to the turn's settings, and a tool the step does not offer is an
//! input error the model reads.

use std::cell::RefCell;
use std::rc::Rc;

use durable_chat::core::{StepConfig, StepContext, ToolChoice};
use durable_chat::model::ModelMessage;
use serde_json::json;

use crate::sim::*;

/// After a step that called `get_weather`, the next step is written by a
/// smaller model, told to be brief, and may call no tool.
fn summarising_sim(seen: Rc<RefCell<Vec<StepContext>>>) -> Sim {
    let mut sim = Sim::with(|c| {
        c.hooks.before_step = Some(Rc::new(move |ctx: &StepContext| {
            seen.borrow_mut().push(ctx.clone());
            if !ctx.previous_tool_calls.iter().any(|t| t == "get_weather") {
                return StepConfig::default();
            }
            StepConfig {
                model: Some("small-model".into()),
                system: Some("Summarise in one line.".into()),
                tools: Some(Vec::new()),
                tool_choice: Some(ToolChoice::None),
            }
        }));
    });
    sim.connect("a");
    sim
}

#[test]
fn a_step_after_a_tool_call_gets_its_own_model_prompt_and_tools_and_the_next_does_not() {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let mut sim = summarising_sim(seen.clone());
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script(Reply::text("Rain."))
    .script_tool("get_weather", ToolReply::ok(json!("rain")));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    sim.run_until_idle();

    let steps = seen.borrow().clone();
    assert_eq!(steps.len(), 2);
    assert_eq!((steps[0].step, steps[1].step), (1, 2));
    assert!(steps[0].previous_tool_calls.is_empty());
    assert_eq!(
        steps[1].previous_tool_calls,
        vec!["get_weather".to_string()]
    );
    assert_eq!(steps[1].model, "test-model");

    let first = &sim.requests()[0].request;
    assert_eq!(first.settings.model, "test-model");
    assert_eq!(
        sim.requests()[0].tool_names(),
        ["get_weather", "delete_file"]
    );
    let second = &sim.requests()[1];
    assert_eq!(second.request.settings.model, "small-model");
    assert!(matches!(
        &second.request.messages[0],
        ModelMessage::System { content } if content == "Summarise in one line."
    ));
    assert!(second.tool_names().is_empty(), "the step offers no tool");
    assert_eq!(sim.step_reports[1].model, "small-model");

    sim.script(Reply::text("Hello."));
    sim.send("a", chat_request("r2", &[user("u2", "hi")]));
    sim.run_until_idle();
    assert_eq!(sim.last_request().request.settings.model, "test-model");
    assert_eq!(
        sim.last_request().tool_names(),
        ["get_weather", "delete_file"]
    );
}

#[test]
fn a_tool_the_step_does_not_offer_is_an_input_error_the_model_reads() {
    let mut sim = Sim::with(|c| {
        c.hooks.before_step = Some(Rc::new(|_: &StepContext| StepConfig {
            tools: Some(vec!["delete_file".into()]),
            ..StepConfig::default()
        }));
    });
    sim.connect("a");
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script(Reply::text("ok"));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    sim.run_until_idle();
    assert_eq!(sim.requests()[0].tool_names(), ["delete_file"]);
    assert!(sim.tools.runs_of("get_weather").is_empty());
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "c1").expect("the call is kept");
    assert_eq!(part["state"], "output-error");
}
