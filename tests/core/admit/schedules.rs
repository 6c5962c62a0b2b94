//! The author's named schedules: at a time, after a delay, on a cron
//! expression or every N seconds; each runs its callback with its payload
//! when due, on the Durable Object's single alarm shared with the engine's
//! timers; they are stored (an eviction keeps them), listed and cancelled,
//! and a schedule missed while the agent was away fires once.

use crate::sim::*;
use durable_chat::core::{
    ConfigKey, Event, Repeat, ScheduleError, ScheduleOutcome, ScheduleRequest, ScheduleWhen,
};
use serde_json::{json, Value};

fn add(sim: &mut Sim, name: &str, when: ScheduleWhen) -> Result<(), ScheduleError> {
    let request = ScheduleRequest {
        name: name.to_string(),
        callback: "remind".to_string(),
        payload: json!({ "name": name }),
        when,
    };
    sim.call(|core, now| core.schedule(request, now))
        .map(|_| ())
}

fn runs(sim: &Sim) -> Vec<(u64, String)> {
    sim.schedule_runs
        .iter()
        .map(|(at, name, _)| (*at, name.clone()))
        .collect()
}

fn names(sim: &Sim) -> Vec<String> {
    sim.core().schedules().into_iter().map(|s| s.name).collect()
}

#[test]
fn a_delayed_schedule_runs_once_with_its_payload_and_is_gone() {
    let mut sim = Sim::new();
    add(&mut sim, "later", ScheduleWhen::Delay(5_000)).unwrap_or_default();
    assert!(sim.store.config(ConfigKey::Schedules).is_some(), "stored");
    sim.advance(4_999);
    assert!(sim.schedule_runs.is_empty());
    sim.advance(10_000);
    assert_eq!(runs(&sim), [(5_000, "later".to_string())]);
    assert_eq!(sim.schedule_runs[0].2, json!({ "name": "later" }));
    assert!(names(&sim).is_empty());
    assert!(
        sim.store.config(ConfigKey::Schedules).is_none(),
        "its row is gone"
    );
}

#[test]
fn many_schedules_share_the_one_durable_alarm_in_due_order() {
    let mut sim = Sim::new();
    add(&mut sim, "b", ScheduleWhen::At(3_000)).unwrap_or_default();
    add(&mut sim, "a", ScheduleWhen::At(1_000)).unwrap_or_default();
    add(&mut sim, "c", ScheduleWhen::Delay(2_000)).unwrap_or_default();
    assert_eq!(names(&sim), ["a", "c", "b"], "listed soonest first");
    assert_eq!(sim.core().durable_deadline(), Some(1_000));
    sim.advance(5_000);
    assert_eq!(
        runs(&sim),
        [
            (1_000, "a".into()),
            (2_000, "c".into()),
            (3_000, "b".into())
        ]
    );
    assert_eq!(
        sim.core().durable_deadline(),
        None,
        "nothing left to wake for"
    );
}

#[test]
fn an_interval_schedule_fires_repeatedly_until_cancelled() {
    let mut sim = Sim::new();
    add(&mut sim, "tick", ScheduleWhen::Every(2)).unwrap_or_default();
    sim.advance(7_000);
    assert_eq!(
        runs(&sim),
        [
            (2_000, "tick".into()),
            (4_000, "tick".into()),
            (6_000, "tick".into())
        ]
    );
    assert!(sim.call(|core, now| core.cancel_schedule("tick", now)));
    assert!(
        !sim.call(|core, now| core.cancel_schedule("tick", now)),
        "already gone"
    );
    sim.advance(10_000);
    assert_eq!(runs(&sim).len(), 3, "cancelled");
}

#[test]
fn a_cron_schedule_is_listed_with_its_next_minute_and_cancelled() {
    let mut sim = Sim::new();
    sim.advance(30_000);
    add(&mut sim, "daily", ScheduleWhen::Cron("0 9 * * *".into())).unwrap_or_default();
    let listed = sim.core().schedules();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].repeat, Repeat::Cron("0 9 * * *".into()));
    assert_eq!(listed[0].next_at, 9 * 3_600_000);
    assert!(sim.call(|core, now| core.cancel_schedule("daily", now)));
    assert!(sim.core().schedules().is_empty());
    assert_eq!(sim.core().durable_deadline(), None);
}

#[test]
fn a_cron_schedule_fires_each_due_minute() {
    let mut sim = Sim::new();
    add(&mut sim, "m", ScheduleWhen::Cron("*/2 * * * *".into())).unwrap_or_default();
    sim.advance(5 * 60_000);
    assert_eq!(runs(&sim), [(120_000, "m".into()), (240_000, "m".into())]);
}

#[test]
fn schedules_survive_an_eviction() {
    let mut sim = Sim::new();
    add(&mut sim, "once", ScheduleWhen::At(60_000)).unwrap_or_default();
    add(&mut sim, "tick", ScheduleWhen::Every(30)).unwrap_or_default();
    sim.advance(1_000);
    sim.evict();
    assert_eq!(names(&sim), ["tick", "once"]);
    sim.advance(60_000);
    assert_eq!(
        runs(&sim),
        [
            (30_000, "tick".into()),
            (60_000, "once".into()),
            (60_000, "tick".into())
        ]
    );
}

#[test]
fn missed_periods_fire_once_after_a_long_absence() {
    let mut sim = Sim::new();
    add(&mut sim, "tick", ScheduleWhen::Every(10)).unwrap_or_default();
    add(&mut sim, "minute", ScheduleWhen::Cron("* * * * *".into())).unwrap_or_default();
    // The agent is gone for an hour: its alarm fires only when it is back.
    let core_now = 3_600_000 + 500;
    let stored = sim.store.load();
    let mut core = durable_chat::core::Core::new(
        demo_config(),
        stored,
        sim.store.history(),
        Box::new(durable_chat::core::CountingIds::default()),
        core_now,
    );
    core.handle(Event::Timer(durable_chat::core::Timer::Heartbeat), core_now);
    let fired: Vec<String> = core
        .take_effects()
        .into_iter()
        .filter_map(|e| match e {
            durable_chat::core::Effect::RunSchedule { name, .. } => Some(name),
            _ => None,
        })
        .collect();
    assert_eq!(
        fired,
        ["tick", "minute"],
        "each once, not once per missed period"
    );
    let next: Vec<u64> = core.schedules().iter().map(|s| s.next_at).collect();
    assert_eq!(next, [core_now + 10_000, 3_660_000], "due again after now");
}

#[test]
fn the_same_name_replaces_a_schedule() {
    let mut sim = Sim::new();
    add(&mut sim, "x", ScheduleWhen::At(1_000)).unwrap_or_default();
    add(&mut sim, "x", ScheduleWhen::At(4_000)).unwrap_or_default();
    sim.advance(5_000);
    assert_eq!(runs(&sim), [(4_000, "x".into())]);
}

#[test]
fn bad_schedules_are_refused_with_a_reason() {
    let mut sim = Sim::new();
    assert!(
        matches!(add(&mut sim, "c", ScheduleWhen::Cron("61 * * * *".into())), Err(ScheduleError::BadCron(e)) if e.contains("minute"))
    );
    assert_eq!(
        add(&mut sim, "c", ScheduleWhen::Cron("0 0 31 2 *".into())),
        Err(ScheduleError::NeverDue("0 0 31 2 *".into()))
    );
    assert_eq!(
        add(&mut sim, "i", ScheduleWhen::Every(0)),
        Err(ScheduleError::ZeroInterval)
    );
    assert_eq!(
        add(&mut sim, "", ScheduleWhen::Delay(1)),
        Err(ScheduleError::BadName)
    );
    let big = ScheduleRequest {
        name: "big".into(),
        callback: "remind".into(),
        payload: Value::String("x".repeat(20_000)),
        when: ScheduleWhen::Delay(1),
    };
    assert!(matches!(
        sim.call(|core, now| core.schedule(big, now)),
        Err(ScheduleError::PayloadTooLarge(_))
    ));
    for i in 0..100 {
        add(&mut sim, &format!("s{i}"), ScheduleWhen::Delay(1_000)).unwrap_or_default();
    }
    assert_eq!(
        add(&mut sim, "one-more", ScheduleWhen::Delay(1)),
        Err(ScheduleError::TooMany)
    );
    assert!(names(&sim).len() == 100 && sim.schedule_runs.is_empty());
}

#[test]
fn a_clear_keeps_the_schedules() {
    let mut sim = Sim::new();
    add(&mut sim, "keep", ScheduleWhen::At(9_000)).unwrap_or_default();
    sim.handle(Event::ClearHistory);
    sim.evict();
    sim.advance(10_000);
    assert_eq!(runs(&sim), [(9_000, "keep".into())]);
}

#[test]
fn schedules_run_while_a_turn_streams_and_the_turn_completes() {
    let mut sim = Sim::new();
    sim.connect("a");
    add(&mut sim, "soon", ScheduleWhen::At(500)).unwrap_or_default();
    sim.script(Reply::words(200).every(20));
    sim.send("a", chat_request("r1", &[user("u1", "long story")]));
    sim.advance(600);
    assert_eq!(runs(&sim), [(500, "soon".into())]);
    sim.run_until_idle();
    assert_eq!(
        terminal(sim.frames("a"), "r1").unwrap()["outcome"],
        "completed"
    );
}

/// The log lines about schedule runs, as the host writes them.
fn schedule_log(sim: &Sim) -> Vec<String> {
    sim.log
        .iter()
        .map(|e| e.to_string())
        .filter(|l| l.starts_with("schedule "))
        .collect()
}

#[test]
fn a_run_cut_by_an_eviction_starts_again_after_the_restart() {
    let mut sim = Sim::new();
    sim.schedule_run_ms = 5_000;
    add(&mut sim, "report", ScheduleWhen::Delay(1_000)).unwrap_or_default();
    sim.advance(2_000);
    assert_eq!(runs(&sim), [(1_000, "report".to_string())], "started");
    sim.evict(); // the callback was still running
    sim.advance(6_000);
    assert_eq!(
        runs(&sim),
        [(1_000, "report".to_string()), (2_000, "report".to_string())],
        "started again at the restart"
    );
    assert_eq!(sim.schedule_runs[1].2, json!({ "name": "report" }));
    assert!(
        sim.store.config(ConfigKey::Schedules).is_none(),
        "once it returned, nothing is owed"
    );
    sim.evict();
    sim.advance(60_000);
    assert_eq!(
        runs(&sim).len(),
        2,
        "a run that returned does not run again"
    );
    assert!(schedule_log(&sim)[0].contains("reason=\"cut by a restart\""));
}

#[test]
fn a_run_cut_by_a_restart_is_retried_and_the_retry_is_told_it_is_attempt_two() {
    let mut sim = Sim::new();
    sim.schedule_run_ms = 5_000;
    add(&mut sim, "report", ScheduleWhen::Delay(1_000)).unwrap_or_default();
    sim.advance(2_000);
    assert_eq!(sim.schedule_attempts, [1], "the first run is attempt 1");
    sim.evict(); // the callback was still running
    sim.advance(6_000);
    assert_eq!(sim.schedule_attempts, [1, 2], "the retry after the restart");
    sim.evict();
    sim.advance(60_000);
    assert_eq!(sim.schedule_attempts, [1, 2], "it returned: no third run");
}

#[test]
fn a_failed_run_is_tried_again_after_a_pause_up_to_three_attempts() {
    let mut sim = Sim::new();
    sim.schedule_outcomes.insert(
        "sync".into(),
        [
            ScheduleOutcome::Failed("upstream down".into()),
            ScheduleOutcome::Failed("upstream down".into()),
            ScheduleOutcome::Failed("still down".into()),
        ]
        .into(),
    );
    add(&mut sim, "sync", ScheduleWhen::At(1_000)).unwrap_or_default();
    sim.advance(200_000);
    assert_eq!(
        runs(&sim),
        [
            (1_000, "sync".to_string()),
            (11_000, "sync".to_string()),
            (71_000, "sync".to_string())
        ],
        "10 s, then 60 s later, then given up"
    );
    assert_eq!(
        sim.schedule_attempts,
        [1, 2, 3],
        "each run knows its attempt"
    );
    let log = schedule_log(&sim);
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(log[0].contains("schedule retry name=sync attempt=2 delay_ms=10000"));
    assert!(log[2].contains("schedule given up name=sync attempts=3 reason=\"still down\""));
    assert!(sim.store.config(ConfigKey::Schedules).is_none());
}

#[test]
fn a_run_that_cannot_start_is_not_tried_again_and_a_repeating_schedule_goes_on() {
    let mut sim = Sim::new();
    sim.schedule_outcomes.insert(
        "tick".into(),
        [ScheduleOutcome::Unrunnable(
            "no schedule callback `remind`".into(),
        )]
        .into(),
    );
    add(&mut sim, "tick", ScheduleWhen::Every(60)).unwrap_or_default();
    sim.advance(130_000);
    assert_eq!(
        runs(&sim),
        [(60_000, "tick".to_string()), (120_000, "tick".to_string())],
        "no retry in between; the next period runs"
    );
    assert!(schedule_log(&sim)[0].starts_with("schedule given up name=tick attempts=1"));
}

#[test]
fn a_retry_survives_an_eviction_and_a_cancel_drops_it() {
    let mut sim = Sim::new();
    sim.schedule_outcomes.insert(
        "once".into(),
        [ScheduleOutcome::Failed("flaky".into())].into(),
    );
    add(&mut sim, "once", ScheduleWhen::At(1_000)).unwrap_or_default();
    sim.advance(2_000);
    sim.evict();
    sim.advance(20_000);
    assert_eq!(
        runs(&sim),
        [(1_000, "once".to_string()), (11_000, "once".to_string())],
        "the retry was stored and ran on time"
    );
    let mut other = Sim::new();
    other.schedule_outcomes.insert(
        "once".into(),
        [ScheduleOutcome::Failed("flaky".into())].into(),
    );
    add(&mut other, "once", ScheduleWhen::At(1_000)).unwrap_or_default();
    other.advance(2_000);
    assert!(other
        .call(|core, now| Ok::<_, ()>(core.cancel_schedule("once", now)))
        .unwrap());
    other.advance(100_000);
    assert_eq!(runs(&other).len(), 1, "the cancelled retry never runs");
}

#[test]
fn a_cron_schedule_reads_its_wall_times_in_a_time_zone() {
    // Kolkata is UTC+05:30 all year: 09:00 there is 03:30 UTC.
    let mut sim = Sim::new();
    let kolkata = ScheduleWhen::ZonedCron {
        cron: "0 9 * * *".into(),
        time_zone: "Asia/Kolkata".into(),
    };
    add(&mut sim, "standup", kolkata).unwrap_or_default();
    let listed = sim.core().schedules();
    assert_eq!(
        listed[0].repeat,
        Repeat::ZonedCron {
            cron: "0 9 * * *".into(),
            time_zone: "Asia/Kolkata".into()
        }
    );
    assert_eq!(listed[0].next_at, 3 * 3_600_000 + 1_800_000);
    sim.advance(2 * 86_400_000);
    let at: Vec<u64> = runs(&sim).into_iter().map(|(at, _)| at).collect();
    assert_eq!(at, [12_600_000, 12_600_000 + 86_400_000]);
    let unknown = ScheduleWhen::ZonedCron {
        cron: "0 9 * * *".into(),
        time_zone: "Mars/Olympus".into(),
    };
    assert!(matches!(
        add(&mut sim, "x", unknown),
        Err(ScheduleError::BadTimeZone(e)) if e.contains("Mars/Olympus")
    ));
}

#[test]
fn a_cron_schedule_without_a_zone_is_read_in_the_default_time_zone() {
    let mut sim = Sim::with(|config| {
        config.settings.schedule_time_zone = Some("Asia/Kolkata".into());
    });
    add(&mut sim, "standup", ScheduleWhen::Cron("0 9 * * *".into())).unwrap_or_default();
    let listed = sim.core().schedules();
    assert_eq!(listed[0].next_at, 12_600_000);
    assert!(
        matches!(&listed[0].repeat, Repeat::ZonedCron { time_zone, .. } if time_zone == "Asia/Kolkata")
    );
}

fn declared(name: &str, when: ScheduleWhen, payload: Value) -> ScheduleRequest {
    ScheduleRequest {
        name: name.to_string(),
        callback: "remind".to_string(),
        payload,
        when,
    }
}

#[test]
fn declared_schedules_follow_the_definition_on_each_start() {
    let mut sim = Sim::new();
    add(&mut sim, "own", ScheduleWhen::Every(5)).unwrap_or_default();
    let first = vec![
        declared("digest", ScheduleWhen::Cron("0 6 * * *".into()), json!(1)),
        declared("tick", ScheduleWhen::Every(60), json!(null)),
        declared("once", ScheduleWhen::Delay(10), json!(null)),
    ];
    let refused = sim.call(|core, now| core.reconcile_declared_schedules(first, now));
    assert_eq!(
        refused.len(),
        1,
        "a one-off may not be declared: {refused:?}"
    );
    assert_eq!(names(&sim), ["own", "tick", "digest"]);
    sim.advance(60_000);
    let tick_at = sim
        .core()
        .schedules()
        .into_iter()
        .find(|s| s.name == "tick")
        .map(|s| s.next_at);
    // Next start: `tick` unchanged keeps its due time, `digest` changed, a new one, `tick` kept.
    let second = vec![
        declared("digest", ScheduleWhen::Cron("0 7 * * *".into()), json!(1)),
        declared("tick", ScheduleWhen::Every(60), json!(null)),
        declared(
            "hourly",
            ScheduleWhen::Cron("0 * * * *".into()),
            json!(null),
        ),
    ];
    assert!(sim
        .call(|core, now| core.reconcile_declared_schedules(second, now))
        .is_empty());
    let listed = sim.core().schedules();
    let find = |name: &str| listed.iter().find(|s| s.name == name).cloned();
    assert_eq!(find("tick").map(|s| s.next_at), tick_at);
    assert_eq!(find("digest").map(|s| s.next_at), Some(7 * 3_600_000));
    assert!(find("hourly").is_some_and(|s| s.declared));
    assert!(find("own").is_some_and(|s| !s.declared));
    // Declared no more: removed; the agent's own stays.
    assert!(sim
        .call(|core, now| core.reconcile_declared_schedules(Vec::new(), now))
        .is_empty());
    assert_eq!(names(&sim), ["own"]);
}
