//! The resume handshake: tabs that join mid-stream, the tab that owns an
//! automatic continuation (pending → resuming → ACK → replay → live), probes
//! from other tabs, tabs that never ACK, and errors resurfaced on reconnect.

use crate::sim::*;
use serde_json::json;

#[test]
fn a_tab_joining_mid_stream_is_offered_the_stream_and_replayed_after_its_ack() {
    let mut sim = two_tabs();
    sim.script(Reply::words(10).every(10));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.advance(45);
    sim.connect("c");
    assert_eq!(
        kinds(sim.frames("c")),
        [RESUMING, IDENTITY, MCP],
        "no transcript while streaming"
    );
    assert_eq!(sim.frames("c")[0], json!({"type": RESUMING, "id": "r1"}));
    sim.advance(20);
    assert!(
        responses(sim.frames("c"), "r1").is_empty(),
        "no live chunks before the ACK"
    );
    sim.send("c", resume_ack("r1"));
    let replayed = replayed_chunks(sim.frames("c"), "r1").len();
    assert_eq!(replayed, live_chunks(sim.frames("a"), "r1").len());
    sim.run_until_idle();
    let c = sim.frames("c");
    let seqs: Vec<u64> = responses(c, "r1")
        .iter()
        .filter(|f| f["done"] == false && f.get("replayComplete").is_none())
        .map(|f| f["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as u64).collect::<Vec<_>>(),
        "replay then live, no gap or repeat"
    );
    assert_eq!(seqs.len(), live_chunks(sim.frames("a"), "r1").len());
    let marker = position_of(c, |f| f["replayComplete"] == true).unwrap();
    assert_eq!(c[marker]["replay"], true);
    assert_eq!(c[marker]["done"], false);
    assert_eq!(terminal(c, "r1").unwrap()["outcome"], "completed");
}

#[test]
fn an_errored_turn_is_resurfaced_to_a_probing_tab_until_a_new_turn_starts() {
    let mut sim = two_tabs();
    sim.script(Reply::http_error(400, "400 boom"));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
    sim.connect("c");
    sim.take_frames("c");
    sim.send("c", resume_probe("p1"));
    assert_eq!(
        sim.take_frames("c"),
        [json!({"type": RESUMING, "id": "r1", "probeId": "p1"})]
    );
    sim.send("c", resume_ack("r1"));
    let mut got = sim.take_frames("c");
    let error = got.pop().unwrap();
    assert_eq!(
        error,
        json!({"type": RESPONSE, "id": "r1", "body": "400 boom", "done": true,
            "error": true, "messageIds": ["u1"]})
    );
    let replayed: Vec<String> = got
        .iter()
        .map(|f| {
            assert_eq!(f["replay"], true);
            body(f)["type"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(
        replayed,
        ["start", "start-step"],
        "what streamed before the error replays first"
    );
    sim.script(Reply::text("ok"));
    sim.send(
        "a",
        chat_request("r2", &[user("u1", "hi"), user("u2", "again")]),
    );
    sim.run_until_idle();
    sim.send("c", resume_probe("p2"));
    assert_eq!(sim.take_frames("c").last().unwrap()["reason"], "idle");
}

#[test]
fn the_owner_is_told_pending_then_resuming_and_gets_replay_after_its_ack() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.clear_frames();
    sim.script(Reply::words(8).every(10));
    sim.send("a", tool_result("c1", json!(1), true));
    sim.send("a", resume_probe("p9"));
    let pending = of_type(sim.frames("a"), PENDING)[0].clone();
    let id = pending["id"].as_str().unwrap().to_string();
    assert_eq!(pending, json!({"type": PENDING, "id": id, "probeId": "p9"}));

    sim.advance(50);
    assert_eq!(
        of_type(sim.frames("a"), RESUMING),
        [&json!({"type": RESUMING, "id": id})]
    );
    sim.advance(35);
    assert!(
        responses(sim.frames("a"), &id).is_empty(),
        "no live chunks before the ACK"
    );
    let seen_by_b = live_chunks(sim.frames("b"), &id).len();
    assert!(seen_by_b > 2);

    sim.send("a", resume_ack(&id));
    let a = sim.frames("a").to_vec();
    let replayed = replayed_chunks(&a, &id);
    assert_eq!(replayed.len(), seen_by_b);
    assert!(replayed.iter().all(|f| f["continuation"] == true));
    let marker = responses(&a, &id).last().copied().unwrap().clone();
    assert_eq!(
        marker,
        json!({"type": RESPONSE, "id": id, "body": "", "done": false,
                              "replay": true, "replayComplete": true, "continuation": true})
    );
    sim.run_until_idle();
    let a = sim.frames("a");
    let seqs: Vec<u64> = responses(a, &id)
        .iter()
        .filter_map(|f| f["seq"].as_u64())
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(seqs.len(), live_chunks(sim.frames("b"), &id).len());
    assert_eq!(terminal(a, &id).unwrap()["outcome"], "completed");
}

#[test]
fn a_parked_owner_is_released_with_a_bare_resume_none_when_nothing_streams() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.clear_frames();
    sim.send("a", tool_result("c1", json!(1), true));
    sim.send("a", resume_probe("p1"));
    let id = of_type(sim.frames("a"), PENDING)[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    sim.send("a", cancel(&id));
    sim.run_until_idle();
    assert_eq!(
        sim.frames("a").last().unwrap(),
        &json!({"type": RESUME_NONE})
    );
    assert_eq!(sim.requests().len(), 1);
}

#[test]
fn another_tab_probing_during_an_owned_continuation_is_told_it_is_continuation_owned() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.script(Reply::words(8).every(10));
    sim.send("a", tool_result("c1", json!(1), true));
    sim.advance(60);
    sim.take_frames("b");
    sim.send("b", resume_probe("pb"));
    assert_eq!(
        sim.take_frames("b"),
        [json!({"type": RESUME_NONE, "reason": "continuation-owned", "probeId": "pb"})]
    );
    sim.run_until_idle();
    let id = sim
        .frames("a")
        .iter()
        .find(|f| f["continuation"] == true)
        .and_then(|f| f["id"].as_str())
        .unwrap()
        .to_string();
    assert!(
        !live_chunks(sim.frames("b"), &id).is_empty(),
        "b keeps watching it live"
    );
}

#[test]
fn a_tab_that_never_acks_still_gets_the_transcript_and_the_terminal_frame() {
    let mut sim = two_tabs();
    sim.script(Reply::words(6).every(10));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.advance(25);
    sim.connect("c");
    sim.take_frames("c");
    sim.run_until_idle();
    let c = sim.frames("c");
    assert!(live_chunks(c, "r1").is_empty(), "no chunks without an ACK");
    assert_eq!(kinds(c), [MESSAGES, RESPONSE]);
    assert_eq!(terminal(c, "r1").unwrap()["outcome"], "completed");
}

#[test]
fn an_ack_after_the_stream_ended_is_answered_with_a_bare_replayed_done() {
    let mut sim = two_tabs();
    sim.script(Reply::text("short"));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
    sim.take_frames("b");
    sim.send("b", resume_ack("r1"));
    let got = sim.take_frames("b");
    assert_eq!(got.len(), 1);
    assert_eq!(
        (
            got[0]["id"].as_str(),
            got[0]["done"].as_bool(),
            got[0]["replay"].as_bool(),
            got[0]["body"].as_str()
        ),
        (Some("r1"), Some(true), Some(true), Some(""))
    );
    assert!(got[0].get("seq").is_none());
}

#[test]
fn a_tab_connecting_while_a_continuation_is_owed_gets_plain_connect_frames_then_the_live_stream() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.script(Reply::words(4).every(10));
    sim.send("a", tool_result("c1", json!(1), true));
    sim.connect("c");
    let c = sim.take_frames("c");
    assert_eq!(
        kinds(&c),
        [MESSAGES, IDENTITY, MCP],
        "only the owner is parked on an owed continuation"
    );
    sim.run_until_idle();
    let c = sim.frames("c");
    assert!(of_type(c, RESUMING).is_empty(), "no resume offer");
    let id = continuation_ids(sim.frames("b"))[0].clone();
    assert_eq!(
        live_chunks(c, &id).len(),
        live_chunks(sim.frames("b"), &id).len()
    );
    assert_eq!(terminal(c, &id).unwrap()["continuation"], true);
}

#[test]
fn cancel_with_the_id_learned_from_stream_resuming_aborts_the_continuation() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.take_frames("a");
    sim.script(Reply::words(20).every(10));
    sim.send("a", tool_result("c1", json!(1), true));
    sim.advance(80);
    let id = of_type(sim.frames("a"), RESUMING)[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    sim.send("a", cancel(&id));
    sim.run_until_idle();
    let end = terminal(sim.frames("b"), &id).unwrap();
    assert_eq!(end["outcome"], "aborted");
    assert_eq!(end["continuation"], true);
    assert_eq!(sim.model.aborted.len(), 1);
    assert_eq!(
        sim.store.message_ids().len(),
        3,
        "the partial continuation is kept"
    );
}
