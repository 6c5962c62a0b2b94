//! A model stream that breaks off after it produced something (a dropped
//! connection, a stream that ends without the provider saying it is done),
//! inside a running isolate: handled as an eviction's cut is, without one.
//! The partial answer is stored, the interrupted request ends with outcome
//! `recovering` (the stock client keeps the turn open), every tab is told a
//! recovery runs, and a recovery turn continues into the same answer under
//! the same budget as eviction recoveries. The tabs see an error only when
//! that budget is spent. Errors the provider states still fail the turn.

use crate::model::ModelFailure;
use crate::protocol::{server, Outcome};

use crate::core::contract::log_event::RecoveryStep;
use crate::core::data::queue::QueuedTurn;
use crate::core::recovery::evictions::EXHAUSTED_TEXT;
use crate::core::rows::persisted::ConfigKey;
use crate::core::vocab::ids::{CallId, IdKind};
use crate::core::vocab::turn_config::TurnTrigger;
use crate::core::Core;

impl Core {
    /// A model call failed: a stream cut after it streamed is continued by a
    /// recovery turn when it can be; any other failure is the turn's.
    pub(in crate::core) fn on_model_failure(&mut self, call: CallId, failure: ModelFailure) {
        let streamed = self.model_call_streamed(call);
        if failure.cut && streamed == Some(true) && self.recover_cut_stream() {
            return;
        }
        self.on_model_failed(call, failure);
    }

    /// The running turn's model stream broke off after it streamed. Returns
    /// false (nothing done) when the answer cannot be continued in place: a
    /// newer message was stored after it while it streamed.
    fn recover_cut_stream(&mut self) -> bool {
        let Some(active) = self.active.as_ref() else {
            return false;
        };
        if self.transcript.has_after(active.seq()) {
            return false;
        }
        let turn = active.turn();
        let was_recovery = turn.is_recovery();
        let root = turn
            .recovery_root
            .clone()
            .unwrap_or_else(|| turn.request_id.clone());
        let mut budget = self.take_budget(&root);
        // The stream produced something: that is progress.
        budget.attempts += 1;
        budget.last_progress_at = self.now;
        let exhausted = budget.attempts > self.config.settings.recovery.max_attempts;
        let step = RecoveryStep::of_attempt(exhausted, budget.attempts);
        self.log_recovery(step, "cut-stream", &root, budget.attempts);
        if exhausted {
            // Held again only so that ending the chain deletes its row.
            self.recovery.hold_budget(was_recovery.then_some(budget));
            self.end_turn(Outcome::Error, Some(EXHAUSTED_TEXT.to_string()));
            return true;
        }
        self.put_config(ConfigKey::Recovery, &budget);
        self.recovery.hold_budget(Some(budget));
        // A tool call cut while its input streamed can never run.
        if let Some(active) = self.active.as_mut() {
            active.repair_dead_server_calls(self.inputs.client_tools());
        }
        let message_id = self.active.as_ref().map(|a| a.message().id.clone());
        let cut_stream = self.active_as_cut_stream();
        let Some(cut) = self.close_turn(Outcome::Recovering, None) else {
            return true;
        };
        // Offered to tabs that join while the recovery runs.
        self.recovery.offer(cut_stream);
        self.recovery.begin(root.clone());
        let to = self.conns.chat();
        self.send_to(to, server::chat_recovering(true, &root));
        let request_id = self.new_id(IdKind::Request);
        self.queue.push_front(QueuedTurn {
            requester: cut.requester,
            message_ids: cut.message_ids,
            recovery_root: Some(root),
            resume_message: message_id,
            turn_tools: cut.turn_tools,
            executor: cut.executor,
            delegation_depth: cut.delegation_depth,
            ..QueuedTurn::new(
                request_id,
                TurnTrigger::RecoveryContinue,
                self.now,
                self.queue.generation(),
            )
        });
        self.pump();
        true
    }
}
