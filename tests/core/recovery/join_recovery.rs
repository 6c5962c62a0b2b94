//! A tab that joins while a cut turn is being recovered (after an eviction,
//! or after a model stream broke off inside the isolate) is offered the cut
//! stream, as the reference server does: its ACK replays what was stored and
//! ends `aborted` (binding the tab to the answer by message id), then the
//! recovery's chunks from its first one reach it, then live, so the text the
//! tab assembles is the stored answer, once. Its probe finds nothing more.

use crate::sim::*;
use serde_json::{json, Value};

const RECOVERING: &str = "cf_agent_chat_recovering";

/// The text deltas `frames` carry for request `id`, in order.
/// Tab "a" asks for a story; 400 ms into its 40-word answer the runtime is
/// evicted, with the recovery's answer (`rest` words) scripted.
fn story_cut_mid_answer(sim: &mut Sim, rest: usize) {
    sim.script(Reply::words(40).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "tell me a story")]));
    sim.advance(400);
    sim.script(Reply::words(rest).every(20));
    sim.evict();
}

fn deltas(frames: &[Value], id: &str) -> String {
    responses(frames, id)
        .into_iter()
        .filter(|f| f["done"] != true)
        .map(body)
        .filter(|c| c["type"] == "text-delta")
        .map(|c| c["delta"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The request id of the turn running now (the last one tab `tab` saw start).
fn running(frames: &[Value]) -> String {
    of_type(frames, "cf_agent_use_chat_response")
        .into_iter()
        .rev()
        .find(|f| f["done"] != true && body(f)["type"] == "start")
        .and_then(|f| f["id"].as_str())
        .unwrap()
        .to_string()
}

/// Joins tab `c` during the recovery: checks the offer, the probe and the
/// ACK, runs to the end; returns (cut id, recovery id).
fn join_and_follow(sim: &mut Sim) -> (String, String) {
    let recovery = running(sim.frames("b"));
    sim.connect("c");
    let c = sim.take_frames("c");
    assert_eq!(
        kinds(&c),
        [RESUMING, MESSAGES, RECOVERING, IDENTITY, MCP],
        "{c:?}"
    );
    let cut = c[0]["id"].as_str().unwrap().to_string();
    assert_ne!(cut, recovery, "offered the cut stream, not the recovery's");
    assert_eq!(
        c[1]["messages"],
        json!(sim.transcript()),
        "with the partial"
    );

    // Until its ACK the tab gets none of the recovery's chunks.
    sim.advance(40);
    let held = sim.take_frames("c");
    assert!(responses(&held, &recovery).is_empty(), "{held:?}");
    sim.send("c", resume_probe("p1"));
    let probe = sim.take_frames("c");
    assert_eq!(probe.len(), 1);
    assert_eq!(probe[0]["type"], "cf_agent_stream_resume_none");
    assert_eq!(probe[0]["reason"], "idle");
    assert_eq!(probe[0]["probeId"], "p1");

    sim.send("c", resume_ack(&cut));
    sim.send("c", resume_ack(&cut)); // a repeated ACK adds nothing
    sim.run_until_idle();
    (cut, recovery)
}

fn check_follow(sim: &Sim, cut: &str, recovery: &str, origin: &str) {
    let c = sim.frames("c");
    let replayed = responses(c, cut);
    let start = body(replayed[0]);
    assert_eq!(start["type"], "start");
    let answer = sim.transcript().last().cloned().unwrap();
    assert_eq!(
        start["messageId"], answer["id"],
        "the replay names the answer by its id"
    );
    assert!(replayed.iter().all(|f| f["replay"] == true));
    let types: Vec<Value> = replayed
        .iter()
        .filter(|f| f["done"] != true)
        .map(|f| body(f)["type"].clone())
        .collect();
    assert_eq!(
        types[types.len() - 1],
        "text-end",
        "the replay closes the text the cut left open, as the stored partial is: {types:?}"
    );
    let end = terminal(c, cut).unwrap();
    assert_eq!(end["outcome"], "aborted");
    assert_eq!(end["messageIds"], json!([origin]));

    let frames = responses(c, recovery);
    let seqs: Vec<u64> = frames.iter().filter_map(|f| f["seq"].as_u64()).collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "every chunk of the recovery from its first, once"
    );
    assert!(frames
        .iter()
        .all(|f| f["continuation"] == true && f["replay"] != true));
    assert_eq!(terminal(c, recovery).unwrap()["outcome"], "completed");
    let cut_at = position_of(c, |f| f["id"] == cut && f["done"] == true).unwrap();
    let first = position_of(c, |f| f["id"] == recovery).unwrap();
    assert!(
        cut_at < first,
        "the cut stream ends before the recovery's chunks"
    );

    let shown = format!("{}{}", deltas(c, cut), deltas(c, recovery));
    assert_eq!(
        shown,
        text_of(&answer),
        "the tab assembles the stored answer"
    );
    assert_eq!(sim.transcript().len(), 2, "one answer");
}

#[test]
fn a_tab_joining_a_recovery_after_an_eviction_follows_the_cut_stream_then_the_recovery() {
    let mut sim = two_tabs();
    story_cut_mid_answer(&mut sim, 30);
    sim.advance(100);
    let (cut, recovery) = join_and_follow(&mut sim);
    assert_eq!(cut, "r1");
    check_follow(&sim, &cut, &recovery, "u1");

    // Once the recovery is over nothing is offered any more.
    sim.connect("d");
    let d = sim.take_frames("d");
    assert_eq!(kinds(&d), [MESSAGES, IDENTITY, MCP], "{d:?}");
}

#[test]
fn a_tab_joining_a_recovery_of_a_stream_cut_in_the_isolate_follows_the_cut_stream() {
    let mut sim = two_tabs();
    sim.script(Reply::text("The answer is").then_cut())
        .script(Reply::words(30).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "what is it?")]));
    sim.advance(100);
    let (cut, recovery) = join_and_follow(&mut sim);
    assert_eq!(cut, "r1");
    check_follow(&sim, &cut, &recovery, "u1");
}

#[test]
fn a_message_sent_while_a_recovery_runs_is_answered_after_the_recovered_answer() {
    let mut sim = two_tabs();
    story_cut_mid_answer(&mut sim, 30);
    sim.script(Reply::text("second answer"));
    sim.advance(100);
    let (cut, _) = join_and_follow_and_send(&mut sim);
    let ids = json!(sim.transcript())
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert_eq!(ids[0], "u1");
    assert_eq!(ids[2], "u2", "the recovered answer stays before u2");
    assert_eq!(text_of(&sim.transcript()[3]), "second answer");
    assert_eq!(
        terminal(sim.frames("c"), "r2").unwrap()["outcome"],
        "completed"
    );
    assert_eq!(cut, "r1");
}

/// Joins tab `c` during the recovery and, told the agent is idle, sends the next message at once.
fn join_and_follow_and_send(sim: &mut Sim) -> (String, String) {
    let recovery = running(sim.frames("b"));
    sim.connect("c");
    let c = sim.take_frames("c");
    let cut = c[0]["id"].as_str().unwrap().to_string();
    let history = c[1]["messages"].as_array().cloned().unwrap();
    sim.send("c", resume_ack(&cut));
    sim.send("c", resume_probe("p1"));
    let mut messages = history;
    messages.push(user("u2", "and then?"));
    sim.send("c", chat_request("r2", &messages));
    sim.run_until_idle();
    (cut, recovery)
}

#[test]
fn an_ack_of_the_cut_stream_after_the_recovery_ended_is_answered_with_its_message_ids_and_aborted()
{
    let mut sim = two_tabs();
    story_cut_mid_answer(&mut sim, 5);
    sim.advance(10);
    sim.connect("c");
    let c = sim.take_frames("c");
    assert_eq!(c[0]["type"], RESUMING);
    assert_eq!(c[0]["id"], "r1");
    sim.run_until_idle();
    sim.take_frames("c");
    sim.send("c", resume_ack("r1"));
    let late = sim.take_frames("c");
    assert_eq!(late.len(), 1, "{late:?}");
    assert_eq!(late[0]["done"], true);
    assert_eq!(late[0]["replay"], true);
    assert_eq!(late[0]["messageIds"], json!(["u1"]));
    // The cut stream's own replay would have ended `aborted`; a late ACK says
    // the same, or the client reads the cut answer as completed.
    assert_eq!(late[0]["outcome"], "aborted");
}

/// The chaos failure behind the cut-stream offer: a tab told `idle` during a
/// recovery sends a message (queued behind the recovery) and a second one
/// behind it; the runtime dies while the recovery runs. The first queued turn
/// must still answer its own message, from its own place, after the restart.
#[test]
fn a_turn_queued_before_a_later_message_keeps_its_place_and_context_across_an_eviction() {
    let mut sim = two_tabs();
    story_cut_mid_answer(&mut sim, 30);
    sim.advance(60);
    sim.connect("c");
    let c = sim.take_frames("c");
    let mut history = c[1]["messages"].as_array().cloned().unwrap();
    history.push(user("u2", "question two"));
    sim.send("c", chat_request("r2", &history));
    history.push(user("u3", "question three"));
    sim.send("c", chat_request("r3", &history));
    sim.advance(40);
    // Dies while the recovery runs with r2 and r3 waiting behind it (the
    // conversation moved on, so the cut answer is left as it was stored).
    sim.script(Reply::text("answer two"))
        .script(Reply::text("answer three"));
    sim.evict();
    sim.run_until_idle();

    let transcript = sim.transcript();
    let shape: Vec<String> = transcript
        .iter()
        .map(|m| match m["role"].as_str() {
            Some("user") => m["id"].as_str().unwrap().to_string(),
            _ => format!("a:{}", text_of(m)),
        })
        .collect();
    let u2 = shape.iter().position(|s| s == "u2").unwrap();
    assert_eq!(
        shape[u2 + 1],
        "a:answer two",
        "r2's answer right after u2: {shape:?}"
    );
    assert_eq!(shape[u2 + 2], "u3", "{shape:?}");
    assert_eq!(shape[u2 + 3], "a:answer three", "{shape:?}");
    let asked = sim
        .requests()
        .iter()
        .find(|r| r.user_texts().last().map(String::as_str) == Some("question two"))
        .expect("r2's model request");
    assert!(
        !asked.user_texts().iter().any(|t| t == "question three"),
        "r2 is answered without the later message in its context"
    );
}

/// The text a tab shows for the answer once a recovery it joined is over:
/// the transcript it was sent on connect (`joined`), with the continuation
/// frames it got after its ACK (`after`) appended to the last assistant
/// message (a continuation's `start` names no message, so the stock client
/// appends its chunks to what it shows).
fn shown_after_join(joined: &[Value], after: &[Value], cut: &str, recovery: &str) -> String {
    let snapshot = of_type(joined, MESSAGES)[0]["messages"].clone();
    let stored: Value = snapshot
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or_default();
    format!(
        "{}{}{}",
        text_of(&stored),
        deltas(after, cut),
        deltas(after, recovery)
    )
}

#[test]
fn a_tab_joining_the_recovery_of_a_cut_continuation_shows_the_stored_answer_once() {
    let mut sim = two_tabs();
    // The answer is cut, its recovery (a continuation) is cut too, and the
    // second recovery streams slowly while tab "c" joins.
    sim.script(Reply::text("The answer is").then_cut())
        .script(Reply::text(" forty").then_cut())
        .script(Reply::words(30).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "what is it?")]));
    sim.advance(100);
    let recovery = running(sim.frames("b"));
    sim.connect("c");
    let joined = sim.take_frames("c");
    assert_eq!(kinds(&joined)[0], RESUMING, "{joined:?}");
    let cut = joined[0]["id"].as_str().unwrap().to_string();
    assert_ne!(cut, "r1", "offered the cut continuation");
    sim.send("c", resume_ack(&cut));
    sim.run_until_idle();
    let after = sim.take_frames("c");
    assert!(responses(&after, &cut)
        .iter()
        .all(|f| f["continuation"] == true));
    assert!(
        responses(&after, &cut).iter().all(|f| f["done"] == true),
        "a continuation's replay carries none of its chunks (the transcript holds them): {after:?}"
    );
    assert_eq!(terminal(&after, &cut).unwrap()["outcome"], "aborted");
    assert_eq!(terminal(&after, &recovery).unwrap()["outcome"], "completed");
    let answer = sim.transcript().last().cloned().unwrap();
    assert_eq!(sim.transcript().len(), 2, "one answer");
    assert_eq!(
        shown_after_join(&joined, &after, &cut, &recovery),
        text_of(&answer),
        "the tab shows the stored answer, once"
    );
}
