//! Compaction: the agent's summarizer (answered at once here; see
//! `summarizing.rs` for one that takes its time) replaces what the context
//! policy leaves out with a summary, which is stored and reused by later
//! model requests; it is made again only when more must be left out, from
//! the previous summary and the messages dropped since, and it survives a
//! restart.

use std::cell::RefCell;
use std::rc::Rc;

use crate::sim::*;
use durable_chat::core::estimated_bytes;
use durable_chat::core::ConfigKey;
use durable_chat::model::ModelMessage;

#[derive(Default)]
struct Calls {
    /// (previous summary, ids of the dropped messages) of each call.
    seen: Vec<(Option<String>, Vec<String>)>,
}

fn compacting(budget: usize) -> (Sim, Rc<RefCell<Calls>>) {
    compacting_within(
        budget,
        durable_chat::core::ContextPolicy::default().max_messages,
    )
}

fn compacting_within(budget: usize, max_messages: usize) -> (Sim, Rc<RefCell<Calls>>) {
    let calls = Rc::new(RefCell::new(Calls::default()));
    let log = calls.clone();
    let mut sim = Sim::with(move |c| {
        c.settings.context.max_bytes = budget;
        c.settings.context.max_messages = max_messages;
        c.summarize_by_host = true;
    });
    sim.summarizer.hook = Rc::new(move |request| {
        let mut log = log.borrow_mut();
        let ids: Vec<String> = request.dropped.iter().map(|m| m.id.clone()).collect();
        log.seen.push((request.previous.clone(), ids));
        Some(format!("summary #{}", log.seen.len()))
    });
    (sim, calls)
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

fn summary_in(messages: &[ModelMessage]) -> Option<&str> {
    messages.iter().find_map(|m| match m {
        ModelMessage::System { content } => {
            content.strip_prefix("Summary of the earlier part of this conversation:\n")
        }
        _ => None,
    })
}

#[test]
fn a_summary_is_made_when_messages_are_left_out_stored_and_reused_until_more_must_go() {
    let budget = 6_000;
    let (mut sim, calls) = compacting(budget);
    sim.connect("a");
    let turns = 60;
    for i in 0..turns {
        turn(&mut sim, i);
    }
    let seen = calls.borrow().seen.clone();
    assert!(!seen.is_empty(), "a long conversation was compacted");
    assert!(
        seen.len() * 5 <= turns,
        "the summary is reused, not made every turn: {} calls in {turns} turns",
        seen.len()
    );
    // Each call folds the previous summary with only what was dropped since,
    // and together they cover the conversation's start without a gap.
    let mut covered: Vec<String> = Vec::new();
    for (k, (previous, dropped)) in seen.iter().enumerate() {
        let expected = (k > 0).then(|| format!("summary #{k}"));
        assert_eq!(previous, &expected);
        assert!(!dropped.is_empty());
        covered.extend(dropped.iter().cloned());
    }
    let ids: Vec<String> = sim
        .transcript()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        covered,
        ids[..covered.len()],
        "dropped messages, in order, each once"
    );

    let last = sim.last_request().messages().to_vec();
    assert_eq!(
        summary_in(&last),
        Some(format!("summary #{}", seen.len()).as_str())
    );
    assert!(
        estimated_bytes(&last) <= budget,
        "{}",
        estimated_bytes(&last)
    );
    assert!(
        matches!(last[2], ModelMessage::User { .. }),
        "the kept part starts at a user message"
    );
    assert!(
        !last.iter().any(|m| matches!(m, ModelMessage::System { content } if content.contains("earlier messages"))),
        "the summary replaces the note"
    );
    let stored = sim
        .store
        .config_json(ConfigKey::Summary)
        .expect("the summary is stored");
    assert_eq!(stored["text"], format!("summary #{}", seen.len()));

    // After a restart the stored summary is reused, not made again.
    sim.evict();
    let before = calls.borrow().seen.len();
    turn(&mut sim, turns);
    let after_restart = sim.last_request().messages().to_vec();
    assert_eq!(
        summary_in(&after_restart),
        Some(format!("summary #{before}").as_str())
    );
    assert_eq!(
        calls.borrow().seen.len(),
        before,
        "reused after the restart"
    );
}

#[test]
fn without_a_summary_from_the_hook_messages_are_left_out_with_the_note() {
    let mut sim = Sim::with(|c| {
        c.settings.context.max_bytes = 6_000;
        c.summarize_by_host = true;
    });
    sim.summarizer.hook = Rc::new(|_| None);
    sim.connect("a");
    for i in 0..40 {
        turn(&mut sim, i);
    }
    let last = sim.last_request().messages();
    assert!(summary_in(last).is_none());
    assert!(last.iter().any(
        |m| matches!(m, ModelMessage::System { content } if content.contains("earlier messages"))
    ));
    assert!(sim.store.config_json(ConfigKey::Summary).is_none());
}

#[test]
fn many_short_messages_are_compacted_by_the_message_bound() {
    let (mut sim, calls) = compacting_within(0, 30);
    sim.connect("a");
    let turns = 60;
    for i in 0..turns {
        turn(&mut sim, i);
    }
    let seen = calls.borrow().seen.clone();
    assert!(
        !seen.is_empty(),
        "more messages than the bound were compacted"
    );
    assert!(
        seen.len() * 5 <= turns,
        "{} calls in {turns} turns",
        seen.len()
    );
    let last = sim.last_request();
    assert!(summary_in(last.messages()).is_some());
    let questions = last.user_texts().len();
    assert!(
        questions <= 15,
        "at most 30 messages after the summary: {questions} questions"
    );
}
