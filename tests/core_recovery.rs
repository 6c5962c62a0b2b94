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

mod sim;

use std::collections::{BTreeMap, BTreeSet};

use durable_chat::core::context::CONTINUE_INSTRUCTION;
use durable_chat::core::{StreamRecord, Timer};
use serde_json::{json, Value};
use sim::*;

const RECOVERING: &str = "cf_agent_chat_recovering";
const INTERRUPTED: &str = "The tool call was interrupted before a result was recorded.";
const EXHAUSTED: &str = "The assistant was interrupted and could not recover. Please try again.";

fn location_tool() -> Value {
    json!([{"name": "getLocation", "description": "Where the user is", "parameters": {"type": "object"}}])
}

fn two_tabs() -> Sim {
    let mut sim = Sim::new();
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim
}

/// The write-ahead record of the stream `request_id` (it must be open).
fn open_stream(sim: &Sim, request_id: &str) -> StreamRecord {
    sim.store
        .open_streams
        .get(request_id)
        .unwrap_or_else(|| panic!("stream {request_id} is not open"))
        .clone()
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
        sim.store.open_streams.is_empty(),
        "{:?}",
        sim.store.open_streams
    );
    assert!(sim.store.chunks.is_empty(), "the chunk log is not empty");
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
    assert_eq!(messages[n - 2]["content"], partial.as_str());
    assert_eq!(messages[n - 1]["content"], CONTINUE_INSTRUCTION);
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
    sim.script(Reply::tool_call(
        "s1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script_tool(
        "get_weather",
        ToolReply::ok(json!({"tempC": 3})).after(5_000),
    );
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
    sim.script(Reply::tool_call("c1", "getLocation", json!({})));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where am I?")],
            json!({"clientTools": location_tool()}),
        ),
    );
    sim.run_until_idle();
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
    sim.script(Reply::tool_call(
        "c1",
        "delete_file",
        json!({"path": "/tmp/x"}),
    ));
    sim.send("a", chat_request("r1", &[user("u1", "delete /tmp/x")]));
    sim.run_until_idle();
    let answer = sim.store.message_ids()[1].clone();
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
    sim.script(Reply::tool_call(
        "c1",
        "delete_file",
        json!({"path": "/tmp/x"}),
    ));
    sim.send("a", chat_request("r1", &[user("u1", "delete /tmp/x")]));
    sim.run_until_idle();
    let answer = sim.store.message_ids()[1].clone();
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
    sim.script(Reply::tool_call("c1", "getLocation", json!({})));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where am I?")],
            json!({"clientTools": location_tool()}),
        ),
    );
    sim.run_until_idle();
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
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 2, "the partial answer is kept: {ids:?}");
    assert!(text_of(&sim.store.message(&ids[1]).unwrap()).starts_with("w0"));
    assert_no_open_stream(&sim);
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
        .config_json(durable_chat::core::ConfigKey::TerminalError)
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
        assert_eq!(
            sim.take_frames("c"),
            [
                json!({"type": RESPONSE, "id": error_id, "body": EXHAUSTED, "done": true,
                "error": true, "messageIds": ["u1"]})
            ],
            "round {round}"
        );
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
    sim.connect("c");
    let c = sim.take_frames("c");
    assert_eq!(kind(&c[0]), RESUMING, "the recovery stream is live: {c:?}");
    let rec = c[0]["id"].as_str().unwrap().to_string();
    sim.send("c", resume_ack(&rec));
    sim.run_until_idle();
    let c = sim.frames("c");
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
    sim.script(Reply::tool_calls(&[
        ("c1", "getLocation", json!({})),
        ("s1", "get_weather", json!({"city": "Oslo"})),
    ]))
    .script_tool(
        "get_weather",
        ToolReply::ok(json!({"tempC": 3})).after(5_000),
    );
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where am I and what is the weather?")],
            json!({"clientTools": location_tool()}),
        ),
    );
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
