//! How many chat requests a connection, and an agent, may make in a minute:
//! a request past a limit is refused on its own id with the wait, nothing
//! of it is stored, the socket goes on, and the count frees up as the
//! minute moves on. Neither a reconnect nor an eviction starts a fresh
//! window; tabs open together count apart.

use crate::sim::*;

fn limited(per_conn: usize, per_agent: usize) -> Sim {
    Sim::with(|config| {
        config.settings.limits.max_requests_per_minute = per_conn;
        config.settings.limits.max_agent_requests_per_minute = per_agent;
    })
}

fn ask(sim: &mut Sim, tab: &str, id: &str) {
    sim.script(Reply::text("ok"));
    sim.send(tab, chat_request(id, &[user(&format!("u-{id}"), "hi")]));
    sim.run_until_idle();
}

fn refusal(sim: &Sim, tab: &str, id: &str) -> Option<String> {
    let end = terminal(sim.frames(tab), id)?;
    (end["error"] == true).then(|| end["body"].as_str().unwrap_or_default().to_string())
}

#[test]
fn a_connection_past_its_rate_is_refused_on_the_request_id_until_the_minute_moves_on() {
    let mut sim = limited(3, 0);
    sim.connect("a");
    sim.connect("b");
    for n in 0..3 {
        ask(&mut sim, "a", &format!("r{n}"));
        assert_eq!(refusal(&sim, "a", &format!("r{n}")), None);
    }
    ask(&mut sim, "a", "over");
    let error = refusal(&sim, "a", "over").expect("refused");
    assert!(
        error
            .starts_with("too many requests from this connection (limit 3 a minute); try again in"),
        "{error}"
    );
    assert!(
        !sim.store.messages().iter().any(|m| m.id == "u-over"),
        "nothing of a refused request is stored"
    );
    ask(&mut sim, "b", "other-tab");
    assert_eq!(
        refusal(&sim, "b", "other-tab"),
        None,
        "the limit is per connection"
    );
    sim.advance(60_000);
    ask(&mut sim, "a", "later");
    assert_eq!(refusal(&sim, "a", "later"), None);
}

#[test]
fn an_agent_past_its_rate_refuses_every_connection() {
    let mut sim = limited(0, 2);
    sim.connect("a");
    sim.connect("b");
    ask(&mut sim, "a", "r1");
    ask(&mut sim, "b", "r2");
    ask(&mut sim, "b", "r3");
    let error = refusal(&sim, "b", "r3").expect("refused");
    assert!(
        error.starts_with("too many requests to this agent (limit 2 a minute)"),
        "{error}"
    );
    sim.advance(60_000);
    ask(&mut sim, "b", "r4");
    assert_eq!(refusal(&sim, "b", "r4"), None);
}

#[test]
fn a_reconnect_starts_from_the_closed_sockets_window_while_a_tab_open_beside_it_counts_apart() {
    let mut sim = limited(2, 0);
    sim.connect("a");
    sim.connect("b");
    ask(&mut sim, "a", "r1");
    ask(&mut sim, "a", "r2");
    ask(&mut sim, "b", "b1");
    assert_eq!(
        refusal(&sim, "b", "b1"),
        None,
        "tabs open together count apart"
    );
    sim.disconnect("a");
    sim.connect("a2");
    ask(&mut sim, "a2", "again");
    let error = refusal(&sim, "a2", "again").expect("the reconnect is refused");
    assert!(error.starts_with("too many requests from this connection (limit 2"));
    ask(&mut sim, "b", "b2");
    assert_eq!(refusal(&sim, "b", "b2"), None);
    sim.advance(60_000);
    ask(&mut sim, "a2", "later");
    assert_eq!(refusal(&sim, "a2", "later"), None);
}

#[test]
fn an_eviction_resets_no_window_the_adopted_tabs_the_closed_ones_nor_the_agents() {
    let mut sim = limited(2, 5);
    sim.connect("a");
    sim.connect("b");
    ask(&mut sim, "a", "r1");
    ask(&mut sim, "a", "r2");
    ask(&mut sim, "b", "b1");
    ask(&mut sim, "b", "b2");
    sim.disconnect("b");
    sim.evict();
    ask(&mut sim, "a", "after");
    assert!(
        refusal(&sim, "a", "after").is_some(),
        "the adopted tab has its window back"
    );
    sim.connect("c");
    ask(&mut sim, "c", "c1");
    assert!(
        refusal(&sim, "c", "c1").is_some(),
        "a new socket starts from the windows the closed ones left"
    );
    sim.advance(60_000);
    ask(&mut sim, "c", "c2");
    assert_eq!(refusal(&sim, "c", "c2"), None);
}

#[test]
fn an_eviction_keeps_the_agents_window() {
    let mut sim = limited(0, 2);
    sim.connect("a");
    ask(&mut sim, "a", "r1");
    ask(&mut sim, "a", "r2");
    sim.evict();
    ask(&mut sim, "a", "r3");
    let error = refusal(&sim, "a", "r3").expect("refused");
    assert!(error.starts_with("too many requests to this agent (limit 2"));
}

fn parent_chat(sim: &mut Sim, parent: &str, text: &str) {
    sim.script(Reply::text("ok"));
    let frame = serde_json::json!({"type": "cf_agent_rpc_chat", "message": text,
                                   "clientTools": [], "executor": false});
    sim.send_channel(parent, frame.to_string());
    sim.run_until_idle();
}

fn named_submit(
    sim: &mut Sim,
    id: &str,
    caller: Option<&str>,
    key: Option<&str>,
) -> Result<durable_chat::core::SubmissionRecord, durable_chat::core::SubmitError> {
    sim.script(Reply::text("ok"));
    let request = durable_chat::core::SubmitRequest {
        messages: vec![durable_chat::protocol::UIMessage::user_text(id, "hi")],
        idempotency_key: key.map(str::to_string),
        caller: caller.map(str::to_string),
        ..Default::default()
    };
    let result = sim.call(|core, now| core.submit(request, now));
    sim.run_until_idle();
    result
}

#[test]
fn a_parents_chat_counts_toward_the_agents_rate_and_is_refused_on_its_channel_past_it() {
    let mut sim = limited(0, 2);
    sim.connect("tab");
    sim.open_channel("parent");
    ask(&mut sim, "tab", "r1");
    parent_chat(&mut sim, "parent", "first from the parent");
    assert_eq!(
        of_type(sim.frames("parent"), "cf_agent_rpc_started").len(),
        1
    );
    sim.clear_frames();
    parent_chat(&mut sim, "parent", "second from the parent");
    let answers = sim.take_frames("parent");
    assert_eq!(kinds(&answers), [CHAT_ERROR], "{answers:?}");
    let error = answers[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("too many requests to this agent (limit 2 a minute)"),
        "{error}"
    );
    assert!(
        !sim.transcript()
            .iter()
            .any(|m| m["parts"][0]["text"] == "second from the parent"),
        "nothing of a refused call is stored"
    );
    ask(&mut sim, "tab", "r2");
    assert!(
        refusal(&sim, "tab", "r2").is_some(),
        "the parent's turns used the agent's budget the tabs share"
    );
    sim.advance(60_000);
    parent_chat(&mut sim, "parent", "after a minute");
    assert_eq!(
        of_type(sim.frames("parent"), "cf_agent_rpc_started").len(),
        1
    );
}

#[test]
fn a_named_callers_submissions_count_toward_the_agents_rate_and_the_agents_own_do_not() {
    let mut sim = limited(0, 2);
    assert!(named_submit(&mut sim, "s1", Some("http"), Some("k1")).is_ok());
    assert!(
        named_submit(&mut sim, "s1", Some("http"), Some("k1")).is_ok(),
        "a repeat of a key returns the first submission"
    );
    assert!(named_submit(&mut sim, "s2", Some("rpc"), None).is_ok());
    let refused =
        named_submit(&mut sim, "s3", Some("http"), None).expect_err("past the agent's rate");
    assert!(refused.is_rate_limited(), "{refused}");
    assert!(
        refused
            .0
            .starts_with("too many requests to this agent (limit 2 a minute); try again in"),
        "{refused}"
    );
    assert!(
        !sim.store.messages().iter().any(|m| m.id == "s3"),
        "nothing of a refused submission is stored"
    );
    for (n, own) in [None, Some("")].into_iter().enumerate() {
        let id = format!("own{n}");
        assert!(
            named_submit(&mut sim, &id, own, None).is_ok(),
            "the agent's own code is not rate limited"
        );
    }
    let continued = sim.call(|core, now| core.continue_last_from_outside(now));
    assert!(
        continued.as_ref().is_err_and(|e| e.is_rate_limited()),
        "{continued:?}"
    );
    assert!(
        sim.call(|core, now| core.continue_last(now)).is_ok(),
        "the agent's own continuation is not rate limited"
    );
    sim.run_until_idle();
    sim.advance(60_000);
    assert!(named_submit(&mut sim, "s4", Some("http"), None).is_ok());
    assert!(sim
        .call(|core, now| core.continue_last_from_outside(now))
        .is_ok());
}

#[test]
fn the_agents_own_chat_is_not_rate_limited() {
    let mut sim = limited(0, 1);
    sim.connect("tab");
    ask(&mut sim, "tab", "r1");
    sim.script(Reply::text("scheduled"));
    sim.handle(durable_chat::core::Event::ProgrammaticChat {
        conn: None,
        message: durable_chat::protocol::UIMessage::user_text("own", "scheduled job"),
        tools: Vec::new(),
        executor: false,
    });
    sim.run_until_idle();
    assert_eq!(
        text_of(sim.transcript().last().expect("an answer")),
        "scheduled"
    );
}

#[test]
fn without_a_limit_no_rate_is_stored() {
    let mut sim = limited(0, 0);
    sim.connect("a");
    for n in 0..5 {
        ask(&mut sim, "a", &format!("r{n}"));
        assert_eq!(refusal(&sim, "a", &format!("r{n}")), None);
    }
    assert!(
        !sim.store.config_keys().contains(&"request_rates"),
        "nothing reads the windows, so none is written: {:?}",
        sim.store.config_keys()
    );
}
