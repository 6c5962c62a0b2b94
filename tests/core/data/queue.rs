//! The stored turn queue: a queued turn's custom body is kept in its own row
//! (`chat_queued_bodies`), written once, so queueing one more turn never
//! rewrites the bodies of the others; each body comes back to its own turn
//! after a restart (also from a queue row of an older release, which kept
//! them inline); a turn that leaves the queue (run, cancelled, cleared)
//! leaves no body row behind.

use durable_chat::core::{Concurrency, ConfigKey, StoreOp};
use serde_json::{json, Value};

use crate::sim::*;

const QUEUED: usize = 32;
const BLOB: usize = 60 * 1024;

fn queue_sim() -> Sim {
    let mut sim = Sim::with(|c| {
        c.settings.concurrency = Concurrency::Queue;
    });
    sim.connect("a");
    sim
}

/// The custom body of request `n`: its number and a large filler.
fn body_of(n: usize) -> Value {
    json!({"n": n, "blob": "x".repeat(BLOB)})
}

/// `r0` starts and keeps streaming; `r1..=last` are queued behind it, each
/// with its own large body.
fn queue_behind_a_running_turn(sim: &mut Sim, last: usize) {
    sim.script(Reply::words(20).every(50));
    for _ in 1..=last {
        sim.script(Reply::text("ok"));
    }
    sim.send("a", chat_request("r0", &[user("u0", "first")]));
    sim.advance(10);
    for n in 1..=last {
        let frame = chat_request_with(
            &format!("r{n}"),
            &[user(&format!("u{n}"), &format!("m{n}"))],
            body_of(n),
        );
        sim.send("a", frame);
    }
    let stored = sim.store.config_json(ConfigKey::Queue).unwrap_or_default();
    let queued = stored["items"].as_array().map(Vec::len);
    assert_eq!(queued, Some(last), "every request is queued");
}

/// The body `before_turn` saw for each request that ran, by request id.
fn bodies_seen(sim: &Sim) -> Vec<(String, Value)> {
    sim.prepared
        .iter()
        .filter(|ctx| ctx.request_id != "r0")
        .map(|ctx| (ctx.request_id.clone(), Value::Object(ctx.body.clone())))
        .collect()
}

fn assert_each_turn_saw_its_body(sim: &Sim, last: usize) {
    let seen = bodies_seen(sim);
    for n in 1..=last {
        let id = format!("r{n}");
        let body = seen
            .iter()
            .find(|(r, _)| *r == id)
            .map(|(_, b)| b)
            .unwrap_or_else(|| panic!("{id} never ran"));
        assert_eq!(body["n"], n, "{id} runs with its own body");
        assert_eq!(body["blob"].as_str().map(str::len), Some(BLOB));
    }
}

#[test]
fn the_queue_row_stays_small_with_many_large_queued_bodies() {
    let mut sim = queue_sim();
    queue_behind_a_running_turn(&mut sim, QUEUED);
    let row = sim.store.config(ConfigKey::Queue).unwrap_or_default().len();
    assert!(row > 0, "the queue is stored");
    assert!(row < 8 * 1024, "the queue row holds no body ({row} bytes)");
    // Every write of the queue row together stays small: queueing one more
    // turn never rewrites the bodies of the turns before it.
    let queue_bytes: usize = sim
        .store
        .ops
        .iter()
        .filter_map(|op| match op {
            StoreOp::PutConfig { key, value } if *key == ConfigKey::Queue => Some(value.len()),
            _ => None,
        })
        .sum();
    assert!(
        queue_bytes < 256 * 1024,
        "{queue_bytes} bytes of queue rows written for {QUEUED} queued turns"
    );
    // Each body is written once, in its own row.
    let body_writes = sim
        .store
        .count(|op| matches!(op, StoreOp::PutQueuedBody { .. }));
    assert_eq!(body_writes, QUEUED);
    assert_eq!(sim.store.queued_bodies().len(), QUEUED);
    sim.run_until_idle();
    assert_each_turn_saw_its_body(&sim, QUEUED);
    assert!(
        sim.store.queued_bodies().is_empty(),
        "a started turn's body row is deleted"
    );
}

#[test]
fn each_body_comes_back_to_its_turn_after_a_restart() {
    let mut sim = queue_sim();
    queue_behind_a_running_turn(&mut sim, QUEUED);
    sim.evict();
    sim.run_until_idle();
    assert_each_turn_saw_its_body(&sim, QUEUED);
    // The model request of a turn is built from what `before_turn` saw; the
    // last one ran with the body of the last request.
    assert_eq!(
        sim.prepared.last().map(|c| c.body["n"].clone()),
        Some(json!(QUEUED))
    );
    assert!(sim.store.queued_bodies().is_empty());
    assert_eq!(sim.store.config(ConfigKey::Queue), None);
}

#[test]
fn a_queue_row_of_an_older_release_with_inline_bodies_still_runs_them() {
    let mut sim = queue_sim();
    queue_behind_a_running_turn(&mut sim, 3);
    // Rewrite the stored queue as an older release wrote it: each turn's
    // body inline, no body rows.
    let mut row: Value =
        serde_json::from_str(sim.store.config(ConfigKey::Queue).unwrap_or_default())
            .unwrap_or_default();
    if let Some(items) = row["items"].as_array_mut() {
        for turn in items.iter_mut() {
            let n: usize = turn["requestId"].as_str().unwrap_or("r0")[1..]
                .parse()
                .unwrap_or_default();
            turn["body"] = body_of(n);
            if let Value::Object(turn) = turn {
                turn.remove("storedBody");
            }
        }
    }
    let text = row.to_string();
    assert!(
        text.len() > 3 * BLOB,
        "the legacy row keeps the bodies inline"
    );
    let rows = sim.store.rows_mut();
    rows.corrupt("chat_config", ConfigKey::Queue.as_str(), &text);
    for n in 1..=3 {
        rows.apply(&StoreOp::DeleteQueuedBody {
            request_id: format!("r{n}"),
        });
    }
    sim.evict();
    // The first write of the queue moves the bodies to their own rows.
    let row = sim.store.config(ConfigKey::Queue).unwrap_or_default().len();
    assert!(
        row < 8 * 1024,
        "the rewritten queue row holds no body ({row} bytes)"
    );
    sim.run_until_idle();
    assert_each_turn_saw_its_body(&sim, 3);
    assert!(sim.store.queued_bodies().is_empty());
}

#[test]
fn a_cancelled_or_cleared_request_leaves_no_body_row() {
    let mut sim = queue_sim();
    queue_behind_a_running_turn(&mut sim, 4);
    sim.send("a", cancel("r2"));
    let stored: Vec<&String> = sim.store.queued_bodies().keys().collect();
    assert_eq!(
        stored,
        ["r1", "r3", "r4"],
        "the cancelled turn's body row is gone"
    );
    sim.send("a", clear());
    assert!(
        sim.store.queued_bodies().is_empty(),
        "a clear deletes every body row"
    );
    assert_eq!(sim.store.config(ConfigKey::Queue), None);
    sim.run_until_idle();
    assert!(bodies_seen(&sim).is_empty(), "no cleared turn runs");
}
