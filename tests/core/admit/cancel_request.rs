//! Cancelling a turn from code by its request id (`Core::cancel_request`),
//! whoever asked for it: a tab's running turn ends `aborted` with what it
//! streamed kept, a queued one never runs, a submission's id cancels the
//! submission, and an id with nothing under it is answered `false`.

use crate::sim::*;
use durable_chat::core::{SubmissionStatus, SubmitRequest};
use durable_chat::protocol::UIMessage;

#[test]
fn a_tabs_running_turn_is_cancelled_by_its_request_id() {
    let mut sim = two_tabs();
    sim.script(Reply::words(50).every(10));
    sim.send("a", chat_request("r1", &[user("u1", "a long one")]));
    sim.advance(105);
    assert!(sim.call(|core, now| core.cancel_request("r1", now)));
    sim.run_until_idle();
    for tab in ["a", "b"] {
        let done = terminal(sim.frames(tab), "r1").expect("every tab sees the turn end");
        assert_eq!(done["outcome"], "aborted");
    }
    let stored = sim.transcript();
    assert_eq!(stored.len(), 2, "what streamed is kept");
    assert!(
        !sim.call(|core, now| core.cancel_request("r1", now)),
        "ended already"
    );
    assert!(!sim.call(|core, now| core.cancel_request("no-such", now)));
}

#[test]
fn a_queued_turn_cancelled_by_its_id_never_runs() {
    let mut sim = two_tabs();
    sim.script(Reply::words(20).every(10));
    sim.script(Reply::text("second"));
    sim.send("a", chat_request("r1", &[user("u1", "first")]));
    sim.send("b", chat_request("r2", &[user("u2", "second")]));
    assert!(sim.call(|core, now| core.cancel_request("r2", now)));
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("b"), "r2").expect("ended")["outcome"],
        "aborted"
    );
    assert_eq!(
        terminal(sim.frames("a"), "r1").expect("ended")["outcome"],
        "completed"
    );
    assert_eq!(
        sim.model.requests.len(),
        1,
        "the cancelled turn never called the model"
    );
}

#[test]
fn a_submissions_id_cancels_the_submission() {
    let mut sim = two_tabs();
    sim.script(Reply::words(50).every(10));
    let request = SubmitRequest {
        messages: vec![UIMessage::user_text("s-u1", "from code")],
        ..Default::default()
    };
    let accepted = sim
        .call(|core, now| core.submit(request, now))
        .expect("accepted");
    sim.advance(50);
    assert!(sim.call(|core, now| core.cancel_request(&accepted.id, now)));
    sim.run_until_idle();
    let record = sim.core().submission(&accepted.id).expect("kept").clone();
    assert_eq!(record.status, SubmissionStatus::Cancelled);
}
