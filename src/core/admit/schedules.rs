//! The author's named schedules: added, listed and cancelled by the agent's
//! own code, stored in one config row (`ConfigKey::Schedules`) so they
//! outlive the isolate, and covered by one durable timer
//! (`Timer::Schedules`) at the earliest due time, so they share the Durable
//! Object's single alarm with the engine's heartbeat and the author's alarm.
//! When the durable alarm fires, every due schedule is asked of the host
//! (`Effect::RunSchedule`, which runs its callback) and moved to its next
//! due time, written before the callbacks run, with the run itself: a run
//! is owed until the host reports it ended (`Event::ScheduleRan`), so one
//! cut by an eviction starts again after the restart and one that failed
//! starts again after a pause, up to `MAX_SCHEDULE_ATTEMPTS` in all (at
//! least once, at most that many times).

use crate::core::contract::effects::{Effect, ScheduleOutcome, StoreOp, Timer};
use crate::core::contract::log_event::LogEvent;
use crate::core::data::schedule_table::RunEnded;
use crate::core::rows::persisted::ConfigKey;
use crate::core::rows::schedule_row::{ScheduleRow, ScheduleRun, SchedulesRow};
use crate::core::vocab::schedule::{ScheduleError, ScheduleRequest};
use crate::core::Core;

impl Core {
    /// Adds schedule `request.name` (replacing one of that name) at `now_ms`.
    pub fn schedule(
        &mut self,
        request: ScheduleRequest,
        now_ms: u64,
    ) -> Result<ScheduleRow, ScheduleError> {
        self.command(now_ms, |core| {
            let zone = core.config.settings.schedule_time_zone.clone();
            let row = core.schedules.add(request, core.now, zone.as_deref())?;
            core.write_down_schedules();
            Ok(row)
        })
    }

    /// Cancels schedule `name`; `false` if there was none.
    pub fn cancel_schedule(&mut self, name: &str, now_ms: u64) -> bool {
        self.command(now_ms, |core| {
            let cancelled = core.schedules.cancel(name);
            if cancelled {
                core.write_down_schedules();
            }
            cancelled
        })
    }

    /// Every schedule, soonest first.
    pub fn schedules(&self) -> Vec<ScheduleRow> {
        self.schedules.list()
    }

    /// The durable alarm fired: every due schedule runs, and every run due
    /// to be tried again.
    pub(in crate::core) fn fire_schedules(&mut self) {
        let due = self.schedules.start_due(self.now);
        if due.is_empty() {
            return;
        }
        self.start_runs(due);
    }

    /// After a restart: runs the previous instance started and never saw
    /// end start again (or are given up on their last attempt).
    pub(in crate::core) fn restart_cut_schedule_runs(&mut self) {
        let (again, given_up) = self.schedules.restart_cut_runs();
        if again.is_empty() && given_up.is_empty() {
            return;
        }
        for run in &again {
            self.log_retry(run, run.attempt, 0, "cut by a restart".into());
        }
        self.log_given_up(given_up, "cut by a restart");
        self.start_runs(again);
    }

    /// The host reports run `run` ended.
    pub(in crate::core) fn on_schedule_ran(&mut self, run: &str, outcome: ScheduleOutcome) {
        let (ended, reason) = match outcome {
            ScheduleOutcome::Done => (
                self.schedules.run_ended(run, false, self.now),
                String::new(),
            ),
            ScheduleOutcome::Failed(e) => (self.schedules.run_ended(run, true, self.now), e),
            ScheduleOutcome::Unrunnable(e) => (self.schedules.give_up(run), e),
        };
        match ended {
            RunEnded::Done => {}
            RunEnded::Retry(run) => {
                let delay_ms = run.retry_at.unwrap_or(self.now).saturating_sub(self.now);
                self.log_retry(&run, run.attempt + 1, delay_ms, reason);
            }
            RunEnded::GivenUp(run) => self.log_given_up(vec![run], &reason),
        }
        self.write_down_schedules();
    }

    /// Attempt `attempt` of `run` starts `delay_ms` from now.
    fn log_retry(&mut self, run: &ScheduleRun, attempt: u32, delay_ms: u64, reason: String) {
        self.log(LogEvent::ScheduleRetry {
            name: run.name.clone(),
            attempt,
            delay_ms,
            reason,
        });
    }

    fn log_given_up(&mut self, runs: Vec<ScheduleRun>, reason: &str) {
        for run in runs {
            self.log(LogEvent::ScheduleGivenUp {
                name: run.name,
                attempts: run.attempt,
                reason: reason.to_string(),
            });
        }
    }

    /// Writes `runs` down as owed, then asks the host to run each.
    fn start_runs(&mut self, runs: Vec<ScheduleRun>) {
        self.write_down_schedules();
        for run in runs {
            self.effects.push(Effect::RunSchedule {
                run: run.id,
                name: run.name,
                callback: run.callback,
                payload: run.payload,
                attempt: run.attempt,
            });
        }
    }

    /// Stores the table and keeps the durable timer on its earliest entry.
    pub(in crate::core::admit) fn write_down_schedules(&mut self) {
        match self.schedules.next_due() {
            Some(at) => self.set_timer(Timer::Schedules, at),
            None => self.clear_timer(Timer::Schedules),
        }
        if self.schedules.is_empty() {
            self.store(StoreOp::DeleteConfig {
                key: ConfigKey::Schedules,
            });
        } else {
            let row = SchedulesRow {
                schedules: self.schedules.list(),
                runs: self.schedules.runs().to_vec(),
            };
            self.put_config(ConfigKey::Schedules, &row);
        }
    }
}
