//! Message concurrency: what happens to submits that overlap a running or
//! queued turn under `queue`, `latest`, `merge`, `drop` and `debounce`, with
//! bursts, clear and cancel in the middle, debounce windows in virtual time,
//! and two tabs submitting in the same instant.

use crate::sim::*;
use durable_chat::core::Concurrency;
use serde_json::{json, Value};

const STRATEGIES: [Concurrency; 5] = [
    Concurrency::Queue,
    Concurrency::Latest,
    Concurrency::Merge,
    Concurrency::Drop,
    Concurrency::Debounce { ms: 200 },
];

fn sim_with(strategy: Concurrency) -> Sim {
    let mut sim = Sim::with(|c| c.settings.concurrency = strategy);
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    sim
}

/// `tab` sends message `m<n>` (id `u<n>`) as request `r<n>`.
fn submit(sim: &mut Sim, tab: &str, n: usize) {
    let frame = chat_request(
        &format!("r{n}"),
        &[user(&format!("u{n}"), &format!("m{n}"))],
    );
    sim.send(tab, frame);
}

/// Request 1 runs for 110 ms (10 words, 10 ms apart); requests `2..=last`
/// arrive every `gap` ms while it runs. Every turn gets a scripted reply.
fn burst(sim: &mut Sim, last: usize, gap: u64) {
    for _ in 1..=last {
        sim.script(Reply::words(10).every(10));
    }
    submit(sim, "a", 1);
    for n in 2..=last {
        sim.advance(gap);
        submit(sim, "a", n);
    }
}

/// The terminal frame of `id`, wherever it was delivered.
fn outcome(sim: &Sim, id: &str) -> Option<String> {
    ["a", "b"]
        .iter()
        .find_map(|tab| terminal(sim.frames(tab), id))
        .map(|f| f["outcome"].as_str().unwrap_or("").to_string())
}

fn model_ran(sim: &Sim) -> usize {
    sim.requests().len()
}

#[test]
fn an_idle_submit_runs_at_once_under_every_strategy() {
    for strategy in STRATEGIES {
        let mut sim = sim_with(strategy);
        sim.advance(1_000);
        sim.script(Reply::text("hi"));
        submit(&mut sim, "a", 1);
        assert_eq!(model_ran(&sim), 1, "{strategy:?}");
        assert_eq!(sim.requests()[0].at, 1_000, "{strategy:?}");
    }
}

#[test]
fn queue_runs_every_overlapping_submit_in_arrival_order() {
    let mut sim = sim_with(Concurrency::Queue);
    burst(&mut sim, 5, 10);
    sim.run_until_idle();
    assert_eq!(model_ran(&sim), 5);
    for (i, request) in sim.requests().iter().enumerate() {
        let last = request.messages().last().cloned().unwrap();
        assert_eq!(
            last,
            ModelMessage::User {
                content: format!("m{}", i + 1),
                files: Vec::new(),
            },
            "turn {}",
            i + 1
        );
    }
    for n in 1..=5 {
        let end = terminal(sim.frames("a"), &format!("r{n}")).unwrap().clone();
        assert_eq!(end["outcome"], "completed");
        assert_eq!(end["messageIds"], json!([format!("u{n}")]));
    }
    let roles: Vec<String> = sim
        .store
        .transcript()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant"].repeat(5),
        "each answer follows its question"
    );
}

#[test]
fn latest_keeps_every_message_but_runs_only_the_newest_overlapping_submit() {
    for (last, strategy) in [
        (4, Concurrency::Latest),
        (5, Concurrency::Latest),
        (4, Concurrency::Merge),
    ] {
        let mut sim = sim_with(strategy);
        burst(&mut sim, last, 10);
        for n in 2..=last {
            assert!(
                sim.store.message(&format!("u{n}")).is_some(),
                "u{n} persisted at once"
            );
        }
        sim.run_until_idle();
        assert_eq!(model_ran(&sim), 2, "{strategy:?}");
        assert_eq!(
            outcome(&sim, "r1").as_deref(),
            Some("completed"),
            "the running turn is not interrupted"
        );
        for n in 2..last {
            let id = format!("r{n}");
            let end = terminal(sim.frames("a"), &id).unwrap();
            assert_eq!(end["outcome"], "skipped");
            assert_eq!(end["messageIds"], json!([format!("u{n}")]));
            assert!(
                terminal(sim.frames("b"), &id).is_none(),
                "skipped goes to the requester only"
            );
        }
        assert_eq!(
            outcome(&sim, &format!("r{last}")).as_deref(),
            Some("completed")
        );
        let survivor = &sim.requests()[1];
        let expected: Vec<String> = (1..=last).map(|n| format!("m{n}")).collect();
        assert_eq!(
            survivor.user_texts(),
            expected,
            "the model sees every message once"
        );
        assert_eq!(
            content(survivor.messages().last().unwrap()),
            Some(format!("m{last}").as_str())
        );
        let broadcast: Vec<String> = of_type(sim.frames("b"), MESSAGES)
            .iter()
            .flat_map(|f| ids_of(f))
            .collect();
        for n in 2..=last {
            assert!(
                broadcast.contains(&format!("u{n}")),
                "u{n} broadcast to the other tab"
            );
        }
    }
}

#[test]
fn merge_keeps_each_overlapping_message_as_written() {
    let mut sim = sim_with(Concurrency::Merge);
    burst(&mut sim, 4, 10);
    sim.run_until_idle();
    let users: Vec<Value> = sim
        .store
        .transcript()
        .into_iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(users.len(), 4);
    for (i, m) in users.iter().enumerate() {
        assert_eq!(m["id"], format!("u{}", i + 1));
        assert_eq!(text_of(m), format!("m{}", i + 1));
    }
    let assistants = sim
        .store
        .transcript()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    assert_eq!(
        assistants, 2,
        "one answer for the first turn, one for the merged burst"
    );
}

#[test]
fn drop_refuses_an_overlapping_submit_with_a_rollback_snapshot() {
    // A limit on: the request rates are stored with every accepted request.
    let mut sim = Sim::with(|c| {
        c.settings.concurrency = Concurrency::Drop;
        c.settings.limits.max_agent_requests_per_minute = 1_000;
    });
    sim.connect("a");
    sim.connect("b");
    sim.clear_frames();
    burst(&mut sim, 4, 10);
    let writes = sim.store.ops.len();
    assert!(sim.store.message("u2").is_none() && sim.store.message("u4").is_none());
    for n in 2..=4 {
        let id = format!("r{n}");
        let frames = responses(sim.frames("a"), &id);
        assert_eq!(frames.len(), 1);
        assert_eq!(
            frames[0],
            &json!({"type": RESPONSE, "id": id, "body": "", "done": true, "outcome": "skipped",
                    "messageIds": [format!("u{n}")]})
        );
        assert!(responses(sim.frames("b"), &id).is_empty());
    }
    let snapshots = of_type(sim.frames("a"), MESSAGES);
    assert_eq!(
        snapshots.len(),
        3,
        "one rollback snapshot per dropped submit"
    );
    assert!(snapshots.iter().all(|s| ids_of(s) == ["u1"]));
    let seen_by_b: Vec<Vec<String>> = of_type(sim.frames("b"), MESSAGES)
        .iter()
        .map(|f| ids_of(f))
        .collect();
    assert_eq!(
        seen_by_b,
        [["u1"]],
        "the other tab only heard of the accepted message"
    );
    let tools = json!({"clientTools": [{"name": "getLocation"}], "mood": "x"});
    sim.send("b", chat_request_with("r5", &[user("u5", "m5")], tools));
    assert_eq!(
        terminal(sim.frames("b"), "r5").unwrap()["outcome"],
        "skipped"
    );
    // The request rates are stored with every accepted request; nothing else.
    assert_eq!(
        sim.store.config_keys(),
        ["request_rates"],
        "a dropped submit changes no stored config"
    );
    sim.run_until_idle();
    assert_eq!(model_ran(&sim), 1);
    assert!(sim.store.ops[..writes].iter().all(|op| !matches!(
        op,
        durable_chat::core::StoreOp::PutConfig { key, .. }
            if *key != durable_chat::core::ConfigKey::RequestRates
    )));
    submit(&mut sim, "a", 9);
    sim.run_until_idle();
    assert_eq!(model_ran(&sim), 2, "an idle submit runs again");
}

#[test]
fn drop_still_queues_a_regeneration() {
    let mut sim = sim_with(Concurrency::Drop);
    burst(&mut sim, 1, 0);
    sim.script(Reply::text("again"));
    sim.advance(20);
    sim.send("a", regenerate("rg", &[user("u1", "m1")]));
    sim.run_until_idle();
    assert_eq!(model_ran(&sim), 2);
    assert_eq!(outcome(&sim, "rg").as_deref(), Some("completed"));
}

#[test]
fn drop_still_queues_the_agents_own_chat_that_overlaps_a_running_turn() {
    let mut sim = sim_with(Concurrency::Drop);
    burst(&mut sim, 1, 0);
    sim.script(Reply::text("own answer"));
    sim.advance(20);
    sim.handle(durable_chat::core::Event::ProgrammaticChat {
        conn: None,
        message: durable_chat::protocol::UIMessage::user_text("pm-1", "daily summary"),
        tools: Vec::new(),
        executor: false,
    });
    assert!(
        sim.store.message("pm-1").is_some(),
        "stored while a turn runs"
    );
    sim.run_until_idle();
    assert_eq!(
        model_ran(&sim),
        2,
        "the agent's own turn ran after the first"
    );
    assert_eq!(outcome(&sim, "r1").as_deref(), Some("completed"));
}

#[test]
fn debounce_starts_the_survivor_a_quiet_window_after_the_last_submit() {
    let mut sim = sim_with(Concurrency::Debounce { ms: 200 });
    sim.script(Reply::words(10).every(10))
        .script(Reply::text("merged"));
    submit(&mut sim, "a", 1);
    for (at, n) in [(20, 2), (60, 3), (150, 4)] {
        sim.advance(at - sim.now);
        submit(&mut sim, "a", n);
    }
    sim.advance(199);
    assert_eq!(model_ran(&sim), 1, "still inside the quiet window");
    sim.run_until_idle();
    assert_eq!(model_ran(&sim), 2);
    assert_eq!(sim.requests()[1].at, 350);
    assert_eq!(outcome(&sim, "r2").as_deref(), Some("skipped"));
    assert_eq!(outcome(&sim, "r3").as_deref(), Some("skipped"));
    assert_eq!(outcome(&sim, "r4").as_deref(), Some("completed"));
    assert_eq!(sim.requests()[1].user_texts(), ["m1", "m2", "m3", "m4"]);
}

#[test]
fn debounce_bursts_of_three_to_five_wait_for_the_last_submit_or_the_running_turn() {
    for last in 3..=5 {
        // Every submit overlaps: the first turn runs until 110 ms, then the survivor waits.
        for gap in [5, 40, 100] {
            let ms = 150;
            let mut sim = sim_with(Concurrency::Debounce { ms });
            burst(&mut sim, last, gap);
            let last_submit = sim.now;
            sim.run_until_idle();
            assert_eq!(model_ran(&sim), 2, "burst {last} gap {gap}");
            let first_done = 110;
            let started = sim.requests()[1].at;
            assert_eq!(
                started,
                (last_submit + ms).max(first_done),
                "burst {last} gap {gap}"
            );
            let skipped = (2..last)
                .filter(|n| outcome(&sim, &format!("r{n}")).as_deref() == Some("skipped"))
                .count();
            assert_eq!(skipped, last - 2);
        }
    }
}

#[test]
fn the_default_debounce_window_is_750_ms() {
    let strategy = Concurrency::parse("debounce").unwrap();
    let mut sim = sim_with(strategy);
    burst(&mut sim, 3, 10);
    sim.run_until_idle();
    assert_eq!(sim.requests()[1].at, 20 + 750);
}

#[test]
fn clear_in_the_middle_skips_every_queued_turn_with_a_broadcast() {
    for strategy in [Concurrency::Queue, Concurrency::Debounce { ms: 200 }] {
        let mut sim = sim_with(strategy);
        burst(&mut sim, 4, 10);
        sim.send("b", clear());
        assert_eq!(outcome(&sim, "r1").as_deref(), Some("aborted"));
        let skipped_to_both = |n: usize| {
            ["a", "b"].iter().all(|tab| {
                terminal(sim.frames(tab), &format!("r{n}"))
                    .is_some_and(|f| f["outcome"] == "skipped")
            })
        };
        match strategy {
            Concurrency::Queue => assert!((2..=4).all(skipped_to_both), "{strategy:?}"),
            _ => assert!(
                skipped_to_both(4),
                "the waiting survivor is skipped for everyone"
            ),
        }
        sim.run_until_idle();
        sim.advance(5_000);
        assert_eq!(
            model_ran(&sim),
            1,
            "{strategy:?}: nothing runs after the clear"
        );
        assert!(sim.store.message_ids().is_empty());
        assert!(!sim.core().is_busy());
        submit(&mut sim, "a", 7);
        assert_eq!(model_ran(&sim), 2, "a submit after the clear is idle again");
    }
}

#[test]
fn clear_while_a_debounced_turn_waits_skips_it_and_releases_parked_tabs() {
    let mut sim = sim_with(Concurrency::Debounce { ms: 300 });
    burst(&mut sim, 2, 10);
    sim.advance(150);
    assert_eq!(model_ran(&sim), 1, "r2 waits out its window");
    sim.send("b", resume_probe("p1"));
    assert_eq!(kinds(sim.frames("b")).last(), Some(&PENDING));
    sim.send("a", clear());
    assert_eq!(outcome(&sim, "r2").as_deref(), Some("skipped"));
    let b = sim.frames("b");
    let none = position_of(b, |f| f == &json!({"type": RESUME_NONE})).expect("parked tab released");
    let cleared = position_of(b, |f| kind(f) == CLEAR).unwrap();
    assert!(none < cleared);
    sim.advance(1_000);
    assert_eq!(model_ran(&sim), 1);
}

#[test]
fn cancel_of_a_queued_request_removes_it() {
    let mut sim = sim_with(Concurrency::Queue);
    burst(&mut sim, 3, 10);
    sim.send("a", cancel("r2"));
    assert_eq!(outcome(&sim, "r2").as_deref(), Some("aborted"));
    sim.run_until_idle();
    assert_eq!(model_ran(&sim), 2);
    assert_eq!(
        content(sim.requests()[1].messages().last().unwrap()),
        Some("m3")
    );
    assert_eq!(outcome(&sim, "r3").as_deref(), Some("completed"));
}

#[test]
fn cancel_of_the_newest_submit_lets_the_next_newest_survive() {
    let mut sim = sim_with(Concurrency::Latest);
    burst(&mut sim, 4, 10);
    sim.send("a", cancel("r4"));
    sim.run_until_idle();
    assert_eq!(model_ran(&sim), 2);
    assert_eq!(outcome(&sim, "r2").as_deref(), Some("skipped"));
    assert_eq!(outcome(&sim, "r3").as_deref(), Some("completed"));
    assert_eq!(outcome(&sim, "r4").as_deref(), Some("aborted"));
}

#[test]
fn two_tabs_submitting_in_the_same_instant_behave_like_one_tab_submitting_twice() {
    for strategy in STRATEGIES {
        let run = |second_tab: &str| {
            let mut sim = sim_with(strategy);
            sim.script(Reply::words(5).every(10))
                .script(Reply::words(5).every(10));
            submit(&mut sim, "a", 1);
            submit(&mut sim, second_tab, 2);
            sim.run_until_idle();
            let bodies: Vec<ModelRequest> =
                sim.requests().iter().map(|r| r.request.clone()).collect();
            let times: Vec<u64> = sim.requests().iter().map(|r| r.at).collect();
            let outcomes = (outcome(&sim, "r1"), outcome(&sim, "r2"));
            let requester_got_r2 = terminal(sim.frames(second_tab), "r2").is_some();
            (
                bodies,
                times,
                outcomes,
                sim.store.transcript(),
                requester_got_r2,
            )
        };
        let one_tab = run("a");
        let two_tabs = run("b");
        assert_eq!(one_tab, two_tabs, "{strategy:?}");
        assert!(
            two_tabs.4,
            "{strategy:?}: the second requester hears about its request"
        );
    }
}
