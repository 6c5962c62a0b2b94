//! A long history costs the core no more memory and no more work per request
//! than a short one: it keeps a recent window in memory and reads older
//! messages from the store only when a request needs them (`get-messages`,
//! a connect snapshot, the model context, a regenerate anchored far back, a
//! tool call id lookup). Costs are counted in rows read, not in time.

use crate::sim::*;
use durable_chat::core::{SNAPSHOT_BYTES, WINDOW_BYTES, WINDOW_MESSAGES};
use durable_chat::model::ModelMessage;
use serde_json::{json, Value};

/// `pairs` stored question/answer pairs (every `tools_every`-th answer
/// with a settled tool call `old_<i>`), the agent restarted on them.
fn seeded(
    pairs: usize,
    tools_every: usize,
    adjust: impl FnOnce(&mut durable_chat::core::CoreConfig),
) -> Sim {
    let mut sim = Sim::with(adjust);
    seed_history(&mut sim, pairs, tools_every);
    sim
}

/// Rows read through the store while `f` runs.
fn rows_read(sim: &mut Sim, f: impl FnOnce(&mut Sim)) -> usize {
    let before = sim.store.history_reads().0;
    f(sim);
    sim.store.history_reads().0 - before
}

fn small_context(c: &mut durable_chat::core::CoreConfig) {
    c.settings.context.max_bytes = 4_000;
}

/// `pairs` stored question/answer pairs (small context), a tab open and the
/// next answer scripted.
fn ready_for_a_tail_request(pairs: usize) -> Sim {
    let mut sim = seeded(pairs, 0, small_context);
    sim.connect("a");
    sim.script(Reply::text("fine"));
    sim
}

/// A tail request: only the new question.
fn send_tail_request(sim: &mut Sim) {
    sim.send("a", chat_request("r1", &[user("new", "and now?")]));
}

#[test]
fn a_tail_request_reads_the_same_rows_whatever_the_history_length() {
    let mut reads = Vec::new();
    for pairs in [300, 3_000] {
        let mut sim = ready_for_a_tail_request(pairs);
        let read = rows_read(&mut sim, send_tail_request);
        sim.run_until_idle();
        assert_eq!(
            terminal(sim.frames("a"), "r1").unwrap()["outcome"],
            "completed"
        );
        assert!(
            sim.core().window_len() <= 2 * WINDOW_MESSAGES + 2,
            "the window stays small: {}",
            sim.core().window_len()
        );
        reads.push(read);
    }
    assert_eq!(
        reads[0], reads[1],
        "accepting a tail request and starting its turn reads as many rows for 600 as for 6,000 messages"
    );
}

#[test]
fn a_whole_turn_costs_the_same_on_long_histories_beyond_the_snapshot_size() {
    let mut reads = Vec::new();
    for pairs in [3_000, 6_000] {
        let mut sim = ready_for_a_tail_request(pairs);
        let read = rows_read(&mut sim, |sim| {
            send_tail_request(sim);
            sim.run_until_idle();
        });
        reads.push(read);
    }
    assert_eq!(reads[0], reads[1], "rows read per turn: {reads:?}");
}

#[test]
fn get_messages_returns_the_whole_history_and_a_snapshot_the_newest_that_fit() {
    let mut sim = seeded(4_000, 7, |_| {});
    let all = sim.core().messages();
    assert_eq!(all.len(), 8_000, "get-messages reads every stored message");
    assert_eq!(all, sim.store.messages());
    assert!(sim.core().window_len() <= 2 * WINDOW_MESSAGES);

    sim.connect("a");
    let frames = of_type(sim.frames("a"), "cf_agent_chat_messages");
    let snapshot = frames.last().unwrap();
    let bytes = snapshot.to_string().len();
    assert!(bytes < 1 << 20, "the frame stays under 1 MiB: {bytes}");
    assert!(bytes <= SNAPSHOT_BYTES + 1_000, "{bytes}");
    let messages = snapshot["messages"].as_array().unwrap();
    assert!(messages.len() > 500 && messages.len() < 8_000);
    let newest: Vec<String> = all[all.len() - messages.len()..]
        .iter()
        .map(|m| m.id.clone())
        .collect();
    let sent: Vec<String> = messages
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(sent, newest, "the newest messages, in order");

    let mut short = seeded(20, 0, |_| {});
    short.connect("a");
    let frames = of_type(short.frames("a"), "cf_agent_chat_messages");
    assert_eq!(
        frames.last().unwrap()["messages"].as_array().unwrap().len(),
        40,
        "a short history is sent whole"
    );
}

#[test]
fn a_transcript_frame_always_holds_the_newest_exchange_whatever_its_size() {
    let mut sim = seeded(50, 0, |_| {});
    sim.connect("a");
    let big = "x".repeat(SNAPSHOT_BYTES + 10_000);
    sim.script(Reply::text(&big));
    sim.send(
        "a",
        chat_request("r1", &[user("q-big", "a long answer, please")]),
    );
    sim.run_until_idle();
    sim.connect("b");
    let frames = of_type(sim.frames("b"), "cf_agent_chat_messages");
    let ids = ids_of(frames.last().unwrap());
    let all: Vec<String> = sim.core().messages().iter().map(|m| m.id.clone()).collect();
    assert_eq!(
        ids.len(),
        2,
        "the question and its answer, over the budget together: {ids:?}"
    );
    assert_eq!(ids, all[all.len() - 2..], "the newest exchange");
}

#[test]
fn a_regenerate_anchored_far_back_drops_everything_after_its_anchor() {
    let mut sim = seeded(1_000, 0, |_| {});
    sim.connect("a");
    sim.script(Reply::text("a new answer to question 100"));
    sim.send("a", regenerate("r1", &[user("u100", "question 100")]));
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
    let ids: Vec<String> = sim.store.messages().iter().map(|m| m.id.clone()).collect();
    assert_eq!(ids.len(), 202);
    assert_eq!(ids[200], "u100");
    assert_eq!(
        sim.store.messages()[201].text(),
        "a new answer to question 100"
    );
    assert_eq!(sim.core().messages(), sim.store.messages());
    assert_eq!(
        sim.last_request().user_texts().last().map(String::as_str),
        Some("question 100")
    );

    // The conversation carries on from there, and survives a restart.
    sim.script(Reply::text("next"));
    sim.send("a", chat_request("r2", &[user("n1", "next question")]));
    sim.run_until_idle();
    sim.evict();
    assert_eq!(sim.core().messages().len(), 204);
    assert_eq!(sim.core().messages(), sim.store.messages());
}

#[test]
fn the_model_context_starts_at_a_user_message_and_keeps_each_call_with_its_result() {
    let mut sim = seeded(2_000, 3, |c| c.settings.context.max_bytes = 6_000);
    sim.connect("a");
    sim.script(Reply::text("ok"));
    sim.send("a", chat_request("r1", &[user("new", "and now?")]));
    sim.run_until_idle();
    let request = sim.last_request();
    let messages = request.messages();
    assert!(
        matches!(&messages[1], ModelMessage::System { content } if content.contains("earlier messages")),
        "the note says older messages are left out"
    );
    assert!(matches!(messages[2], ModelMessage::User { .. }));
    assert!(
        request.user_texts().len() > 10,
        "older messages are read from the store"
    );
    for (i, message) in messages.iter().enumerate() {
        if let ModelMessage::Tool { tool_call_id, .. } = message {
            let called = messages[..i].iter().any(|m| matches!(m,
                ModelMessage::Assistant { tool_calls, .. } if tool_calls.iter().any(|c| &c.id == tool_call_id)));
            assert!(called, "result {tool_call_id} kept without its call");
        }
    }
}

#[test]
fn a_repeated_tool_call_id_far_back_is_found_through_the_index() {
    let mut sim = seeded(1_000, 100, |_| {});
    sim.connect("a");
    sim.script(Reply::tool_call(
        "old_0",
        "get_weather",
        json!({"city": "Rome"}),
    ))
    .script(Reply::text("sunny"))
    .script_tool("get_weather", ToolReply::ok(json!({"tempC": 25})));
    let calls_before = sim.store.history_reads().1;
    sim.send("a", chat_request("r1", &[user("new", "weather in Rome?")]));
    sim.run_until_idle();
    let answer = sim.store.messages().last().cloned().unwrap();
    let ids: Vec<String> = answer
        .tool_parts()
        .map(|t| t.tool_call_id.clone())
        .collect();
    assert_eq!(
        ids,
        ["old_0-2"],
        "the id stored 2,000 messages back is not reused"
    );
    assert!(
        sim.store.history_reads().1 - calls_before < 200,
        "found by index lookups, not a walk"
    );
}

#[test]
fn a_window_of_large_messages_is_held_to_its_byte_bound_and_the_history_stays_whole() {
    let mut sim = Sim::new();
    sim.connect("a");
    let text = "x".repeat(800_000);
    for i in 0..12 {
        sim.script(Reply::text("ok"));
        sim.send(
            "a",
            chat_request(&format!("r{i}"), &[user(&format!("u{i}"), &text)]),
        );
        sim.run_until_idle();
        assert_eq!(
            terminal(sim.frames("a"), &format!("r{i}")).unwrap()["outcome"],
            "completed"
        );
        // Answers are short: the window's text is about its user messages'.
        let held = sim.core().window_len() / 2 * text.len();
        assert!(
            held <= 2 * WINDOW_BYTES + text.len(),
            "turn {i}: the window holds {} messages",
            sim.core().window_len()
        );
    }
    assert!(sim.core().window_len() <= 12, "{}", sim.core().window_len());
    let all = sim.core().messages();
    assert_eq!(all.len(), 24, "every message is still read back");
    assert_eq!(all, sim.store.messages());
}

/// A tab posts its whole transcript with every request (as `useAgentChat`
/// does): the posted user messages older than the window are read in one
/// call and the posted answers' roles in one more, whatever their number
/// (up to the 2,000 messages a request may carry), and a turn runs as with
/// a tail request.
#[test]
fn a_request_posting_a_long_transcript_reads_its_older_messages_in_one_call() {
    let mut calls = Vec::new();
    for pairs in [100, 900] {
        let mut sim = seeded(pairs, 0, small_context);
        sim.connect("a");
        sim.script(Reply::text("fine"));
        // What the tab shows: the stored messages as they were sent to it.
        let mut posted: Vec<Value> = sim.store.transcript();
        posted.push(user("new", "and now?"));
        let before = sim.store.history_reads().1;
        sim.send("a", chat_request("r1", &posted));
        calls.push(sim.store.history_reads().1 - before);
        sim.run_until_idle();
        assert_eq!(
            terminal(sim.frames("a"), "r1").unwrap()["outcome"],
            "completed"
        );
        assert!(
            sim.store.message("new").is_some(),
            "the new question is stored"
        );
        assert_eq!(
            sim.store.transcript().len(),
            2 * pairs + 2,
            "nothing posted again is stored twice"
        );
    }
    // The older posted user messages in one read, the older posted answers'
    // roles in another (`History::roles_before`), whatever their number.
    assert!(
        calls[0] <= 5 && calls[1] == calls[0],
        "store reads while admitting a request posting 100 and 900 pairs: {calls:?}"
    );
}
