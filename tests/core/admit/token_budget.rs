//! Tokens an agent may spend in an hour and a day: the usage each model
//! call reports (or an estimate from its bytes when it reports none) is
//! counted into a stored ledger; once a window is spent a chat request is
//! refused on its id with the limit named, a running turn ends before its
//! next model call, the count survives an eviction, and the next window
//! gives the budget back.

use serde_json::json;

use crate::sim::*;

fn budgeted(per_hour: u64, per_day: u64) -> Sim {
    let mut sim = Sim::with(|config| {
        config.settings.limits.max_agent_tokens_per_hour = per_hour;
        config.settings.limits.max_agent_tokens_per_day = per_day;
    });
    sim.connect("a");
    sim
}

pub(super) fn refusal(sim: &Sim, tab: &str, id: &str) -> Option<String> {
    let end = terminal(sim.frames(tab), id)?;
    (end["error"] == true).then(|| end["body"].as_str().unwrap_or_default().to_string())
}

#[test]
fn a_spent_hour_refuses_the_next_turn_even_after_an_eviction_until_the_hour_turns() {
    let mut sim = budgeted(1000, 0);
    sim.script(Reply::text("a long answer").with_usage(900, 200, None));
    sim.send("a", chat_request("r1", &[user("u1", "hi")]));
    sim.run_until_idle();
    assert_eq!(refusal(&sim, "a", "r1"), None, "the first turn runs");

    sim.disconnect("a");
    sim.evict();
    sim.connect("a");
    sim.send("a", chat_request("r2", &[user("u2", "again")]));
    sim.run_until_idle();
    let error = refusal(&sim, "a", "r2").expect("refused");
    assert!(
        error.starts_with(
            "token budget of this agent is spent (limit 1000 tokens an hour); try again in"
        ),
        "{error}"
    );
    assert!(
        !sim.store.messages().iter().any(|m| m.id == "u2"),
        "nothing of a refused request is stored"
    );
    assert_eq!(sim.requests().len(), 1, "the model was not called again");

    sim.advance(3_600_000);
    sim.script(Reply::text("fresh"));
    sim.send("a", chat_request("r3", &[user("u3", "later")]));
    sim.run_until_idle();
    assert_eq!(refusal(&sim, "a", "r3"), None, "the next hour has budget");
}

/// Tab `a` asks for the weather: the model's first step (550 tokens) calls
/// a tool, and the budget spent by it ends the turn before its second
/// step. The error on the request id.
pub(super) fn tool_loop_refusal(sim: &mut Sim) -> String {
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
    error["body"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_tool_loop_that_spends_the_day_ends_before_its_next_model_call() {
    let mut sim = budgeted(0, 500);
    let error = tool_loop_refusal(&mut sim);
    assert!(error.contains("limit 500 tokens a day"), "{error}");
}

#[test]
fn a_call_with_no_usage_is_counted_from_its_bytes() {
    let mut sim = budgeted(10, 0);
    sim.script(Reply::text(
        "an answer of some length with no usage reported",
    ));
    sim.send(
        "a",
        chat_request("r1", &[user("u1", "a question long enough to count")]),
    );
    sim.run_until_idle();
    sim.send("a", chat_request("r2", &[user("u2", "again")]));
    sim.run_until_idle();
    assert!(refusal(&sim, "a", "r2").is_some_and(|e| e.contains("limit 10 tokens an hour")));
}
