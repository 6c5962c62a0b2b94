//! `before_turn`, awaited (the core asks with `Effect::PrepareTurn` and
//! waits for `Event::TurnPrepared`): it shapes one turn's model requests (the
//! model, sampling, extra headers, which tools are offered — added, removed,
//! the tool choice); a tool the turn does not offer cannot be called, and the
//! next turn is back to the agent's settings; a turn cancelled or evicted
//! while it is prepared; `on_chat_error` sending a failed call again; and the
//! `on_chat_response` report of each ended turn.

use std::rc::Rc;

use durable_chat::core::{CoreConfig, ErrorDisposition, ToolSpec, TurnConfig, TurnTrigger};
use durable_chat::model::ToolChoice;
use durable_chat::protocol::Outcome;
use serde_json::json;

use crate::sim::*;

fn prepared_sim(adjust: impl FnOnce(&mut CoreConfig)) -> Sim {
    let mut sim = Sim::with(|c| {
        c.tools
            .push(ToolSpec::new("admin_reset", "Resets", json!({"type": "object"})).opt_in());
        adjust(c);
    });
    sim.connect("a");
    sim
}

/// A turn submitted with a `tenant` in its body gets a bigger model, its own
/// sampling, a header and only `get_weather`; any other turn is left as is.
fn restricted_sim() -> Sim {
    let mut sim = prepared_sim(|_| {});
    sim.preparer.hook = Rc::new(|ctx| {
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
    });
    sim
}

#[test]
fn the_hook_chooses_model_sampling_headers_and_tools_for_its_turn_only() {
    let mut sim = restricted_sim();
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

#[test]
fn the_turn_waits_for_its_preparation_and_uses_what_it_chose() {
    let mut sim = prepared_sim(|_| {});
    sim.preparer = Preparer {
        delay_ms: 300,
        hook: Rc::new(|ctx| {
            assert_eq!(ctx.trigger, TurnTrigger::Submit);
            TurnConfig {
                model: Some(format!(
                    "model-for-{}",
                    ctx.body["tenant"].as_str().unwrap_or("?")
                )),
                add_tools: vec!["admin_reset".into()],
                remove_tools: vec!["delete_file".into()],
                tool_choice: Some(ToolChoice::Required),
                ..TurnConfig::default()
            }
        }),
    };
    sim.script(Reply::text("hi"));
    sim.send(
        "a",
        chat_request_with("r1", &[user("u1", "hello")], json!({"tenant": "acme"})),
    );
    sim.advance(299);
    assert!(
        sim.requests().is_empty(),
        "no model call before the hook answers"
    );
    sim.run_until_idle();
    assert_eq!(sim.prepared.len(), 1);
    let context = &sim.prepared[0];
    assert_eq!(context.request_id, "r1");
    assert!(!context.continuation && !context.from_parent);
    assert_eq!(context.messages.last().map(|m| m.id.as_str()), Some("u1"));
    let call = sim.last_request();
    assert!(call.at >= 300);
    assert_eq!(call.request.settings.model, "model-for-acme");
    assert_eq!(call.tool_names(), vec!["get_weather", "admin_reset"]);
    assert_eq!(call.request.tool_choice, Some(ToolChoice::Required));
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}

#[test]
fn an_opt_in_tool_is_offered_only_when_a_turn_adds_it() {
    let mut sim = prepared_sim(|_| {});
    sim.script(Reply::tool_call("x1", "admin_reset", json!({})))
        .script(Reply::text("ok"));
    sim.send("a", chat_request("r1", &[user("u1", "reset")]));
    sim.run_until_idle();
    assert_eq!(
        sim.requests()[0].tool_names(),
        vec!["get_weather", "delete_file"]
    );
    let stored = sim.transcript();
    let part = tool_part(&stored[1], "x1").expect("the call is recorded");
    assert_eq!(
        part["state"], "output-error",
        "a tool not offered is not run"
    );
    assert!(sim.tools.runs_of("admin_reset").is_empty());
}

#[test]
fn a_turn_cancelled_while_it_is_prepared_never_calls_the_model() {
    let mut sim = prepared_sim(|_| {});
    sim.preparer.delay_ms = 1_000;
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.advance(200);
    sim.send("a", cancel("r1"));
    sim.run_until_idle();
    assert!(sim.requests().is_empty(), "the late answer starts nothing");
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "aborted"
    );
    assert_eq!(sim.responses.len(), 1);
    assert_eq!(sim.responses[0].outcome, Outcome::Aborted);
    assert!(!sim.core().is_busy());
}

#[test]
fn a_turn_evicted_while_it_is_prepared_is_prepared_again_and_answered() {
    let mut sim = prepared_sim(|_| {});
    sim.connect("b");
    sim.preparer.delay_ms = 1_000;
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.advance(200);
    assert!(sim.requests().is_empty());
    sim.preparer.delay_ms = 10;
    sim.script(Reply::text("Hello after a restart."));
    sim.evict();
    sim.run_until_idle();
    assert_eq!(sim.prepared.len(), 2, "the recovered turn is prepared anew");
    assert_eq!(sim.requests().len(), 1, "one model call in all");
    let stored = sim.transcript();
    assert_eq!(stored.len(), 2);
    assert_eq!(text_of(&stored[1]), "Hello after a restart.");
}

fn classified_sim(disposition: ErrorDisposition) -> Sim {
    let mut sim = prepared_sim(|c| c.settings.model_retry.max_retries = 1);
    sim.error_decider.hook = Rc::new(move |error| {
        assert!(error.error.contains("bad gateway config"), "{error:?}");
        disposition
    });
    sim
}

#[test]
fn an_error_the_agent_calls_retryable_is_sent_again_and_the_turn_completes() {
    let mut sim = classified_sim(ErrorDisposition::Retry { after_ms: 2_000 });
    sim.script(Reply::http_error(400, "400: bad gateway config"))
        .script(Reply::text("fine now"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2);
    assert!(sim.requests()[1].at - sim.requests()[0].at >= 2_000);
    assert_eq!(text_of(&sim.transcript()[1]), "fine now");
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}

#[test]
fn a_retryable_error_is_retried_only_within_the_budget() {
    let mut sim = classified_sim(ErrorDisposition::Retry { after_ms: 10 });
    sim.script(Reply::http_error(400, "400: bad gateway config"))
        .script(Reply::http_error(400, "400: bad gateway config"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    assert_eq!(
        sim.requests().len(),
        2,
        "one retry (max_retries = 1), then it fails"
    );
    assert_eq!(terminal(sim.frames("a"), "r1").unwrap()["outcome"], "error");
}

#[test]
fn an_error_the_agent_leaves_failing_ends_the_turn_and_is_reported() {
    let mut sim = classified_sim(ErrorDisposition::Fail);
    sim.script(Reply::http_error(400, "400: bad gateway config"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 1);
    assert_eq!(terminal(sim.frames("a"), "r1").unwrap()["outcome"], "error");
    let response = sim.responses.last().expect("reported");
    assert_eq!(response.outcome, Outcome::Error);
    assert!(response
        .error
        .as_deref()
        .unwrap_or_default()
        .contains("bad gateway config"));
}

#[test]
fn each_ended_turn_reports_its_request_messages_and_stored_answer() {
    let mut sim = prepared_sim(|_| {});
    sim.script(Reply::text("hi there"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    let stored = sim.transcript();
    assert_eq!(sim.responses.len(), 1);
    let response = &sim.responses[0];
    assert_eq!(response.request_id, "r1");
    assert_eq!(response.outcome, Outcome::Completed);
    assert_eq!(response.message_ids, vec!["u1".to_string()]);
    assert_eq!(response.answer_id.as_deref(), stored[1]["id"].as_str());
    assert!(
        sim.store.transcript().len() == 2,
        "reported after the answer is stored"
    );
}
