//! The author's named schedules: added, listed and cancelled by the agent's
//! own code, stored in one config row (`ConfigKey::Schedules`) so they
//! outlive the isolate, and covered by one durable timer
//! (`Timer::Schedules`) at the earliest due time, so they share the Durable
//! Object's single alarm with the engine's heartbeat and the author's alarm.
//! When the durable alarm fires, every due schedule is asked of the host
//! once (`Effect::RunSchedule`, which runs its callback) and moved to its
//! next due time, written before the callbacks run.

use crate::core::contract::effects::{Effect, StoreOp, Timer};
use crate::core::rows::persisted::ConfigKey;
use crate::core::rows::schedule_row::{ScheduleRow, SchedulesRow};
use crate::core::vocab::schedule::{ScheduleError, ScheduleRequest};
use crate::core::Core;

impl Core {
    /// Adds schedule `request.name` (replacing one of that name) at `now_ms`.
    pub fn schedule(
        &mut self,
        request: ScheduleRequest,
        now_ms: u64,
    ) -> Result<ScheduleRow, ScheduleError> {
        self.now = self.now.max(now_ms);
        let row = self.schedules.add(request, self.now)?;
        self.write_down_schedules();
        Ok(row)
    }

    /// Cancels schedule `name`; `false` if there was none.
    pub fn cancel_schedule(&mut self, name: &str, now_ms: u64) -> bool {
        self.now = self.now.max(now_ms);
        let cancelled = self.schedules.cancel(name);
        if cancelled {
            self.write_down_schedules();
        }
        cancelled
    }

    /// Every schedule, soonest first.
    pub fn schedules(&self) -> Vec<ScheduleRow> {
        self.schedules.list()
    }

    /// The durable alarm fired: every due schedule runs once.
    pub(in crate::core) fn fire_schedules(&mut self) {
        let due = self.schedules.take_due(self.now);
        if due.is_empty() {
            return;
        }
        self.write_down_schedules();
        for row in due {
            self.effects.push(Effect::RunSchedule {
                name: row.name,
                callback: row.callback,
                payload: row.payload,
            });
        }
    }

    /// A clear deleted every config row: schedules are not chat state and
    /// are written again.
    pub(in crate::core) fn keep_schedules(&mut self) {
        if !self.schedules.is_empty() {
            self.write_down_schedules();
        }
    }

    /// Stores the table and keeps the durable timer on its earliest entry.
    fn write_down_schedules(&mut self) {
        match self.schedules.next_due() {
            Some(at) => {
                self.set_timer(Timer::Schedules, at);
                let row = SchedulesRow {
                    schedules: self.schedules.list(),
                };
                self.put_config(ConfigKey::Schedules, &row);
            }
            None => {
                self.clear_timer(Timer::Schedules);
                self.store(StoreOp::DeleteConfig {
                    key: ConfigKey::Schedules,
                });
            }
        }
    }
}
