//! A model stream that breaks off after it produced text, in a running
//! isolate, is continued into the same answer through the recovery path:
//! the interrupted request ends `recovering`, the tabs are told a recovery
//! runs, a continuation finishes the answer, and no error is shown unless
//! the recovery budget runs out.

use crate::sim::*;
use durable_chat::core::ConfigKey;
use durable_chat::core::CONTINUE_INSTRUCTION;
use serde_json::Value;

fn recovering(frames: &[Value]) -> Vec<bool> {
    of_type(frames, "cf_agent_chat_recovering")
        .iter()
        .map(|f| f["recovering"] == true)
        .collect()
}

fn errors(frames: &[Value]) -> Vec<&Value> {
    of_type(frames, "cf_agent_use_chat_response")
        .into_iter()
        .filter(|f| f["error"] == true)
        .collect()
}

#[test]
fn a_stream_cut_after_some_words_is_finished_in_the_same_answer_without_an_error() {
    let mut sim = two_tabs();
    sim.script(Reply::text("The answer is").then_cut())
        .script(Reply::text(" forty-two."));
    sim.send("a", chat_request("r1", &[user("u1", "what is it?")]));
    sim.run_until_idle();

    for tab in ["a", "b"] {
        let frames = sim.frames(tab);
        assert!(
            errors(frames).is_empty(),
            "no error shown in {tab}: {:?}",
            errors(frames)
        );
        let cut = terminal(frames, "r1").expect("the interrupted request ends");
        assert_eq!(cut["outcome"], "recovering");
        assert_eq!(cut["messageIds"], serde_json::json!(["u1"]));
        assert_eq!(
            recovering(frames),
            vec![true, false],
            "a recovery is announced, then over"
        );
    }
    let transcript = sim.transcript();
    assert_eq!(transcript.len(), 2, "one answer, continued in place");
    assert_eq!(text_of(&transcript[1]), "The answer is forty-two.");

    let requests = sim.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].user_texts().last().map(String::as_str),
        Some(CONTINUE_INSTRUCTION),
        "the model is asked to continue where it stopped"
    );
    // The continuation streams as a continuation of the same message, and ends completed.
    let frames = sim.frames("a");
    let continuation = of_type(frames, "cf_agent_use_chat_response")
        .into_iter()
        .find(|f| f["id"] != "r1" && f["done"] == true)
        .expect("the continuation's terminal frame");
    assert_eq!(continuation["outcome"], "completed");
    assert_eq!(continuation["continuation"], true);
    assert_eq!(
        sim.store.config_json(ConfigKey::Recovery),
        None,
        "the budget is gone"
    );
    assert!(!sim.core().is_busy());
}

#[test]
fn a_stream_that_keeps_breaking_fails_once_the_recovery_budget_is_spent() {
    let mut sim = Sim::with(|c| c.settings.recovery.max_attempts = 2);
    sim.connect("a");
    for _ in 0..5 {
        sim.script(Reply::text("again and").then_cut());
    }
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();

    assert_eq!(sim.requests().len(), 3, "the first call and two recoveries");
    let frames = sim.frames("a");
    let errors = errors(frames);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0]["body"],
        "The assistant was interrupted and could not recover. Please try again."
    );
    assert_eq!(
        recovering(frames).last(),
        Some(&false),
        "the recovery is over"
    );
    let transcript = sim.transcript();
    assert_eq!(transcript.len(), 2);
    assert!(
        text_of(&transcript[1]).starts_with("again and"),
        "the partial is kept"
    );
    assert_eq!(sim.store.config_json(ConfigKey::Recovery), None);
    assert!(!sim.core().is_busy());
}

#[test]
fn an_error_the_provider_states_mid_stream_still_fails_the_turn() {
    let mut sim = two_tabs();
    sim.script(Reply::text("half an").then_fail("provider error: overloaded"));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 1, "not continued");
    assert_eq!(terminal(sim.frames("a"), "r1").unwrap()["outcome"], "error");
    assert!(recovering(sim.frames("a")).is_empty());
}

#[test]
fn a_cut_answer_with_a_newer_message_after_it_fails_as_before() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::words(6).every(10).then_cut())
        .script(Reply::text("second answer"));
    sim.send("a", chat_request("r1", &[user("u1", "first")]));
    sim.advance(25);
    sim.send(
        "a",
        chat_request("r2", &[user("u1", "first"), user("u2", "second")]),
    );
    sim.run_until_idle();
    assert_eq!(terminal(sim.frames("a"), "r1").unwrap()["outcome"], "error");
    assert_eq!(
        terminal(sim.frames("a"), "r2").unwrap()["outcome"],
        "completed"
    );
}

#[test]
fn the_author_hears_of_a_recovered_turn_once_when_its_answer_is_final() {
    let mut sim = two_tabs();
    sim.script(Reply::text("The answer is").then_cut())
        .script(Reply::text(" forty-two."));
    sim.send("a", chat_request("r1", &[user("u1", "what is it?")]));
    sim.run_until_idle();

    let outcomes: Vec<_> = sim.responses.iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        vec![durable_chat::protocol::Outcome::Completed],
        "one report, with the outcome the turn ended with"
    );
    let response = &sim.responses[0];
    assert_eq!(response.message_ids, vec!["u1".to_string()]);
    let answer = sim.transcript()[1]["id"].as_str().map(str::to_string);
    assert_eq!(response.answer_id, answer, "the stored, finished answer");
}
