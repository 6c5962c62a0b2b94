//! The starter grown as the guides show — synced state with a callable, a
//! `before_turn` hook reading the state, a daily schedule and a tool that
//! needs approval — and each tested with the test kit: virtual time for
//! the schedule, the tab's approval, the real frames a browser receives.

use std::time::Duration;

use durable_chat::prelude::*;
use durable_chat::test_kit::TestAgent;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use starter_agent::Starter;

/// The starter with a counter: `increment` (a callable) adds one, a daily
/// schedule resets it, the prompt tells the model the count, and `reset`
/// (a tool) needs a person's approval.
struct Counter;

#[derive(Deserialize, JsonSchema)]
struct Reset {
    /// Why the counter is reset.
    reason: String,
}

fn count(agent: &AgentHandle) -> i64 {
    agent.state().and_then(|s| s["count"].as_i64()).unwrap_or(0)
}

impl AgentDefinition for Counter {
    fn tools(&self) -> Vec<ServerTool> {
        let mut tools = Starter.tools();
        let reset = ServerTool::new(
            "reset",
            "Resets the counter",
            |input: Reset, ctx: ToolContext| async move {
                let agent = ctx.agent.ok_or("not running in an agent")?;
                agent.set_state(json!({ "count": 0 }))?;
                Ok::<_, String>(json!({ "reset": input.reason }))
            },
        );
        tools.push(reset.needs_approval(ApprovalRule::Always));
        tools
    }

    fn initial_state(&self) -> Option<Value> {
        Some(json!({ "count": 0 }))
    }

    fn callables(&self) -> Vec<Callable> {
        vec![Callable::new(
            "increment",
            |(): (), ctx: CallContext| async move {
                let next = count(&ctx.agent) + 1;
                ctx.agent.set_state(json!({ "count": next }))?;
                Ok::<_, String>(next)
            },
        )]
    }

    async fn before_turn(&self, _ctx: TurnContext, agent: AgentHandle) -> TurnConfig {
        TurnConfig {
            system: Some(format!("The counter is at {}.", count(&agent))),
            ..TurnConfig::default()
        }
    }

    fn schedule_callbacks(&self) -> Vec<ScheduleCallback> {
        vec![ScheduleCallback::new(
            "reset",
            |_: Value, agent: AgentHandle| async move {
                let _ = agent.set_state(json!({ "count": 0 }));
            },
        )]
    }

    async fn on_connect(&self, _connection: Connection, _request: RequestInfo, agent: AgentHandle) {
        let when = ScheduleWhen::Cron("0 0 * * *".into());
        let _ = agent.schedule("nightly-reset", "reset", when, json!({}));
    }
}

/// The system prompt of the model's last request.
fn last_prompt(agent: &TestAgent) -> String {
    let request = agent.model().last_request().expect("the model was called");
    match &request.messages[0] {
        durable_chat::model::ModelMessage::System { content } => content.clone(),
        other => panic!("not a system prompt: {other:?}"),
    }
}

#[test]
fn a_callable_changes_the_state_every_tab_sees() {
    let agent = TestAgent::new(Counter);
    let (tab, other) = (agent.connect(), agent.connect());
    assert_eq!(tab.call("increment", json!([])), Ok(json!(1)));
    assert_eq!(tab.call("increment", json!([])), Ok(json!(2)));
    assert_eq!(agent.state(), Some(json!({ "count": 2 })));
    assert_eq!(other.state(), Some(json!({ "count": 2 })));
}

#[test]
fn the_before_turn_hook_reads_the_state() {
    let agent = TestAgent::new(Counter);
    let tab = agent.connect();
    tab.call("increment", json!([])).unwrap();
    agent.model().reply_text("It is at one.");
    tab.send_message("Where is the counter?");
    agent.run_until_idle();
    assert_eq!(last_prompt(&agent), "The counter is at 1.");
    assert_eq!(tab.stream_text(), "It is at one.");
}

#[test]
fn the_nightly_schedule_resets_the_counter_when_a_day_passes() {
    let agent = TestAgent::new(Counter);
    let tab = agent.connect();
    tab.call("increment", json!([])).unwrap();
    agent.advance(Duration::from_secs(23 * 3600));
    assert_eq!(
        agent.state(),
        Some(json!({ "count": 1 })),
        "not midnight yet"
    );
    agent.advance(Duration::from_secs(3600));
    assert_eq!(agent.state(), Some(json!({ "count": 0 })));
    assert_eq!(tab.state(), Some(json!({ "count": 0 })));
    assert_eq!(
        agent.handle().schedules().len(),
        1,
        "a cron stays for the next night"
    );
}

#[test]
fn the_reset_tool_waits_for_the_tabs_approval() {
    let agent = TestAgent::new(Counter);
    let tab = agent.connect();
    tab.call("increment", json!([])).unwrap();
    let call = agent
        .model()
        .reply_tool_call("reset", json!({ "reason": "asked" }));
    agent.model().reply_text("Done, it is back to zero.");
    tab.send_message("Reset the counter");
    agent.run_until_idle();

    assert_eq!(tab.approvals_requested(), vec![call.clone()]);
    assert_eq!(
        agent.state(),
        Some(json!({ "count": 1 })),
        "nothing ran yet"
    );

    tab.approve(&call, true);
    agent.run_until_idle();
    assert_eq!(agent.state(), Some(json!({ "count": 0 })));
    assert_eq!(
        agent.messages().last().unwrap().text(),
        "Done, it is back to zero."
    );
}
