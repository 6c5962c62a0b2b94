//! Schedules the definition declares (`AgentDefinition::scheduled_tasks`),
//! kept in step with it each time the agent starts: a declared schedule
//! missing is added, one whose callback, payload or timing changed is
//! replaced (its next due time computed afresh), one unchanged keeps its
//! next due time, and one no longer declared is removed. Schedules the
//! agent's code adds at run time are left alone (a declared name replaces
//! one of them). Only repeating schedules (cron, interval) may be declared:
//! a one-off would fire again on every start.

use crate::core::rows::schedule_row::Repeat;
use crate::core::vocab::schedule::{ScheduleRequest, ScheduleWhen};
use crate::core::Core;

impl Core {
    /// Reconciles the stored schedules with `declared` at `now_ms`;
    /// returns why each refused declaration was refused.
    pub fn reconcile_declared_schedules(
        &mut self,
        declared: Vec<ScheduleRequest>,
        now_ms: u64,
    ) -> Vec<String> {
        self.command(now_ms, |core| core.reconcile(declared))
    }

    fn reconcile(&mut self, declared: Vec<ScheduleRequest>) -> Vec<String> {
        let mut refused = Vec::new();
        let mut names = Vec::new();
        let mut changed = false;
        let zone = self.config.settings.schedule_time_zone.clone();
        for request in declared {
            let name = request.name.clone();
            if matches!(request.when, ScheduleWhen::At(_) | ScheduleWhen::Delay(_)) {
                refused.push(format!(
                    "declared schedule `{name}`: only a cron or interval schedule may be declared"
                ));
                continue;
            }
            let unchanged = self.schedules.get(&name).is_some_and(|row| {
                row.declared
                    && row.callback == request.callback
                    && row.payload == request.payload
                    && row.repeat == repeat_of(&request.when, zone.as_deref())
            });
            if !unchanged {
                if let Err(e) = self.schedules.add(request, self.now, zone.as_deref()) {
                    refused.push(format!("declared schedule `{name}`: {e}"));
                    continue;
                }
                self.schedules.mark_declared(&name);
                changed = true;
            }
            names.push(name);
        }
        let gone: Vec<String> = (self.schedules.list().into_iter())
            .filter(|row| row.declared && !names.contains(&row.name))
            .map(|row| row.name)
            .collect();
        for name in gone {
            changed |= self.schedules.cancel(&name);
        }
        if changed {
            self.write_down_schedules();
        }
        refused
    }
}

/// The stored repeat `when` becomes (a cron without a zone in `zone`).
fn repeat_of(when: &ScheduleWhen, zone: Option<&str>) -> Repeat {
    match when {
        ScheduleWhen::Every(secs) => Repeat::Every(*secs),
        ScheduleWhen::Cron(expr) => match zone.filter(|z| *z != "UTC") {
            Some(zone) => Repeat::ZonedCron {
                cron: expr.clone(),
                time_zone: zone.to_string(),
            },
            None => Repeat::Cron(expr.clone()),
        },
        ScheduleWhen::ZonedCron { cron, time_zone } => Repeat::ZonedCron {
            cron: cron.clone(),
            time_zone: time_zone.clone(),
        },
        ScheduleWhen::At(_) | ScheduleWhen::Delay(_) => Repeat::Once,
    }
}
