//! The inside of a test agent, shared with its tabs: what outlives an
//! instance, the instance running now, the executor its code runs on, and
//! the stepping of virtual time — the next model event, in-isolate timer or
//! durable alarm, in the order they fall due.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::executor::{LocalPool, LocalSpawner};

use super::host::KitHost;
use super::memory::Durable;

/// Steps a run may take before the kit decides the agent is looping.
pub(crate) const MAX_STEPS: usize = 100_000;

/// Starts an instance of the definition on what outlives instances.
pub(crate) type Starter = Box<dyn Fn(&Rc<Durable>, LocalSpawner) -> Rc<KitHost>>;

/// The shared inside of a test agent and its tabs.
pub(crate) struct Kit {
    pub(crate) durable: Rc<Durable>,
    pub(crate) host: RefCell<Rc<KitHost>>,
    pub(crate) pool: RefCell<LocalPool>,
    pub(crate) start: Starter,
    pub(crate) tabs: Cell<u32>,
    pub(crate) next_call: Rc<Cell<u32>>,
}

impl Kit {
    pub(crate) fn host(&self) -> Rc<KitHost> {
        self.host.borrow().clone()
    }

    /// Runs the agent's code (hooks, tools, callables) until it all waits.
    pub(crate) fn run_tasks(&self) {
        self.pool.borrow_mut().run_until_stalled();
        if self.durable.reset_pending.replace(false) {
            self.restart();
        }
    }

    /// A new instance on what outlives instances (the running one's work
    /// is dropped with its executor).
    pub(crate) fn restart(&self) {
        let pool = LocalPool::new();
        let spawner = pool.spawner();
        drop(std::mem::replace(&mut *self.pool.borrow_mut(), pool));
        let host = (self.start)(&self.durable, spawner);
        *self.host.borrow_mut() = host;
        self.pool.borrow_mut().run_until_stalled();
    }

    /// Delivers the next model event or fires the next timer (the clock
    /// moves to it) if it is due by `limit`; then runs what it started.
    pub(crate) fn step_until(&self, limit: u64, durable_too: bool) -> bool {
        self.run_tasks();
        let host = self.host();
        let event = (host.due.borrow().iter().enumerate())
            .min_by_key(|(_, d)| (d.at, d.order))
            .map(|(i, d)| (d.at, d.order, i));
        let timer = (host.timers.borrow().values().copied()).min();
        let alarm = self.durable.alarm.get().filter(|_| durable_too);
        let mut next: Vec<(u64, u64, u8)> = Vec::new();
        next.extend(event.map(|(at, order, _)| (at, order, 0)));
        next.extend(timer.map(|(at, order)| (at, order, 1)));
        next.extend(alarm.map(|(at, order)| (at, order, 2)));
        let Some(&(at, _, kind)) = next.iter().min() else {
            return false;
        };
        if at > limit {
            return false;
        }
        self.durable.clock.set(self.durable.now().max(at));
        match (kind, event) {
            (0, Some((_, _, index))) => {
                let due = host.due.borrow_mut().remove(index);
                let event = match due.event {
                    Ok(event) => crate::core::Event::Model {
                        call: due.call,
                        event,
                    },
                    Err(failure) => crate::core::Event::ModelFailed {
                        call: due.call,
                        failure,
                    },
                };
                self.durable
                    .model_events
                    .set(self.durable.model_events.get() + 1);
                host.dispatch(event);
            }
            (1, _) => host.fire_timers(),
            _ => {
                self.durable.alarm.set(None);
                host.fire_alarm();
            }
        }
        self.run_tasks();
        true
    }

    pub(crate) fn run_until_idle(&self) {
        for _ in 0..MAX_STEPS {
            if !self.step_until(u64::MAX, false) {
                return;
            }
        }
        panic!("the agent kept working for {MAX_STEPS} steps without becoming idle");
    }
}
