//! The author's hooks the core waits on (`before_turn`, the tool hooks,
//! `on_chat_error`, `on_chat_response`), started by a run of effects and
//! polled once when that run is over (a hook sees every effect of its run
//! carried out, as it would from a task). One that is done at once — the
//! default hooks, most synchronous author code — answers the core in the
//! same run, with no task and no trip through the microtask queue; one that
//! awaits goes on as a task and answers when done.
//!
//! Hooks are answered at once only under the host's own entry points (a
//! tab's frame, a model's events: `hooks_at_once`), and never while a hook
//! is being polled: code of the author's that calls into the agent (a
//! submit from a route, a hook calling the handle) never has another hook
//! of theirs run inside it.
//!
//! The first poll happens outside any task, so its waker is a relay: a
//! future may keep the first waker it is given (`worker::Delay` does) and
//! wake it later; the relay passes that on to the task polling the hook by
//! then.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use wasm_bindgen_futures::spawn_local;

use crate::core::Event;

use super::AgentHost;

/// A started hook: what it tells the core when done (if anything).
type HookRun = Pin<Box<dyn Future<Output = Option<Event>>>>;

/// The hooks started by the run of effects being carried out.
#[derive(Default)]
pub(super) struct HookRuns {
    started: RefCell<Vec<HookRun>>,
    /// Whether a hook done at once may answer in the same run.
    at_once: Cell<bool>,
}

/// The waker of a hook's first poll: wakes the task that polls the hook
/// once there is one (before that, the task's own first poll is due anyway).
#[derive(Default)]
struct Relay {
    task: Mutex<Option<Waker>>,
}

impl Wake for Relay {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Ok(task) = self.task.lock() {
            if let Some(waker) = task.as_ref() {
                waker.wake_by_ref();
            }
        }
    }
}

impl AgentHost {
    /// Starts `run` once the current run of effects is over.
    pub(super) fn start_hook(&self, run: impl Future<Output = Option<Event>> + 'static) {
        self.hook_runs.started.borrow_mut().push(Box::pin(run));
    }

    /// Runs `f`, an entry point of the host's own, with hooks answered at
    /// once.
    pub(super) fn hooks_at_once<R>(&self, f: impl FnOnce() -> R) -> R {
        let before = self.hook_runs.at_once.replace(true);
        let out = f();
        self.hook_runs.at_once.set(before);
        out
    }

    /// Polls every hook the last run of effects started (under an entry
    /// point of the host's own; elsewhere each goes on as a task): the
    /// answers of those already done are dispatched in order, the rest go
    /// on as tasks.
    pub(super) fn run_started_hooks(self: &Rc<Self>) {
        let started = std::mem::take(&mut *self.hook_runs.started.borrow_mut());
        for mut run in started {
            let relay = Arc::new(Relay::default());
            let waker = Waker::from(relay.clone());
            let at_once = self.hook_runs.at_once.get();
            let polled = match at_once {
                true => {
                    // The hook's own calls into the agent answer no hook at once.
                    self.hook_runs.at_once.set(false);
                    let polled = run.as_mut().poll(&mut Context::from_waker(&waker));
                    self.hook_runs.at_once.set(true);
                    polled
                }
                false => Poll::Pending,
            };
            match polled {
                Poll::Ready(Some(event)) => self.dispatch(event),
                Poll::Ready(None) => {}
                Poll::Pending => {
                    let host = self.clone();
                    spawn_local(async move {
                        let answer = std::future::poll_fn(|cx| {
                            if let Ok(mut task) = relay.task.lock() {
                                *task = Some(cx.waker().clone());
                            }
                            run.as_mut().poll(cx)
                        })
                        .await;
                        if let Some(event) = answer {
                            host.dispatch(event);
                        }
                    });
                }
            }
        }
    }
}
