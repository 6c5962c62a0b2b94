//! Automatic continuation: once every result of a step is in (tool results
//! and approvals that ask for it), exactly one turn continues the answer.
//! Owns the owed continuation, its stored row (so it survives an eviction),
//! its coalescing timer (re-armed by each result) and the barrier that waits
//! while the latest answer is mid-batch or another turn streams.

use crate::core::contract::effects::{StoreOp, Timer};
use crate::core::data::queue::PendingContinuation;
use crate::core::data::queue::QueuedTurn;
use crate::core::data::transcript::is_mid_batch;
use crate::core::rows::persisted::{ConfigKey, ContinuationRow};
use crate::core::vocab::ids::ConnId;
use crate::core::vocab::ids::IdKind;
use crate::core::vocab::turn_config::TurnTrigger;
use crate::core::Core;

impl Core {
    /// A person answered a call (handed back by the turn): a continuation
    /// is owed when the answer asks for one, else an owed one waits for it too.
    pub(in crate::core) fn after_person_answered(&mut self, conn: ConnId, auto_continue: bool) {
        if auto_continue {
            self.request_continuation(conn);
        } else {
            self.extend_continuation_window();
        }
    }

    /// A person's answer asked for a continuation: owed from now on (and
    /// written down), its owner parked on it, the coalescing window re-armed.
    fn request_continuation(&mut self, owner: ConnId) {
        self.owe_continuation(Some(owner.clone()));
        self.conns.park(&owner);
        self.arm_continuation();
    }

    /// The agent's own code asked to continue the last answer: owed (and
    /// written down) like a person's, and started now if nothing runs.
    /// Returns the continuation's request id.
    pub(in crate::core::admit) fn owe_continuation_now(&mut self) -> String {
        let request_id = self.owe_continuation(None);
        self.try_start_continuation();
        request_id
    }

    /// A continuation is owed from now on (the one already owed, if any):
    /// its request id.
    fn owe_continuation(&mut self, owner: Option<ConnId>) -> String {
        if let Some(pending) = &self.continuation {
            return pending.request_id.clone();
        }
        let request_id = self.new_id(IdKind::Request);
        self.continuation = Some(PendingContinuation {
            request_id: request_id.clone(),
            owner,
        });
        self.put_config(ConfigKey::Continuation, &ContinuationRow { owed: true });
        request_id
    }

    /// Another answer arrived without asking: an owed continuation waits for it too.
    fn extend_continuation_window(&mut self) {
        if self.continuation.is_some() {
            self.arm_continuation();
        }
    }

    fn arm_continuation(&mut self) {
        let at = self.now + self.config.settings.continuation_coalesce_ms;
        self.set_timer(Timer::Continuation, at);
    }

    /// Queues the owed continuation once no turn streams and the batch is complete.
    pub(in crate::core) fn try_start_continuation(&mut self) {
        if self.continuation.is_none() || self.active.is_some() {
            return;
        }
        if self.transcript.last_assistant().is_some_and(is_mid_batch) {
            return;
        }
        let Some(pending) = self.drop_continuation() else {
            return;
        };
        // It goes on with the last answer, at the depth of the turn that
        // wrote it.
        self.queue.push(QueuedTurn {
            requester: pending.owner,
            delegation_depth: self.last_turn_depth(),
            ..QueuedTurn::new(
                pending.request_id,
                TurnTrigger::AutoContinuation,
                self.now,
                self.queue.generation(),
            )
        });
        self.pump();
    }

    /// Cancels the owed continuation if it is request `id`. Returns whether it was.
    pub(in crate::core::admit) fn cancel_continuation(&mut self, id: &str) -> bool {
        let owed = self.continuation.as_ref().map(|c| c.request_id.as_str());
        if owed != Some(id) {
            return false;
        }
        self.drop_continuation();
        true
    }

    /// No continuation is owed any more (it was queued, cancelled, or a
    /// recovery turn answers the results instead); its row and timer go.
    pub(in crate::core) fn drop_continuation(&mut self) -> Option<PendingContinuation> {
        let pending = self.continuation.take()?;
        self.store(StoreOp::DeleteConfig {
            key: ConfigKey::Continuation,
        });
        self.clear_timer(Timer::Continuation);
        Some(pending)
    }

    /// After a turn: an owed continuation goes first, then the queue.
    pub(in crate::core) fn after_turn(&mut self) {
        self.try_start_continuation();
        self.pump();
    }
}
