//! The alarm the agent's own code schedules (`AgentHandle::schedule_alarm`):
//! one due time, stored (`ConfigKey::AuthorAlarm`) so it outlives the
//! isolate, kept in the timer table as a durable timer so the Durable
//! Object's single alarm covers it and a running turn's heartbeat alike.
//! Whenever the durable alarm fires, a due author alarm is disarmed, its row
//! deleted and `Effect::AuthorAlarm` asked of the host, which runs the
//! definition's `on_alarm` once.

use crate::core::contract::effects::{Effect, Event, StoreOp, Timer};
use crate::core::rows::persisted::{AuthorAlarmRow, ConfigKey};
use crate::core::Core;

impl Core {
    /// Schedules the agent's own alarm at `at_ms` (replacing one already
    /// scheduled) or cancels it (`None`), at `now_ms`: shorthand for
    /// `handle(Event::AuthorAlarmSet { at_ms }, now_ms)`.
    pub fn schedule_alarm(&mut self, at_ms: Option<u64>, now_ms: u64) {
        self.handle(Event::AuthorAlarmSet { at_ms }, now_ms);
    }

    /// When the agent's own alarm is due, if one is scheduled.
    pub fn scheduled_alarm(&self) -> Option<u64> {
        self.timers
            .iter()
            .find(|(t, _)| *t == Timer::AuthorAlarm)
            .map(|(_, at)| at)
    }

    pub(in crate::core) fn schedule_author_alarm(&mut self, at_ms: Option<u64>) {
        match at_ms {
            Some(at) => {
                self.set_timer(Timer::AuthorAlarm, at);
                self.put_config(ConfigKey::AuthorAlarm, &AuthorAlarmRow { at });
            }
            None => {
                self.clear_timer(Timer::AuthorAlarm);
                self.store(StoreOp::DeleteConfig {
                    key: ConfigKey::AuthorAlarm,
                });
            }
        }
    }

    /// The durable alarm fired: the author's alarm runs if it is due.
    pub(in crate::core) fn fire_author_alarm(&mut self) {
        let due = self.scheduled_alarm().is_some_and(|at| at <= self.now);
        if !due {
            return;
        }
        self.schedule_author_alarm(None);
        self.effects.push(Effect::AuthorAlarm);
    }
}
