//! A long conversation reaches the model through a bounded window: the
//! newest messages within the context budget, with the system prompt and the
//! newest user message always kept; a request the provider refuses as too
//! long is asked again once with less, and fails readably if that is refused too.

use crate::sim::*;
use durable_chat::core::estimated_bytes;
use durable_chat::model::{ModelFailure, ModelMessage};
use serde_json::Value;

/// Grows a conversation of `turns` question/answer pairs from tab "a",
/// each question about `size` bytes long.
fn grow(sim: &mut Sim, turns: usize, size: usize) -> Vec<Value> {
    (0..turns).map(|i| grow_one(sim, i, size)).collect()
}

/// Question/answer pair number `i` (the question about `size` bytes long),
/// sent as a tail request: only the new message (the server keeps the history).
fn grow_one(sim: &mut Sim, i: usize, size: usize) -> Value {
    sim.script(Reply::text(&format!("answer {i}")));
    let message = user(
        &format!("u{i}"),
        &format!("question {i} {}", "q".repeat(size)),
    );
    sim.send(
        "a",
        chat_request(&format!("r{i}"), std::slice::from_ref(&message)),
    );
    sim.run_until_idle();
    message
}

fn overflow() -> Reply {
    let body = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}"#;
    Reply::failure(
        ModelFailure::http(400, format!("400 Bad Request: {body}"), None, None)
            .overflowing_context(),
    )
}

#[test]
fn tail_requests_grow_the_history_and_the_model_sees_only_the_newest_window() {
    let mut sim = Sim::with(|c| c.settings.context.max_bytes = 20_000);
    sim.connect("a");
    grow(&mut sim, 120, 300);
    assert_eq!(
        sim.transcript().len(),
        240,
        "every tail request added to the history"
    );

    let last = sim.last_request();
    let bytes = estimated_bytes(last.messages());
    assert!(
        bytes <= 20_000,
        "the request stays within the budget: {bytes}"
    );
    assert_eq!(content(&last.messages()[0]), Some("You are a test agent."));
    assert!(content(&last.messages()[1]).is_some_and(|t| t.contains("earlier messages")));
    let users = last.user_texts();
    assert!(users.last().is_some_and(|t| t.starts_with("question 119 ")));
    assert!(
        users.len() < 100,
        "old questions are left out: {}",
        users.len()
    );
    assert!(matches!(last.messages()[2], ModelMessage::User { .. }));
}

#[test]
fn a_short_conversation_is_sent_whole() {
    let mut sim = Sim::new();
    sim.connect("a");
    grow(&mut sim, 5, 100);
    let last = sim.last_request();
    assert_eq!(last.user_texts().len(), 5);
    assert!(!last
        .messages()
        .iter()
        .any(|m| content(m).is_some_and(|t| t.contains("earlier messages"))));
}

#[test]
fn a_request_refused_as_too_long_is_asked_again_once_with_half_the_context() {
    let mut sim = Sim::new();
    sim.connect("a");
    grow(&mut sim, 30, 400);
    sim.script(overflow()).script(Reply::text("fits now"));
    sim.send("a", chat_request("big", &[user("ub", "and now?")]));
    sim.run_until_idle();

    let requests = sim.requests();
    let (refused, retried) = (&requests[requests.len() - 2], &requests[requests.len() - 1]);
    let (before, after) = (
        estimated_bytes(refused.messages()),
        estimated_bytes(retried.messages()),
    );
    assert!(after <= before / 2, "half the context: {before} → {after}");
    assert_eq!(
        retried.user_texts().last().map(String::as_str),
        Some("and now?")
    );
    assert_eq!(
        terminal(sim.frames("a"), "big").unwrap()["outcome"],
        "completed"
    );
    assert_eq!(text_of(sim.transcript().last().unwrap()), "fits now");
}

#[test]
fn a_request_refused_again_fails_the_turn_with_a_readable_error() {
    let mut sim = Sim::new();
    sim.connect("a");
    grow(&mut sim, 10, 400);
    let asked = sim.requests().len();
    sim.script(overflow())
        .script(overflow())
        .script(Reply::text("never"));
    sim.send("a", chat_request("big", &[user("ub", "and now?")]));
    sim.run_until_idle();

    assert_eq!(sim.requests().len(), asked + 2, "one narrower try, no more");
    let frames = sim.frames("a");
    let error = responses(frames, "big")
        .into_iter()
        .find(|f| f["error"] == true)
        .expect("an error frame");
    let text = error["body"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("The conversation is too long for the model"),
        "{text}"
    );
    assert!(
        text.contains("context_length_exceeded"),
        "the provider's reason is kept: {text}"
    );
    assert_eq!(terminal(frames, "big").unwrap()["outcome"], "error");
    assert_eq!(
        sim.transcript().len(),
        21,
        "the question is kept, no empty answer"
    );
}

/// The questions of a request, in order.
fn questions(request: &ModelCall) -> Vec<String> {
    request
        .user_texts()
        .into_iter()
        .filter(|t| t.starts_with("question "))
        .collect()
}

#[test]
fn a_conversation_of_many_short_messages_is_cut_to_the_newest_messages_of_the_policy() {
    let mut sim = Sim::with(|c| c.settings.context.max_messages = 40);
    sim.connect("a");
    grow(&mut sim, 100, 10);
    let last = sim.last_request();
    let sent = questions(last);
    assert!(
        sent.len() <= 20 && sent.len() > 10,
        "at most 40 messages (20 questions, each with its answer): {}",
        sent.len()
    );
    assert_eq!(
        sent.last().map(|t| t.starts_with("question 99 ")),
        Some(true)
    );
    assert!(matches!(last.messages()[2], ModelMessage::User { .. }));
    let omitted = 200 - 2 * sent.len();
    assert!(
        content(&last.messages()[1])
            .is_some_and(|t| t.contains(&format!("[{omitted} earlier messages"))),
        "the note counts what is left out: {:?}",
        content(&last.messages()[1])
    );
}

#[test]
fn the_cut_moves_in_steps_so_consecutive_requests_share_their_first_messages() {
    let mut sim = Sim::with(|c| c.settings.context.max_messages = 40);
    sim.connect("a");
    grow(&mut sim, 60, 10);
    let mut firsts = Vec::new();
    for i in 60..100 {
        grow_one(&mut sim, i, 10);
        let first = questions(sim.last_request()).first().cloned();
        firsts.push(first.unwrap_or_default());
    }
    let moves = firsts.windows(2).filter(|w| w[0] != w[1]).count();
    // 40 turns add 80 messages: the cut moves once per 16 of them, not every turn.
    assert!(
        (4..=6).contains(&moves),
        "the window's first message changed {moves} times in 40 turns: {firsts:?}"
    );
}

#[test]
fn the_message_bound_reads_no_further_back_than_it_reaches() {
    let mut reads = Vec::new();
    for turns in [120, 300] {
        let mut sim = Sim::with(|c| {
            c.settings.context.max_messages = 40;
            c.settings.context.max_bytes = 0;
        });
        sim.connect("a");
        grow(&mut sim, turns, 10);
        sim.script(Reply::text("fine"));
        let before = sim.store.history_reads().0;
        // Accepting the request starts the turn's model call.
        sim.send("a", chat_request("last", &[user("last", "and now?")]));
        reads.push(sim.store.history_reads().0 - before);
        let last = sim.last_request();
        assert_eq!(
            last.user_texts().last().map(String::as_str),
            Some("and now?")
        );
        assert!(questions(last).len() < 20);
        assert!(content(&last.messages()[1]).is_some_and(|t| t.contains("earlier messages")));
    }
    assert_eq!(reads[0], reads[1], "rows read for 240 and for 600 messages");
    assert!(reads[0] <= 40, "no more rows than the bound: {}", reads[0]);
}

/// Over 40 more turns of a long conversation (one step each), how many times
/// the stored messages were counted to place the cut, and how many times a
/// trimmed context was logged.
fn counts_and_trim_logs_over_forty_turns() -> (usize, usize) {
    let mut sim = Sim::with(|c| c.settings.context.max_messages = 40);
    sim.connect("a");
    grow(&mut sim, 60, 10);
    let counts = sim.store.history_counts();
    let logged = sim.log.len();
    for i in 60..100 {
        grow_one(&mut sim, i, 10);
    }
    let trims = sim.log[logged..]
        .iter()
        .filter(|e| matches!(e, durable_chat::core::LogEvent::ContextTrimmed { .. }))
        .count();
    (sim.store.history_counts() - counts, trims)
}

#[test]
fn placing_the_cut_counts_the_history_once_per_window_position_and_logs_when_the_cut_moves() {
    let (counts, trims) = counts_and_trim_logs_over_forty_turns();
    println!("over 40 trimmed turns: {counts} counts of the history, {trims} trim log lines");
    // 40 turns add 80 messages: the in-memory window moves a few times, the
    // cut once per 16 messages (see the test above), not every turn.
    assert!(
        counts <= 6,
        "counted the history {counts} times in 40 turns"
    );
    assert!(
        (4..=6).contains(&trims),
        "logged a trimmed context {trims} times in 40 turns"
    );
}

/// The share of request bytes a provider that caches by prefix reads from
/// its cache over `requests`: each request's longest common start with the
/// one before it (as the Messages API body it is sent as), over all bytes.
fn cached_share(requests: &[ModelCall]) -> f64 {
    let bodies: Vec<String> = requests
        .iter()
        .map(|call| durable_chat::model::anthropic::request_body(&call.request))
        .collect();
    let total: usize = bodies.iter().skip(1).map(String::len).sum();
    let cached: usize = bodies
        .windows(2)
        .map(|w| {
            w[0].bytes()
                .zip(w[1].bytes())
                .take_while(|(a, b)| a == b)
                .count()
        })
        .sum();
    cached as f64 / total as f64
}

#[test]
fn over_a_long_chat_most_of_each_request_is_the_start_of_the_one_before() {
    let mut sim = Sim::with(|c| c.settings.context.max_messages = 120);
    sim.connect("a");
    grow(&mut sim, 200, 200);
    let before = sim.requests().len();
    for i in 200..300 {
        grow_one(&mut sim, i, 200);
    }
    let share = cached_share(&sim.requests()[before - 1..]);
    println!("cached share over turns 200-300: {:.1}%", share * 100.0);
    assert!(share >= 0.8, "cached share {share:.3}");
}
