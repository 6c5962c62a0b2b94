//! Model calls that fail transiently (rate limits, overload, a connection
//! that breaks before anything streamed) are tried again after a backoff,
//! in virtual time; failures that would repeat, or that come after text was
//! streamed, end the turn with an error as before.

use crate::sim::*;
use durable_chat::model::ModelFailure;
use serde_json::{json, Value};

fn errors(frames: &[Value], id: &str) -> Vec<String> {
    responses(frames, id)
        .iter()
        .filter(|f| f["error"] == true)
        .map(|f| f["body"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Tab "a" sends "hi" as request r1; everything then runs to the end.
fn ask(sim: &mut Sim) {
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
}

#[test]
fn a_rate_limited_call_is_retried_after_a_backoff_and_the_turn_completes() {
    let mut sim = two_tabs();
    sim.script(Reply::http_error(429, "429 Too Many Requests: slow down"))
        .script(Reply::text("hello after the wait"));
    ask(&mut sim);

    let requests = sim.requests();
    assert_eq!(requests.len(), 2, "one retry");
    assert_eq!(
        requests[0].request, requests[1].request,
        "the same request again"
    );
    assert!(
        requests[1].at - requests[0].at >= 1_000,
        "waits out the backoff: {} ms",
        requests[1].at - requests[0].at
    );
    for tab in ["a", "b"] {
        assert!(errors(sim.frames(tab), "r1").is_empty(), "no error shown");
        assert_eq!(
            terminal(sim.frames(tab), "r1").unwrap()["outcome"],
            "completed"
        );
    }
    let stored = sim.transcript();
    assert_eq!(text_of(&stored[1]), "hello after the wait");
    assert_eq!(
        chunk_types(sim.frames("a"), "r1")
            .iter()
            .filter(|t| *t == "start")
            .count(),
        1,
        "one message, not a second start"
    );
}

#[test]
fn retries_back_off_exponentially_and_give_up_with_the_last_error() {
    let mut sim = two_tabs();
    sim.script(Reply::http_error(503, "503 overloaded (1)"))
        .script(Reply::http_error(503, "503 overloaded (2)"))
        .script(Reply::http_error(502, "502 bad gateway (3)"));
    ask(&mut sim);

    let at: Vec<u64> = sim.requests().iter().map(|r| r.at).collect();
    assert_eq!(at.len(), 3, "the first attempt and two retries");
    assert!(at[1] - at[0] >= 1_000 && at[2] - at[1] >= 2_000, "{at:?}");
    assert_eq!(errors(sim.frames("a"), "r1"), ["502 bad gateway (3)"]);
    assert_eq!(terminal(sim.frames("b"), "r1").unwrap()["outcome"], "error");
    assert_eq!(sim.store.message_ids(), ["u1"], "no answer stored");
}

#[test]
fn the_providers_retry_after_hint_is_honoured() {
    let mut sim = two_tabs();
    sim.script(Reply::failure(ModelFailure::http(
        429,
        "429 Too Many Requests",
        Some("4500"),
        None,
    )))
    .script(Reply::text("ok"));
    ask(&mut sim);
    let at: Vec<u64> = sim.requests().iter().map(|r| r.at).collect();
    assert_eq!(at.len(), 2);
    assert!(at[1] - at[0] >= 4_500, "{at:?}");
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}

#[test]
fn a_hint_longer_than_a_minute_fails_the_turn_at_once() {
    let mut sim = two_tabs();
    sim.script(Reply::failure(ModelFailure::http(
        429,
        "429 quota exhausted",
        None,
        Some("3600"),
    )));
    ask(&mut sim);
    assert_eq!(sim.requests().len(), 1);
    assert_eq!(errors(sim.frames("a"), "r1"), ["429 quota exhausted"]);
}

#[test]
fn a_stream_that_breaks_after_text_is_not_retried() {
    let mut sim = two_tabs();
    sim.script(Reply::text("half an").then_fail("stream reset by peer"));
    ask(&mut sim);
    assert_eq!(sim.requests().len(), 1, "no second call: text would repeat");
    assert_eq!(errors(sim.frames("a"), "r1"), ["stream reset by peer"]);
}

#[test]
fn a_connection_that_breaks_before_any_text_is_retried() {
    let mut sim = two_tabs();
    sim.script(Reply::failure(ModelFailure::transient(
        "Model request failed: connection refused",
    )))
    .script(Reply::text("back"));
    ask(&mut sim);
    assert_eq!(sim.requests().len(), 2);
    assert_eq!(text_of(&sim.transcript()[1]), "back");
}

#[test]
fn a_cancel_during_the_wait_ends_the_turn_and_no_retry_is_sent() {
    let mut sim = two_tabs();
    sim.script(Reply::http_error(429, "429 slow down"))
        .script(Reply::text("never sent"));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.advance(500);
    assert_eq!(sim.requests().len(), 1);
    sim.send("a", cancel("r1"));
    sim.advance(10_000);
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 1, "the pending retry was dropped");
    assert_eq!(
        terminal(sim.frames("b"), "r1").unwrap()["outcome"],
        "aborted"
    );
    assert!(sim.armed().iter().all(|(t, _)| t.is_durable()));
}

#[test]
fn a_turn_queued_behind_a_retrying_one_waits_for_it() {
    let mut sim = two_tabs();
    sim.script(Reply::http_error(500, "500 oops"))
        .script(Reply::text("first"))
        .script(Reply::text("second"));
    sim.send("a", chat_request("r1", &[user("u1", "one")]));
    sim.send(
        "b",
        chat_request("r2", &[user("u1", "one"), user("u2", "two")]),
    );
    sim.run_until_idle();
    let texts: Vec<String> = sim.transcript().iter().map(text_of).collect();
    assert_eq!(texts, ["one", "first", "two", "second"]);
}

#[test]
fn retries_can_be_turned_off() {
    let mut sim = Sim::with(|c| c.settings.model_retry.max_retries = 0);
    sim.connect("a");
    sim.script(Reply::http_error(503, "503 overloaded"));
    ask(&mut sim);
    assert_eq!(sim.requests().len(), 1);
    assert_eq!(errors(sim.frames("a"), "r1"), ["503 overloaded"]);
}

#[test]
fn an_eviction_during_the_wait_recovers_the_turn_after_restart() {
    let mut sim = two_tabs();
    sim.script(Reply::http_error(429, "429 slow down"))
        .script(Reply::text("answered after the restart"));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.advance(200);
    sim.evict();
    sim.run_until_idle();
    let stored = sim.transcript();
    assert_eq!(
        stored.iter().map(text_of).collect::<Vec<_>>(),
        ["hi", "answered after the restart"],
        "{}",
        json!(stored)
    );
}
