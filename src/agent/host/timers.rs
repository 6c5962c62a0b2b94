//! The core's timers in the Durable Object: an in-isolate wake-up for the
//! next deadline and the durable alarm for the one that must survive an
//! eviction (set, moved or deleted as the core's durable deadline changes,
//! a moment after the event that changed it, or once the model has begun
//! to answer if that is sooner).

use std::rc::{Rc, Weak};
use std::time::Duration;

use futures::future::{AbortHandle, AbortRegistration, Abortable};
use wasm_bindgen_futures::spawn_local;
use worker::Delay;

use crate::core::{Event, Timer};

use super::{now_ms, AgentHost};

/// How long after the event that asked for it a change of the durable alarm
/// is made. Made in that event, it would join the event's commit, and an
/// alarm moved earlier must be scheduled before that commit may finish,
/// which holds back the frames and the model call waiting on it. A change
/// overtaken meanwhile (a turn that ended, an alarm moved again) is not made
/// at all. Until it is made an eviction finds the turn's records without the
/// alarm: the turn is then recovered on the object's next wake-up (a tab, a
/// request) rather than by itself.
const ALARM_CHANGE_DELAY: Duration = Duration::from_millis(10);

/// The host, `ALARM_CHANGE_DELAY` from now, if it is still alive, not
/// erased and `still_wanted` still holds: an alarm change is made only then.
/// An alarm being set may be made sooner (`set_alarm_now`): its wait then
/// ends with the event after the one that ended it.
async fn after_change_delay(
    host: Weak<AgentHost>,
    hurried_by: Option<AbortRegistration>,
    still_wanted: impl Fn(&AgentHost) -> bool,
) -> Option<Rc<AgentHost>> {
    let delay = Delay::from(ALARM_CHANGE_DELAY);
    match hurried_by {
        Some(registration) => {
            if Abortable::new(delay, registration).await.is_err() {
                Delay::from(Duration::ZERO).await;
            }
        }
        None => delay.await,
    }
    host.upgrade()
        .filter(|h| !h.destroyed.get() && still_wanted(h))
}

impl AgentHost {
    /// Keeps the wake-up and the durable alarm in step with the core's timers.
    pub(super) fn schedule_timers(self: &Rc<Self>) {
        if self.destroyed.get() {
            return;
        }
        let (next, durable) = {
            let core = self.core.borrow();
            (core.poll_timeout(), core.durable_deadline())
        };
        #[cfg(feature = "debug-routes")]
        let durable = durable.filter(|_| !self.debug.no_alarm);
        if durable != self.alarm_asked.get() {
            self.alarm_asked.set(durable);
            // A set still waiting is overtaken: it is no longer hurried.
            self.alarm_set_wait.take();
            match durable {
                Some(at) => self.set_alarm(at),
                None => self.clear_alarm(),
            }
        }
        let pending = self.wake.borrow().as_ref().map(|(at, _)| *at);
        match (next, pending) {
            (Some(at), Some(wake_at)) if wake_at <= at => {}
            (Some(at), _) => self.wake_at(at),
            (None, Some(_)) => {
                if let Some((_, handle)) = self.wake.borrow_mut().take() {
                    handle.abort();
                }
            }
            (None, None) => {}
        }
    }

    /// The durable alarm outlives the isolate: a cut turn is woken by it.
    /// Set `ALARM_CHANGE_DELAY` after the event that asked for it (or right
    /// after a model's first answer, `set_alarm_now`, if that is sooner),
    /// unless asked for another time (or none) meanwhile.
    fn set_alarm(self: &Rc<Self>, at_ms: u64) {
        let host = Rc::downgrade(self);
        let (hurry, registration) = AbortHandle::new_pair();
        self.alarm_set_wait.replace(Some(hurry));
        spawn_local(async move {
            let still_wanted = |h: &AgentHost| h.alarm_asked.get() == Some(at_ms);
            let Some(host) = after_change_delay(host, Some(registration), still_wanted).await
            else {
                return;
            };
            host.alarm_stored.set(true);
            let offset = at_ms.saturating_sub(now_ms()).max(1) as i64;
            if let Err(e) = host.state.storage().set_alarm(offset).await {
                crate::log::write(
                    crate::log::LogLevel::Error,
                    &format!("could not set the alarm: {e}"),
                );
            }
        });
    }

    /// Deletes the durable alarm `ALARM_CHANGE_DELAY` after the event that
    /// asked for it, unless one was asked for again meanwhile or none is
    /// stored (a set overtaken by this delete was never made).
    fn clear_alarm(self: &Rc<Self>) {
        let host = Rc::downgrade(self);
        spawn_local(async move {
            let still_wanted =
                |h: &AgentHost| h.alarm_asked.get().is_none() && h.alarm_stored.get();
            let Some(host) = after_change_delay(host, None, still_wanted).await else {
                return;
            };
            host.alarm_stored.set(false);
            let _ = host.state.storage().delete_alarm().await;
        });
    }

    /// Sets a pending alarm in the next event rather than at the end of its
    /// delay: called once a model call's first answer has been handled. The
    /// model has begun, so the alarm's own commit no longer meets its first
    /// words (a commit at a fixed time could, and hold back their frames).
    pub(super) fn set_alarm_now(&self) {
        if let Some(wait) = self.alarm_set_wait.take() {
            wait.abort();
        }
    }

    pub fn on_alarm(self: &Rc<Self>) {
        // The platform's alarm is spent once it fires: the next durable
        // deadline is asked for again even if it did not move.
        self.alarm_asked.set(None);
        self.alarm_stored.set(false);
        self.dispatch(Event::Timer(Timer::Heartbeat));
    }

    /// Schedules the wake-up at `at_ms`, replacing a pending one.
    pub(super) fn wake_at(self: &Rc<Self>, at_ms: u64) {
        let wait = at_ms.saturating_sub(now_ms());
        let (handle, registration) = AbortHandle::new_pair();
        if let Some((_, previous)) = self.wake.borrow_mut().replace((at_ms, handle)) {
            previous.abort();
        }
        let delay = Abortable::new(Delay::from(Duration::from_millis(wait)), registration);
        let host = Rc::downgrade(self);
        spawn_local(async move {
            // A replacement aborts this wait (checked before the wake-up is
            // seen), so an `Ok` means this is still the pending wake-up.
            if delay.await.is_err() {
                return;
            }
            if let Some(host) = host.upgrade() {
                host.wake.borrow_mut().take();
                host.on_wake();
            }
        });
    }
}
