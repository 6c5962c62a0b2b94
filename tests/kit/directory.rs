//! The demo's chat directory (`src/demo/directory.rs`) under the test kit:
//! its callables on the author's SQL table, the list as its synced state,
//! and `recordChatActivity` over RPC only.

use std::time::Duration;

use serde_json::{json, Value};

use durable_chat::demo::directory::ChatDirectoryAgent;
use durable_chat::test_kit::TestAgent;

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|c| c["id"].as_str().expect("an id").to_string())
        .collect()
}

#[test]
fn chats_are_created_listed_renamed_reported_and_deleted() {
    let agent = TestAgent::new(ChatDirectoryAgent);
    let tab = agent.connect();
    assert_eq!(tab.call("listChats", json!([])).unwrap(), json!([]));

    let first = tab.call("createChat", json!([])).unwrap();
    agent.advance(Duration::from_secs(1));
    let second = tab
        .call("createChat", json!(["  Trip\nplanning "]))
        .unwrap();
    assert_eq!(first["title"], "New chat");
    assert_eq!(second["title"], "Trip planning");
    let first_id = first["id"].as_str().unwrap().to_string();
    let second_id = second["id"].as_str().unwrap().to_string();
    assert_eq!(first["agent"], format!("default~{first_id}"));
    assert_eq!(
        ids(&tab.call("listChats", json!([])).unwrap()),
        [second_id.clone(), first_id.clone()]
    );
    assert_eq!(
        ids(&agent.state().unwrap()["chats"]),
        [second_id.clone(), first_id.clone()]
    );

    // A turn of the first chat: the latest activity, and its first message as its title.
    agent.advance(Duration::from_secs(1));
    let known = agent.call_rpc("recordChatActivity", json!([first_id, "pack the tent"]));
    assert_eq!(known, Ok(json!(true)));
    let listed = tab.call("listChats", json!([])).unwrap();
    assert_eq!(ids(&listed), [first_id.clone(), second_id.clone()]);
    assert_eq!(listed[0]["title"], "pack the tent");
    assert_eq!(
        agent.call_rpc("recordChatActivity", json!(["unknown", null])),
        Ok(json!(false))
    );
    // Not a tab's to call: a directory's tabs are readonly, refused before any lookup.
    let refused = tab
        .call("recordChatActivity", json!([second_id, "x"]))
        .unwrap_err();
    assert!(refused.contains("readonly"), "{refused}");

    // A user's title stays through later turns.
    tab.call("renameChat", json!([second_id, "Rome"])).unwrap();
    agent
        .call_rpc("recordChatActivity", json!([second_id, "book a train"]))
        .unwrap();
    let listed = tab.call("listChats", json!([])).unwrap();
    assert_eq!(listed[0]["title"], "Rome");
    assert!(tab
        .call("renameChat", json!([second_id, "  "]))
        .unwrap_err()
        .contains("may not be empty"));
    assert!(tab
        .call("renameChat", json!(["nope", "x"]))
        .unwrap_err()
        .contains("no such chat"));

    let left = tab.call("deleteChat", json!([first_id])).unwrap();
    assert_eq!(ids(&left), std::slice::from_ref(&second_id));
    assert_eq!(ids(&agent.state().unwrap()["chats"]), [second_id]);
    assert!(tab
        .call("deleteChat", json!([first_id]))
        .unwrap_err()
        .contains("no such chat"));

    // The list is the directory's to change.
    tab.send_frame(&json!({"type": "cf_agent_state", "state": {"chats": []}}).to_string());
    agent.run_until_idle();
    assert_eq!(agent.state().unwrap()["chats"].as_array().unwrap().len(), 1);
}
