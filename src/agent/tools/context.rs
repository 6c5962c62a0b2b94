//! What a server tool's run receives besides its input: its tool call id, an
//! abort signal that fires when the run is given up (its turn cancelled or
//! cleared, its deadline passed), the turn's recent messages, the agent's
//! environment, the agent itself and how many delegated calls deep its turn
//! is. The signal is a single-threaded flag
//! with wakers: a tool polls `is_aborted()` or awaits `aborted()` (e.g. in a
//! `select`).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::protocol::UIMessage;

pub use crate::agent::handle::AgentEnv;

/// The context of one server tool run.
#[derive(Clone, Default)]
pub struct ToolContext {
    pub tool_call_id: String,
    /// Fires when the run is given up: stop work and return.
    pub abort: AbortSignal,
    /// The turn's recent messages, oldest first; the last one is the answer
    /// being written (with this call in it).
    pub messages: Vec<UIMessage>,
    /// The agent's environment (`None` when the tool is called outside an agent).
    pub env: Option<AgentEnv>,
    /// The agent running the tool (its synced state, storage, schedules,
    /// turns; `None` when the tool is called outside an agent).
    pub agent: Option<crate::agent::handle::AgentHandle>,
    /// How many delegated calls deep the turn is: 0 for a tab's turn or the
    /// agent's own, a parent's depth plus one for a turn its `chat()`
    /// started. A child call the tool makes carries this plus one; at
    /// `MAX_DELEGATION_DEPTH` it is refused.
    pub delegation_depth: u32,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("tool_call_id", &self.tool_call_id)
            .field("aborted", &self.abort.is_aborted())
            .field("messages", &self.messages.len())
            .field("delegation_depth", &self.delegation_depth)
            .finish()
    }
}

#[derive(Default)]
struct Flag {
    aborted: Cell<bool>,
    wakers: RefCell<Vec<Waker>>,
}

/// Says whether a run was given up; clones share one flag.
#[derive(Clone, Default)]
pub struct AbortSignal(Rc<Flag>);

impl AbortSignal {
    pub fn is_aborted(&self) -> bool {
        self.0.aborted.get()
    }

    /// Resolves once the run is given up (at once if it already was).
    pub fn aborted(&self) -> Aborted {
        Aborted(self.clone())
    }
}

/// The future of [`AbortSignal::aborted`].
pub struct Aborted(AbortSignal);

impl Future for Aborted {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let flag = &(self.0).0;
        if flag.aborted.get() {
            return Poll::Ready(());
        }
        let mut wakers = flag.wakers.borrow_mut();
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// The host's side of a run's signal.
#[derive(Default)]
pub struct AbortController(AbortSignal);

impl AbortController {
    pub fn signal(&self) -> AbortSignal {
        self.0.clone()
    }

    /// Fires the signal (once) and wakes every task awaiting it.
    pub fn abort(&self) {
        let flag = &(self.0).0;
        if flag.aborted.replace(true) {
            return;
        }
        let wakers = std::mem::take(&mut *flag.wakers.borrow_mut());
        for waker in wakers {
            waker.wake();
        }
    }
}

/// The abort controllers of a host's server tool runs in flight, by call.
#[derive(Default)]
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) struct ToolRuns(
    RefCell<std::collections::HashMap<crate::core::CallId, AbortController>>,
);

#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
impl ToolRuns {
    /// A run of call `call` starts: its signal.
    pub fn start(&self, call: crate::core::CallId) -> AbortSignal {
        let abort = AbortController::default();
        let signal = abort.signal();
        self.0.borrow_mut().insert(call, abort);
        signal
    }

    /// The run of `call` ended.
    pub fn end(&self, call: crate::core::CallId) {
        self.0.borrow_mut().remove(&call);
    }

    /// The runs of `calls` are given up: their signals fire.
    pub fn abort(&self, calls: Vec<crate::core::CallId>) {
        for call in calls {
            let run = self.0.borrow_mut().remove(&call);
            if let Some(abort) = run {
                abort.abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::LocalPool;
    use futures::task::LocalSpawnExt;

    #[test]
    fn a_tool_awaiting_the_signal_wakes_when_its_run_is_given_up() {
        let controller = AbortController::default();
        let signal = controller.signal();
        let seen = Rc::new(Cell::new(false));
        let mut pool = LocalPool::new();
        let flag = seen.clone();
        pool.spawner()
            .spawn_local(async move {
                signal.aborted().await;
                flag.set(signal.is_aborted());
            })
            .unwrap_or_default();
        pool.run_until_stalled();
        assert!(!seen.get(), "nothing fires before the abort");
        controller.abort();
        controller.abort();
        pool.run_until_stalled();
        assert!(seen.get());
        assert!(controller.signal().is_aborted());
    }
}
