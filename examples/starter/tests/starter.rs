//! The starter agent under the test kit (`durable_chat::test_kit`): a turn
//! with its tool, and an eviction in the middle of an answer recovered.
//! Natively, in memory, in milliseconds: `cargo test`.

use durable_chat::test_kit::{Point, Reply, TestAgent};
use serde_json::json;
use starter_agent::Starter;

#[test]
fn a_turn_calls_the_greet_tool_and_streams_the_answer() {
    let agent = TestAgent::new(Starter);
    let call = agent
        .model()
        .reply_tool_call("greet", json!({ "name": "Ada" }));
    agent.model().reply_text("I greeted Ada for you.");
    let tab = agent.connect();
    tab.send_message("Please greet Ada");
    agent.run_until_idle();

    assert_eq!(tab.stream_text(), "I greeted Ada for you.");
    // The second model call reads the tool's result.
    assert_eq!(agent.model().requests().len(), 2);
    let result = agent.model().tool_result(&call);
    assert_eq!(result.as_deref(), Some(r#"{"greeting":"Hello, Ada!"}"#));
}

#[test]
fn an_answer_cut_by_an_eviction_is_recovered() {
    let agent = TestAgent::new(Starter);
    agent
        .model()
        .reply(Reply::text("Hello there, how are you today?").every(50));
    // The instance that starts after the eviction continues the answer.
    agent.model().reply_text(" I am here to help.");
    let tab = agent.connect();
    tab.send_message("hi");

    agent.evict_after(Point::ModelChunk(4));
    agent.run_until_idle();

    let messages = agent.messages();
    assert_eq!(messages.len(), 2, "one question, one answer");
    assert!(messages[1].text().ends_with("I am here to help."));
    assert_eq!(
        agent.model().pending(),
        0,
        "the recovery asked the model again"
    );
    let ends = tab.frames_of("cf_agent_use_chat_response");
    assert!(
        ends.iter().any(|f| f["done"] == true),
        "the tab saw the answer end"
    );
}
