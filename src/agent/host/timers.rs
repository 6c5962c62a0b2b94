//! The core's timers in the Durable Object: an in-isolate wake-up for the
//! next deadline and the durable alarm for the one that must survive an
//! eviction (set, moved or deleted as the core's durable deadline changes).

use std::rc::Rc;
use std::time::Duration;

use futures::future::{AbortHandle, Abortable};
use wasm_bindgen_futures::spawn_local;
use worker::Delay;

use crate::core::{Event, Timer};

use super::{now_ms, AgentHost};

/// Resolves after the current event's work: its frames sent, its model call
/// started and its writes on their way to a commit. A change of the durable
/// alarm made then commits on its own, after them; a change made in the same
/// event would join their commit, and an alarm moved earlier must be
/// scheduled before that commit may finish, which holds back the frames and
/// the model call that wait on it. Between the two commits an eviction finds
/// the turn's records without the alarm: the turn is then recovered on the
/// object's next wake-up (a tab, a request) rather than by itself.
async fn after_this_event() {
    Delay::from(Duration::ZERO).await;
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
    /// Set once the event that asked for it has done its wire work (see
    /// [`after_this_event`]), so a turn's model call does not wait on it.
    pub(super) fn set_alarm(&self, at_ms: u64) {
        let storage = self.state.storage();
        spawn_local(async move {
            after_this_event().await;
            let offset = at_ms.saturating_sub(now_ms()).max(1) as i64;
            if let Err(e) = storage.set_alarm(offset).await {
                crate::log::write(
                    crate::log::LogLevel::Error,
                    &format!("could not set the alarm: {e}"),
                );
            }
        });
    }

    pub(super) fn clear_alarm(&self) {
        let storage = self.state.storage();
        spawn_local(async move {
            after_this_event().await;
            let _ = storage.delete_alarm().await;
        });
    }

    pub fn on_alarm(self: &Rc<Self>) {
        // The platform's alarm is spent once it fires: the next durable
        // deadline is asked for again even if it did not move.
        self.alarm_asked.set(None);
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
