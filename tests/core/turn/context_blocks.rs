//! Context blocks: each declared block is shown to the model after the
//! system prompt in every request; a write (the model's `set_context`, or
//! code) shows in the next request, is bounded and named, survives an
//! eviction, and a clear of the history empties it back to its initial text.

use durable_chat::core::{ContextBlock, ContextBlockError};
use durable_chat::model::ModelMessage;

use crate::sim::*;

fn with_blocks() -> Sim {
    let mut sim = Sim::with(|c| {
        c.context_blocks = vec![
            ContextBlock::new("memory", "Facts about the user worth keeping", 64),
            ContextBlock::new("policy", "House rules", 200)
                .with_initial("Be kind.")
                .read_only(),
        ];
    });
    sim.connect("a");
    sim
}

fn system_of(sim: &Sim) -> String {
    match &sim.last_request().request.messages[0] {
        ModelMessage::System { content } => content.clone(),
        other => panic!("{other:?}"),
    }
}

fn ask(sim: &mut Sim, id: &str) {
    sim.script(Reply::text("ok"));
    sim.send("a", chat_request(id, &[user(&format!("u-{id}"), "hi")]));
    sim.run_until_idle();
}

#[test]
fn blocks_follow_the_system_prompt_and_a_write_shows_in_the_next_request_and_after_an_eviction() {
    let mut sim = with_blocks();
    ask(&mut sim, "r1");
    let system = system_of(&sim);
    assert!(
        system.contains("<context_block name=\"memory\""),
        "{system}"
    );
    assert!(system.contains("Be kind."), "the initial text");
    assert!(
        system.contains("set_context"),
        "the model is told how to write"
    );

    let written = sim.call(|core, now| {
        core.set_context_block_by_model("memory", "The user's cat is called Miso.", now)
    });
    assert_eq!(written, Ok(()));
    ask(&mut sim, "r2");
    assert!(system_of(&sim).contains("The user's cat is called Miso."));

    sim.disconnect("a");
    sim.evict();
    sim.connect("a");
    ask(&mut sim, "r3");
    assert!(
        system_of(&sim).contains("The user's cat is called Miso."),
        "the block was stored"
    );
}

#[test]
fn writes_are_bounded_named_and_read_only_blocks_are_the_codes() {
    let mut sim = with_blocks();
    let long = "x".repeat(65);
    assert_eq!(
        sim.call(|core, now| core.set_context_block_by_model("memory", &long, now)),
        Err(ContextBlockError::TooLong {
            name: "memory".into(),
            max: 64,
            given: 65
        })
    );
    assert_eq!(
        sim.call(|core, now| core.set_context_block_by_model("diary", "x", now)),
        Err(ContextBlockError::Unknown("diary".into()))
    );
    assert_eq!(
        sim.call(|core, now| core.set_context_block_by_model("policy", "Be rude.", now)),
        Err(ContextBlockError::ReadOnly("policy".into()))
    );
    assert_eq!(
        sim.call(|core, now| core.set_context_block("policy", "Be brief.", now)),
        Ok(())
    );
    let blocks = sim.call(|core, _| core.context_blocks());
    assert_eq!(blocks[1].1, "Be brief.");
    assert_eq!(blocks[0].1, "", "a refused write changed nothing");
}

#[test]
fn a_clear_of_the_history_empties_the_blocks() {
    let mut sim = with_blocks();
    sim.call(|core, now| core.set_context_block("memory", "likes tea", now))
        .expect("written");
    sim.send("a", clear());
    sim.disconnect("a");
    sim.evict();
    sim.connect("a");
    let blocks = sim.call(|core, _| core.context_blocks());
    assert_eq!(blocks[0].1, "");
    assert_eq!(blocks[1].1, "Be kind.");
}

#[test]
fn without_blocks_the_system_prompt_is_as_the_agent_wrote_it() {
    let mut sim = Sim::new();
    sim.connect("a");
    ask(&mut sim, "r1");
    assert!(!system_of(&sim).contains("context_block"));
}
