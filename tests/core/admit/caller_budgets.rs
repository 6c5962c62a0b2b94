//! Token budgets kept apart from the agent's: per caller per day (a tab's
//! client across its sockets, a named caller), per connection while it is
//! open, and per turn. A spent budget refuses that caller's (or socket's)
//! next chat request on its id with the budget and its size named, and a
//! running turn past its own budget ends before its next model call; other
//! callers go on. The callers' ledgers survive an eviction, bounded in
//! number.

use serde_json::json;

use crate::sim::*;

fn budgeted(set: impl FnOnce(&mut durable_chat::core::Limits)) -> Sim {
    Sim::with(|config| set(&mut config.settings.limits))
}

fn ask(sim: &mut Sim, tab: &str, id: &str, reply: Reply) {
    sim.script(reply);
    sim.send(tab, chat_request(id, &[user(&format!("u-{id}"), "hi")]));
    sim.run_until_idle();
}

fn refusal(sim: &Sim, tab: &str, id: &str) -> Option<String> {
    let end = terminal(sim.frames(tab), id)?;
    (end["error"] == true).then(|| end["body"].as_str().unwrap_or_default().to_string())
}

fn named_submit(sim: &mut Sim, id: &str, caller: &str) {
    sim.script(Reply::text("ok").with_usage(900, 200, None));
    let request = durable_chat::core::SubmitRequest {
        messages: vec![durable_chat::protocol::UIMessage::user_text(id, "hi")],
        caller: Some(caller.to_string()),
        ..Default::default()
    };
    let _ = sim.call(|core, now| core.submit(request, now));
    sim.run_until_idle();
}

#[test]
fn a_caller_past_its_day_is_refused_on_every_socket_even_after_an_eviction_another_caller_is_not() {
    let mut sim = budgeted(|l| l.max_caller_tokens_per_day = 1000);
    sim.connect_from("a", Some("203.0.113.7"));
    sim.connect_from("b", Some("198.51.100.2"));
    ask(
        &mut sim,
        "a",
        "r1",
        Reply::text("long").with_usage(900, 200, None),
    );
    assert_eq!(refusal(&sim, "a", "r1"), None, "the first turn runs");
    ask(&mut sim, "a", "r2", Reply::text("no"));
    let error = refusal(&sim, "a", "r2").expect("refused");
    assert!(
        error.starts_with(
            "token budget of this caller is spent (limit 1000 tokens a day); try again in"
        ),
        "{error}"
    );
    assert!(
        !sim.store.messages().iter().any(|m| m.id == "u-r2"),
        "nothing of it is stored"
    );
    ask(&mut sim, "b", "r3", Reply::text("yes"));
    assert_eq!(
        refusal(&sim, "b", "r3"),
        None,
        "another client is not limited by it"
    );

    sim.disconnect("a");
    sim.disconnect("b");
    sim.evict();
    sim.connect_from("a2", Some("203.0.113.7"));
    let calls = sim.requests().len();
    ask(&mut sim, "a2", "r4", Reply::text("no"));
    assert!(
        refusal(&sim, "a2", "r4").is_some_and(|e| e.contains("this caller")),
        "a new socket of the same client after a restart is still refused"
    );
    assert_eq!(sim.requests().len(), calls, "the model was not called");

    sim.advance(24 * 3_600_000);
    ask(&mut sim, "a2", "r5", Reply::text("fresh"));
    assert_eq!(refusal(&sim, "a2", "r5"), None, "the next day has budget");
}

#[test]
fn a_named_caller_past_its_day_gets_no_model_call_another_name_does() {
    let mut sim = budgeted(|l| l.max_caller_tokens_per_day = 1000);
    named_submit(&mut sim, "s1", "billing");
    assert_eq!(sim.requests().len(), 1);
    named_submit(&mut sim, "s2", "billing");
    assert_eq!(
        sim.requests().len(),
        1,
        "the spent caller's turn makes no model call"
    );
    named_submit(&mut sim, "s3", "support");
    assert_eq!(sim.requests().len(), 2, "another caller's turn runs");
}

#[test]
fn a_connection_past_its_budget_is_refused_while_open_a_new_socket_starts_afresh() {
    let mut sim = budgeted(|l| l.max_connection_tokens = 1000);
    sim.connect_from("a", Some("203.0.113.7"));
    sim.connect_from("b", Some("203.0.113.7"));
    ask(
        &mut sim,
        "a",
        "r1",
        Reply::text("long").with_usage(900, 200, None),
    );
    ask(&mut sim, "a", "r2", Reply::text("no"));
    assert_eq!(
        refusal(&sim, "a", "r2").as_deref(),
        Some("token budget of this connection is spent (limit 1000 tokens while it is open; open another)")
    );
    ask(&mut sim, "b", "r3", Reply::text("yes"));
    assert_eq!(
        refusal(&sim, "b", "r3"),
        None,
        "a socket open beside it counts apart"
    );
    sim.disconnect("a");
    sim.connect_from("a", Some("203.0.113.7"));
    ask(&mut sim, "a", "r4", Reply::text("yes"));
    assert_eq!(
        refusal(&sim, "a", "r4"),
        None,
        "a new socket has its own budget"
    );
}

#[test]
fn a_turn_past_its_budget_ends_before_its_next_model_call_the_next_turn_runs() {
    let mut sim = budgeted(|l| l.max_turn_tokens = 500);
    sim.connect("a");
    sim.script(
        Reply::tool_call("c1", "get_weather", json!({"city": "Oslo"})).with_usage(400, 150, None),
    )
    .script_tool("get_weather", ToolReply::ok(json!("rain")));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    sim.run_until_idle();
    assert_eq!(sim.requests().len(), 1, "no second step");
    let frames = sim.frames("a");
    assert_eq!(
        terminal(frames, "r1").map(|end| end["outcome"].clone()),
        Some(json!("error"))
    );
    let error = responses(frames, "r1")
        .into_iter()
        .find(|f| f["error"] == true)
        .expect("an error frame on the request id");
    assert_eq!(
        error["body"].as_str(),
        Some("token budget of this turn is spent (limit 500 tokens in all; ask again)")
    );
    ask(
        &mut sim,
        "a",
        "r2",
        Reply::text("fine").with_usage(400, 50, None),
    );
    assert_eq!(
        refusal(&sim, "a", "r2"),
        None,
        "each turn has its own budget"
    );
}

#[test]
fn parents_share_one_caller_budget_a_tab_keeps_its_own() {
    let mut sim = budgeted(|l| l.max_caller_tokens_per_day = 1000);
    sim.connect("tab");
    for parent in ["p1", "p2"] {
        sim.open_channel(parent);
        sim.script(Reply::text("ok").with_usage(900, 200, None));
        let frame = json!({"type": "cf_agent_rpc_chat", "message": "from a parent",
                           "clientTools": [], "executor": false});
        sim.send_channel(parent, frame.to_string());
        sim.run_until_idle();
    }
    assert_eq!(
        sim.requests().len(),
        1,
        "the second parent's turn makes no model call"
    );
    ask(&mut sim, "tab", "r1", Reply::text("yes"));
    assert_eq!(
        refusal(&sim, "tab", "r1"),
        None,
        "a tab's client has its own budget"
    );
    assert_eq!(sim.requests().len(), 2);
}
