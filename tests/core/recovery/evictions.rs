//! Chat recovery across evictions (the core dropped and rebuilt from what the
//! store holds): a turn cut mid-text is continued into the same assistant
//! message, a turn cut before its first token is retried, a server tool cut
//! mid-run becomes an error the model reads, turns waiting for a person are
//! parked (for hours and several evictions), the budget ends a turn that keeps
//! dying with a terminal error replayed to reconnecting tabs, the recovering
//! flag brackets every recovery, and the heartbeat runs exactly while a turn
//! does. Then a seeded random simulation of turns with text, server tools,
//! client tools and approvals, evicted at random effect boundaries, checked
//! for lost user messages, duplicate answers and stuck turns.

use std::collections::{BTreeMap, BTreeSet};

use crate::sim::*;
use durable_chat::core::CONTINUE_INSTRUCTION;
use durable_chat::core::{Concurrency, ConfigKey, StreamRecord, Timer};
use durable_chat::protocol::Outcome;
use durable_chat::testing::Rng;
use serde_json::{json, Value};

const RECOVERING: &str = "cf_agent_chat_recovering";
const INTERRUPTED: &str = "The tool call was interrupted before a result was recorded.";
const EXHAUSTED: &str = "The assistant was interrupted and could not recover. Please try again.";

/// The write-ahead record of the stream `request_id` (it must be open).
fn open_stream(sim: &Sim, request_id: &str) -> StreamRecord {
    sim.store
        .open_stream(request_id)
        .unwrap_or_else(|| panic!("stream {request_id} is not open"))
}

/// The text the durable chunk log of `request_id` holds.
fn logged_text(sim: &Sim, request_id: &str) -> String {
    sim.store
        .chunk_log(request_id)
        .iter()
        .filter(|c| c["type"] == "text-delta")
        .map(|c| c["delta"].as_str().unwrap().to_string())
        .collect()
}

/// `(recovering, id)` of every recovering frame a tab received, in order.
fn recovering_frames(frames: &[Value]) -> Vec<(bool, String)> {
    of_type(frames, RECOVERING)
        .iter()
        .map(|f| {
            (
                f["recovering"].as_bool().unwrap(),
                f["id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Request ids of the turns a tab saw stream, in order of their first frame.
fn request_ids(frames: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for f in of_type(frames, RESPONSE) {
        let id = f["id"].as_str().unwrap().to_string();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

fn assert_no_open_stream(sim: &Sim) {
    assert!(
        sim.store.open_stream_ids().is_empty(),
        "{:?}",
        sim.store.open_stream_ids()
    );
    assert!(!sim.store.has_chunk_rows(), "the chunk log is not empty");
}

// ---- targeted cases ----

#[test]
fn an_eviction_mid_text_is_continued_into_the_same_assistant_message() {
    let mut sim = two_tabs();
    sim.script(Reply::words(40).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "tell me a story")]));
    sim.advance(600);
    let record = open_stream(&sim, "r1");
    let partial = logged_text(&sim, "r1");
    assert!(
        partial.starts_with("w0 w1"),
        "the log holds a prefix: {partial:?}"
    );
    sim.clear_frames();

    sim.script(Reply::text("and that was all."));
    sim.evict();
    sim.run_until_idle();

    let b = sim.frames("b");
    let ids = request_ids(b);
    assert_eq!(ids.len(), 1, "one recovery turn: {ids:?}");
    let rec = &ids[0];
    assert_ne!(rec, "r1", "the recovery runs under a new request id");
    let frames = responses(b, rec);
    assert!(frames.iter().all(|f| f["continuation"] == true));
    assert_eq!(
        body(frames[0]),
        json!({"type": "start"}),
        "no new messageId"
    );
    let end = terminal(b, rec).unwrap();
    assert_eq!(end["outcome"], "completed");
    assert_eq!(end["messageIds"], json!(["u1"]));

    assert_eq!(
        recovering_frames(b),
        [(true, "r1".to_string()), (false, "r1".to_string())]
    );
    let on = position_of(b, |f| kind(f) == RECOVERING && f["recovering"] == true).unwrap();
    let off = position_of(b, |f| kind(f) == RECOVERING && f["recovering"] == false).unwrap();
    let done = position_of(b, |f| f["id"] == rec.as_str() && f["done"] == true).unwrap();
    let first = position_of(b, |f| f["id"] == rec.as_str()).unwrap();
    assert!(on < first && done < off, "the flag brackets the recovery");
    let snapshot = of_type(b, MESSAGES)[0];
    assert_eq!(
        text_of(&snapshot["messages"][1]),
        partial,
        "tabs are sent the partial first"
    );

    assert_eq!(sim.store.message_ids(), ["u1", record.message_id.as_str()]);
    let answer = sim.store.message(&record.message_id).unwrap();
    let texts: Vec<&Value> = answer["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "text")
        .collect();
    assert_eq!(texts.len(), 2);
    assert_eq!(texts[0]["text"], partial.as_str());
    assert_eq!(texts[0]["state"], "done", "the dangling text is closed");
    assert_eq!(texts[1]["text"], "and that was all.");
    assert_eq!(texts[1]["state"], "done");

    let request = sim.last_request();
    let messages = request.messages();
    let n = messages.len();
    assert_eq!(request.roles()[n - 2..], ["assistant", "user"]);
    assert_eq!(content(&messages[n - 2]), Some(partial.as_str()));
    assert_eq!(content(&messages[n - 1]), Some(CONTINUE_INSTRUCTION));
    assert_no_open_stream(&sim);
    assert!(!sim.core().is_busy());
}

#[test]
fn an_eviction_before_the_first_token_retries_the_turn_with_the_same_message_ids() {
    let mut sim = two_tabs();
    sim.script(Reply::words(5).every(100));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.advance(50);
    assert!(sim.store.chunk_log("r1").is_empty(), "nothing durable yet");
    sim.clear_frames();

    sim.script(Reply::text("Hello there."));
    sim.evict();
    sim.run_until_idle();

    assert_eq!(sim.requests().len(), 2);
    assert_eq!(sim.requests()[1].messages(), sim.requests()[0].messages());
    let b = sim.frames("b");
    let ids = request_ids(b);
    assert_eq!(ids.len(), 1);
    let retry = &ids[0];
    let frames = responses(b, retry);
    assert!(
        frames.iter().all(|f| f["continuation"] != true),
        "a retry is a fresh turn"
    );
    let start = body(frames[0]);
    assert_eq!(start["type"], "start");
    assert!(start["messageId"].is_string());
    let end = terminal(b, retry).unwrap();
    assert_eq!(end["outcome"], "completed");
    assert_eq!(end["messageIds"], json!(["u1"]));
    assert_eq!(
        recovering_frames(b),
        [(true, "r1".to_string()), (false, "r1".to_string())]
    );
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[1], start["messageId"].as_str().unwrap());
    assert_eq!(
        text_of(&sim.store.message(&ids[1]).unwrap()),
        "Hello there."
    );
    assert_no_open_stream(&sim);
}

#[test]
fn an_eviction_mid_server_tool_turns_the_call_into_an_interrupted_error_and_the_model_goes_on() {
    let mut sim = two_tabs();
    script_weather_call(&mut sim, 5_000);
    sim.send("a", chat_request("r1", &[user("u1", "weather in Oslo?")]));
    sim.advance(1_000);
    let record = open_stream(&sim, "r1");
    assert_eq!(sim.tools.runs.len(), 1);
    sim.clear_frames();

    sim.script(Reply::text("I could not get the weather."));
    sim.evict();
    sim.advance(10_000);
    sim.run_until_idle();

    assert_eq!(sim.tools.runs.len(), 1, "the cut tool is not run again");
    assert_eq!(sim.requests().len(), 2);
    assert_eq!(
        sim.last_request().tool_result("s1").as_deref(),
        Some(INTERRUPTED)
    );
    assert_eq!(sim.store.message_ids(), ["u1", record.message_id.as_str()]);
    let answer = sim.store.message(&record.message_id).unwrap();
    let part = tool_part(&answer, "s1").unwrap();
    assert_eq!(part["state"], "output-error");
    assert_eq!(part["errorText"], INTERRUPTED);
    assert_eq!(text_of(&answer), "I could not get the weather.");
    let b = sim.frames("b");
    let rec = continuation_ids(b);
    assert_eq!(rec.len(), 1);
    assert_eq!(terminal(b, &rec[0]).unwrap()["outcome"], "completed");
    assert_no_open_stream(&sim);
}

#[test]
fn a_turn_waiting_for_a_client_tool_is_parked_across_evictions_and_hours_then_continues() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
    let answer = sim.store.message_ids()[1].clone();
    sim.clear_frames();

    for _ in 0..3 {
        sim.evict();
        sim.advance(3 * 3_600_000);
    }
    sim.connect("c");
    let c = sim.take_frames("c");
    let snapshot = of_type(&c, MESSAGES)[0];
    assert_eq!(
        tool_part(&snapshot["messages"][1], "c1").unwrap()["state"],
        "input-available"
    );
    for tab in ["a", "b"] {
        assert!(sim.frames(tab).is_empty(), "{tab}: {:?}", sim.frames(tab));
    }
    assert!(of_type(&c, RECOVERING).is_empty());
    assert!(of_type(&c, RESUMING).is_empty());
    sim.send("c", resume_probe("p1"));
    assert_eq!(sim.take_frames("c").last().unwrap()["reason"], "idle");
    assert_eq!(sim.requests().len(), 1, "nothing ran");
    assert!(!sim.core().is_busy());

    sim.script(Reply::text("You are in Paris."));
    sim.send("c", tool_result("c1", json!({"city": "Paris"}), true));
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2);
    assert_eq!(
        sim.last_request().tool_result("c1").as_deref(),
        Some(r#"{"city":"Paris"}"#)
    );
    assert!(sim
        .last_request()
        .tool_names()
        .contains(&"getLocation".into()));
    let b = sim.frames("b");
    let cont = continuation_ids(b);
    assert_eq!(cont.len(), 1);
    assert_eq!(terminal(b, &cont[0]).unwrap()["outcome"], "completed");
    assert!(of_type(b, RECOVERING).is_empty());
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[1], answer);
    assert_eq!(
        tool_part(&sim.store.message(&answer).unwrap(), "c1").unwrap()["state"],
        "output-available"
    );
    assert_eq!(
        text_of(&sim.store.message(&ids[2]).unwrap()),
        "You are in Paris."
    );
    assert_no_open_stream(&sim);
}

#[test]
fn a_turn_waiting_for_an_approval_is_parked_and_an_approval_after_the_eviction_runs_the_tool() {
    let mut sim = two_tabs();
    let answer = approval_turn(&mut sim);
    sim.clear_frames();

    sim.evict();
    sim.advance(3_600_000);
    sim.evict();
    assert!(sim.frames("a").is_empty() && sim.frames("b").is_empty());
    assert!(sim.tools.runs.is_empty());

    sim.script_tool("delete_file", ToolReply::ok(json!({"deleted": "/tmp/x"})))
        .script(Reply::text("Deleted."));
    sim.send("a", approval("c1", true, true));
    sim.run_until_idle();
    assert_eq!(sim.tools.runs_of("delete_file").len(), 1);
    assert_eq!(
        sim.last_request().tool_result("c1").as_deref(),
        Some(r#"{"deleted":"/tmp/x"}"#)
    );
    let part = tool_part(&sim.store.message(&answer).unwrap(), "c1")
        .unwrap()
        .clone();
    assert_eq!(part["state"], "output-available");
    assert!(of_type(sim.frames("b"), RECOVERING).is_empty());
    assert_no_open_stream(&sim);
}

#[test]
fn an_approved_call_cut_by_an_eviction_is_not_run_twice_and_the_model_goes_on() {
    let mut sim = two_tabs();
    let answer = approval_turn(&mut sim);
    sim.script_tool(
        "delete_file",
        ToolReply::ok(json!({"deleted": "/tmp/x"})).after(2_000),
    );
    sim.send("a", approval("c1", true, true));
    sim.advance(500);
    assert_eq!(
        sim.tools.runs_of("delete_file").len(),
        1,
        "the approved call runs"
    );
    sim.clear_frames();

    sim.script(Reply::text("The deletion may not have happened."));
    sim.evict();
    sim.run_until_idle();
    sim.advance(60_000);
    assert_eq!(
        sim.tools.runs_of("delete_file").len(),
        1,
        "a call that may have run is not run again"
    );
    let part = tool_part(&sim.store.message(&answer).unwrap(), "c1")
        .unwrap()
        .clone();
    assert_eq!(part["state"], "output-error");
    assert_eq!(part["errorText"], INTERRUPTED);
    assert_eq!(
        sim.last_request().tool_result("c1").as_deref(),
        Some(INTERRUPTED)
    );
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(
        text_of(&sim.store.message(&ids[2]).unwrap()),
        "The deletion may not have happened."
    );
    let b = sim.frames("b");
    assert_eq!(recovering_frames(b).last().map(|r| r.0), Some(false));
    assert_no_open_stream(&sim);
}

#[test]
fn a_continuation_cut_before_its_first_token_is_run_again() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.script(Reply::words(5).every(200));
    sim.send("a", tool_result("c1", json!({"city": "Paris"}), true));
    sim.advance(100);
    assert_eq!(sim.requests().len(), 2, "the continuation is streaming");
    sim.clear_frames();

    sim.script(Reply::text("You are in Paris."));
    sim.evict();
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 3);
    assert_eq!(
        sim.last_request().tool_result("c1").as_deref(),
        Some(r#"{"city":"Paris"}"#)
    );
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(
        text_of(&sim.store.message(&ids[2]).unwrap()),
        "You are in Paris."
    );
    let b = sim.frames("b");
    let cont = continuation_ids(b);
    assert_eq!(cont.len(), 1);
    assert_eq!(terminal(b, &cont[0]).unwrap()["outcome"], "completed");
    assert_eq!(recovering_frames(b).last().map(|r| r.0), Some(false));
    assert_no_open_stream(&sim);
}

#[test]
fn a_continuation_owed_when_the_core_is_evicted_inside_its_coalescing_window_still_runs() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.send("a", tool_result("c1", json!({"city": "Paris"}), true));
    assert_eq!(
        sim.requests().len(),
        1,
        "the coalescing window is still open"
    );
    sim.script(Reply::text("You are in Paris."));
    sim.evict();
    sim.run_until_idle();
    sim.advance(60_000);
    assert_eq!(sim.requests().len(), 2, "exactly one continuation");
    assert_eq!(
        sim.last_request().tool_result("c1").as_deref(),
        Some(r#"{"city":"Paris"}"#)
    );
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 3);
    assert_eq!(
        text_of(&sim.store.message(&ids[2]).unwrap()),
        "You are in Paris."
    );
    assert_eq!(continuation_ids(sim.frames("b")).len(), 1);
    sim.evict();
    sim.advance(60_000);
    assert_eq!(sim.requests().len(), 2, "nothing is owed any more");
    assert!(!sim.core().is_busy());
    assert_no_open_stream(&sim);
}

#[test]
fn a_continuation_owed_behind_a_person_stays_owed_across_an_eviction_until_the_batch_completes() {
    let mut sim = two_tabs();
    sim.script(Reply::tool_calls(&[
        ("c1", "getLocation", json!({})),
        ("c2", "getLocation", json!({"precise": true})),
    ]));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where am I, precisely?")],
            json!({"clientTools": location_tool()}),
        ),
    );
    sim.run_until_idle();
    sim.send("a", tool_result("c1", json!({"city": "Paris"}), true));
    sim.evict();
    sim.advance(HOUR);
    assert_eq!(sim.requests().len(), 1, "the batch is not complete");
    sim.script(Reply::text("Paris, rue de Rivoli."));
    sim.send("b", tool_result("c2", json!({"street": "Rivoli"}), true));
    sim.run_until_idle();
    sim.advance(60_000);
    assert_eq!(sim.requests().len(), 2, "one continuation for the batch");
    assert_eq!(sim.last_request().tool_results().len(), 2);
    assert_eq!(sim.store.message_ids().len(), 3);
    assert!(!sim.core().is_busy());
}

/// Starts `r1` streaming slowly, then evicts it `n` times, each recovery
/// attempt cut after it streamed a word or two.
fn evict_repeatedly(sim: &mut Sim, n: usize) {
    sim.script(Reply::words(50).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "tell me a story")]));
    sim.advance(100);
    for _ in 0..n {
        sim.script(Reply::words(50).every(20));
        sim.evict();
        sim.advance(100);
    }
}

#[test]
fn repeated_evictions_exhaust_the_budget_with_a_terminal_error() {
    let mut sim = two_tabs();
    evict_repeatedly(&mut sim, 6);
    assert_eq!(sim.requests().len(), 6, "the first run and five recoveries");
    assert!(!sim.core().is_busy());
    let b = sim.frames("b");
    let errors: Vec<&Value> = of_type(b, RESPONSE)
        .into_iter()
        .filter(|f| f["error"] == true)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let error = errors[0];
    assert_eq!(error["body"], EXHAUSTED);
    assert_eq!(error["done"], true);
    assert_eq!(error["messageIds"], json!(["u1"]));
    let last_recovering = recovering_frames(b);
    assert_eq!(last_recovering.last().unwrap(), &(false, "r1".to_string()));
    assert_eq!(
        sim.store.config_json(ConfigKey::Recovery),
        None,
        "no budget or owed continuation is left behind"
    );
    assert_eq!(
        sim.store.config_json(ConfigKey::Continuation),
        None,
        "no owed continuation is left behind"
    );
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 2, "the partial answer is kept: {ids:?}");
    assert!(text_of(&sim.store.message(&ids[1]).unwrap()).starts_with("w0"));
    assert_no_open_stream(&sim);
    // The author hears of the turn recovery gave up on, under the request
    // id the tabs saw fail, once.
    let failed_id = error["id"].as_str().unwrap();
    let reports: Vec<_> = sim
        .responses
        .iter()
        .filter(|r| r.request_id == failed_id)
        .collect();
    assert_eq!(reports.len(), 1, "{:?}", sim.responses);
    assert_eq!(reports[0].outcome, Outcome::Error);
    assert_eq!(reports[0].error.as_deref(), Some(EXHAUSTED));
    assert_eq!(reports[0].message_ids, ["u1"]);
    assert_eq!(reports[0].answer_id.as_deref(), Some(ids[1].as_str()));
    sim.take_frames("b");
    sim.advance(3_600_000);
    assert_eq!(sim.requests().len(), 6, "nothing more runs");
    assert!(sim.frames("b").is_empty());
}

#[test]
fn an_exhausted_turn_is_replayed_to_reconnecting_tabs_until_a_new_turn_is_accepted() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.disconnect("a");
    evict_repeatedly(&mut sim, 6);
    assert!(!sim.core().is_busy());
    let error_id = sim
        .store
        .config_json(ConfigKey::TerminalError)
        .expect("the terminal error is recorded")["requestId"]
        .as_str()
        .unwrap()
        .to_string();

    for round in 0..2 {
        sim.connect("c");
        sim.take_frames("c");
        sim.send("c", resume_probe("p1"));
        assert_eq!(
            sim.take_frames("c"),
            [json!({"type": RESUMING, "id": error_id, "probeId": "p1"})],
            "round {round}"
        );
        sim.send("c", resume_ack(&error_id));
        let c = sim.take_frames("c");
        let (last, replayed) = c.split_last().expect("the ACK is answered");
        assert!(
            replayed
                .iter()
                .all(|f| f["id"] == error_id.as_str() && f["replay"] == true && f["done"] == false),
            "round {round}: only the failed stream's chunks replay first: {replayed:?}"
        );
        assert_eq!(last["type"], RESPONSE);
        assert_eq!(last["id"], error_id.as_str());
        assert_eq!(last["body"], EXHAUSTED, "round {round}");
        assert_eq!(last["done"], true);
        assert_eq!(last["error"], true);
        assert_eq!(last["messageIds"], json!(["u1"]));
        sim.disconnect("c");
        sim.evict();
    }

    sim.connect("c");
    sim.script(Reply::text("Let us try again."));
    let history = sim.transcript();
    let mut messages = history.clone();
    messages.push(user("u2", "again please"));
    sim.send("c", chat_request("r2", &messages));
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("c"), "r2").unwrap()["outcome"],
        "completed"
    );
    sim.send("c", resume_probe("p2"));
    assert_eq!(sim.take_frames("c").last().unwrap()["reason"], "idle");
}

#[test]
fn the_recovering_flag_brackets_each_recovery_and_a_tab_joining_meanwhile_is_offered_it() {
    let mut sim = two_tabs();
    evict_repeatedly(&mut sim, 2);
    let rec = request_ids(sim.frames("b")).last().unwrap().clone();
    sim.connect("c");
    let c = sim.take_frames("c");
    assert_eq!(
        kinds(&c),
        [RESUMING, MESSAGES, RECOVERING, IDENTITY, MCP],
        "the cut stream is offered; the transcript with the partial comes with it: {c:?}"
    );
    assert_eq!(c[1]["messages"], json!(sim.transcript()));
    let cut = c[0]["id"].as_str().unwrap().to_string();
    assert_ne!(
        cut, rec,
        "the tab is offered the cut stream, not the recovery's"
    );
    sim.send("c", resume_ack(&cut));
    sim.run_until_idle();
    let c = sim.frames("c");
    assert_eq!(terminal(c, &cut).unwrap()["outcome"], "aborted");
    assert_eq!(terminal(c, &rec).unwrap()["outcome"], "completed");
    assert_eq!(recovering_frames(c), [(false, "r1".to_string())]);
    let b = sim.frames("b");
    let flags = recovering_frames(b);
    assert_eq!(
        flags,
        [
            (true, "r1".to_string()),
            (true, "r1".to_string()),
            (false, "r1".to_string())
        ],
        "every instance announces the recovery of the same root; one end"
    );
    assert_eq!(sim.store.message_ids().len(), 2);
    assert_no_open_stream(&sim);
}

#[test]
fn a_recovery_cut_again_while_it_waits_for_a_person_clears_the_recovering_flag() {
    let mut sim = two_tabs();
    sim.script(Reply::words(50).every(20));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where am I and what is the weather?")],
            json!({"clientTools": location_tool()}),
        ),
    );
    sim.advance(100);
    sim.script(Reply::tool_calls(&[
        ("c1", "getLocation", json!({})),
        ("s1", "get_weather", json!({"city": "Oslo"})),
    ]))
    .script_tool(
        "get_weather",
        ToolReply::ok(json!({"tempC": 3})).after(5_000),
    );
    sim.evict();
    sim.advance(1_000);
    assert_eq!(sim.tools.runs.len(), 1, "the recovery runs the server tool");
    sim.evict();
    sim.advance(60_000);
    let b = sim.frames("b");
    assert_eq!(
        recovering_frames(b).last(),
        Some(&(false, "r1".to_string())),
        "{:?}",
        recovering_frames(b)
    );
    assert!(!sim.core().is_busy());
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 2);
    let answer = sim.store.message(&ids[1]).unwrap();
    assert_eq!(
        tool_part(&answer, "c1").unwrap()["state"],
        "input-available"
    );
    assert_eq!(tool_part(&answer, "s1").unwrap()["errorText"], INTERRUPTED);

    sim.script(Reply::text("You are in Paris; no weather."));
    sim.send("a", tool_result("c1", json!({"city": "Paris"}), true));
    sim.run_until_idle();
    assert_eq!(
        sim.last_request().tool_result("s1").as_deref(),
        Some(INTERRUPTED)
    );
    assert_eq!(sim.store.message_ids().len(), 3);
    assert_no_open_stream(&sim);
}

#[test]
fn a_client_result_sent_while_a_sibling_server_tool_runs_survives_an_eviction() {
    let mut sim = two_tabs();
    mixed_tools_turn(&mut sim);
    sim.advance(1_000);
    sim.send("a", tool_result("c1", json!({"city": "Paris"}), true));
    sim.advance(100);
    sim.script(Reply::text("You are in Paris; no weather."));
    sim.evict();
    sim.run_until_idle();
    sim.advance(60_000);
    let request = sim.last_request();
    assert_eq!(
        sim.requests().len(),
        2,
        "the model goes on after the eviction"
    );
    assert_eq!(
        request.tool_result("c1").as_deref(),
        Some(r#"{"city":"Paris"}"#),
        "the result the tab sent is kept"
    );
    assert_eq!(request.tool_result("s1").as_deref(), Some(INTERRUPTED));
    assert!(!sim.core().is_busy());
    assert_no_open_stream(&sim);
}

#[test]
fn an_approval_given_while_a_sibling_server_tool_runs_survives_an_eviction() {
    let mut sim = two_tabs();
    sim.script(Reply::tool_calls(&[
        ("d1", "delete_file", json!({"path": "/tmp/x"})),
        ("s1", "get_weather", json!({"city": "Oslo"})),
    ]))
    .script_tool(
        "get_weather",
        ToolReply::ok(json!({"tempC": 3})).after(5_000),
    )
    .script_tool("delete_file", ToolReply::ok(json!({"deleted": "/tmp/x"})));
    sim.send(
        "a",
        chat_request("r1", &[user("u1", "delete /tmp/x, then the weather")]),
    );
    sim.advance(1_000);
    sim.send("a", approval("d1", true, true));
    sim.advance(100);
    sim.script(Reply::text("Deleted; no weather."));
    sim.evict();
    sim.run_until_idle();
    sim.advance(60_000);
    assert_eq!(
        sim.tools.runs_of("delete_file").len(),
        1,
        "the approved call runs once, without asking again"
    );
    let request = sim.last_request();
    assert_eq!(
        sim.requests().len(),
        2,
        "the model goes on after the eviction"
    );
    assert_eq!(
        request.tool_result("d1").as_deref(),
        Some(r#"{"deleted":"/tmp/x"}"#)
    );
    assert_eq!(request.tool_result("s1").as_deref(), Some(INTERRUPTED));
    let answer = &sim.transcript()[1];
    assert_eq!(
        tool_part(answer, "d1").unwrap()["state"],
        "output-available"
    );
    assert!(!sim.core().is_busy());
    assert_no_open_stream(&sim);
    assert_eq!(
        sim.store.config_json(ConfigKey::StreamApprovals),
        None,
        "nothing of the approval is left behind"
    );
}

#[test]
fn a_turn_evicted_with_no_tab_connected_is_recovered_on_wake_and_shown_on_connect() {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.script(Reply::words(30).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.advance(100);
    sim.disconnect("a");
    sim.script(Reply::text("the end."));
    sim.evict();
    sim.run_until_idle();
    assert!(!sim.core().is_busy());
    sim.connect("a");
    let a = sim.take_frames("a");
    let snapshot = of_type(&a, MESSAGES)[0];
    let answer = &snapshot["messages"][1];
    assert!(text_of(answer).starts_with("w0"));
    assert!(text_of(answer).ends_with("the end."));
    assert!(of_type(&a, RECOVERING).is_empty(), "the recovery is over");
    assert!(sim.misdelivered.is_empty());
}

#[test]
fn the_heartbeat_keeps_firing_while_a_turn_runs_and_stops_after() {
    let mut sim = two_tabs();
    sim.script(Reply::words(30).every(1_000));
    sim.send("a", chat_request("r1", &[user("u1", "slow please")]));
    let heartbeat = |sim: &Sim| {
        sim.armed()
            .into_iter()
            .find(|(t, _)| *t == Timer::Heartbeat)
            .map(|(_, at)| at)
    };
    assert_eq!(heartbeat(&sim), Some(10_000));
    sim.advance(15_000);
    assert_eq!(heartbeat(&sim), Some(20_000), "it fired and re-armed");
    sim.advance(10_000);
    assert_eq!(heartbeat(&sim), Some(30_000));
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
    assert_eq!(heartbeat(&sim), None, "no alarm once the turn ended");
    sim.advance(60_000);
    assert_eq!(heartbeat(&sim), None);
    assert!(sim.armed().is_empty());
}

// ---- the randomized simulation ----
//
// Each seed drives two tabs through a few turns (one after the other, as a
// person does) whose model replies mix text, server tool calls, browser tool
// calls and calls that need approval, with the occasional model failure. The
// tabs answer what they are asked after a random delay, acknowledge resume
// offers, and tab `b` drops and reconnects now and then. The core is evicted
// after random events (and sometimes between a question and its answer,
// hours apart). When everything is quiet the invariants are checked.
//
// No duplicate answer, precisely: a person's turn is answered by one assistant
// message, continued in place by recoveries. Each automatic continuation
// after a browser tool result or an approval adds one more message, so an
// assistant message may follow another in the same turn only if the earlier
// one holds a call answered by a person and all its calls are settled, and a
// turn has at most one message per answer the tabs sent plus one.
//
// Run one seed with its event log: `SIM_SEED=17 cargo test --test
// core_recovery random -- --nocapture`; `SIM_SEEDS=n` sets how many run.

const CLIENT_TOOL: &str = "getLocation";
const APPROVAL_TOOL: &str = "delete_file";
const SERVER_TOOL: &str = "get_weather";
const HOUR: u64 = 3_600_000;

#[derive(Debug)]
enum Act {
    Send,
    Answer { call: String, approval: bool },
    Ack { id: String },
    Drop,
    Rejoin,
}

#[derive(Debug)]
struct Planned {
    at: u64,
    tab: &'static str,
    act: Act,
}

struct World {
    sim: Sim,
    rng: Rng,
    log: Vec<String>,
    turns: usize,
    /// `(id, text)` of every user message the tabs sent, in order.
    sent: Vec<(String, String)>,
    planned: Vec<Planned>,
    /// Calls the tabs were asked to answer (id → needs approval).
    known: BTreeMap<String, bool>,
    /// Calls a tab answered (or will: the answer is planned).
    answered: BTreeSet<String>,
    /// Answers planned but not sent yet.
    in_flight: BTreeSet<String>,
    answers: Vec<usize>,
    /// Error texts the tabs were shown, by turn.
    errors: Vec<Vec<String>>,
    /// The outcome of the last live terminal frame tab `a` saw, by turn.
    outcomes: Vec<Option<String>>,
    recovering: BTreeMap<&'static str, bool>,
    evictions_left: u32,
    evict_odds: u64,
    /// The person walks away from the last turn's questions.
    walk_away: bool,
    tool_replies: u32,
    next_call: u32,
    b_online: bool,
}

fn sim_config(rng: &mut Rng) -> durable_chat::core::CoreConfig {
    let mut config = demo_config();
    config.settings.flush.max_chunks = rng.pick(&[1, 3, 10, 64]);
    config.settings.flush.max_delay_ms = rng.pick(&[20, 100, 500]);
    config
}

impl World {
    fn new(seed: u64) -> World {
        let mut rng = Rng::new(seed);
        let mut sim = Sim::with_config(sim_config(&mut rng));
        sim.connect("a");
        sim.connect("b");
        let turns = 1 + rng.below(4) as usize;
        let evictions_left = rng.below(7) as u32;
        let evict_odds = rng.pick(&[3, 6, 12, 25]);
        let walk_away = rng.one_in(5);
        // The agent's hooks take time, as they do in a deployment, so an
        // eviction can cut a turn while one runs.
        sim.preparer.delay_ms = rng.pick(&[0, 0, 40, 400]);
        sim.decider.delay_ms = rng.pick(&[0, 0, 40, 400]);
        sim.rewriter.delay_ms = rng.pick(&[0, 0, 40, 400]);
        sim.error_decider.delay_ms = rng.pick(&[0, 40]);
        World {
            sim,
            rng,
            log: Vec::new(),
            turns,
            sent: Vec::new(),
            planned: Vec::new(),
            known: BTreeMap::new(),
            answered: BTreeSet::new(),
            in_flight: BTreeSet::new(),
            answers: Vec::new(),
            errors: Vec::new(),
            outcomes: Vec::new(),
            recovering: BTreeMap::new(),
            evictions_left,
            evict_odds,
            walk_away,
            tool_replies: 0,
            next_call: 0,
            b_online: true,
        }
    }

    fn note(&mut self, what: String) {
        self.log.push(format!("t={:>9} {what}", self.sim.now));
    }

    fn plan(&mut self, delay: u64, tab: &'static str, act: Act) {
        let at = self.sim.now + delay;
        self.planned.push(Planned { at, tab, act });
    }

    fn call_id(&mut self) -> String {
        self.next_call += 1;
        format!("t{}", self.next_call)
    }

    // ---- the scripted world ----

    fn model_reply(&mut self) -> Reply {
        let every = self.rng.pick(&[0, 5, 20, 60]);
        let words = 1 + self.rng.below(16) as usize;
        let roll = if self.tool_replies >= 3 {
            0
        } else {
            self.rng.below(100)
        };
        let tool = |world: &mut World, name: &str| {
            let id = world.call_id();
            let args = match name {
                SERVER_TOOL => json!({"city": "Oslo"}),
                APPROVAL_TOOL => json!({"path": format!("/tmp/{id}")}),
                _ => json!({"precise": true}),
            };
            (id, name.to_string(), args)
        };
        let calls = match roll {
            0..=44 => return Reply::words(words).every(every),
            45..=89 => {
                self.tool_replies += 1;
                let names: Vec<&str> = match roll {
                    45..=59 => vec![SERVER_TOOL],
                    60..=71 => vec![CLIENT_TOOL],
                    72..=79 => vec![APPROVAL_TOOL],
                    _ => {
                        let all = [SERVER_TOOL, CLIENT_TOOL, APPROVAL_TOOL];
                        vec![self.rng.pick(&all), self.rng.pick(&all)]
                    }
                };
                names.iter().map(|n| tool(self, n)).collect::<Vec<_>>()
            }
            90..=94 => return Reply::http_error(503, "503 the model is overloaded"),
            _ => {
                return Reply::words(words)
                    .every(every)
                    .then_fail("stream reset by peer")
            }
        };
        let mut reply = if self.rng.one_in(3) {
            Reply::text("Let me check.")
        } else {
            Reply::tool_calls(&[])
        };
        for (id, name, args) in calls {
            reply = reply.and_tool_call(&id, &name, args);
        }
        reply.every(every)
    }

    fn tool_reply(&mut self, name: &str) -> ToolReply {
        let delay = self.rng.pick(&[0, 10, 300, 2_000, 8_000]);
        if self.rng.one_in(8) {
            ToolReply::err(&format!("{name} failed")).after(delay)
        } else {
            ToolReply::ok(json!({"from": name, "n": self.rng.below(100)})).after(delay)
        }
    }

    /// Keeps the model and the server tools scripted ahead of any call.
    fn refill(&mut self) {
        while self.sim.model.replies.len() < 3 {
            let reply = self.model_reply();
            self.sim.model.replies.push_back(reply);
        }
        for name in [SERVER_TOOL, APPROVAL_TOOL] {
            while self.sim.tools.scripts.get(name).map_or(0, |q| q.len()) < 3 {
                let reply = self.tool_reply(name);
                self.sim.script_tool(name, reply);
            }
        }
    }

    // ---- the tabs ----

    fn online(&self, tab: &str) -> bool {
        tab == "a" || self.b_online
    }

    /// Reads what each tab received: questions to answer, resume offers to
    /// acknowledge, errors shown and the recovering flag.
    fn absorb(&mut self) {
        for tab in ["a", "b"] {
            for frame in self.sim.take_frames(tab) {
                match kind(&frame) {
                    RESPONSE => self.absorb_response(tab, &frame),
                    MESSAGES => {
                        for m in frame["messages"].as_array().cloned().unwrap_or_default() {
                            self.absorb_message(&m);
                        }
                    }
                    UPDATED => self.absorb_message(&frame["message"].clone()),
                    RECOVERING => {
                        let on = frame["recovering"] == true;
                        self.note(format!("{tab} <- recovering {on} {}", frame["id"]));
                        self.recovering.insert(tab, on);
                    }
                    RESUMING => {
                        let id = frame["id"].as_str().unwrap_or("").to_string();
                        self.note(format!("{tab} <- resuming {id}"));
                        let delay = self.rng.below(200);
                        self.plan(delay, tab, Act::Ack { id });
                    }
                    _ => {}
                }
            }
        }
    }

    fn absorb_response(&mut self, tab: &'static str, frame: &Value) {
        let id = frame["id"].as_str().unwrap_or("");
        let text = frame["body"].as_str().unwrap_or("");
        if frame["error"] == true {
            self.note(format!("{tab} <- error {id}: {text}"));
            assert!(
                !text.is_empty(),
                "an error frame without a message: {frame}"
            );
            if tab == "a" {
                let turn = self.sent.len().saturating_sub(1);
                if let Some(errors) = self.errors.get_mut(turn) {
                    errors.push(text.to_string());
                }
            }
            return;
        }
        if frame["done"] == true {
            if tab == "a" {
                let outcome = frame["outcome"].as_str().unwrap_or("-");
                let replay = frame["replay"] == true;
                let tag = if replay { " replay" } else { "" };
                self.note(format!("{tab} <- done {id} {outcome}{tag}"));
                if !replay {
                    if let Some(last) = self.outcomes.last_mut() {
                        *last = Some(outcome.to_string());
                    }
                }
            }
            return;
        }
        if !text.contains("\"tool-") {
            return;
        }
        let Ok(chunk) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let call = chunk["toolCallId"].as_str().unwrap_or("").to_string();
        match chunk["type"].as_str().unwrap_or("") {
            "tool-input-available" if chunk["toolName"] == CLIENT_TOOL => self.learn(call, false),
            "tool-approval-request" => self.learn(call, true),
            _ => {}
        }
    }

    fn absorb_message(&mut self, message: &Value) {
        for part in message["parts"].as_array().cloned().unwrap_or_default() {
            let call = part["toolCallId"].as_str().unwrap_or("").to_string();
            match part["state"].as_str().unwrap_or("") {
                "input-available" if part["type"] == format!("tool-{CLIENT_TOOL}") => {
                    self.learn(call, false)
                }
                "approval-requested" if self.answered.contains(&call) => self.ask_again(call),
                "approval-requested" => self.learn(call, true),
                _ => {}
            }
        }
    }

    /// An approval the person gave is shown as asked again (it landed on an
    /// answer still streaming and was lost with the isolate): they approve again.
    fn ask_again(&mut self, call: String) {
        if self.in_flight.contains(&call) {
            return;
        }
        self.note(format!("the approval prompt for {call} is shown again"));
        self.in_flight.insert(call.clone());
        let delay = self.rng.pick(&[0, 500, 3_000]);
        self.plan(
            delay,
            "a",
            Act::Answer {
                call,
                approval: true,
            },
        );
    }

    /// A tab shows a question: the person answers it once, after a while.
    fn learn(&mut self, call: String, approval: bool) {
        if self.known.contains_key(&call) {
            return;
        }
        self.known.insert(call.clone(), approval);
        if self.walk_away && self.sent.len() == self.turns {
            self.note(format!("the person leaves {call} unanswered"));
            return;
        }
        self.answered.insert(call.clone());
        self.in_flight.insert(call.clone());
        let delay = self.rng.pick(&[0, 30, 500, 3_000, 20_000]);
        let tab = self.rng.pick(&["a", "b"]);
        self.plan(delay, tab, Act::Answer { call, approval });
    }

    fn perform(&mut self, planned: Planned) {
        let mut tab = planned.tab;
        if !self.online(tab) {
            match planned.act {
                Act::Ack { .. } => return,
                Act::Rejoin => {}
                _ => tab = "a",
            }
        }
        match planned.act {
            Act::Send => {
                let k = self.sent.len() + 1;
                let (id, text) = (format!("u{k}"), format!("question {k}"));
                self.note(format!("{tab} -> send r{k} {id}"));
                let mut messages = self.sim.transcript();
                messages.push(user(&id, &text));
                self.sent.push((id, text));
                self.answers.push(0);
                self.errors.push(Vec::new());
                self.outcomes.push(None);
                self.tool_replies = 0;
                let frame = chat_request_with(
                    &format!("r{k}"),
                    &messages,
                    json!({"clientTools": [{"name": CLIENT_TOOL, "description": "Where the user is"}]}),
                );
                self.sim.send(tab, frame);
            }
            Act::Answer { call, approval } => {
                self.in_flight.remove(&call);
                if let Some(n) = self.answers.last_mut() {
                    *n += 1;
                }
                let frame = if approval {
                    let approve = !self.rng.one_in(3);
                    self.note(format!("{tab} -> approve {call} {approve}"));
                    crate::sim::approval(&call, approve, true)
                } else {
                    self.note(format!("{tab} -> result {call}"));
                    tool_result(&call, json!({"city": "Paris"}), true)
                };
                self.sim.send(tab, frame);
            }
            Act::Ack { id } => {
                self.note(format!("{tab} -> ack {id}"));
                self.sim.send(tab, resume_ack(&id));
            }
            Act::Drop => {
                self.note("b drops".into());
                self.b_online = false;
                self.sim.disconnect("b");
                let delay = self.rng.pick(&[0, 100, 2_000, 30_000]);
                self.plan(delay, "b", Act::Rejoin);
            }
            Act::Rejoin => {
                self.note("b reconnects and probes".into());
                self.b_online = true;
                // A new connection starts without the flag; the core repeats it if it still holds.
                self.recovering.insert("b", false);
                self.sim.connect("b");
                self.sim.send("b", resume_probe("probe"));
            }
        }
    }

    fn evict(&mut self) {
        self.evictions_left = self.evictions_left.saturating_sub(1);
        self.refill();
        self.note(format!(
            "EVICT (open streams {:?})",
            self.sim.store.open_stream_ids()
        ));
        self.sim.evict();
    }

    // ---- the run ----

    fn run(&mut self) {
        self.plan(0, "a", Act::Send);
        for _ in 0..100_000 {
            self.refill();
            self.absorb();
            let next_planned = self
                .planned
                .iter()
                .enumerate()
                .min_by_key(|(_, p)| p.at)
                .map(|(i, p)| (i, p.at));
            let due = self.sim.next_due();
            let core_first = due.is_some_and(|d| next_planned.is_none_or(|(_, at)| d <= at));
            match (core_first, next_planned) {
                (true, _) => {
                    let requests = self.sim.requests().len();
                    self.sim.step();
                    if self.sim.requests().len() > requests {
                        self.note(format!("model call {}", self.sim.requests().len()));
                    }
                    if self.evictions_left > 0 && self.rng.one_in(self.evict_odds) {
                        self.evict();
                    }
                }
                (false, Some((index, at))) => {
                    let planned = self.planned.remove(index);
                    if self.sim.next_due().is_none() && self.evictions_left > 0 {
                        // Quiet while a person takes their time: maybe hours pass, maybe evictions.
                        if self.rng.one_in(4) {
                            self.evict();
                        }
                        if self.rng.one_in(4) {
                            let hours = 1 + self.rng.below(5);
                            self.note(format!("{hours} h pass"));
                            self.sim.advance(hours * HOUR);
                        }
                    }
                    self.sim.advance(at.saturating_sub(self.sim.now));
                    self.perform(planned);
                    if self.evictions_left > 0 && self.rng.one_in(self.evict_odds) {
                        self.evict();
                    }
                    if self.rng.one_in(20) && self.b_online {
                        let delay = self.rng.below(1_000);
                        self.plan(delay, "b", Act::Drop);
                    }
                }
                (false, None) => {
                    if self.sent.len() < self.turns {
                        let delay = self.rng.pick(&[0, 100, 5_000]);
                        let tab = self.rng.pick(&["a", "b"]);
                        self.plan(delay, tab, Act::Send);
                        continue;
                    }
                    // Quiet: a parked turn must stay parked through more evictions and hours.
                    let requests = self.sim.requests().len();
                    for _ in 0..2 {
                        self.sim.evict();
                        self.sim.advance(2 * HOUR);
                        self.absorb();
                    }
                    if self.sim.next_due().is_none() && self.planned.is_empty() {
                        assert_eq!(
                            self.sim.requests().len(),
                            requests,
                            "the model was called while the agent was idle"
                        );
                        return;
                    }
                }
            }
        }
        panic!("the run did not settle");
    }

    // ---- the invariants ----

    fn check(&self) {
        let store = &self.sim.store;
        assert!(
            store.open_stream_ids().is_empty() && !store.has_chunk_rows(),
            "a stream is still open: {:?}",
            store.open_stream_ids()
        );
        assert!(!self.sim.core().is_busy(), "the core is still busy");
        assert_eq!(
            store.config_json(ConfigKey::Recovery),
            None,
            "recovery state is left in the store"
        );
        assert_eq!(
            store.config_json(ConfigKey::Continuation),
            None,
            "an owed continuation is left in the store"
        );
        assert_eq!(
            self.sim.transcript(),
            store.transcript(),
            "the core and the store disagree"
        );
        let stored = store.messages();
        let messages: Vec<&UIMessage> = stored.iter().collect();
        let users: Vec<(String, String)> = messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| (m.id.clone(), m.text()))
            .collect();
        assert_eq!(
            users, self.sent,
            "user messages lost, repeated or reordered"
        );
        let ids: BTreeSet<&str> = messages.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids.len(), messages.len(), "a message id is stored twice");
        assert!(
            matches!(messages.first(), Some(m) if m.role == Role::User),
            "an answer before any question"
        );

        let mut turn = 0;
        let mut start = 0;
        while start < messages.len() {
            let end = messages[start + 1..]
                .iter()
                .position(|m| m.role == Role::User)
                .map_or(messages.len(), |p| start + 1 + p);
            let answers = &messages[start + 1..end];
            self.check_turn(turn, answers);
            turn += 1;
            start = end;
        }
        for (tab, on) in &self.recovering {
            assert!(!on, "tab {tab} was left with the recovering flag on");
        }
        assert!(
            self.sim.misdelivered.is_empty(),
            "{:?}",
            self.sim.misdelivered
        );
    }

    fn check_turn(&self, turn: usize, answers: &[&UIMessage]) {
        let person_answered = |m: &UIMessage| {
            m.tool_parts()
                .any(|t| t.tool_name == CLIENT_TOOL || t.tool_name == APPROVAL_TOOL)
                && m.tool_parts().all(|t| t.state.is_settled())
        };
        for pair in answers.windows(2) {
            assert!(
                person_answered(pair[0]),
                "turn {turn}: answer {} follows {} which no person's answer continued",
                pair[1].id,
                pair[0].id
            );
        }
        assert!(
            answers.len() <= 1 + self.answers[turn],
            "turn {turn}: {} answers for {} person's answers",
            answers.len(),
            self.answers[turn]
        );
        let completed = self.outcomes[turn].as_deref() == Some("completed")
            && answers.last().is_some_and(|m| {
                let last = m.parts.iter().rev().find(|p| !matches!(p, Part::StepStart));
                m.tool_parts().all(|t| t.state.is_settled())
                    && matches!(last, Some(Part::Text(t)) if t.state != Some(TextState::Streaming))
            });
        let failed = !self.errors[turn].is_empty();
        let parked = answers.last().is_some_and(|m| {
            let waiting: Vec<&str> = m
                .tool_parts()
                .filter(|t| t.state.awaits_human())
                .map(|t| t.tool_call_id.as_str())
                .collect();
            !waiting.is_empty()
                && waiting
                    .iter()
                    .all(|id| self.known.contains_key(*id) && !self.answered.contains(*id))
        });
        assert!(
            completed || failed || parked,
            "turn {turn} neither completed, failed with a message, nor waits for a person: {}",
            serde_json::to_string(&answers).unwrap()
        );
    }
}

use durable_chat::protocol::{Part, Role, TextState, UIMessage};

/// What the summary counts: runs whose event log shows each situation.
const COVERAGE: [(&str, &str); 9] = [
    ("a recovery", "recovering true"),
    (
        "an eviction while idle or parked",
        "EVICT (open streams [])",
    ),
    ("a browser tool result", "-> result"),
    ("an approval", "-> approve"),
    ("a model failure", "overloaded"),
    ("an exhausted budget", "could not recover"),
    ("a person walking away", "unanswered"),
    ("a lost approval asked again", "shown again"),
    ("a reconnect", "reconnects"),
];

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
}

/// Runs one seed; on failure returns the panic message and the event log.
fn run_seed(seed: u64) -> Result<World, (String, Vec<String>)> {
    let mut world = World::new(seed);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.run();
        world.check();
    }));
    match outcome {
        Ok(()) => Ok(world),
        Err(payload) => Err((panic_text(&*payload), std::mem::take(&mut world.log))),
    }
}

#[test]
fn random_evictions_never_lose_a_message_duplicate_an_answer_or_leave_a_turn_stuck() {
    if let Some(seed) = std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()) {
        match run_seed(seed) {
            Ok(world) => println!("seed {seed} passed:\n{}", world.log.join("\n")),
            Err((error, log)) => panic!("seed {seed}: {error}\n{}", log.join("\n")),
        }
        return;
    }
    let seeds: u64 = std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4)) as u64;
    let started = std::time::Instant::now();
    type Failure = (u64, String, Vec<String>);
    // Each thread runs every `threads`-th seed; a world never leaves its thread.
    let results: Vec<(usize, usize, Vec<Failure>, [usize; COVERAGE.len()])> =
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|first| {
                    scope.spawn(move || {
                        let (mut evictions, mut requests, mut failures) = (0, 0, Vec::new());
                        let mut seen = [0usize; COVERAGE.len()];
                        for seed in (first..seeds).step_by(threads as usize) {
                            match run_seed(seed) {
                                Ok(world) => {
                                    evictions +=
                                        world.log.iter().filter(|l| l.contains("EVICT")).count();
                                    requests += world.sim.requests().len();
                                    for (i, (_, marker)) in COVERAGE.iter().enumerate() {
                                        if world.log.iter().any(|l| l.contains(marker)) {
                                            seen[i] += 1;
                                        }
                                    }
                                }
                                Err((error, log)) => failures.push((seed, error, log)),
                            }
                            if failures.len() >= 10 {
                                break;
                            }
                        }
                        (evictions, requests, failures, seen)
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
    let evictions: usize = results.iter().map(|r| r.0).sum();
    let requests: usize = results.iter().map(|r| r.1).sum();
    let seen: Vec<String> = COVERAGE
        .iter()
        .enumerate()
        .map(|(i, (name, _))| format!("{name} {}", results.iter().map(|r| r.3[i]).sum::<usize>()))
        .collect();
    let mut failures: Vec<Failure> = results.into_iter().flat_map(|r| r.2).collect();
    failures.sort_by_key(|f| f.0);
    println!(
        "{seeds} seeds on {threads} threads, {evictions} random evictions, {requests} model calls in {:?}",
        started.elapsed()
    );
    println!("runs that saw: {}", seen.join(", "));
    if let Some((seed, error, log)) = failures.first() {
        let list: Vec<String> = failures
            .iter()
            .map(|(s, e, _)| format!("  seed {s}: {}", e.lines().next().unwrap_or("")))
            .collect();
        panic!(
            "{} failing seeds:\n{}\n\nfirst failure, seed {seed}: {error}\nevent log:\n{}",
            failures.len(),
            list.join("\n"),
            log.join("\n")
        );
    }
}

#[test]
fn a_submit_queued_behind_a_cut_turn_survives_the_eviction_and_is_answered() {
    let mut sim = two_tabs();
    sim.script(Reply::words(10).every(100));
    sim.send("a", chat_request("r1", &[user("u1", "first")]));
    sim.advance(350);
    sim.send(
        "b",
        chat_request("r2", &[user("u1", "first"), user("u2", "second")]),
    );
    assert!(
        sim.store.config(ConfigKey::Queue).is_some(),
        "the accepted turn is written down"
    );
    sim.script(Reply::text("Second answer."));
    sim.evict();
    sim.run_until_idle();
    let transcript = sim.transcript();
    let roles: Vec<&str> = transcript
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert!(
        text_of(&transcript[1]).starts_with("w0"),
        "the cut answer is kept in its place"
    );
    assert_eq!(transcript[2]["id"], "u2");
    assert_eq!(text_of(&transcript[3]), "Second answer.");
    assert_eq!(
        sim.requests().len(),
        2,
        "the user moved on: the cut turn is not continued, the queued one runs"
    );
    assert!(
        sim.store.config(ConfigKey::Queue).is_none(),
        "nothing is left waiting"
    );
}

#[test]
fn a_queued_turn_cancelled_before_an_eviction_stays_cancelled() {
    let mut sim = two_tabs();
    sim.script(Reply::words(10).every(100));
    sim.send("a", chat_request("r1", &[user("u1", "first")]));
    sim.advance(150);
    sim.send(
        "b",
        chat_request("r2", &[user("u1", "first"), user("u2", "second")]),
    );
    sim.send("b", cancel("r2"));
    sim.evict();
    sim.advance(60_000);
    sim.run_until_idle();
    assert_eq!(
        sim.requests().len(),
        1,
        "nothing runs for the cancelled turn"
    );
    let last = sim.transcript().last().cloned().unwrap_or_default();
    assert_eq!(last["id"], "u2", "the cancelled message stays unanswered");
}

#[test]
fn a_debounced_turn_waiting_out_its_window_runs_after_an_eviction() {
    let mut sim = Sim::with(|c| c.settings.concurrency = Concurrency::Debounce { ms: 500 });
    sim.connect("a");
    sim.script(Reply::words(10).every(100));
    sim.send("a", chat_request("r1", &[user("u1", "first")]));
    sim.advance(1_000);
    sim.send(
        "a",
        chat_request("r2", &[user("u1", "first"), user("u2", "second")]),
    );
    sim.advance(200);
    assert_eq!(sim.requests().len(), 1, "still inside the quiet window");
    sim.script(Reply::text("Second answer."));
    sim.evict();
    sim.advance(1_000);
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 2);
    let transcript = sim.transcript();
    assert_eq!(text_of(transcript.last().unwrap()), "Second answer.");
    let started = sim.requests()[1].at;
    assert!(
        started >= 1_500,
        "not before the window ends (started at {started})"
    );
}
