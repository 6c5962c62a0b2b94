//! The demo agent's connections under the test kit: the same handle and
//! connection API as in a worker — tags at connect, a broadcast from a
//! schedule to the tabs holding a tag, a readonly viewer refused, the
//! author's `on_close` heard by the other tabs, and `destroy` erasing the
//! agent and closing every tab.

use std::time::Duration;

use serde_json::{json, Value};

use durable_chat::agent::{RequestInfo, DESTROYED_CLOSE_CODE};
use durable_chat::demo::DemoAgent;
use durable_chat::test_kit::{Tab, TestAgent};

fn demo() -> TestAgent {
    TestAgent::new(DemoAgent::default())
}

fn with_role(agent: &TestAgent, id: &str, role: &str) -> Tab {
    let request = RequestInfo {
        query: vec![("role".into(), role.into())],
        ..RequestInfo::default()
    };
    agent.connect_with(id, request)
}

fn of_type(tab: &Tab, kind: &str) -> Vec<Value> {
    tab.frames_of(kind)
}

#[test]
fn a_scheduled_broadcast_reaches_the_tabs_holding_its_tag_only() {
    let agent = demo();
    let staff1 = with_role(&agent, "s1", "staff");
    let staff2 = with_role(&agent, "s2", "staff");
    let guest = agent.connect();
    assert_eq!(staff1.tags(), ["staff"]);
    assert_eq!(guest.tags(), ["guest"]);
    let scheduled = guest.call("announce", json!(["standup", "staff", 5]));
    assert_eq!(scheduled, Ok(json!({ "scheduled": true })));
    agent.advance(Duration::from_secs(6));
    let text = |tab: &Tab| -> Vec<Value> {
        of_type(tab, "announcement")
            .into_iter()
            .map(|f| f["text"].clone())
            .collect()
    };
    assert_eq!(text(&staff1), [json!("standup")]);
    assert_eq!(text(&staff2), [json!("standup")]);
    assert!(text(&guest).is_empty());
    let handle = agent.handle();
    assert_eq!(handle.connections(Some("staff")).len(), 2);
    assert_eq!(
        handle.connection("s2").map(|c| c.tags()),
        Some(vec!["staff".to_string()])
    );
    assert_eq!(handle.broadcast(r#"{"type":"hello"}"#, &["s1"]), 2);
}

#[test]
fn a_readonly_viewer_watches_but_its_chat_state_and_calls_are_refused() {
    let agent = demo();
    let viewer = with_role(&agent, "v", "viewer");
    let writer = agent.connect();
    let request = viewer.send_message("let me in");
    let refused = of_type(&viewer, "cf_agent_use_chat_response");
    assert!(refused.iter().any(|f| f["id"] == request.as_str()
        && f["error"] == true
        && f["body"]
            .as_str()
            .is_some_and(|b| b.contains("Connection is readonly"))));
    viewer.set_state(json!({ "hijacked": true }));
    let errors = of_type(&viewer, "cf_agent_state_error");
    assert_eq!(
        errors.last().map(|f| f["error"].clone()),
        Some(json!("Connection is readonly"))
    );
    assert_eq!(
        viewer.call("announce", json!(["hi", null, 0])),
        Err("Connection is readonly".to_string())
    );
    assert_eq!(
        viewer.call("echo", json!(["safe"])),
        Ok(json!("safe")),
        "a readonly-safe method"
    );
    agent.model().reply_text("hello writer");
    writer.send_message("hi");
    agent.run_until_idle();
    assert_eq!(
        viewer.stream_text(),
        "hello writer",
        "the viewer saw the stream"
    );
    assert_eq!(
        agent.messages().len(),
        2,
        "only the writer's turn is stored"
    );
    agent
        .handle()
        .connection("v")
        .expect("open")
        .set_readonly(false)
        .expect("kept");
    assert_eq!(
        viewer.call("announce", json!(["now I may", null, 0])),
        Ok(json!({ "sentTo": 2 }))
    );
}

#[test]
fn on_close_tells_the_other_tabs() {
    let agent = demo();
    let a = agent.connect();
    let b = agent.connect();
    b.close();
    assert_eq!(
        of_type(&a, "presence"),
        [json!({ "type": "presence", "left": b.id() })]
    );
}

#[test]
fn destroy_erases_everything_and_closes_every_tab() {
    let agent = demo();
    let tab = agent.connect();
    agent.model().reply_text("stored");
    tab.send_message("remember me");
    agent.run_until_idle();
    tab.set_state(json!({ "topic": "secret" }));
    let storage = agent.handle().storage();
    storage.put("k", &json!("v")).expect("stored");
    tab.call("announce", json!(["later", null, 3600]))
        .expect("scheduled");
    assert!(!agent.handle().schedules().is_empty());
    agent
        .block_on({
            let handle = agent.handle();
            async move { handle.destroy().await }
        })
        .expect("destroyed");
    assert_eq!(
        tab.closed_with(),
        Some((DESTROYED_CLOSE_CODE, "agent destroyed".to_string()))
    );
    let handle = agent.handle();
    assert!(agent.messages().is_empty());
    assert!(handle.schedules().is_empty());
    assert_eq!(handle.storage().get::<Value>("k").expect("read"), None);
    let fresh = agent.connect();
    assert_eq!(fresh.state(), Some(json!({})));
}
