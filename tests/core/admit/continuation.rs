//! Automatic continuation after client tool results: exactly one continuation
//! per completed batch whatever the order and timing of the results (every
//! permutation, plus seeded random interleavings), error siblings, how its
//! frames are marked, and results that arrive while one runs.

use crate::sim::*;
use serde_json::json;

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
            assert_eq!(
                cont.at,
                last_at + 50,
                "the window is re-armed by each result"
            );
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
fn clear_drops_an_owed_continuation() {
    let mut sim = two_tabs();
    client_call_turn(&mut sim, "r1", &["c1"]);
    sim.send("a", tool_result("c1", json!(1), true));
    sim.send("b", clear());
    sim.advance(10_000);
    assert_eq!(sim.requests().len(), 1);
    assert!(!sim.core().is_busy());
}

/// A small deterministic generator, so a failing seed can be replayed.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

#[test]
fn random_interleavings_of_results_continue_exactly_once_after_the_batch() {
    for seed in 0..300 {
        let mut rng = Lcg(seed);
        let calls = 1 + rng.below(4) as usize;
        let ids: Vec<String> = (1..=calls).map(|i| format!("c{i}")).collect();
        let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut sim = two_tabs();
        client_call_turn(&mut sim, "r1", &id_refs);
        sim.script(Reply::words(3).every(rng.below(20)));
        let mut order = ids.clone();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let (mut last_at, mut any_auto) = (0, false);
        for id in &order {
            sim.advance(rng.below(120));
            let tab = if rng.below(2) == 0 { "a" } else { "b" };
            match rng.below(4) {
                0 => sim.send(tab, tool_result("stranger", json!(0), true)),
                1 => sim.send(tab, resume_probe("p")),
                _ => {}
            }
            if rng.below(5) == 0 {
                sim.send(tab, tool_error(id, "declined", false));
            } else {
                sim.send(tab, tool_result(id, json!(id), true));
                any_auto = true;
            }
            last_at = sim.now;
            if rng.below(3) == 0 {
                sim.send(tab, tool_result(id, json!("again"), true));
            }
        }
        sim.run_until_idle();
        sim.advance(5_000);
        let expected = if any_auto { 2 } else { 1 };
        assert_eq!(sim.requests().len(), expected, "seed {seed}");
        if any_auto {
            let cont = &sim.requests()[1];
            assert!(
                cont.at >= last_at,
                "seed {seed}: continued before the last result"
            );
            assert_eq!(cont.tool_results().len(), calls, "seed {seed}");
            assert!(
                cont.tool_results().iter().all(|(_, c)| c != "\"again\""),
                "seed {seed}"
            );
        }
        assert!(!sim.core().is_busy(), "seed {seed}");
    }
}
