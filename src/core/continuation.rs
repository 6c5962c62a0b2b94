//! Automatic continuation: once every result of a step is in (tool results
//! and approvals that ask for it), exactly one turn continues the answer.
//! Owns the owed continuation, its stored row (so it survives an eviction),
//! its coalescing timer (re-armed by each result) and the barrier that waits
//! while the latest answer is mid-batch or another turn streams.

use super::config::TurnTrigger;
use super::effects::{ConnId, StoreOp, Timer};
use super::ids::IdKind;
use super::persisted::{ConfigKey, ContinuationRow};
use super::queue::QueuedTurn;
use super::transcript::is_mid_batch;
use super::Core;

/// An automatic continuation that has been asked for but not yet queued.
#[derive(Debug, Clone)]
pub(super) struct PendingContinuation {
    pub(super) request_id: String,
    /// The tab whose result asked for it (parked on its stream).
    pub(super) owner: Option<ConnId>,
}

impl PendingContinuation {
    /// A continuation found owed in the store at start: no tab owns it.
    pub(super) fn restored(request_id: String) -> Self {
        PendingContinuation {
            request_id,
            owner: None,
        }
    }
}

impl Core {
    /// A person's answer asked for a continuation: owed from now on (and
    /// written down), its owner parked on it, the coalescing window re-armed.
    pub(super) fn request_continuation(&mut self, owner: ConnId) {
        if self.continuation.is_none() {
            let request_id = self.new_id(IdKind::Request);
            self.continuation = Some(PendingContinuation {
                request_id,
                owner: Some(owner.clone()),
            });
            self.put_config(ConfigKey::Continuation, &ContinuationRow { owed: true });
        }
        if let Some(state) = self.conns.state_mut(&owner) {
            state.parked = true;
        }
        self.arm_continuation();
    }

    /// Another answer arrived without asking: an owed continuation waits for it too.
    pub(super) fn extend_continuation_window(&mut self) {
        if self.continuation.is_some() {
            self.arm_continuation();
        }
    }

    fn arm_continuation(&mut self) {
        let at = self.now + self.config.continuation_coalesce_ms;
        self.set_timer(Timer::Continuation, at);
    }

    /// Queues the owed continuation once no turn streams and the batch is complete.
    pub(super) fn try_start_continuation(&mut self) {
        if self.continuation.is_none() || self.active.is_some() {
            return;
        }
        if self.transcript.last_assistant().is_some_and(is_mid_batch) {
            return;
        }
        let Some(pending) = self.drop_continuation() else {
            return;
        };
        self.queue.push(QueuedTurn {
            requester: pending.owner,
            ..QueuedTurn::new(
                pending.request_id,
                TurnTrigger::AutoContinuation,
                self.now,
                self.queue.generation,
            )
        });
        self.pump();
    }

    /// Cancels the owed continuation if it is request `id`. Returns whether it was.
    pub(super) fn cancel_continuation(&mut self, id: &str) -> bool {
        let owed = self.continuation.as_ref().map(|c| c.request_id.as_str());
        if owed != Some(id) {
            return false;
        }
        self.drop_continuation();
        true
    }

    /// No continuation is owed any more (it was queued, cancelled, or a
    /// recovery turn answers the results instead); its row and timer go.
    pub(super) fn drop_continuation(&mut self) -> Option<PendingContinuation> {
        let pending = self.continuation.take()?;
        self.store(StoreOp::DeleteConfig {
            key: ConfigKey::Continuation,
        });
        self.clear_timer(Timer::Continuation);
        Some(pending)
    }

    /// After a turn: an owed continuation goes first, then the queue.
    pub(super) fn after_turn(&mut self) {
        self.try_start_continuation();
        self.pump();
    }
}
