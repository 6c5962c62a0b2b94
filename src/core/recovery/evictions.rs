//! Chat recovery after an eviction: a stream found open at start is settled
//! (its partial answer persisted, its log kept for a resuming tab), then the
//! turn is parked if it waits for a person, continued into the same answer if
//! it produced something, retried if it produced nothing, or failed with a
//! clear message once its budget (attempts, interrupted attempts, time without
//! progress) is spent. A durable heartbeat wakes an evicted turn with no client.

use crate::protocol::{server, Outcome, Role, ToolState, UIMessage, UIMessageChunk};

use crate::core::contract::effects::{StoreOp, Timer};
use crate::core::contract::log_event::{LogEvent, RecoveryStep};
use crate::core::data::accumulator::{
    apply_chunk, close_dangling_text, has_content, repair_dead_server_calls, INTERRUPTED_TOOL_ERROR,
};
use crate::core::data::queue::QueuedTurn;
use crate::core::rows::persisted::{ConfigKey, OpenStream, RecoveryBudget};
use crate::core::vocab::hooks::ChatResponse;
use crate::core::vocab::ids::IdKind;
use crate::core::vocab::turn_config::TurnTrigger;
use crate::core::{Core, Entry};

pub const EXHAUSTED_TEXT: &str =
    "The assistant was interrupted and could not recover. Please try again.";

/// What to do with a turn cut by an eviction.
#[derive(Debug, PartialEq, Eq)]
enum Plan {
    /// Waits for a browser tool result or an approval: nothing runs now.
    Park,
    Continue,
    Retry,
    /// An automatic continuation cut before it showed anything: run it again.
    Rerun,
    /// The conversation moved on; nothing to do.
    Skip,
}

impl Core {
    pub(in crate::core) fn on_woke(&mut self) {
        for open in self.recovery.take_cut_streams() {
            self.recover(open);
        }
        // An owed continuation (restored from the store) runs once its batch is
        // complete; turns accepted before the eviction run in their order.
        self.try_start_continuation();
        self.pump();
    }

    pub(in crate::core) fn on_heartbeat(&mut self) {
        if self.active.is_some() {
            let at = self.now + self.config.settings.recovery.heartbeat_ms;
            self.set_timer(Timer::Heartbeat, at);
        }
    }

    fn recover(&mut self, open: OpenStream) {
        let root = open
            .record
            .recovery_root
            .clone()
            .unwrap_or_else(|| open.record.request_id.clone());
        let produced = !open.chunks.is_empty();
        let partial = self.settle_cut_stream(&open);
        let plan = self.plan(&open, partial.as_ref());
        match plan {
            Plan::Park | Plan::Skip => {
                if plan == Plan::Park {
                    self.log_recovery(RecoveryStep::Parked, "eviction", &root, 0);
                }
                // A recovery turn cut again ends its chain here: tabs told
                // by the previous instance that it began are told it ended.
                if open.record.recovery_root.is_some() {
                    self.recovery.begin(root);
                }
                self.finish_recovery();
                return;
            }
            Plan::Continue | Plan::Retry | Plan::Rerun => {}
        }
        let mut budget = self.take_budget(&root);
        budget.attempts += 1;
        budget.interrupted += 1;
        if produced {
            budget.last_progress_at = self.now;
        }
        let limits = self.config.settings.recovery;
        let exhausted = budget.attempts > limits.max_attempts
            || budget.interrupted > limits.max_interrupted_attempts
            || self.now.saturating_sub(budget.last_progress_at) > limits.no_progress_timeout_ms;
        // The recovery turn shows the model every settled result (an exhausted
        // chain runs nothing more): a continuation owed for them would answer again.
        self.drop_continuation();
        let step = RecoveryStep::of_attempt(exhausted, budget.attempts);
        self.log_recovery(step, "eviction", &root, budget.attempts);
        if exhausted {
            // Held again only so that ending the chain deletes its row.
            self.recovery.hold_budget(Some(budget));
            let answer_id = partial.map(|m| m.id);
            self.exhaust(&open, &root, recovery_trigger(plan), answer_id);
            return;
        }
        self.put_config(ConfigKey::Recovery, &budget);
        self.recovery.hold_budget(Some(budget));
        self.recovery.begin(root.clone());
        let to = self.conns.chat();
        self.send_to(to, server::chat_recovering(true, &root));
        let continue_into = (plan == Plan::Continue).then(|| open.record.message_id.clone());
        let request_id = self.new_id(IdKind::Request);
        let trigger = recovery_trigger(plan);
        self.queue.push_front(QueuedTurn {
            message_ids: open.record.origin_message_ids.clone(),
            recovery_root: Some(root),
            resume_message: continue_into,
            // The cut turn started last: its depth is the stored one.
            delegation_depth: self.last_turn_depth(),
            ..QueuedTurn::new(request_id, trigger, self.now, self.queue.generation())
        });
        self.pump();
    }

    /// Persists what the cut stream produced (on top of the stored copy of the
    /// answer when it was itself a continuation of one) and closes its log.
    fn settle_cut_stream(&mut self, open: &OpenStream) -> Option<UIMessage> {
        let failed_runs = open.record.continuation && self.fail_approved_runs();
        let mut message = self
            .transcript
            .get(&open.record.message_id)
            .unwrap_or_else(|| UIMessage::assistant(open.record.message_id.clone()));
        for body in &open.chunks {
            if let Ok(chunk) = serde_json::from_str::<UIMessageChunk>(body) {
                apply_chunk(&mut message, &chunk);
            }
        }
        self.reapply_stream_approvals(&open.record.request_id, &mut message);
        close_dangling_text(&mut message);
        repair_dead_server_calls(self.inputs.client_tools(), &mut message);
        self.store(StoreOp::CloseStream {
            request_id: open.record.request_id.clone(),
        });
        self.recovery.offer(Some(open.clone()));
        if !has_content(&message) || message.role != Role::Assistant {
            if failed_runs {
                self.broadcast_transcript(None);
            }
            return None;
        }
        let entry = self.place_partial(message, &open.record.origin_message_ids);
        self.put_entry(&entry);
        self.broadcast_transcript(None);
        Some(entry.message)
    }

    /// A cut answer not stored yet goes right after the messages it answers,
    /// ahead of newer messages stored while it streamed (the place its turn
    /// had reserved, lost with the isolate); otherwise it is appended.
    fn place_partial(&mut self, message: UIMessage, origin_ids: &[String]) -> Entry {
        if self.transcript.get(&message.id).is_some() {
            return self.transcript.upsert(message);
        }
        let last_origin = origin_ids
            .iter()
            .filter_map(|id| self.transcript.seq_of(id))
            .max();
        match last_origin.map(|seq| seq + 1) {
            Some(slot) if self.transcript.is_free(slot) && self.transcript.has_after(slot) => {
                self.transcript.insert_at(slot, message)
            }
            _ => self.transcript.upsert(message),
        }
    }

    /// A continuation starts by running the calls a person approved (in the
    /// answer it continues); cut, those runs died with it and may or may not
    /// have taken effect, so they get an error result instead of a second
    /// run. Returns whether any did.
    fn fail_approved_runs(&mut self) -> bool {
        let started: Vec<String> = self
            .transcript
            .approved_calls()
            .into_iter()
            .map(|t| t.tool_call_id.clone())
            .collect();
        for id in &started {
            let Some(entry) = self.transcript.owner_of_mut(id) else {
                continue;
            };
            if let Some(tool) = entry.message.tool_part_mut(id) {
                tool.set_error(INTERRUPTED_TOOL_ERROR);
            }
            let entry = entry.clone();
            self.put_entry(&entry);
        }
        !started.is_empty()
    }

    fn plan(&self, open: &OpenStream, partial: Option<&UIMessage>) -> Plan {
        if let Some(message) = partial {
            let waits_for_person = message.tool_parts().any(|t| {
                t.state == ToolState::ApprovalRequested
                    || (t.state == ToolState::InputAvailable
                        && self
                            .inputs
                            .client_tools()
                            .iter()
                            .any(|c| c.name == t.tool_name))
            });
            if waits_for_person {
                return Plan::Park;
            }
            let is_leaf = self.transcript.last().is_some_and(|m| m.id == message.id);
            return if is_leaf { Plan::Continue } else { Plan::Skip };
        }
        if open.record.continuation {
            // Nothing shown yet: run it again unless the conversation moved on
            // past the answer it continues.
            let leaf_is_answer = self
                .transcript
                .last()
                .is_some_and(|m| m.role == Role::Assistant);
            return if leaf_is_answer {
                Plan::Rerun
            } else {
                Plan::Skip
            };
        }
        let leaf_is_origin = self.transcript.last().is_some_and(|m| {
            m.role == Role::User && open.record.origin_message_ids.contains(&m.id)
        });
        if leaf_is_origin {
            Plan::Retry
        } else {
            Plan::Skip
        }
    }

    /// The chain is out of budget: the cut request ends with an error for
    /// every tab, and the author's `on_chat_response` is owed a report of
    /// it, naming the cut request (the one the tabs saw fail), with the
    /// trigger of the recovery that was not run.
    fn exhaust(
        &mut self,
        open: &OpenStream,
        root: &str,
        trigger: TurnTrigger,
        answer_id: Option<String>,
    ) {
        let record = &open.record;
        let ids = record.origin_message_ids.clone();
        self.report_response(ChatResponse {
            request_id: record.request_id.clone(),
            trigger,
            continuation: record.continuation,
            outcome: Outcome::Error,
            message_ids: ids.clone(),
            answer_id,
            error: Some(EXHAUSTED_TEXT.to_string()),
            usage: None,
            steps: 0,
        });
        let to = self.conns.chat();
        self.send_final_error(
            to,
            &record.request_id,
            EXHAUSTED_TEXT,
            &ids,
            record.continuation,
        );
        self.record_terminal_error(
            record.request_id.clone(),
            EXHAUSTED_TEXT.to_string(),
            ids,
            open.chunks.clone(),
            record.continuation,
        );
        self.recovery.offer(None);
        self.recovery.begin(root.to_string());
        self.finish_recovery();
    }

    pub(in crate::core::recovery) fn log_recovery(
        &mut self,
        step: RecoveryStep,
        cause: &'static str,
        root: &str,
        attempt: u32,
    ) {
        self.log(LogEvent::Recovery {
            step,
            cause,
            root: root.to_string(),
            attempt,
            max_attempts: self.config.settings.recovery.max_attempts,
        });
    }

    /// A recovery chain ended (completed, failed or exhausted).
    pub(in crate::core) fn finish_recovery(&mut self) {
        self.clear_budget();
        if let Some(root) = self.recovery.end() {
            let to = self.conns.chat();
            self.send_to(to, server::chat_recovering(false, &root));
        }
    }

    /// The budget of the recovery chain `root`, taken out to be charged (a
    /// new one when another chain's, or none, was held).
    pub(in crate::core::recovery) fn take_budget(&mut self, root: &str) -> RecoveryBudget {
        match self.recovery.take_budget() {
            Some(b) if b.root == root => b,
            _ => RecoveryBudget {
                root: root.to_string(),
                attempts: 0,
                interrupted: 0,
                last_progress_at: self.now,
            },
        }
    }

    fn clear_budget(&mut self) {
        if self.recovery.take_budget().is_some() {
            self.store(StoreOp::DeleteConfig {
                key: ConfigKey::Recovery,
            });
        }
    }
}

/// The trigger of the recovery turn a plan runs.
fn recovery_trigger(plan: Plan) -> TurnTrigger {
    match plan {
        Plan::Retry => TurnTrigger::RecoveryRetry,
        _ => TurnTrigger::RecoveryContinue,
    }
}
