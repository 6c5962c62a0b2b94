//! Replays the committed seed corpus (and any crash reproducers under
//! `artifacts/`) through both harnesses on stable Rust, then runs a short
//! bounded random fuzz: `cargo test` in `fuzz/` needs no nightly and no libFuzzer run.

use std::fs;
use std::path::Path;

fn replay(dir: &Path, run: fn(&[u8])) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_file() {
            let data = fs::read(&path).expect("readable corpus file");
            run(&data);
            n += 1;
        }
    }
    n
}

#[test]
fn the_seed_corpus_replays_without_a_violation() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let frames = replay(
        &root.join("corpus/frame_parser"),
        durable_chat_fuzz::frame_parser,
    );
    let events = replay(
        &root.join("corpus/core_events"),
        durable_chat_fuzz::core_events,
    );
    replay(
        &root.join("artifacts/frame_parser"),
        durable_chat_fuzz::frame_parser,
    );
    replay(
        &root.join("artifacts/core_events"),
        durable_chat_fuzz::core_events,
    );
    assert!(frames >= 10, "frame_parser seeds: {frames}");
    assert!(events >= 10, "core_events seeds: {events}");
}

#[test]
fn bounded_random_inputs_keep_the_invariants() {
    let iterations: u64 = std::env::var("FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    for seed in 0..iterations {
        let data = durable_chat_fuzz::seed_bytes(seed, 64 + (seed as usize % 2048));
        durable_chat_fuzz::frame_parser(&data);
        durable_chat_fuzz::core_events(&data);
    }
}
