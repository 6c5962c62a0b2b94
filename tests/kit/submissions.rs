//! The handle's submission housekeeping under the test kit: listing the
//! remembered submissions by status, forgetting finished ones (one, or many
//! by a filter) and cancelling every turn in flight at once.

use durable_chat::agent::{AgentDefinition, SubmissionFilter, SubmitOptions};
use durable_chat::core::SubmissionStatus;
use durable_chat::protocol::UIMessage;
use durable_chat::test_kit::TestAgent;

struct Plain;
impl AgentDefinition for Plain {}

fn submit(agent: &TestAgent, text: &str) -> String {
    let message = UIMessage::user_text(format!("m-{text}"), text);
    agent
        .handle()
        .submit_messages(vec![message], SubmitOptions::default())
        .expect("accepted")
        .id
}

#[test]
fn finished_submissions_are_listed_newest_first_and_forgotten_on_request() {
    let agent = TestAgent::new(Plain);
    agent.model().reply_text("one");
    agent.model().reply_text("two");
    let first = submit(&agent, "a");
    agent.run_until_idle();
    let second = submit(&agent, "b");
    agent.run_until_idle();
    let handle = agent.handle();
    let all = handle.list_submissions(&SubmissionFilter::default());
    let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [second.as_str(), first.as_str()]);
    let failed = SubmissionFilter {
        statuses: vec![SubmissionStatus::Failed],
        ..SubmissionFilter::default()
    };
    assert!(handle.list_submissions(&failed).is_empty());

    assert!(handle.delete_submission(&first));
    assert!(!handle.delete_submission(&first), "already gone");
    assert!(handle.submission_status(&first).is_none());
    let gone = agent.block_on({
        let handle = handle.clone();
        let first = first.clone();
        async move { handle.wait_for_submission(&first).await }
    });
    assert!(
        gone.is_none(),
        "a forgotten submission is waited on as unknown"
    );
    assert_eq!(handle.delete_submissions(&SubmissionFilter::default()), 1);
    assert!(handle
        .list_submissions(&SubmissionFilter::default())
        .is_empty());
}

#[test]
fn a_queued_submission_is_not_forgotten_and_cancel_all_ends_every_turn() {
    let agent = TestAgent::new(Plain);
    let running = submit(&agent, "a");
    let queued = submit(&agent, "b");
    let handle = agent.handle();
    assert!(!handle.delete_submission(&queued), "still queued");
    assert_eq!(handle.delete_submissions(&SubmissionFilter::default()), 0);
    assert_eq!(handle.cancel_all_chats(), 2);
    agent.run_until_idle();
    for id in [&running, &queued] {
        let status = handle.submission_status(id).expect("kept").status;
        assert_eq!(status, SubmissionStatus::Cancelled, "{id}");
    }
    let older_than_now = SubmissionFilter {
        finished_before: Some(agent.now_ms() + 1),
        limit: Some(1),
        ..SubmissionFilter::default()
    };
    assert_eq!(handle.delete_submissions(&older_than_now), 1);
    assert_eq!(
        handle.list_submissions(&SubmissionFilter::default()).len(),
        1
    );
}

/// An agent with a declared schedule (its interval from `every`) and an
/// `on_start` that counts its starts in the key-value store.
struct Declaring {
    every: Option<u64>,
}

impl AgentDefinition for Declaring {
    fn scheduled_tasks(&self) -> Vec<durable_chat::core::ScheduleRequest> {
        let mut tasks = vec![durable_chat::core::ScheduleRequest {
            name: "digest".into(),
            callback: "noop".into(),
            payload: serde_json::json!({"kind": "digest"}),
            when: durable_chat::core::ScheduleWhen::Cron("0 6 * * *".into()),
        }];
        if let Some(secs) = self.every {
            tasks.push(durable_chat::core::ScheduleRequest {
                name: "tick".into(),
                callback: "noop".into(),
                payload: serde_json::Value::Null,
                when: durable_chat::core::ScheduleWhen::Every(secs),
            });
        }
        tasks.push(durable_chat::core::ScheduleRequest {
            name: "once".into(),
            callback: "noop".into(),
            payload: serde_json::Value::Null,
            when: durable_chat::core::ScheduleWhen::Delay(10),
        });
        tasks
    }

    async fn on_start(&self, agent: durable_chat::agent::AgentHandle) {
        let starts: u64 = agent.storage().get("starts").ok().flatten().unwrap_or(0);
        let _ = agent.storage().put("starts", &(starts + 1));
    }
}

#[test]
fn declared_schedules_are_added_kept_changed_and_removed_on_start_and_on_start_runs_each_start() {
    let agent = TestAgent::new(Declaring { every: Some(60) });
    let names = |agent: &TestAgent| -> Vec<String> {
        let mut names: Vec<String> = agent
            .handle()
            .schedules()
            .into_iter()
            .map(|s| s.name)
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&agent),
        ["digest", "tick"],
        "a declared one-off is refused"
    );
    let starts = |agent: &TestAgent| -> u64 {
        agent
            .handle()
            .storage()
            .get("starts")
            .ok()
            .flatten()
            .unwrap_or(0)
    };
    assert_eq!(starts(&agent), 1);
    let digest_at = (agent.handle().schedules().into_iter())
        .find(|s| s.name == "digest")
        .map(|s| s.next_at);
    // An added schedule of the agent's own is left alone.
    agent
        .handle()
        .schedule(
            "own",
            "noop",
            durable_chat::core::ScheduleWhen::Every(5),
            (),
        )
        .expect("scheduled");
    agent.evict();
    assert_eq!(starts(&agent), 2, "on_start ran again after the restart");
    let digest = agent
        .handle()
        .schedules()
        .into_iter()
        .find(|s| s.name == "digest");
    assert_eq!(
        digest.map(|s| s.next_at),
        digest_at,
        "unchanged: kept as it was"
    );
    assert_eq!(names(&agent), ["digest", "own", "tick"]);
}

/// Every turn asks for an `{"id": string}` answer.
struct Ordering;

impl AgentDefinition for Ordering {
    async fn before_turn(
        &self,
        _ctx: durable_chat::core::TurnContext,
        _agent: durable_chat::agent::AgentHandle,
    ) -> durable_chat::core::TurnConfig {
        durable_chat::core::TurnConfig {
            structured_output: Some(durable_chat::model::StructuredOutput::new(
                "order",
                serde_json::json!({"type": "object", "properties": {"id": {"type": "string"}},
                                   "required": ["id"], "additionalProperties": false}),
            )),
            ..Default::default()
        }
    }
}

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Order {
    id: String,
}

#[test]
fn run_turn_hands_back_the_checked_structured_output_as_a_typed_value() {
    let agent = TestAgent::new(Ordering);
    agent.model().reply_text("{\"id\": \"A-1\"}");
    agent.model().reply_text("{\"id\": 1}");
    let run = |text: &str| {
        let handle = agent.handle();
        let message = UIMessage::user_text("", text);
        agent.block_on(async move {
            handle
                .run_turn(vec![message], SubmitOptions::default())
                .await
        })
    };
    let good = run("order?").expect("ran");
    assert_eq!(good.status, SubmissionStatus::Completed);
    assert_eq!(good.output::<Order>(), Ok(Order { id: "A-1".into() }));
    let bad = run("again").expect("ran");
    assert_eq!(bad.status, SubmissionStatus::Failed);
    let error = bad.error.clone().unwrap_or_default();
    assert!(
        error.contains("$.id: expected string, found integer"),
        "{error}"
    );
    assert!(bad.output::<Order>().is_err());
}
