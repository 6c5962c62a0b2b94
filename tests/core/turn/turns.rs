//! Text turns of the core, driven through the simulated host: connect
//! frames, the idle probe, streaming, model errors, cancel, clear,
//! regenerate, malformed frames and a restart that keeps history.

use crate::sim::*;
use serde_json::{json, Value};

fn chunk_seqs(frames: &[Value], id: &str) -> Vec<u64> {
    live_chunks(frames, id)
        .iter()
        .map(|f| f["seq"].as_u64().expect("chunk frame has seq"))
        .collect()
}

#[test]
fn connecting_sends_the_transcript_then_identity_then_mcp_servers() {
    let mut sim = Sim::new();
    sim.connect("a");
    let frames = sim.frames("a");
    assert_eq!(kinds(frames), [MESSAGES, IDENTITY, MCP]);
    assert_eq!(
        frames[0],
        json!({"type": MESSAGES, "messages": [], "connect": true})
    );
    assert_eq!(
        frames[1],
        json!({"type": IDENTITY, "name": "room-1", "agent": "chat-agent"})
    );
    assert_eq!(
        frames[2],
        json!({"type": MCP, "mcp": {"servers": {}, "tools": [], "prompts": [], "resources": []}})
    );
}

#[test]
fn an_idle_probe_is_answered_resume_none_idle_with_its_probe_id() {
    let mut sim = two_tabs();
    sim.send("a", resume_probe("p1a2b3c4"));
    assert_eq!(
        sim.frames("a"),
        [json!({"type": RESUME_NONE, "reason": "idle", "probeId": "p1a2b3c4"})]
    );
    assert!(
        sim.frames("b").is_empty(),
        "a probe is answered to its sender only"
    );
}

#[test]
fn a_text_turn_persists_the_user_message_streams_chunks_and_ends_completed() {
    let mut sim = two_tabs();
    sim.script(Reply::text("Hello there friend"));
    sim.send(
        "a",
        chat_request_with("r1", &[user("u1", "hi")], json!({"foo": 1})),
    );
    sim.run_until_idle();

    let stored = sim.store.message("u1").expect("user message persisted");
    assert_eq!(stored["metadata"]["channel"], "web");
    assert_eq!(
        sim.store
            .config_json(durable_chat::core::ConfigKey::CustomBody),
        Some(json!({"foo": 1}))
    );

    let a = sim.frames("a").to_vec();
    let b = sim.frames("b").to_vec();
    // The other tab learns of the user message before the stream; the requester gets no echo.
    assert_eq!(kind(&b[0]), MESSAGES);
    assert_eq!(ids_of(&b[0]), ["u1"]);
    assert_eq!(kind(&a[0]), RESPONSE, "no transcript echo to the requester");

    let chunks = live_chunks(&a, "r1");
    assert_eq!(
        chunk_seqs(&a, "r1"),
        (0..chunks.len() as u64).collect::<Vec<_>>()
    );
    assert_eq!(
        chunk_types(&a, "r1"),
        [
            "start",
            "start-step",
            "text-start",
            "text-delta",
            "text-delta",
            "text-delta",
            "text-end",
            "finish-step",
            "finish"
        ]
    );
    let message_id = body(chunks[0])["messageId"]
        .as_str()
        .expect("start is stamped")
        .to_string();
    assert_eq!(
        sim.store.message_ids(),
        ["u1".to_string(), message_id.clone()]
    );
    assert_eq!(
        text_of(&sim.store.message(&message_id).unwrap()),
        "Hello there friend"
    );
    assert_eq!(
        live_chunks(&b, "r1"),
        chunks,
        "the other tab sees every chunk live"
    );

    // The other tab gets the transcript; the requester, whose list matches
    // the store but for its own request and stream, gets its user message
    // as stored (the transcript would change nothing else it holds), as
    // soon as the model begins to answer: while the answer streams, so the
    // turn's end sends it only the stream's last chunks and the terminal frame.
    let n = b.len();
    assert_eq!(kind(&b[n - 2]), MESSAGES, "transcript to the other tab");
    assert_eq!(ids_of(&b[n - 2]), ["u1".to_string(), message_id.clone()]);
    let updated = position_of(&a, |f| kind(f) == UPDATED).expect("an update");
    assert_eq!(a[updated]["message"]["id"], "u1");
    assert_eq!(a[updated]["message"]["metadata"]["channel"], "web");
    let first_delta = position_of(&a, |f| chunk_is(f, "text-delta"));
    let finish = position_of(&a, |f| chunk_is(f, "finish"));
    assert!(
        first_delta < Some(updated) && Some(updated) < finish,
        "the requester's own message as stored, while the answer streams: {a:?}"
    );
    assert_eq!(
        kinds(&a).iter().filter(|k| **k == UPDATED).count(),
        1,
        "sent once"
    );
    assert!(
        !a.iter().any(|f| kind(f) == MESSAGES),
        "no transcript to the requester"
    );
    for frames in [&a, &b] {
        let n = frames.len();
        assert_eq!(
            frames[n - 1],
            json!({"type": RESPONSE, "id": "r1", "body": "", "done": true,
                   "outcome": "completed", "messageIds": ["u1"]})
        );
    }
    assert!(
        sim.store.open_stream_ids().is_empty(),
        "the stream is closed"
    );
    let request = sim.last_request();
    assert_eq!(request.roles(), ["system", "user"]);
    assert_eq!(request.user_texts(), ["hi"]);
}

#[test]
fn a_model_http_failure_sends_an_error_frame_then_outcome_error_and_persists_no_answer() {
    let mut sim = two_tabs();
    sim.script(Reply::http_error(400, "400 Bad Request: no such model"));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
    let frames = responses(sim.frames("a"), "r1");
    assert_eq!(body(frames[0])["type"], "start");
    let tail: Vec<Value> = frames[frames.len() - 2..]
        .iter()
        .map(|f| (*f).clone())
        .collect();
    assert_eq!(
        tail,
        [
            json!({"type": RESPONSE, "id": "r1", "body": "400 Bad Request: no such model",
                   "done": false, "error": true, "messageIds": ["u1"]}),
            json!({"type": RESPONSE, "id": "r1", "body": "", "done": true,
                   "outcome": "error", "messageIds": ["u1"]}),
        ]
    );
    assert_eq!(
        sim.store.message_ids(),
        ["u1"],
        "no assistant message persisted"
    );
    assert_eq!(
        responses(sim.frames("b"), "r1").len(),
        frames.len(),
        "every tab sees the error"
    );
}

#[test]
fn cancel_aborts_the_turn_and_persists_the_partial_answer() {
    let mut sim = two_tabs();
    sim.script(Reply::words(20).every(10));
    sim.send("a", chat_request("r1", &[user("u1", "count")]));
    sim.advance(55);
    sim.send("a", cancel("r1"));
    sim.run_until_idle();

    assert_eq!(sim.model.aborted.len(), 1, "the model call is aborted");
    let a = sim.frames("a");
    let end = terminal(a, "r1").unwrap();
    assert_eq!(end["outcome"], "aborted");
    assert_eq!(end["messageIds"], json!(["u1"]));
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 2, "the partial answer is kept");
    let partial = sim.store.message(&ids[1]).unwrap();
    assert_eq!(text_of(&partial), "w0 w1 w2 w3 w4");
    assert_eq!(
        partial["parts"][1]["state"], "done",
        "a cut text part is closed"
    );
    let last_chunk = position_of(a, |f| f["id"] == "r1" && f["done"] == false).unwrap();
    assert!(position_of(a, |f| kind(f) == MESSAGES).unwrap() > last_chunk);
    assert_eq!(
        kind(a.last().unwrap()),
        RESPONSE,
        "nothing follows the terminal frame"
    );
}

#[test]
fn cancel_of_an_unknown_request_changes_nothing() {
    let mut sim = two_tabs();
    sim.send("a", cancel("nope"));
    assert!(sim.frames("a").is_empty() && sim.store.ops.is_empty());
}

#[test]
fn clear_empties_history_and_tells_every_other_tab() {
    // A limit on: the request rates are stored (and a clear keeps them).
    let mut sim = Sim::with(|c| c.settings.limits.max_requests_per_minute = 1_000);
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim.script(Reply::text("hello"));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "hi")],
            json!({"clientTools": [{"name": "getLocation"}], "x": 1}),
        ),
    );
    sim.run_until_idle();
    sim.clear_frames();
    sim.send("a", clear());
    assert!(sim.frames("a").is_empty(), "the sender is not told");
    assert_eq!(sim.frames("b"), [json!({"type": CLEAR})]);
    assert!(sim.store.message_ids().is_empty());
    assert_eq!(
        sim.store.config_keys(),
        ["request_rates"],
        "only the request rates stay (a clear resets no rate)"
    );
    assert!(sim.transcript().is_empty());
    sim.connect("c");
    assert_eq!(sim.frames("c")[0]["messages"], json!([]));
    sim.script(Reply::text("fresh"));
    sim.send("a", chat_request("r2", &[user("u2", "again")]));
    sim.run_until_idle();
    assert_eq!(sim.last_request().user_texts(), ["again"]);
    assert!(
        sim.last_request()
            .tool_names()
            .iter()
            .all(|n| n != "getLocation"),
        "clear forgets client tools"
    );
}

#[test]
fn clear_during_a_turn_ends_it_aborted_and_keeps_nothing_of_it() {
    let mut sim = two_tabs();
    sim.script(Reply::words(10).every(10));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.advance(35);
    sim.send("b", clear());
    sim.run_until_idle();
    let end = terminal(sim.frames("a"), "r1").unwrap();
    assert_eq!(end["outcome"], "aborted");
    assert_eq!(end["messageIds"], json!(["u1"]));
    assert!(
        sim.store.message_ids().is_empty(),
        "the cleared turn does not persist"
    );
    assert!(sim.store.open_stream_ids().is_empty());
    assert_eq!(of_type(sim.frames("a"), CLEAR).len(), 1);
    assert!(of_type(sim.frames("b"), CLEAR).is_empty());
}

#[test]
fn regenerate_replaces_the_last_assistant_message() {
    let mut sim = two_tabs();
    sim.script(Reply::text("first answer"))
        .script(Reply::text("second answer"));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
    let first = sim.store.message_ids()[1].clone();
    sim.send("a", regenerate("r2", &[user("u1", "hi")]));
    sim.run_until_idle();
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], "u1");
    assert_ne!(ids[1], first);
    assert_eq!(
        text_of(&sim.store.message(&ids[1]).unwrap()),
        "second answer"
    );
    assert_eq!(
        sim.requests()[1].roles(),
        ["system", "user"],
        "the replaced answer is not shown to the model"
    );
    let end = terminal(sim.frames("a"), "r2").unwrap();
    assert_eq!(end["outcome"], "completed");
    assert_eq!(end["messageIds"], json!(["u1"]));
    let snapshot = of_type(sim.frames("b"), MESSAGES)
        .last()
        .copied()
        .unwrap()
        .clone();
    assert_eq!(ids_of(&snapshot), ids);
}

#[test]
fn malformed_frames_are_answered_without_panicking_and_leave_the_store_alone() {
    let mut sim = two_tabs();
    let cases: Vec<(&str, &str)> = vec![
        ("not json", CHAT_ERROR),
        ("[1,2,3]", CHAT_ERROR),
        (r#"{"type":5}"#, CHAT_ERROR),
        (
            r#"{"type":"cf_agent_use_chat_request","id":"r9","init":{"method":"POST","body":"{oops"}}"#,
            RESPONSE,
        ),
        (
            r#"{"type":"cf_agent_use_chat_request","id":"r9","init":{"method":"POST","body":"{\"messages\":3}"}}"#,
            RESPONSE,
        ),
        (
            r#"{"type":"cf_agent_use_chat_request","id":"r9","init":{"method":"POST","body":"{\"messages\":[{\"id\":1}]}"}}"#,
            RESPONSE,
        ),
        (
            r#"{"type":"cf_agent_use_chat_request","id":"r9","init":"POST"}"#,
            RESPONSE,
        ),
        (
            r#"{"type":"cf_agent_use_chat_request","init":{"method":"POST","body":"{}"}}"#,
            CHAT_ERROR,
        ),
        (r#"{"type":"cf_agent_tool_result"}"#, CHAT_ERROR),
        (
            r#"{"type":"cf_agent_tool_result","toolCallId":"c","clientTools":"x"}"#,
            CHAT_ERROR,
        ),
        (
            r#"{"type":"cf_agent_tool_approval","toolCallId":"c","approved":"yes"}"#,
            CHAT_ERROR,
        ),
        (r#"{"type":"cf_agent_stream_resume_ack"}"#, CHAT_ERROR),
        (
            r#"{"type":"cf_agent_chat_request_cancel","id":""}"#,
            CHAT_ERROR,
        ),
    ];
    for (frame, answer) in cases {
        sim.send("a", frame);
        let got = sim.take_frames("a");
        assert_eq!(got.len(), 1, "{frame} → {got:?}");
        assert_eq!(kind(&got[0]), answer, "{frame}");
        if answer == RESPONSE {
            assert_eq!(got[0]["done"], true);
            assert_eq!(got[0]["error"], true);
            assert!(got[0]["body"].as_str().is_some_and(|t| !t.is_empty()));
        } else {
            assert!(got[0]["error"].as_str().is_some_and(|t| !t.is_empty()));
        }
    }
    // Documented ignores: nothing is answered.
    for frame in [
        r#"{"type":"cf_agent_use_chat_request","id":"r8","init":{"method":"GET"}}"#,
        r#"{"type":"cf_agent_chat_messages","messages":[]}"#,
        r#"{"type":"cf_agent_tool_result","toolCallId":"nobody","output":1,"autoContinue":false}"#,
    ] {
        sim.send("a", frame);
        assert!(sim.take_frames("a").is_empty(), "{frame}");
    }
    // A call of a method the agent does not have is answered on its id.
    sim.send("a", r#"{"type":"rpc","id":"1","method":"x","args":[]}"#);
    let got = sim.take_frames("a");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["success"], false);
    assert!(sim.store.ops.is_empty(), "no frame above wrote anything");
    assert!(sim.frames("b").is_empty());
    assert!(!sim.core().is_busy());
    // The connection still works.
    sim.script(Reply::text("fine"));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}

#[test]
fn history_survives_a_restart() {
    let mut sim = two_tabs();
    sim.script(Reply::text("remember me"));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
    let before = sim.transcript();
    sim.evict();
    assert_eq!(sim.transcript(), before);
    sim.connect("c");
    assert_eq!(sim.frames("c")[0]["messages"], Value::Array(before));
}

#[test]
fn client_supplied_channel_and_turn_metadata_are_replaced_by_the_web_channel() {
    let mut sim = two_tabs();
    sim.script(Reply::text("ok"));
    let mut message = user("u1", "hi");
    message["metadata"] = json!({"channel": "sms", "turnMetadata": {"x": 1}, "draft": 2});
    sim.send("a", chat_request("r1", &[message]));
    sim.run_until_idle();
    assert_eq!(
        sim.store.message("u1").unwrap()["metadata"],
        json!({"channel": "web", "draft": 2})
    );
}

#[test]
fn a_stream_that_breaks_midway_keeps_the_partial_answer_and_ends_with_an_error() {
    let mut sim = two_tabs();
    sim.script(Reply::text("half an").then_fail("stream reset by peer"));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
    let frames = responses(sim.frames("b"), "r1");
    let n = frames.len();
    assert_eq!(frames[n - 2]["error"], true);
    assert_eq!(frames[n - 2]["body"], "stream reset by peer");
    assert_eq!(frames[n - 1]["outcome"], "error");
    let ids = sim.store.message_ids();
    assert_eq!(ids.len(), 2, "the partial answer is kept");
    assert_eq!(text_of(&sim.store.message(&ids[1]).unwrap()), "half an");
}
