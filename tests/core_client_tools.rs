//! Client tools and automatic continuation: sticky tool lists, routing a call
//! to the browser, applying results, the batch barrier (exactly one
//! continuation per completed batch, in every order) and the live resume
//! handshake of the tab that owns a continuation.

mod sim;

use std::cell::RefCell;
use std::rc::Rc;

use durable_chat::core::{ConfigKey, TurnConfig, TurnTrigger};
use serde_json::{json, Value};
use sim::*;

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

/// A turn in which the model calls the client tool `getLocation` once per id.
fn client_call_turn(sim: &mut Sim, request_id: &str, call_ids: &[&str]) {
    let calls: Vec<(&str, &str, Value)> = call_ids
        .iter()
        .map(|id| (*id, "getLocation", json!({"precise": true})))
        .collect();
    sim.script(Reply::tool_calls(&calls));
    sim.send(
        "a",
        chat_request_with(
            request_id,
            &[user("u1", "where am I?")],
            json!({"clientTools": location_tool()}),
        ),
    );
    sim.run_until_idle();
}

/// Distinct request ids of continuation frames a tab saw, in order.
fn continuation_ids(frames: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for f in of_type(frames, RESPONSE) {
        if f["continuation"] == true {
            let id = f["id"].as_str().unwrap().to_string();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

fn permutations(items: &[&'static str]) -> Vec<Vec<&'static str>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, first);
            out.push(tail);
        }
    }
    out
}

#[test]
fn client_tools_are_sticky_until_replaced_or_cleared() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    assert!(sim
        .last_request()
        .tool_names()
        .contains(&"getLocation".into()));
    assert_eq!(
        sim.store.config_json(ConfigKey::ClientTools),
        Some(location_tool())
    );

    sim.script(Reply::text("ok"));
    sim.send("a", chat_request("r2", &[user("u2", "absent keeps them")]));
    sim.run_until_idle();
    assert!(sim
        .last_request()
        .tool_names()
        .contains(&"getLocation".into()));

    client_call_turn(&mut sim, "r3", &["c3"]);
    sim.send(
        "a",
        tool_result_with(
            "c3",
            json!(1),
            false,
            json!({"clientTools": [{"name": "getTimezone"}]}),
        ),
    );
    sim.script(Reply::text("ok"));
    sim.send("a", chat_request("r4", &[user("u4", "replaced")]));
    sim.run_until_idle();
    let names = sim.last_request().tool_names();
    assert!(names.contains(&"getTimezone".into()) && !names.contains(&"getLocation".into()));

    sim.script(Reply::text("ok"));
    sim.send(
        "a",
        chat_request_with("r5", &[user("u5", "cleared")], json!({"clientTools": []})),
    );
    sim.run_until_idle();
    assert_eq!(
        sim.last_request().tool_names(),
        ["get_weather", "delete_file"]
    );
    assert_eq!(sim.store.config_json(ConfigKey::ClientTools), None);
}

#[test]
fn client_tools_and_body_survive_a_restart_and_drive_the_continuation() {
    let mut sim = two_tabs();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    let mut sim2 = Sim::with(|c| {
        c.before_turn = Some(Rc::new(move |ctx| {
            log.borrow_mut().push((
                ctx.continuation,
                ctx.trigger,
                ctx.client_tools.len(),
                Value::Object(ctx.body.clone()),
            ));
            TurnConfig::default()
        }))
    });
    std::mem::swap(&mut sim, &mut sim2);
    sim.connect("a");
    sim.script(Reply::tool_call("c1", "getLocation", json!({})));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where?")],
            json!({"clientTools": location_tool(), "room": "x"}),
        ),
    );
    sim.run_until_idle();
    sim.evict();
    assert!(!sim.core().is_busy());
    sim.send("a", resume_probe("p1"));
    assert_eq!(
        sim.take_frames("a").last().unwrap()["reason"],
        "idle",
        "a parked client call is not a live stream"
    );
    sim.script(Reply::text("You are in Paris."));
    sim.send("a", tool_result("c1", json!({"city": "Paris"}), true));
    sim.run_until_idle();
    let request = sim.last_request();
    assert!(request.tool_names().contains(&"getLocation".into()));
    assert_eq!(
        request.tool_result("c1").as_deref(),
        Some(r#"{"city":"Paris"}"#)
    );
    let seen = seen.borrow();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1],
        (true, TurnTrigger::AutoContinuation, 1, json!({"room": "x"}))
    );
}

#[test]
fn a_client_tool_replaces_a_server_tool_of_the_same_name() {
    let mut sim = two_tabs();
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Rome"}),
    ));
    let tools = json!([{"name": "get_weather", "description": "browser weather"}]);
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "weather?")],
            json!({"clientTools": tools}),
        ),
    );
    sim.run_until_idle();
    assert!(sim.tools.runs.is_empty(), "the server tool does not run");
    let request = sim.last_request();
    assert_eq!(
        request
            .tool_names()
            .iter()
            .filter(|n| *n == "get_weather")
            .count(),
        1
    );
    assert_eq!(
        request.tool("get_weather").unwrap()["description"],
        "browser weather"
    );
    let part = tool_part(&sim.store.transcript()[1], "c1").unwrap().clone();
    assert_eq!(part["state"], "input-available");
}

#[test]
fn a_client_call_is_streamed_persisted_input_available_and_the_turn_completes() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    for tab in ["a", "b"] {
        let types = chunk_types(sim.frames(tab), "r1");
        for t in [
            "tool-input-start",
            "tool-input-delta",
            "tool-input-available",
        ] {
            assert!(types.contains(&t.to_string()), "{tab} missed {t}");
        }
        assert_eq!(
            terminal(sim.frames(tab), "r1").unwrap()["outcome"],
            "completed"
        );
    }
    let part = tool_part(&sim.store.transcript()[1], "c1").unwrap().clone();
    assert_eq!(part["type"], "tool-getLocation");
    assert_eq!(part["state"], "input-available");
    assert_eq!(part["input"], json!({"precise": true}));
    assert_eq!(
        sim.requests().len(),
        1,
        "the agent waits without calling the model again"
    );
    assert!(
        !sim.core().is_busy(),
        "nothing blocks while the browser works"
    );
    assert!(sim
        .armed()
        .iter()
        .all(|(t, _)| *t != durable_chat::core::Timer::Continuation));
}

#[test]
fn a_tool_result_is_persisted_and_broadcast_to_every_tab_including_the_sender() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.clear_frames();
    sim.send("a", tool_result("c1", json!({"lat": 1}), false));
    for tab in ["a", "b"] {
        let updated = of_type(sim.frames(tab), UPDATED);
        assert_eq!(updated.len(), 1, "{tab}");
        let part = tool_part(&updated[0]["message"], "c1").unwrap();
        assert_eq!(part["state"], "output-available");
        assert_eq!(part["output"], json!({"lat": 1}));
        assert_eq!(part["preliminary"], false);
    }
    let stored = tool_part(&sim.store.transcript()[1], "c1").unwrap().clone();
    assert_eq!(stored["state"], "output-available");
    sim.advance(10_000);
    assert_eq!(
        sim.requests().len(),
        1,
        "autoContinue:false does not continue"
    );
}

#[test]
fn an_error_result_marks_the_part_output_error() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1", "c2"]);
    sim.send("a", tool_error("c1", "User declined", false));
    let no_text = json!({"type": "cf_agent_tool_result", "toolCallId": "c2", "output": null,
                         "state": "output-error", "autoContinue": false});
    sim.send("a", no_text.to_string());
    let answer = &sim.store.transcript()[1];
    let c1 = tool_part(answer, "c1").unwrap();
    assert_eq!(
        (c1["state"].as_str(), c1["errorText"].as_str()),
        (Some("output-error"), Some("User declined"))
    );
    let c2 = tool_part(answer, "c2").unwrap();
    assert_eq!(c2["errorText"], "Tool execution denied by user");
    assert_eq!(of_type(sim.frames("b"), UPDATED).len(), 2);
}

#[test]
fn a_result_for_an_unknown_call_broadcasts_nothing_and_continues_nothing() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.clear_frames();
    let writes = sim.store.ops.len();
    sim.send("a", tool_result("nope", json!(1), true));
    sim.advance(10_000);
    assert!(sim.frames("a").is_empty() && sim.frames("b").is_empty());
    assert_eq!(sim.store.ops.len(), writes);
    assert_eq!(sim.requests().len(), 1);
    assert!(!sim.core().is_busy());
}

#[test]
fn an_auto_continuing_result_starts_exactly_one_continuation() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.script(Reply::text("You are in Paris."));
    sim.send("a", tool_result("c1", json!({"city": "Paris"}), true));
    sim.send("a", tool_result("c1", json!({"city": "Paris"}), true));
    sim.run_until_idle();
    sim.advance(10_000);
    assert_eq!(sim.requests().len(), 2);
    assert_eq!(continuation_ids(sim.frames("b")).len(), 1);
    assert_eq!(sim.requests()[1].at, 50, "after the coalescing window");
}

#[test]
fn two_parallel_client_calls_continue_once_after_the_last_result_in_any_order() {
    for gap in [0, 30, 200] {
        for order in permutations(&["c1", "c2"]) {
            let mut sim = two_tabs();
            client_call_turn(&mut sim, "r1", &["c1", "c2"]);
            sim.script(Reply::text("done"));
            let mut last_at = 0;
            for id in &order {
                sim.advance(gap);
                last_at = sim.now;
                sim.send("a", tool_result(id, json!({"from": id}), true));
            }
            sim.run_until_idle();
            assert_eq!(sim.requests().len(), 2, "gap {gap} order {order:?}");
            let cont = &sim.requests()[1];
            assert!(
                cont.at >= last_at,
                "started before the last result ({order:?}, gap {gap})"
            );
            for id in ["c1", "c2"] {
                assert_eq!(cont.tool_result(id), Some(format!(r#"{{"from":"{id}"}}"#)));
            }
            assert_eq!(continuation_ids(sim.frames("b")).len(), 1);
        }
    }
}

#[test]
fn three_parallel_client_calls_continue_once_after_the_last_result_in_any_order() {
    for gap in [0, 20, 75, 500] {
        for order in permutations(&["c1", "c2", "c3"]) {
            let mut sim = two_tabs();
            client_call_turn(&mut sim, "r1", &["c1", "c2", "c3"]);
            sim.script(Reply::text("done"));
            let mut last_at = 0;
            for id in &order {
                sim.advance(gap);
                last_at = sim.now;
                sim.send("a", tool_result(id, json!(id), true));
            }
            sim.run_until_idle();
            assert_eq!(sim.requests().len(), 2, "gap {gap} order {order:?}");
            assert!(sim.requests()[1].at >= last_at);
            assert_eq!(sim.requests()[1].tool_results().len(), 3);
        }
    }
}

#[test]
fn an_error_sibling_without_auto_continue_completes_the_batch() {
    for order in permutations(&["ok", "err"]) {
        let mut sim = two_tabs();
        client_call_turn(&mut sim, "r1", &["c1", "c2"]);
        sim.script(Reply::text("partly done"));
        for which in &order {
            sim.advance(100);
            match *which {
                "ok" => sim.send("a", tool_result("c1", json!(1), true)),
                _ => sim.send("a", tool_error("c2", "User declined", false)),
            }
        }
        sim.run_until_idle();
        assert_eq!(sim.requests().len(), 2, "{order:?}");
        assert_eq!(
            sim.requests()[1].tool_result("c2").as_deref(),
            Some("User declined")
        );
    }
}

#[test]
fn a_standalone_error_without_auto_continue_never_continues() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.send("a", tool_error("c1", "User declined", false));
    sim.advance(60_000);
    assert_eq!(sim.requests().len(), 1);
    assert!(!sim.core().is_busy());
}

#[test]
fn continuation_frames_are_marked_and_its_start_has_no_message_id() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    let first_answer = sim.store.message_ids()[1].clone();
    sim.script(Reply::text("continued"));
    sim.send("a", tool_result("c1", json!(1), true));
    sim.run_until_idle();
    let b = sim.frames("b");
    let id = continuation_ids(b).pop().expect("a continuation ran");
    let frames = responses(b, &id);
    assert!(frames.iter().all(|f| f["continuation"] == true));
    assert_eq!(body(frames[0]), json!({"type": "start"}));
    let end = terminal(b, &id).unwrap();
    assert_eq!(end["outcome"], "completed");
    assert!(
        end.get("messageIds").is_none(),
        "server-initiated turns carry no messageIds"
    );
    let ids = sim.store.message_ids();
    assert_eq!(
        ids.len(),
        3,
        "the continuation is persisted as its own assistant message"
    );
    assert_eq!(ids[1], first_answer);
    assert_eq!(text_of(&sim.store.message(&ids[2]).unwrap()), "continued");
}

#[test]
fn a_result_that_arrives_while_its_turn_streams_rides_into_the_persisted_message() {
    let mut sim = two_tabs();
    sim.script(Reply::tool_calls(&[
        ("c1", "getLocation", json!({})),
        ("s1", "get_weather", json!({"city": "Oslo"})),
    ]))
    .script_tool("get_weather", ToolReply::ok(json!({"tempC": 3})).after(300))
    .script(Reply::text("Oslo, 3C."));
    sim.send(
        "a",
        chat_request_with(
            "r1",
            &[user("u1", "where and how warm?")],
            json!({"clientTools": location_tool()}),
        ),
    );
    sim.advance(10);
    assert!(chunk_types(sim.frames("a"), "r1").contains(&"tool-input-available".to_string()));
    assert!(
        terminal(sim.frames("a"), "r1").is_none(),
        "the server tool still runs"
    );
    sim.send("a", tool_result("c1", json!({"city": "Oslo"}), true));
    let updated = of_type(sim.frames("b"), UPDATED);
    assert_eq!(
        tool_part(&updated[0]["message"], "c1").unwrap()["state"],
        "output-available"
    );
    sim.run_until_idle();
    let first = sim.store.transcript()[1].clone();
    assert_eq!(
        tool_part(&first, "c1").unwrap()["output"],
        json!({"city": "Oslo"})
    );
    assert_eq!(
        tool_part(&first, "s1").unwrap()["state"],
        "output-available"
    );
    assert_eq!(sim.requests().len(), 2, "one continuation after the turn");
    assert_eq!(continuation_ids(sim.frames("b")).len(), 1);
    assert_eq!(
        sim.requests()[1].tool_result("c1").as_deref(),
        Some(r#"{"city":"Oslo"}"#)
    );
}

#[test]
fn a_result_arriving_while_a_continuation_runs_is_handled_after_it() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.script(Reply::tool_calls(&[
        ("c2", "getLocation", json!({})),
        ("s1", "get_weather", json!({"city": "Oslo"})),
    ]))
    .script_tool("get_weather", ToolReply::ok(json!({"tempC": 3})).after(300))
    .script(Reply::text("all done"));
    sim.send("a", tool_result("c1", json!(1), true));
    sim.advance(100);
    assert_eq!(sim.requests().len(), 2, "the first continuation runs");
    sim.send("a", tool_result("c2", json!(2), true));
    assert_eq!(
        sim.requests().len(),
        2,
        "the running continuation is not interrupted"
    );
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 3);
    assert_eq!(continuation_ids(sim.frames("b")).len(), 2);
    assert!(sim.requests()[2].tool_result("c2").is_some());
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
