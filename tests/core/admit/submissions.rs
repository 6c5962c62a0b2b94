//! Submissions of the agent's own code (a route, a scheduled job, another
//! agent): accepted at once with an id, run in the turn queue like a tab's
//! turn and seen live by every tab, idempotent by the caller's key, with a
//! stored status (queued → running → completed / failed / cancelled /
//! skipped) that survives evictions; `save_messages` stores without a model
//! turn, `continue_last_turn` continues the last answer.

use crate::sim::*;
use durable_chat::core::{
    Concurrency, Event, SubmissionRecord, SubmissionStatus, SubmitError, SubmitRequest,
};
use durable_chat::protocol::UIMessage;
use serde_json::json;

fn request(id: &str, text: &str, key: Option<&str>) -> SubmitRequest {
    SubmitRequest {
        messages: vec![UIMessage::user_text(id, text)],
        idempotency_key: key.map(str::to_string),
        ..Default::default()
    }
}

fn submit(sim: &mut Sim, id: &str, text: &str, key: Option<&str>) -> SubmissionRecord {
    sim.call(|core, now| core.submit(request(id, text, key), now))
        .expect("the submission is accepted")
}

fn status(sim: &Sim, id: &str) -> SubmissionStatus {
    sim.core().submission(id).expect("remembered").status
}

/// The stored row, as a restarted agent reads it.
fn stored(sim: &Sim, id: &str) -> SubmissionRecord {
    sim.store
        .stored_state()
        .submission(id)
        .cloned()
        .expect("stored")
}

#[test]
fn a_submission_is_accepted_at_once_runs_like_a_tabs_turn_and_completes() {
    let mut sim = two_tabs();
    sim.clear_frames();
    sim.script(Reply::words(5).every(10));
    let accepted = submit(&mut sim, "s-u1", "summarise the day", Some("daily-1"));
    assert_eq!(
        accepted.status,
        SubmissionStatus::Running,
        "idle: it runs at once"
    );
    assert_eq!(accepted.message_ids, ["s-u1"]);
    let id = accepted.id.clone();
    sim.run_until_idle();
    for tab in ["a", "b"] {
        let frames = sim.frames(tab);
        let done = terminal(frames, &id).expect("every tab sees the turn end");
        assert_eq!(done["outcome"], "completed");
        assert_eq!(done["messageIds"], json!(["s-u1"]));
        assert!(chunk_types(frames, &id).contains(&"text-delta".to_string()));
    }
    let record = stored(&sim, &id);
    assert_eq!(record.status, SubmissionStatus::Completed);
    let answer = record.answer_message_id.clone().expect("the answer's id");
    let transcript = sim.transcript();
    assert_eq!(ids_of(&json!(transcript)), ["s-u1", answer.as_str()]);
    assert_eq!(text_of(&transcript[1]), "w0 w1 w2 w3 w4");
    assert_eq!(record.idempotency_key.as_deref(), Some("daily-1"));
    sim.script(Reply::text("ok"));
    let unnamed = sim.call(|core, now| core.submit(request("", "no id", None), now));
    assert!(
        !unnamed.unwrap().message_ids[0].is_empty(),
        "a message without an id gets one"
    );
    sim.run_until_idle();
}

#[test]
fn the_same_idempotency_key_returns_the_first_submission_and_runs_nothing_more() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::text("once"));
    let first = submit(&mut sim, "k-u1", "hello", Some("order-42"));
    sim.run_until_idle();
    // A retry: the same messages under the same key.
    let again = submit(&mut sim, "k-u1", "hello", Some("order-42"));
    assert_eq!(again.id, first.id);
    assert_eq!(again.status, SubmissionStatus::Completed);
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 1, "one model call");
    assert_eq!(
        sim.store.message_ids().len(),
        2,
        "the second message was not stored"
    );
    // A restarted agent still knows the key.
    sim.evict();
    let after = submit(&mut sim, "k-u1", "hello", Some("order-42"));
    assert_eq!(after.id, first.id);
    assert_eq!(sim.requests().len(), 1);
}

#[test]
fn a_submission_behind_a_running_turn_is_queued_then_runs() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::words(10).every(10))
        .script(Reply::text("second"));
    sim.send("a", chat_request("r1", &[user("u1", "first")]));
    sim.advance(30);
    let queued = submit(&mut sim, "q-u1", "queued one", None);
    assert_eq!(queued.status, SubmissionStatus::Queued);
    assert_eq!(stored(&sim, &queued.id).status, SubmissionStatus::Queued);
    sim.run_until_idle();
    assert_eq!(status(&sim, &queued.id), SubmissionStatus::Completed);
    assert_eq!(
        terminal(sim.frames("a"), &queued.id).unwrap()["outcome"],
        "completed"
    );
}

#[test]
fn cancelling_a_queued_submission_means_it_never_runs() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::words(10).every(10));
    sim.send("a", chat_request("r1", &[user("u1", "first")]));
    sim.advance(20);
    let queued = submit(&mut sim, "c-u1", "never mind", None);
    let cancelled = sim.call(|core, now| core.cancel(&queued.id, now)).unwrap();
    assert_eq!(cancelled.status, SubmissionStatus::Cancelled);
    assert_eq!(
        terminal(sim.frames("a"), &queued.id).unwrap()["outcome"],
        "aborted"
    );
    sim.run_until_idle();
    assert_eq!(
        sim.requests().len(),
        1,
        "only the tab's turn called the model"
    );
    assert_eq!(stored(&sim, &queued.id).status, SubmissionStatus::Cancelled);
}

#[test]
fn cancelling_a_running_submission_aborts_its_turn() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::words(50).every(10));
    let running = submit(&mut sim, "cr-u1", "long story", None);
    sim.advance(55);
    let cancelled = sim.call(|core, now| core.cancel(&running.id, now)).unwrap();
    assert_eq!(cancelled.status, SubmissionStatus::Cancelled);
    let done = terminal(sim.frames("a"), &running.id).expect("the turn ended");
    assert_eq!(done["outcome"], "aborted");
    assert_eq!(sim.model.aborted.len(), 1, "the model call was stopped");
    sim.run_until_idle();
    // A finished submission is left as it is.
    let again = sim.call(|core, now| core.cancel(&running.id, now)).unwrap();
    assert_eq!(again.status, SubmissionStatus::Cancelled);
    assert!(sim
        .call(|core, now| core.cancel("no-such-id", now))
        .is_none());
}

#[test]
fn a_failed_turn_fails_its_submission_with_the_error() {
    let mut sim = Sim::new();
    sim.script(Reply::http_error(400, "bad request from the provider"));
    let failing = submit(&mut sim, "f-u1", "hi", None);
    sim.run_until_idle();
    let record = stored(&sim, &failing.id);
    assert_eq!(record.status, SubmissionStatus::Failed);
    assert!(
        record
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("bad request"),
        "{record:?}"
    );
    assert_eq!(
        record.answer_message_id, None,
        "nothing was stored as its answer"
    );
}

#[test]
fn a_queued_submission_survives_an_eviction_and_still_runs() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::words(40).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "first")]));
    sim.advance(100);
    let queued = submit(&mut sim, "e-u1", "after the restart", None);
    assert_eq!(stored(&sim, &queued.id).status, SubmissionStatus::Queued);
    // The cut answer is no longer the last message (the submission's is):
    // it is kept as it is, and the queued submission runs.
    sim.script(Reply::text("then the submission"));
    sim.evict();
    sim.run_until_idle();
    let record = stored(&sim, &queued.id);
    assert_eq!(record.status, SubmissionStatus::Completed);
    let answer = sim
        .store
        .message(record.answer_message_id.as_deref().unwrap())
        .unwrap();
    assert_eq!(text_of(&answer), "then the submission");
}

#[test]
fn a_running_submission_cut_by_an_eviction_is_recovered_and_completes() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::words(40).every(20));
    let running = submit(&mut sim, "ev-u1", "tell me a story", None);
    sim.advance(300);
    sim.script(Reply::text("and the end."));
    sim.evict();
    sim.run_until_idle();
    let record = stored(&sim, &running.id);
    assert_eq!(record.status, SubmissionStatus::Completed, "{record:?}");
    let answer_id = record.answer_message_id.clone().unwrap();
    let answer = sim.store.message(&answer_id).unwrap();
    let text = text_of(&answer);
    assert!(
        text.starts_with("w0") && text.ends_with("and the end."),
        "{text}"
    );
    assert_eq!(sim.store.message_ids(), ["ev-u1", answer_id.as_str()]);
    // Cut before anything streamed: retried, and still one answer.
    let mut sim = Sim::new();
    sim.script(Reply::words(5).every(500));
    let cut_early = submit(&mut sim, "ev-u2", "quick", None);
    sim.advance(100);
    sim.script(Reply::text("retried"));
    sim.evict();
    sim.run_until_idle();
    let record = stored(&sim, &cut_early.id);
    assert_eq!(record.status, SubmissionStatus::Completed);
    let answer = sim
        .store
        .message(record.answer_message_id.as_deref().unwrap());
    assert_eq!(text_of(&answer.unwrap()), "retried");
}

#[test]
fn a_submission_whose_answer_waits_for_an_approval_is_completed_and_stays_so() {
    let mut sim = Sim::new();
    sim.script(Reply::tool_call(
        "call_1",
        "delete_file",
        json!({"path": "a.txt"}),
    ));
    let waiting = submit(&mut sim, "ap-u1", "delete a.txt", None);
    sim.run_until_idle();
    assert_eq!(status(&sim, &waiting.id), SubmissionStatus::Completed);
    let record = stored(&sim, &waiting.id);
    let answer = sim
        .store
        .message(record.answer_message_id.as_deref().unwrap())
        .unwrap();
    assert_eq!(
        tool_part(&answer, "call_1").unwrap()["state"],
        "approval-requested"
    );
    sim.evict();
    sim.run_until_idle();
    assert_eq!(
        stored(&sim, &waiting.id),
        record,
        "an eviction changes nothing"
    );
}

#[test]
fn latest_skips_an_overlapping_submission_and_the_survivor_answers_both() {
    let mut sim = Sim::with(|c| c.settings.concurrency = Concurrency::Latest);
    sim.connect("a");
    sim.script(Reply::words(10).every(10))
        .script(Reply::text("both answered"));
    sim.send("a", chat_request("r1", &[user("u1", "first")]));
    sim.advance(20);
    let skipped = submit(&mut sim, "l-u1", "one", None);
    let survivor = submit(&mut sim, "l-u2", "two", None);
    sim.run_until_idle();
    assert_eq!(status(&sim, &skipped.id), SubmissionStatus::Skipped);
    assert_eq!(status(&sim, &survivor.id), SubmissionStatus::Completed);
    let texts = sim.last_request().user_texts();
    assert!(texts.contains(&"one".to_string()) && texts.contains(&"two".to_string()));
}

#[test]
fn drop_stores_nothing_of_an_overlapping_submission() {
    let mut sim = Sim::with(|c| c.settings.concurrency = Concurrency::Drop);
    sim.script(Reply::words(10).every(10));
    sim.connect("a");
    sim.send("a", chat_request("r1", &[user("u1", "first")]));
    let dropped = submit(&mut sim, "d-u1", "dropped", None);
    assert_eq!(dropped.status, SubmissionStatus::Skipped);
    assert!(!sim.store.message_ids().contains(&"d-u1".to_string()));
}

#[test]
fn a_clear_cancels_waiting_and_running_submissions() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::words(10).every(10));
    let running = submit(&mut sim, "cl-u1", "one", None);
    let queued = submit(&mut sim, "cl-u2", "two", None);
    sim.advance(20);
    sim.handle(Event::ClearHistory);
    sim.run_until_idle();
    for id in [&running.id, &queued.id] {
        let record = stored(&sim, id);
        assert_eq!(record.status, SubmissionStatus::Cancelled, "{record:?}");
        assert_eq!(record.error.as_deref(), Some("the history was cleared"));
    }
    assert_eq!(sim.requests().len(), 1);
}

#[test]
fn bad_submissions_are_refused_and_nothing_is_stored() {
    let mut sim = Sim::new();
    let empty = sim.call(|core, now| core.submit(SubmitRequest::default(), now));
    assert!(matches!(empty, Err(SubmitError(text)) if text.contains("at least one message")));
    let mut assistant = UIMessage::user_text("x1", "hi");
    assistant.role = durable_chat::protocol::Role::Assistant;
    let wrong_role = sim.call(|core, now| {
        core.submit(
            SubmitRequest {
                messages: vec![assistant],
                ..Default::default()
            },
            now,
        )
    });
    assert!(wrong_role.is_err());
    let long_key = "k".repeat(300);
    let too_long = sim.call(|core, now| core.submit(request("x2", "hi", Some(&long_key)), now));
    assert!(too_long.is_err());
    assert!(sim.store.message_ids().is_empty());
    assert!(sim.requests().is_empty());
}

#[test]
fn save_messages_stores_and_broadcasts_without_a_model_call() {
    let mut sim = two_tabs();
    sim.clear_frames();
    let mut note = UIMessage::user_text("n1", "the order shipped");
    note.role = durable_chat::protocol::Role::Assistant;
    let ids = sim
        .call(|core, now| core.save(vec![UIMessage::user_text("m1", "hello"), note], now))
        .unwrap();
    assert_eq!(ids, ["m1", "n1"]);
    let minted = sim
        .call(|core, now| core.save(vec![UIMessage::user_text("", "no id")], now))
        .unwrap();
    assert!(!minted[0].is_empty(), "a message without an id gets one");
    sim.call(|core, now| core.save(vec![UIMessage::user_text("m1", "hello again")], now))
        .unwrap();
    assert_eq!(
        text_of(&sim.transcript()[0]),
        "hello again",
        "the same id replaces"
    );
    assert!(sim.requests().is_empty(), "no model call");
    for tab in ["a", "b"] {
        let snapshot = of_type(sim.frames(tab), MESSAGES);
        assert_eq!(snapshot.len(), 3, "tab {tab} got the transcript each time");
        assert_eq!(ids_of(&snapshot[0]["messages"]), ["m1", "n1"]);
    }
    sim.evict();
    assert_eq!(sim.store.message_ids(), ["m1", "n1", minted[0].as_str()]);
    assert!(sim.armed().is_empty() && sim.requests().is_empty());
}

#[test]
fn continue_last_turn_continues_the_last_answer_and_needs_one() {
    let mut sim = Sim::new();
    sim.connect("a");
    let refused = sim.call(|core, now| core.continue_last(now));
    assert!(refused.is_err());
    sim.script(Reply::text("Part one."))
        .script(Reply::text(" Part two."));
    sim.send("a", chat_request("r1", &[user("u1", "write two parts")]));
    sim.run_until_idle();
    sim.clear_frames();
    let request_id = sim.call(|core, now| core.continue_last(now)).unwrap();
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2);
    let frames = responses(sim.frames("a"), &request_id);
    assert!(!frames.is_empty() && frames.iter().all(|f| f["continuation"] == true));
    assert_eq!(
        terminal(sim.frames("a"), &request_id).unwrap()["outcome"],
        "completed"
    );
    let text: String = sim.transcript().iter().skip(1).map(text_of).collect();
    assert_eq!(text, "Part one. Part two.");
}

#[test]
fn submissions_kept_are_bounded_oldest_finished_first() {
    let mut sim = Sim::new();
    let kept = durable_chat::core::KEPT_SUBMISSIONS;
    let mut first = None;
    for i in 0..=kept {
        sim.script(Reply::text("ok"));
        let record = submit(&mut sim, &format!("b-u{i}"), "hi", None);
        first.get_or_insert(record.id);
        sim.run_until_idle();
    }
    let state = sim.store.stored_state();
    assert_eq!(state.submissions.len(), kept);
    assert!(state.submission(first.as_deref().unwrap()).is_none());
}

/// The stored answer `id`, as the agent's own code would read it.
fn stored_message(sim: &Sim, id: &str) -> UIMessage {
    serde_json::from_value(sim.store.message(id).expect("stored")).expect("a message")
}

/// `message` with its part `c1` rewritten by `edit` (the JSON of the part).
fn with_part(message: &UIMessage, edit: impl Fn(&mut serde_json::Value)) -> UIMessage {
    let mut value = serde_json::to_value(message).unwrap();
    for part in value["parts"].as_array_mut().unwrap() {
        if part["toolCallId"] == "c1" {
            edit(part);
        }
    }
    serde_json::from_value(value).unwrap()
}

fn approved(part: &mut serde_json::Value) {
    part["state"] = json!("approval-responded");
    part["approval"]["approved"] = json!(true);
}

#[test]
fn save_refuses_an_approval_no_person_gave_and_continue_then_runs_nothing() {
    let mut sim = two_tabs();
    let answer = approval_turn(&mut sim);
    let asked = stored_message(&sim, &answer);
    let forged = with_part(&asked, approved);
    let refused = sim
        .call(|core, now| core.save(vec![forged.clone()], now))
        .expect_err("a forged approval is refused");
    assert!(refused.0.contains("\"c1\""), "{refused}");
    assert!(refused.0.contains("approval-responded"), "{refused}");
    let mut elsewhere = forged.clone();
    elsewhere.id = "later".into();
    assert!(sim
        .call(|core, now| core.save(vec![elsewhere.clone()], now))
        .is_err());
    let marked = with_part(&asked, |p| {
        p["state"] = json!("output-available");
        p["output"] = json!({"deleted": "/tmp/x"});
        p["approval"]["approved"] = json!(true);
    });
    let refused = sim.call(|core, now| core.save(vec![marked.clone()], now));
    assert!(refused.unwrap_err().0.contains("marked approved"));
    assert_eq!(
        stored_message(&sim, &answer),
        asked,
        "nothing stored changed"
    );

    sim.script(Reply::text("Nothing to run."));
    sim.call(|core, now| core.continue_last(now)).unwrap();
    sim.run_until_idle();
    assert!(sim.tools.runs.is_empty(), "no call ran without a person");
}

#[test]
fn save_takes_settled_calls_and_parts_left_as_the_agent_stores_them() {
    let mut sim = two_tabs();
    let answer = approval_turn(&mut sim);
    let asked = stored_message(&sim, &answer);
    let mut edited = asked.clone();
    edited.metadata = Some(json!({"note": "seen"}));
    sim.call(|core, now| core.save(vec![edited], now))
        .expect("a waiting part saved unchanged is kept");
    let denied = with_part(&asked, |p| {
        p["state"] = json!("output-denied");
        p["approval"]["approved"] = json!(false);
    });
    let mut report = with_part(&asked, |p| {
        p["state"] = json!("output-available");
        p["output"] = json!({"deleted": "nothing"});
        p["approval"] = serde_json::Value::Null;
    });
    report.id = "report".into();
    sim.call(|core, now| core.save(vec![denied, report], now))
        .expect("settled calls are saved");

    // A person's approval is kept by a save that leaves it as stored, and runs.
    let answer = {
        sim.script(Reply::tool_call(
            "c2",
            "delete_file",
            json!({"path": "/tmp/y"}),
        ));
        sim.send("a", chat_request("r2", &[user("u2", "delete /tmp/y")]));
        sim.run_until_idle();
        sim.store.message_ids().last().unwrap().clone()
    };
    sim.send("a", approval("c2", true, false));
    sim.run_until_idle();
    let approved_by_person = stored_message(&sim, &answer);
    sim.call(|core, now| core.save(vec![approved_by_person], now))
        .expect("a person's approval saved unchanged is kept");
    sim.script_tool("delete_file", ToolReply::ok(json!({"deleted": "/tmp/y"})))
        .script(Reply::text("Deleted."));
    sim.call(|core, now| core.continue_last(now)).unwrap();
    sim.run_until_idle();
    assert_eq!(sim.tools.runs.len(), 1, "the approved call ran");
    assert_eq!(sim.tools.runs[0].input, json!({"path": "/tmp/y"}));
}

#[test]
fn an_idempotency_key_is_bound_to_its_messages_and_to_its_caller() {
    let mut sim = two_tabs();
    sim.script(Reply::text("One.")).script(Reply::text("Two."));
    let first = submit(&mut sim, "k-u1", "pay invoice 7", Some("job-1"));
    sim.run_until_idle();
    let repeat = submit(&mut sim, "k-u1", "pay invoice 7", Some("job-1"));
    assert_eq!(repeat.id, first.id, "a repeat returns the first submission");
    let conflict =
        sim.call(|core, now| core.submit(request("k-u2", "pay invoice 8", Some("job-1")), now));
    let error = conflict.expect_err("other messages under the same key").0;
    assert!(error.contains("idempotency key conflict"), "{error}");
    assert_eq!(sim.store.message_ids().len(), 2, "nothing stored");

    // Another caller's key of the same name is its own.
    let routed = sim
        .call(|core, now| {
            core.submit(
                SubmitRequest {
                    caller: Some("http".into()),
                    ..request("k-u3", "pay invoice 7", Some("job-1"))
                },
                now,
            )
        })
        .expect("another caller");
    assert_ne!(routed.id, first.id);
    sim.run_until_idle();
    sim.evict();
    let again =
        sim.call(|core, now| core.submit(request("k-u4", "pay invoice 9", Some("job-1")), now));
    assert!(again.is_err(), "the binding survives a restart");
    assert_eq!(stored(&sim, &routed.id).caller.as_deref(), Some("http"));
}
