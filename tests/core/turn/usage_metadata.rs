//! Token usage and message metadata: the usage each step's model call
//! reports goes to `on_step_end` (`Effect::StepEnded`) and, summed, to the
//! turn's `on_chat_response`; the author's metadata writer adds fields at
//! the answer's `start`, after each step (`message-metadata`) and at its
//! `finish`, which the tabs see live and the stored answer keeps; with no
//! writer nothing is added.

use std::rc::Rc;

use durable_chat::core::{standard_message_metadata, MetadataMoment, TurnConfig};
use durable_chat::model::{FinishReason, Usage};
use serde_json::{json, Map, Value};

use crate::sim::*;

fn usage(prompt: u64, completion: u64, cached: Option<u64>) -> Option<Usage> {
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: cached,
        cache_write_tokens: None,
    })
}

/// A weather question answered in two steps: a tool call, then text; each
/// step's call reports its usage.
fn two_step_turn(sim: &mut Sim) {
    sim.script(
        Reply::tool_call("c1", "get_weather", json!({"city": "Oslo"})).with_usage(100, 8, None),
    )
    .script(Reply::text("It rains.").with_usage(120, 4, Some(96)))
    .script_tool("get_weather", ToolReply::ok(json!("rain")));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    sim.run_until_idle();
}

#[test]
fn each_step_reports_its_usage_and_the_turn_reports_the_sum() {
    let mut sim = Sim::new();
    sim.connect("a");
    two_step_turn(&mut sim);

    let steps = &sim.step_reports;
    assert_eq!(steps.len(), 2);
    assert_eq!((steps[0].step, steps[1].step), (1, 2));
    assert_eq!(steps[0].tool_calls, vec!["get_weather".to_string()]);
    assert_eq!(steps[0].finish_reason, FinishReason::ToolCalls);
    assert_eq!(steps[0].usage, usage(100, 8, None));
    assert!(steps[0].continues);
    assert_eq!(steps[1].usage, usage(120, 4, Some(96)));
    assert!(!steps[1].continues && steps[1].tool_calls.is_empty());
    assert_eq!(steps[1].model, "test-model");
    assert_eq!(steps[1].request_id, "r1");

    let response = &sim.responses[0];
    assert_eq!(response.usage, usage(220, 12, Some(96)));
    assert_eq!(response.steps, 2);
}

#[test]
fn a_provider_that_reports_no_usage_leaves_it_unknown() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::text("hi"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    assert_eq!(sim.step_reports.len(), 1);
    assert_eq!(sim.step_reports[0].usage, None);
    assert_eq!(sim.responses[0].usage, None);
}

/// The standard fields, and the author's own: a `source` at the start and
/// the step's output tokens after each step.
fn writer(moment: &MetadataMoment<'_>) -> Option<Map<String, Value>> {
    let mut fields = standard_message_metadata(moment).unwrap_or_default();
    match moment {
        MetadataMoment::Start {
            continuation: false,
            ..
        } => {
            fields.insert("source".into(), json!("server"));
        }
        MetadataMoment::StepEnd(step) => {
            let tokens = step.usage.map_or(0, |u| u.completion_tokens);
            fields.insert(format!("step{}Tokens", step.step), json!(tokens));
        }
        MetadataMoment::Start { .. } | MetadataMoment::Finish { .. } => {}
    }
    Some(fields)
}

#[test]
fn the_writers_fields_go_out_on_start_step_and_finish_chunks_and_stay_on_the_answer() {
    let mut sim = Sim::with(|c| {
        c.hooks.message_metadata = Some(Rc::new(writer));
    });
    sim.preparer.hook = Rc::new(|_| TurnConfig {
        model: Some("turn-model".into()),
        ..TurnConfig::default()
    });
    sim.connect("a");
    sim.advance(1_000);
    let started = sim.now;
    two_step_turn(&mut sim);

    let chunks = bodies(&live_chunks(sim.frames("a"), "r1"));
    let start = chunks.iter().find(|c| c["type"] == "start").unwrap();
    assert_eq!(
        start["messageMetadata"],
        json!({"createdAt": started, "source": "server"})
    );
    let steps: Vec<&Value> = chunks
        .iter()
        .filter(|c| c["type"] == "message-metadata")
        .collect();
    assert_eq!(
        steps,
        [
            &json!({"type": "message-metadata", "messageMetadata": {"step1Tokens": 8}}),
            &json!({"type": "message-metadata", "messageMetadata": {"step2Tokens": 4}}),
        ]
    );
    let types: Vec<&str> = chunks.iter().filter_map(|c| c["type"].as_str()).collect();
    assert_eq!(
        &types[types.len() - 3..],
        ["finish-step", "message-metadata", "finish"],
        "a step's metadata follows its finish-step"
    );
    let usage_json = json!({"inputTokens": 220, "outputTokens": 12, "totalTokens": 232,
                            "cachedInputTokens": 96});
    let finish = chunks.last().unwrap();
    assert_eq!(
        finish["messageMetadata"],
        json!({"model": "turn-model", "usage": usage_json})
    );

    let answer = &sim.transcript()[1];
    assert_eq!(
        answer["metadata"],
        json!({"createdAt": started, "source": "server", "step1Tokens": 8, "step2Tokens": 4,
               "model": "turn-model", "usage": usage_json}),
        "the stored answer keeps every field, merged"
    );
}

#[test]
fn without_a_writer_no_metadata_is_sent_or_stored() {
    let mut sim = Sim::new();
    sim.connect("a");
    two_step_turn(&mut sim);
    let chunks = bodies(&live_chunks(sim.frames("a"), "r1"));
    assert!(chunks.iter().all(|c| c.get("messageMetadata").is_none()));
    assert!(chunks.iter().all(|c| c["type"] != "message-metadata"));
    assert!(sim.transcript()[1].get("metadata").is_none());
}

#[test]
fn the_answers_start_metadata_survives_an_eviction_mid_answer() {
    let mut sim = Sim::with(|c| {
        c.hooks.message_metadata = Some(Rc::new(writer));
    });
    sim.connect("a");
    sim.advance(500);
    let started = sim.now;
    sim.script(
        Reply::text("one two three four five six")
            .every(100)
            .then_cut(),
    );
    sim.send("a", chat_request("r1", &[user("u1", "count")]));
    sim.advance(350);
    sim.script(Reply::text("two three four five six"));
    sim.evict();
    sim.run_until_idle();
    let stored = sim.transcript();
    let answer = stored.last().unwrap();
    assert_eq!(answer["role"], "assistant");
    assert_eq!(answer["metadata"]["createdAt"], json!(started));
    assert!(answer["metadata"].get("model").is_some(), "{answer}");
}
