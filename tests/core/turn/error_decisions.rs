//! `on_chat_error` awaited by the host:
//! a failed turn waits for `Event::ChatErrorDecided`; a retry it asks for is
//! sent after the answer and within the budget, a failure ends the turn with
//! the call's error; a late answer for a cancelled turn is ignored; a hook
//! that never answers ends the turn at the model call's deadline.

use std::rc::Rc;

use crate::sim::*;
use durable_chat::core::{CoreConfig, ErrorDisposition};

fn deciding_sim(disposition: ErrorDisposition, adjust: impl FnOnce(&mut CoreConfig)) -> Sim {
    let mut sim = Sim::with(|c| {
        c.settings.model_retry.max_retries = 1;
        adjust(c);
    });
    sim.error_decider.delay_ms = 3_000;
    sim.error_decider.hook = Rc::new(move |error| {
        assert!(error.error.contains("bad gateway config"), "{error:?}");
        disposition
    });
    sim.connect("a");
    sim
}

#[test]
fn a_retry_decided_later_sends_the_call_again_after_the_answer() {
    let mut sim = deciding_sim(ErrorDisposition::Retry { after_ms: 10 }, |_| {});
    sim.script(Reply::http_error(400, "400: bad gateway config"))
        .script(Reply::text("fine now"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.advance(1_000);
    assert_eq!(sim.errors_decided.len(), 1, "the host was asked");
    assert!(sim.errors_decided[0].retryable);
    assert_eq!(sim.errors_decided[0].request_id, "r1");
    assert!(terminal(sim.frames("a"), "r1").is_none(), "the turn waits");
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2);
    assert!(
        sim.requests()[1].at - sim.requests()[0].at >= 3_000,
        "sent again only after the answer"
    );
    assert_eq!(text_of(&sim.transcript()[1]), "fine now");
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended")["outcome"],
        "completed"
    );
}

#[test]
fn a_failure_decided_later_ends_the_turn_with_the_calls_error() {
    let mut sim = deciding_sim(ErrorDisposition::Fail, |_| {});
    sim.script(Reply::http_error(400, "400: bad gateway config"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.advance(1_000);
    assert!(terminal(sim.frames("a"), "r1").is_none(), "the turn waits");
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 1);
    let ended = terminal(sim.frames("a"), "r1").expect("ended");
    assert_eq!(ended["outcome"], "error");
    let response = sim.responses.last().expect("reported");
    assert!(response
        .error
        .as_deref()
        .is_some_and(|e| e.contains("bad gateway config")));
}

#[test]
fn retries_stay_within_the_budget() {
    let mut sim = deciding_sim(ErrorDisposition::Retry { after_ms: 10 }, |_| {});
    sim.script(Reply::http_error(400, "400: bad gateway config"))
        .script(Reply::http_error(400, "400: bad gateway config"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2, "one retry, then it fails");
    assert!(!sim.errors_decided[1].retryable);
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended")["outcome"],
        "error"
    );
}

#[test]
fn a_decision_for_a_cancelled_turn_is_ignored() {
    let mut sim = deciding_sim(ErrorDisposition::Retry { after_ms: 10 }, |_| {});
    sim.script(Reply::http_error(400, "400: bad gateway config"))
        .script(Reply::text("never"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.advance(1_000);
    assert_eq!(sim.errors_decided.len(), 1);
    sim.send("a", cancel("r1"));
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 1, "not sent again");
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended")["outcome"],
        "aborted"
    );
}

#[test]
fn a_hook_that_never_answers_ends_the_turn_at_the_model_calls_deadline() {
    let mut sim = deciding_sim(ErrorDisposition::Retry { after_ms: 10 }, |c| {
        c.settings.limits.model_call_timeout_ms = 20_000
    });
    sim.error_decider.delay_ms = 600_000;
    sim.script(Reply::http_error(400, "400: bad gateway config"))
        .script(Reply::text("never"));
    sim.send("a", chat_request("r1", &[user("u1", "hello")]));
    sim.advance(25_000);
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended at the deadline")["outcome"],
        "error"
    );
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 1, "the late retry is ignored");
}
