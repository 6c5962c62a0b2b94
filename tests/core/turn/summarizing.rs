//! Compaction by the host's summarizer (`CoreConfig::summarize_by_host`),
//! which may call a model: when a new cut is due the step waits for
//! `Event::Summarized` before its model call, the summary is stored, sent to
//! the model and reused by later steps (also after an eviction), later
//! summaries fold in the previous one; a declined summary leaves messages
//! out; a turn cancelled while it waits ignores the late summary.

use std::rc::Rc;

use crate::sim::*;
use durable_chat::core::ConfigKey;
use durable_chat::model::ModelMessage;

const BUDGET: usize = 6_000;

fn summarizing_sim() -> Sim {
    let mut sim = Sim::with(|c| {
        c.settings.context.max_bytes = BUDGET;
        c.summarize_by_host = true;
    });
    sim.summarizer.delay_ms = 2_000;
    sim.summarizer.hook = Rc::new(|request| {
        let folded = request.previous.as_deref().unwrap_or("nothing");
        Some(format!("{} messages after {folded}", request.dropped.len()))
    });
    sim.connect("a");
    sim
}

fn turn(sim: &mut Sim, i: usize) {
    sim.script(Reply::text(&format!("answer {i}")));
    let message = user(
        &format!("u{i}"),
        &format!("question {i} {}", "q".repeat(300)),
    );
    sim.send(
        "a",
        chat_request(&format!("r{i}"), std::slice::from_ref(&message)),
    );
    sim.run_until_idle();
}

fn summary_in(messages: &[ModelMessage]) -> Option<String> {
    messages.iter().find_map(|m| match m {
        ModelMessage::System { content } => content
            .strip_prefix("Summary of the earlier part of this conversation:\n")
            .map(str::to_string),
        _ => None,
    })
}

/// Turns until the host was first asked for a summary.
fn until_first_summary(sim: &mut Sim) -> usize {
    for i in 0..60 {
        turn(sim, i);
        if !sim.summaries_asked.is_empty() {
            return i;
        }
    }
    panic!("a long conversation was never summarized");
}

#[test]
fn the_step_waits_for_the_summary_then_sends_and_stores_it() {
    let mut sim = summarizing_sim();
    until_first_summary(&mut sim);
    let asked = sim.summaries_asked[0].clone();
    assert_eq!(asked.previous, None);
    assert_eq!(asked.dropped.first().map(|m| m.id.as_str()), Some("u0"));
    let summary = format!("{} messages after nothing", asked.dropped.len());
    let request = sim.last_request();
    assert_eq!(
        summary_in(&request.request.messages),
        Some(summary.clone()),
        "sent to the model"
    );
    assert!(
        request
            .request
            .messages
            .iter()
            .all(|m| !format!("{m:?}").contains("question 0 ")),
        "what it covers is left out"
    );
    let stored = sim.store.config_json(ConfigKey::Summary).expect("stored");
    assert_eq!(stored["text"], summary);
}

#[test]
fn no_model_call_is_made_while_the_summary_is_written() {
    let mut sim = summarizing_sim();
    let mut i = 0;
    loop {
        sim.script(Reply::text(&format!("answer {i}")));
        let message = user(
            &format!("u{i}"),
            &format!("question {i} {}", "q".repeat(300)),
        );
        sim.send(
            "a",
            chat_request(&format!("r{i}"), std::slice::from_ref(&message)),
        );
        let calls_before = sim.model.requests.len();
        sim.advance(1_000);
        if !sim.summaries_asked.is_empty() {
            assert_eq!(
                sim.model.requests.len(),
                calls_before,
                "waits for the summary"
            );
            sim.run_until_idle();
            assert_eq!(sim.model.requests.len(), calls_before + 1);
            assert!(summary_in(&sim.last_request().request.messages).is_some());
            return;
        }
        sim.run_until_idle();
        i += 1;
        assert!(i < 60, "never summarized");
    }
}

#[test]
fn the_summary_is_reused_after_an_eviction_and_folded_into_the_next() {
    let mut sim = summarizing_sim();
    until_first_summary(&mut sim);
    let first = summary_in(&sim.last_request().request.messages).expect("a summary");
    sim.evict();
    let asked = sim.summaries_asked.len();
    turn(&mut sim, 100);
    assert_eq!(
        sim.summaries_asked.len(),
        asked,
        "the stored summary still covers it"
    );
    assert_eq!(
        summary_in(&sim.last_request().request.messages),
        Some(first.clone())
    );
    for i in 101..200 {
        turn(&mut sim, i);
        if sim.summaries_asked.len() > asked {
            break;
        }
    }
    let next = sim.summaries_asked.last().expect("asked again");
    assert_eq!(
        next.previous.as_deref(),
        Some(first.as_str()),
        "folds in the previous summary"
    );
}

#[test]
fn a_declined_summary_leaves_messages_out_without_one() {
    let mut sim = summarizing_sim();
    sim.summarizer.hook = Rc::new(|_| None);
    until_first_summary(&mut sim);
    let asked = sim.summaries_asked.len();
    for i in 100..110 {
        turn(&mut sim, i);
    }
    assert_eq!(
        sim.summaries_asked.len(),
        asked,
        "not asked again after declining"
    );
    let request = sim.last_request();
    assert_eq!(summary_in(&request.request.messages), None);
    assert!(
        request
            .request
            .messages
            .iter()
            .all(|m| !format!("{m:?}").contains("question 0 ")),
        "the context policy left the oldest out"
    );
}

#[test]
fn a_turn_cancelled_while_summarizing_ignores_the_late_summary() {
    let mut sim = summarizing_sim();
    let mut i = 0;
    loop {
        sim.script(Reply::text(&format!("answer {i}")));
        let message = user(
            &format!("u{i}"),
            &format!("question {i} {}", "q".repeat(300)),
        );
        let id = format!("r{i}");
        sim.send("a", chat_request(&id, std::slice::from_ref(&message)));
        sim.advance(500);
        if !sim.summaries_asked.is_empty() {
            let calls = sim.model.requests.len();
            sim.send("a", cancel(&id));
            sim.run_until_idle();
            assert_eq!(
                terminal(sim.frames("a"), &id).expect("ended")["outcome"],
                "aborted"
            );
            assert_eq!(sim.model.requests.len(), calls, "never called the model");
            assert!(
                sim.store.config_json(ConfigKey::Summary).is_none(),
                "nothing stored"
            );
            return;
        }
        sim.run_until_idle();
        i += 1;
        assert!(i < 60, "never summarized");
    }
}
