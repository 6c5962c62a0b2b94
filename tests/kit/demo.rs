//! The demo agent (`src/demo.rs`) under the test kit.

use std::time::Duration;

use serde_json::{json, Value};

use durable_chat::agent::StorageError;
use durable_chat::demo::DemoAgent;
use durable_chat::model::ModelMessage;
use durable_chat::test_kit::{Point, Reply, TestAgent};

fn demo() -> TestAgent {
    TestAgent::new(DemoAgent::default())
}

fn last_text(agent: &TestAgent) -> String {
    agent
        .messages()
        .last()
        .map(|m| m.text())
        .unwrap_or_default()
}

#[test]
fn a_message_streams_to_the_tab_and_the_model_gets_the_prompt_and_the_tools() {
    let agent = demo();
    agent.model().reply_text("Hello from the demo");
    let tab = agent.connect();
    let request = tab.send_message("hi");
    agent.run_until_idle();
    assert_eq!(tab.stream_text(), "Hello from the demo");
    let done = tab.frames_of("cf_agent_use_chat_response");
    assert!(done
        .iter()
        .any(|f| f["id"] == request.as_str() && f["done"] == true));
    assert_eq!(agent.messages().len(), 2);
    assert_eq!(last_text(&agent), "Hello from the demo");
    let sent = agent.model().last_request().expect("the model was called");
    let ModelMessage::System { content } = &sent.messages[0] else {
        panic!("the system prompt comes first: {:?}", sent.messages);
    };
    assert!(content.contains("demo chat"), "{content}");
    let tools: Vec<&str> = sent.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["get_weather", "delete_file"]);
}

#[test]
fn a_tool_call_runs_the_real_tool_and_the_model_reads_its_result() {
    let agent = demo();
    let call = agent
        .model()
        .reply_tool_call("get_weather", json!({"city": "Paris"}));
    agent.model().reply_text("It is 21 degrees in Paris.");
    let tab = agent.connect();
    tab.send_message("weather in Paris?");
    agent.run_until_idle();
    let requests = agent.model().requests();
    assert_eq!(
        requests.len(),
        2,
        "one step for the call, one for the answer"
    );
    let result = agent.model().tool_result(&call).expect("the tool's result");
    let result: Value = serde_json::from_str(&result).unwrap();
    assert_eq!(result, json!({"city": "Paris", "tempC": 21}));
    assert_eq!(tab.stream_text(), "It is 21 degrees in Paris.");
}

#[test]
fn a_tool_that_needs_approval_waits_for_the_tab_then_runs() {
    let agent = demo();
    let call = agent
        .model()
        .reply_tool_call("delete_file", json!({"path": "/tmp/x"}));
    agent.model().reply_text("Deleted.");
    let tab = agent.connect();
    tab.send_message("delete /tmp/x");
    agent.run_until_idle();
    assert_eq!(tab.approvals_requested(), vec![call.clone()]);
    assert_eq!(agent.model().requests().len(), 1, "nothing runs unapproved");
    tab.approve(&call, true);
    agent.run_until_idle();
    let requests = agent.model().requests();
    assert_eq!(
        requests.len(),
        2,
        "the approved call ran and the turn went on"
    );
    let shown = format!("{:?}", requests[1].messages);
    assert!(
        shown.contains("/tmp/x") && shown.contains("deleted"),
        "{shown}"
    );
    assert_eq!(last_text(&agent), "Deleted.");
}

#[test]
fn a_callable_changes_the_synced_state_every_tab_sees_and_a_bad_state_is_refused() {
    let agent = demo();
    let (a, b) = (agent.connect(), agent.connect());
    assert_eq!(a.state(), Some(json!({})), "the initial state on connect");
    let result = a.call("setStateField", json!(["topic", "rust"]));
    assert_eq!(result, Ok(json!({"topic": "rust"})));
    assert_eq!(agent.state(), Some(json!({"topic": "rust"})));
    assert_eq!(b.state(), Some(json!({"topic": "rust"})));
    b.set_state(json!(42));
    assert_eq!(b.frames_of("cf_agent_state_error").len(), 1);
    assert_eq!(agent.state(), Some(json!({"topic": "rust"})));
    let missing = a.call("nope", json!([]));
    assert_eq!(missing, Err("Method nope does not exist".to_string()));
}

#[test]
fn a_streaming_callable_sends_its_chunks_then_its_result() {
    let agent = demo();
    let tab = agent.connect();
    assert_eq!(tab.call("ticks", json!([3, 10])), Ok(json!({"ticks": 3})));
    let chunks: Vec<Value> = (tab.frames_of("rpc").into_iter())
        .filter(|f| f["done"] == false)
        .map(|f| f["result"].clone())
        .collect();
    assert_eq!(chunks, [json!(1), json!(2), json!(3)]);
    assert_eq!(agent.storage().get::<u32>("ticks-sent"), Ok(Some(3)));
}

#[test]
fn a_reminder_fires_when_virtual_time_reaches_it() {
    let agent = demo();
    let tab = agent.connect();
    let set = tab.call("remind", json!(["tea", 3600]));
    assert_eq!(set, Ok(json!({"reminder": "⏳ tea"})));
    agent.advance(Duration::from_secs(3599));
    assert_eq!(agent.state(), Some(json!({"reminder": "⏳ tea"})));
    agent.advance(Duration::from_secs(1));
    assert_eq!(agent.state(), Some(json!({"reminder": "⏰ tea"})));
    assert_eq!(tab.state(), Some(json!({"reminder": "⏰ tea"})));
    assert!(agent.handle().schedules().is_empty(), "a one-off is gone");
}

#[test]
fn an_eviction_mid_answer_is_recovered_into_one_answer() {
    let agent = demo();
    agent
        .model()
        .reply(Reply::text("one two three four five six").every(100));
    let tab = agent.connect();
    tab.send_message("count");
    // The new instance recovers at once: its model call needs a reply.
    agent.model().reply_text(" four five six");
    agent.evict_after(Point::ModelChunk(3));
    agent.run_until_idle();
    let requests = agent.model().requests();
    assert_eq!(requests.len(), 2, "the recovery asked the model again");
    let kept = requests[1].messages.iter().find_map(|m| match m {
        ModelMessage::Assistant { content, .. } => content.clone(),
        _ => None,
    });
    let kept = kept.expect("the recovery shows the model what was kept");
    assert!(
        "one two three".starts_with(&kept) && !kept.is_empty(),
        "{kept}"
    );
    let messages = agent.messages();
    assert_eq!(messages.len(), 2, "one question, one answer: {messages:?}");
    let answer = last_text(&agent).replace('\n', "");
    assert_eq!(answer, format!("{kept} four five six"));
    assert!(
        tab.frames_of("cf_agent_use_chat_response")
            .iter()
            .any(|f| f["done"] == true),
        "the tab that stayed saw the answer end"
    );
}

#[test]
fn an_evicted_agent_keeps_its_state_and_storage() {
    let agent = demo();
    let tab = agent.connect();
    tab.call("setStateField", json!(["n", 1])).unwrap();
    agent.storage().put("k", &"v").unwrap();
    agent.evict();
    assert_eq!(agent.state(), Some(json!({"n": 1})));
    assert_eq!(agent.storage().get::<String>("k"), Ok(Some("v".into())));
    assert_eq!(
        tab.call("echo", json!(["still here"])),
        Ok(json!("still here"))
    );
}

#[test]
fn the_authors_sql_tables_work_and_survive_an_eviction() {
    let agent = demo();
    let storage = agent.storage();
    let create = "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)";
    storage.sql::<Value>(create, vec![]).unwrap();
    let insert = "INSERT INTO notes (text) VALUES (?)";
    storage
        .sql::<Value>(insert, vec!["buy tea".into()])
        .unwrap();
    agent.evict();
    let notes: Vec<Value> = (agent.storage())
        .sql("SELECT id, text FROM notes ORDER BY id", vec![])
        .unwrap();
    assert_eq!(notes, [json!({"id": 1, "text": "buy tea"})]);
    let refused = agent
        .storage()
        .sql::<Value>("DELETE FROM chat_messages", vec![]);
    assert!(
        matches!(refused, Err(StorageError::Refused(_))),
        "{refused:?}"
    );
}

fn system_of(request: &durable_chat::model::ModelRequest) -> String {
    match &request.messages[0] {
        ModelMessage::System { content } => content.clone(),
        other => panic!("the system prompt comes first: {other:?}"),
    }
}

#[test]
fn the_model_writes_its_memory_block_with_set_context_and_the_next_step_reads_it() {
    let agent = TestAgent::new(DemoAgent {
        memory: Some(durable_chat::core::ApprovalRule::Never),
        ..DemoAgent::default()
    });
    let call = agent.model().reply_tool_call(
        "set_context",
        json!({"name": "memory", "text": "The user's cat is called Miso."}),
    );
    agent.model().reply_text("Noted.");
    let tab = agent.connect();
    tab.send_message("remember: my cat is Miso");
    agent.run_until_idle();
    let requests = agent.model().requests();
    assert_eq!(requests.len(), 2);
    let tools: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(tools.contains(&"set_context"), "{tools:?}");
    assert!(system_of(&requests[0]).contains("<context_block name=\"memory\""));
    assert!(!system_of(&requests[0]).contains("Miso"));
    let result = agent.model().tool_result(&call).expect("the tool's result");
    assert!(result.contains("\"written\":\"memory\""), "{result}");
    assert!(
        system_of(&requests[1]).contains("The user's cat is called Miso."),
        "the next step shows the block"
    );

    let refused = agent.model().reply_tool_call(
        "set_context",
        json!({"name": "memory", "text": "x".repeat(2001)}),
    );
    agent.model().reply_text("Too long.");
    tab.send_message("remember a lot");
    agent.run_until_idle();
    let error = agent
        .model()
        .tool_result(&refused)
        .expect("the tool's error");
    assert!(error.contains("holds at most 2000 bytes"), "{error}");
}

#[test]
fn the_model_searches_the_history_with_search_context() {
    let agent = TestAgent::new(DemoAgent {
        memory: Some(durable_chat::core::ApprovalRule::Never),
        ..DemoAgent::default()
    });
    agent.model().reply_text("Noted.");
    let tab = agent.connect();
    tab.send_message("my locker code is 4817");
    agent.run_until_idle();
    let call = agent
        .model()
        .reply_tool_call("search_context", json!({"query": "locker"}));
    agent.model().reply_text("It is 4817.");
    tab.send_message("what was my locker code?");
    agent.run_until_idle();
    let result = agent.model().tool_result(&call).expect("the tool's result");
    let result: Value = serde_json::from_str(&result).unwrap();
    let hits = result["hits"].as_array().expect("hits");
    assert!(
        hits.iter()
            .any(|h| h["excerpt"].as_str().is_some_and(|e| e.contains("4817"))),
        "{result}"
    );
}

#[test]
fn another_worker_sets_and_reads_the_state_through_the_demos_rpc_methods() {
    let agent = demo();
    let tab = agent.connect();
    let state = agent.call_rpc("setStateField", json!(["topic", "rust"]));
    assert_eq!(state, Ok(json!({"topic": "rust"})));
    assert_eq!(agent.state(), Some(json!({"topic": "rust"})), "tabs see it");
    assert!(!tab.frames_of("cf_agent_state").is_empty());
    assert_eq!(
        agent.call_rpc("stateField", json!(["topic"])),
        Ok(json!("rust"))
    );
    assert_eq!(
        agent.call_rpc("stateField", json!(["other"])),
        Ok(Value::Null)
    );
    let bad = agent.call_rpc("stateField", json!([5])).unwrap_err();
    assert!(
        bad.starts_with("Invalid arguments for method stateField"),
        "{bad}"
    );
    let streaming = agent.call_rpc("ticks", json!([1, 0])).unwrap_err();
    assert_eq!(streaming, "this agent has no RPC method `ticks`");
    let tab_only = agent.call_rpc("echo", json!([1])).unwrap_err();
    assert_eq!(tab_only, "this agent has no RPC method `echo`");
}
