//! The agentic loop over server tools: a tool call runs, its result is shown
//! to the model in the next step, failures become `output-error`, unknown
//! tools are input errors, and the loop stops at `max_steps`.

use crate::sim::*;
use serde_json::json;

#[test]
fn a_server_tool_turn_runs_the_tool_and_takes_a_second_step() {
    let mut sim = two_tabs();
    sim.script(Reply::tool_call(
        "call_1",
        "get_weather",
        json!({"city": "Paris"}),
    ))
    .script(Reply::text("It is 21C in Paris."))
    .script_tool(
        "get_weather",
        ToolReply::ok(json!({"city": "Paris", "tempC": 21})),
    );
    sim.send("a", chat_request("r1", &[user("u1", "weather in Paris?")]));
    sim.run_until_idle();

    let runs = &sim.tools.runs;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].input, json!({"city": "Paris"}));
    let a = sim.frames("a").to_vec();
    assert_eq!(
        chunk_types(&a, "r1"),
        [
            "start",
            "start-step",
            "tool-input-start",
            "tool-input-delta",
            "tool-input-delta",
            "tool-input-available",
            "tool-output-available",
            "finish-step",
            "start-step",
            "text-start",
            "text-delta",
            "text-delta",
            "text-delta",
            "text-delta",
            "text-delta",
            "text-end",
            "finish-step",
            "finish"
        ]
    );
    assert_eq!(terminal(&a, "r1").unwrap()["outcome"], "completed");
    assert_eq!(sim.requests().len(), 2);
    let second = &sim.requests()[1];
    assert_eq!(second.roles(), ["system", "user", "assistant", "tool"]);
    let call = &second.tool_calls(2)[0];
    assert_eq!(
        (call.name.as_str(), call.arguments.as_str()),
        ("get_weather", "{\"city\":\"Paris\"}")
    );
    assert_eq!(
        second.tool_result("call_1").as_deref(),
        Some(r#"{"city":"Paris","tempC":21}"#)
    );

    let answer = &sim.store.transcript()[1];
    let types: Vec<&str> = answer["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["step-start", "tool-get_weather", "step-start", "text"]
    );
    let part = tool_part(answer, "call_1").unwrap();
    assert_eq!(part["state"], "output-available");
    assert_eq!(part["output"], json!({"city": "Paris", "tempC": 21}));
}

#[test]
fn a_failing_server_tool_becomes_output_error_and_the_model_goes_on() {
    let mut sim = two_tabs();
    sim.script(Reply::tool_call(
        "call_1",
        "get_weather",
        json!({"city": "Atlantis"}),
    ))
    .script(Reply::text("Sorry."))
    .script_tool("get_weather", ToolReply::err("no such city"));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    sim.run_until_idle();
    let a = sim.frames("a");
    assert!(chunk_types(a, "r1").contains(&"tool-output-error".to_string()));
    assert_eq!(
        sim.requests()[1].tool_result("call_1").as_deref(),
        Some("no such city")
    );
    let part = tool_part(&sim.store.transcript()[1], "call_1")
        .unwrap()
        .clone();
    assert_eq!(part["state"], "output-error");
    assert_eq!(part["errorText"], "no such city");
}

#[test]
fn the_agentic_loop_stops_at_max_steps() {
    let mut sim = Sim::with(|c| c.settings.max_steps = 2);
    sim.connect("a");
    for i in 0..2 {
        sim.script(Reply::tool_call(
            &format!("call_{i}"),
            "get_weather",
            json!({"city": "Oslo"}),
        ))
        .script_tool("get_weather", ToolReply::ok(json!({"tempC": i})));
    }
    sim.send("a", chat_request("r1", &[user("u1", "loop")]));
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2);
    assert_eq!(sim.tools.runs.len(), 2);
    let end = terminal(sim.frames("a"), "r1").unwrap();
    assert_eq!(end["outcome"], "completed");
    let finish = chunk_types(sim.frames("a"), "r1");
    assert_eq!(finish.last().map(String::as_str), Some("finish"));
}

#[test]
fn a_call_to_an_unavailable_tool_is_an_input_error_and_the_model_goes_on() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::tool_call("call_1", "launch_rockets", json!({})))
        .script(Reply::text("I cannot do that."));
    sim.send("a", chat_request("r1", &[user("u1", "launch")]));
    sim.run_until_idle();
    assert!(chunk_types(sim.frames("a"), "r1").contains(&"tool-input-error".to_string()));
    assert!(sim.tools.runs.is_empty());
    let error = sim.requests()[1].tool_result("call_1").unwrap();
    assert!(error.contains("launch_rockets"), "{error}");
    let part = tool_part(&sim.store.transcript()[1], "call_1")
        .unwrap()
        .clone();
    assert_eq!(part["state"], "output-error");
}

#[test]
fn tool_arguments_of_too_many_values_are_an_input_error_read_before_they_are_built() {
    let mut sim = Sim::new();
    sim.connect("a");
    let tiny = serde_json::Value::Array(vec![json!(0); 350_000]);
    sim.script(Reply::tool_call(
        "call_1",
        "get_weather",
        json!({"city": tiny}),
    ))
    .script(Reply::text("Sorry."));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    sim.run_until_idle();
    assert!(sim.tools.runs.is_empty(), "the tool never ran");
    let error = sim.requests()[1].tool_result("call_1").unwrap();
    assert!(
        error.contains("Invalid input for tool 'get_weather'")
            && error.contains("tool call arguments: too many JSON values (limit 300000)"),
        "{error}"
    );
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}
