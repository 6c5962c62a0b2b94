//! The lines a turn's life leaves in the log (`LOG_LEVEL`): a turn started
//! and ended with its outcome, model retries, trimmed and refused context,
//! recoveries, refused frames — one line each, none per chunk, and only
//! those within the configured level.

use crate::sim::*;
use durable_chat::core::{LogEvent, LogLevel, RecoveryStep, TurnEnd};
use durable_chat::model::ModelFailure;
use serde_json::json;

/// The log as the host writes it: `level line`.
fn lines(sim: &Sim) -> Vec<String> {
    sim.log
        .iter()
        .map(|e| format!("{} {e}", e.level().as_str()))
        .collect()
}

fn ask(sim: &mut Sim, id: &str, text: &str) {
    sim.send("a", chat_request(id, &[user(&format!("u-{id}"), text)]));
    sim.run_until_idle();
}

fn ended(sim: &Sim) -> Vec<(String, TurnEnd)> {
    sim.log
        .iter()
        .filter_map(|e| match *e {
            LogEvent::TurnEnded {
                ref request_id,
                end,
                ..
            } => Some((request_id.clone(), end)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_turn_that_retries_then_completes_logs_its_start_the_retry_and_its_end() {
    let mut sim = two_tabs();
    sim.script(Reply::http_error(429, "429 Too Many Requests: slow down"))
        .script(Reply::text("hello after the wait"));
    ask(&mut sim, "r1", "hi");

    let lines = lines(&sim);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert_eq!(
        lines[0],
        "info turn started request=r1 trigger=submit queued=0 waited_ms=0 by=tab:a"
    );
    assert_eq!(
        lines[1],
        "warn model retry request=r1 attempt=1 delay_ms=1000 reason=\"429 Too Many Requests: slow down\""
    );
    let end = &lines[2];
    assert!(
        end.starts_with("info turn ended request=r1 outcome=completed steps=1 ms="),
        "{end}"
    );
    let LogEvent::TurnEnded {
        duration_ms,
        model_bytes,
        ..
    } = sim.log[2]
    else {
        panic!("{:?}", sim.log[2]);
    };
    assert!(duration_ms >= 1_000, "the wait counts: {duration_ms}");
    assert_eq!(model_bytes, "hello after the wait".len());
    assert!(end.contains(&format!("streamed_bytes={model_bytes} tokens~5")));
}

#[test]
fn a_long_answer_is_two_lines_not_one_per_chunk() {
    let mut sim = two_tabs();
    sim.script(Reply::words(200).every(5));
    ask(&mut sim, "r1", "tell me a story");
    assert_eq!(lines(&sim).len(), 2, "{:#?}", lines(&sim));
}

#[test]
fn log_level_warn_keeps_only_warnings_and_errors() {
    let mut sim = Sim::with(|c| c.settings.log_level = LogLevel::Warn);
    sim.connect("a");
    sim.script(Reply::http_error(503, "503 overloaded"))
        .script(Reply::text("ok"));
    ask(&mut sim, "r1", "hi");
    sim.script(Reply::http_error(401, "401 Unauthorized: bad key"));
    ask(&mut sim, "r2", "again");

    let lines = lines(&sim);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines[0].starts_with("warn model retry request=r1 attempt=1"));
    assert!(
        lines[1].starts_with("error turn ended request=r2 outcome=failed steps=1")
            && lines[1].ends_with("reason=\"401 Unauthorized: bad key\""),
        "{}",
        lines[1]
    );

    let mut quiet = Sim::with(|c| c.settings.log_level = LogLevel::Error);
    quiet.connect("a");
    quiet
        .script(Reply::http_error(503, "503"))
        .script(Reply::text("ok"));
    ask(&mut quiet, "r1", "hi");
    assert!(quiet.log.is_empty(), "{:?}", quiet.log);
}

#[test]
fn debug_adds_one_line_per_model_step() {
    let mut sim = Sim::with(|c| c.settings.log_level = LogLevel::Debug);
    sim.connect("a");
    sim.script(Reply::tool_call(
        "c1",
        "get_weather",
        json!({"city": "Oslo"}),
    ))
    .script(Reply::text("sunny"));
    sim.script_tool("get_weather", ToolReply::ok(json!({"sky": "clear"})));
    ask(&mut sim, "r1", "weather?");
    let steps: Vec<String> = lines(&sim)
        .into_iter()
        .filter(|l| l.starts_with("debug step started request=r1"))
        .collect();
    assert_eq!(steps.len(), 2, "{steps:#?}");
    assert!(steps[1].contains("step=2 context_bytes="));
    assert!(lines(&sim)
        .last()
        .unwrap()
        .contains("outcome=completed steps=2"));
}

#[test]
fn a_refused_frame_is_one_warning_naming_the_connection_and_the_limit() {
    let mut sim = Sim::with(|c| c.settings.limits.max_frame_bytes = 200);
    sim.connect("a");
    sim.send("a", chat_request("big", &[user("u1", &"x".repeat(500))]));
    sim.run_until_idle();
    let lines = lines(&sim);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].starts_with("warn frame refused conn=a reason=\"frame too large:"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("(limit 200)"), "{}", lines[0]);
}

#[test]
fn a_turn_that_asks_for_approval_ends_waiting_for_a_person_and_the_continuation_is_its_own_turn() {
    let mut sim = two_tabs();
    approval_turn(&mut sim);
    assert_eq!(ended(&sim), [("r1".to_string(), TurnEnd::WaitingForPerson)]);
    assert!(lines(&sim)[1].contains("outcome=waiting-for-person"));

    sim.log.clear();
    sim.script(Reply::text("deleted"));
    sim.script_tool("delete_file", ToolReply::ok(json!({"deleted": true})));
    sim.send("a", approval("c1", true, true));
    sim.run_until_idle();
    let lines = lines(&sim);
    assert!(
        lines[0].starts_with("info turn started") && lines[0].contains("trigger=continuation"),
        "{lines:#?}"
    );
    assert!(lines.last().unwrap().contains("outcome=completed"));
}

#[test]
fn a_cancelled_turn_ends_aborted() {
    let mut sim = two_tabs();
    sim.script(Reply::words(100).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "long one")]));
    sim.advance(200);
    sim.send("a", cancel("r1"));
    sim.run_until_idle();
    assert_eq!(ended(&sim), [("r1".to_string(), TurnEnd::Aborted)]);
}

#[test]
fn a_cut_stream_logs_the_recovery_and_the_turn_that_continues_it() {
    let mut sim = two_tabs();
    sim.script(Reply::text("half of").then_cut())
        .script(Reply::text(" the answer"));
    ask(&mut sim, "r1", "hi");

    let lines = lines(&sim);
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert_eq!(
        lines[1],
        "warn recovery begun cause=cut-stream root=r1 attempt=1/10"
    );
    assert!(lines[2].starts_with("warn turn ended request=r1 outcome=recovering"));
    assert!(
        lines[3].contains("trigger=recovery-continue"),
        "{}",
        lines[3]
    );
    assert!(lines[4].contains("outcome=completed"), "{}", lines[4]);
}

#[test]
fn a_stream_that_keeps_breaking_logs_each_attempt_and_the_spent_budget_as_an_error() {
    let mut sim = Sim::with(|c| c.settings.recovery.max_attempts = 2);
    sim.connect("a");
    for _ in 0..5 {
        sim.script(Reply::text("again and").then_cut());
    }
    ask(&mut sim, "r1", "hi");
    let steps: Vec<RecoveryStep> = sim
        .log
        .iter()
        .filter_map(|e| match *e {
            LogEvent::Recovery { step, .. } => Some(step),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        [
            RecoveryStep::Begun,
            RecoveryStep::Continued,
            RecoveryStep::Exhausted
        ]
    );
    let lines = lines(&sim);
    assert!(lines
        .iter()
        .any(|l| l == "error recovery budget exhausted cause=cut-stream root=r1 attempt=3/2"));
    assert_eq!(
        ended(&sim).last().map(|(_, end)| *end),
        Some(TurnEnd::Failed)
    );
}

#[test]
fn an_eviction_mid_answer_logs_the_recovery_begun_after_the_restart() {
    let mut sim = two_tabs();
    sim.script(Reply::words(40).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "tell me a story")]));
    sim.advance(600);
    sim.log.clear();
    sim.script(Reply::text("and that was all."));
    sim.evict();
    sim.run_until_idle();

    let lines = lines(&sim);
    assert_eq!(
        lines[0],
        "warn recovery begun cause=eviction root=r1 attempt=1/10"
    );
    assert!(lines[1].contains("trigger=recovery-continue"), "{lines:#?}");
    assert!(lines[2].contains("outcome=completed"), "{lines:#?}");
}

#[test]
fn a_turn_cut_while_it_waits_for_a_person_is_parked_and_says_so() {
    let mut sim = two_tabs();
    mixed_tools_turn(&mut sim);
    sim.advance(1_000);
    sim.log.clear();
    sim.evict();
    sim.run_until_idle();
    assert_eq!(
        lines(&sim),
        ["info recovery parked (waiting for a person) cause=eviction root=r1"]
    );
}

#[test]
fn a_trimmed_context_and_a_refused_one_are_logged() {
    let mut sim = Sim::with(|c| c.settings.context.max_bytes = 5_000);
    sim.connect("a");
    for i in 0..20 {
        sim.script(Reply::text(&format!("answer {i}")));
        ask(&mut sim, &format!("r{i}"), &"q".repeat(400));
    }
    let trims: Vec<String> = lines(&sim)
        .into_iter()
        .filter(|l| l.starts_with("info context trimmed"))
        .collect();
    assert!(!trims.is_empty());
    assert!(trims
        .last()
        .unwrap()
        .starts_with("info context trimmed request=r19 omitted_messages="));
    assert!(trims.last().unwrap().ends_with("budget=5000"));

    sim.log.clear();
    let body = "This model's maximum context length is 8192 tokens.";
    sim.script(Reply::failure(
        ModelFailure::http(400, format!("400 Bad Request: {body}"), None, None)
            .overflowing_context(),
    ))
    .script(Reply::text("fits now"));
    ask(&mut sim, "big", "and now?");
    let lines = lines(&sim);
    let overflow = lines
        .iter()
        .find(|l| l.starts_with("warn context overflow request=big"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(overflow.contains("retry_budget="), "{overflow}");
    assert!(lines.last().unwrap().contains("outcome=completed"));
}

#[test]
fn a_turn_started_line_names_who_started_it() {
    use durable_chat::core::SubmitRequest;
    use durable_chat::protocol::UIMessage;
    let mut sim = two_tabs();
    sim.script(Reply::text("for the tab"))
        .script(Reply::text("for the route"))
        .script(Reply::text("for the agent"));
    ask(&mut sim, "r1", "hi");
    let submit = |sim: &mut Sim, id: &str, caller: Option<&str>| {
        sim.call(|core, now| {
            core.submit(
                SubmitRequest {
                    messages: vec![UIMessage::user_text(id, "hello")],
                    caller: caller.map(str::to_string),
                    ..Default::default()
                },
                now,
            )
        })
        .expect("accepted");
        sim.run_until_idle();
    };
    submit(&mut sim, "m-http", Some("http\nforged"));
    submit(&mut sim, "m-own", None);
    let started: Vec<String> = lines(&sim)
        .into_iter()
        .filter(|l| l.starts_with("info turn started"))
        .map(|l| l.split(" by=").nth(1).unwrap_or_default().to_string())
        .collect();
    assert_eq!(started, ["tab:a", "caller:\"http\\nforged\"", "agent"]);
}

#[test]
fn a_turn_whose_provider_reports_cached_input_logs_the_cached_share() {
    let mut sim = two_tabs();
    sim.script(
        Reply::tool_call("c1", "get_weather", json!({"city": "Oslo"})).with_usage(
            1000,
            20,
            Some(600),
        ),
    )
    .script(Reply::text("rain").with_usage(1100, 5, Some(1000)))
    .script_tool("get_weather", ToolReply::ok(json!("rain")));
    sim.send("a", chat_request("r1", &[user("u1", "weather?")]));
    sim.run_until_idle();
    let end = lines(&sim)
        .into_iter()
        .find(|l| l.contains("turn ended request=r1"))
        .expect("the end line");
    assert!(
        end.ends_with(" input_tokens=2100 cached_tokens=1600 cached_share=76%"),
        "the turn's calls together: {end}"
    );

    sim.script(Reply::text("plain").with_usage(50, 1, None));
    sim.send("a", chat_request("r2", &[user("u2", "hi")]));
    sim.run_until_idle();
    let end = lines(&sim)
        .into_iter()
        .find(|l| l.contains("turn ended request=r2"))
        .expect("the end line");
    assert!(
        !end.contains("cached"),
        "no share without a cached count: {end}"
    );
}
