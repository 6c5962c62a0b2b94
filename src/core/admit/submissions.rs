//! Work the agent's own code hands to the agent (a route of the author's, a
//! scheduled job, another agent): `submit` accepts user messages now and runs
//! their turn in the turn queue like a tab's (same concurrency strategy, same
//! frames to every tab), idempotent by a caller-chosen key; each submission's
//! status is a stored row (`chat_submissions`) kept up to date as its turn
//! starts, is recovered after an eviction and ends. Also `save_messages`
//! (stored and broadcast, no model turn) and `continue_last_turn` (the
//! protocol's continuation of the last answer, owed durably).

use crate::protocol::{Role, UIMessage};

use crate::core::contract::effects::StoreOp;
use crate::core::data::queue::Arrival;
use crate::core::data::queue::QueuedTurn;
use crate::core::rows::persisted::{StoredState, SubmissionRecord, SubmissionStatus};
use crate::core::vocab::ids::IdKind;
use crate::core::vocab::submit::{
    submission_digest, SubmitError, SubmitRequest, MAX_IDEMPOTENCY_KEY_BYTES,
};
use crate::core::vocab::turn_config::TurnTrigger;
use crate::core::Core;

impl StoredState {
    /// The stored submission `id`, if any (tests and tools read rows back).
    pub fn submission(&self, id: &str) -> Option<&SubmissionRecord> {
        self.submissions.iter().find(|r| r.id == id)
    }
}

impl Core {
    /// Accepts a submission (see [`SubmitRequest`]) at `now_ms`: its
    /// messages are stored and broadcast, its turn queued. Returns the
    /// submission as it stands (a known idempotency key returns the
    /// existing one and changes nothing).
    pub fn submit(
        &mut self,
        request: SubmitRequest,
        now_ms: u64,
    ) -> Result<SubmissionRecord, SubmitError> {
        self.command(now_ms, |core| core.on_submit(request))
    }

    /// The submission `id`, if it is remembered.
    pub fn submission(&self, id: &str) -> Option<&SubmissionRecord> {
        self.submissions.get(id)
    }

    /// Cancels submission `id` (queued: it never runs; running: its turn
    /// ends `aborted` like a tab's cancel). Returns where it stands; a
    /// finished one is left as it is.
    pub fn cancel(&mut self, id: &str, now_ms: u64) -> Option<SubmissionRecord> {
        self.command(now_ms, |core| core.cancel_submission(id))
    }

    /// Cancels the turn whose request id is `id`, whoever asked for it (a
    /// tab, the agent's own code, a parent): a queued one never runs, a
    /// running one ends `aborted` (what streamed is kept), as with a tab's
    /// stop. A submission's id cancels the submission. Returns whether a
    /// turn under that id was queued or running.
    pub fn cancel_request(&mut self, id: &str, now_ms: u64) -> bool {
        self.command(now_ms, |core| core.cancel_request_now(id))
    }

    fn cancel_request_now(&mut self, id: &str) -> bool {
        let live = self.submissions.get(id).map(|r| !r.status.is_final());
        let found = match live {
            Some(live) => {
                self.cancel_submission(id);
                live
            }
            None => {
                let running = self
                    .active
                    .as_ref()
                    .is_some_and(|a| a.turn().request_id == id);
                let queued = self.queue.find(|t| t.request_id == id).is_some();
                let owed = self
                    .continuation
                    .as_ref()
                    .is_some_and(|c| c.request_id == id);
                self.on_cancel(id);
                running || queued || owed
            }
        };
        found
    }

    /// Stores `messages` (replacing stored ones with the same id) and shows
    /// them to every tab; no model turn runs. Returns their ids.
    pub fn save(
        &mut self,
        messages: Vec<UIMessage>,
        now_ms: u64,
    ) -> Result<Vec<String>, SubmitError> {
        self.command(now_ms, |core| core.save_messages(messages))
    }

    /// Owes a continuation of the last assistant message (run as the
    /// protocol's automatic continuation, after whatever runs now). Returns
    /// its request id.
    pub fn continue_last(&mut self, now_ms: u64) -> Result<String, SubmitError> {
        self.command(now_ms, |core| core.on_continue_last_turn(false))
    }

    /// [`Core::continue_last`] asked for from outside the agent (a parent
    /// or another worker over RPC): it counts toward the agent's request
    /// rate (`Limits::max_agent_requests_per_minute`) and is refused past it.
    pub fn continue_last_from_outside(&mut self, now_ms: u64) -> Result<String, SubmitError> {
        self.command(now_ms, |core| core.on_continue_last_turn(true))
    }

    pub(in crate::core::admit) fn on_submit(
        &mut self,
        request: SubmitRequest,
    ) -> Result<SubmissionRecord, SubmitError> {
        let key = request.idempotency_key.filter(|k| !k.is_empty());
        let caller = request.caller.filter(|c| !c.is_empty());
        let digest = key
            .as_ref()
            .map(|_| submission_digest(&request.messages, request.body.as_ref()));
        if let Some(key) = &key {
            if key.len() > MAX_IDEMPOTENCY_KEY_BYTES {
                return Err(SubmitError(format!(
                    "idempotency key too long: {} bytes (limit {MAX_IDEMPOTENCY_KEY_BYTES})",
                    key.len()
                )));
            }
            if let Some(existing) = self.submissions.by_key(caller.as_deref(), key) {
                // A row written before keys were bound to messages has no digest.
                let same = existing.request_digest.is_none() || existing.request_digest == digest;
                if !same {
                    return Err(SubmitError(
                        "idempotency key conflict: the key was already used for other messages"
                            .into(),
                    ));
                }
                return Ok(existing.clone());
            }
        }
        let mut messages = request.messages;
        if messages.is_empty() {
            return Err(SubmitError(
                "a submission needs at least one message".into(),
            ));
        }
        if messages.iter().any(|m| m.role != Role::User) {
            return Err(SubmitError(
                "submit_messages takes user messages (save_messages stores others)".into(),
            ));
        }
        self.admit_messages(&mut messages)?;
        if let Some(body) = &request.body {
            self.config
                .settings
                .limits
                .check_body(body)
                .map_err(SubmitError)?;
        }
        if let Some(error) = self.queue_full() {
            return Err(SubmitError(error));
        }
        if caller.is_some() {
            self.admit_outside_turn()?;
        }
        let id = self.new_id(IdKind::Request);
        let mut record = SubmissionRecord {
            id: id.clone(),
            idempotency_key: key,
            caller,
            request_digest: digest,
            status: SubmissionStatus::Queued,
            message_ids: Vec::new(),
            answer_message_id: None,
            error: None,
            turn_request_id: None,
            submitted_at: self.now,
            updated_at: self.now,
        };
        let overlapped = match self.arrival(TurnTrigger::Submit) {
            Arrival::Queue { overlapped } => overlapped,
            Arrival::Refuse => {
                record.status = SubmissionStatus::Skipped;
                self.remember_submission(record.clone());
                return Ok(record);
            }
        };
        self.forget_terminal_error();
        if let Some(body) = &request.body {
            self.remember_body(body.clone());
        }
        for message in &mut messages {
            // A user message may be edited by reusing its id; any other
            // stored message is never overwritten.
            let taken = self
                .transcript
                .iter()
                .any(|m| m.id == message.id && m.role != Role::User);
            if taken {
                message.id = self.new_id(IdKind::Message);
            }
            let entry = self.transcript.upsert(message.clone());
            self.put_entry(&entry);
            record.message_ids.push(entry.message.id);
        }
        self.broadcast_transcript(None);
        self.transcript.reserve_for(&id);
        self.queue.push(QueuedTurn {
            message_ids: record.message_ids.clone(),
            overlapped,
            body: request.body,
            delegation_depth: request.delegation_depth,
            ..QueuedTurn::new(
                id.clone(),
                TurnTrigger::Submit,
                self.now,
                self.queue.generation(),
            )
        });
        self.remember_submission(record);
        self.pump();
        self.submissions
            .get(&id)
            .cloned()
            .ok_or_else(|| SubmitError("the submission was not kept".into()))
    }

    pub(in crate::core) fn cancel_submission(&mut self, id: &str) -> Option<SubmissionRecord> {
        let record = self.submissions.get(id)?.clone();
        if record.status.is_final() {
            return Some(record);
        }
        let request_id = record.turn_request_id.clone().unwrap_or(record.id.clone());
        let queued_recovery = self
            .queue
            .find(|t| t.recovery_root.as_deref() == Some(id))
            .map(|t| t.request_id.clone());
        self.on_cancel(&request_id);
        if let Some(recovery) = queued_recovery {
            self.on_cancel(&recovery);
        }
        // A turn the cancel did not reach (cut, waiting for a recovery): ended here.
        self.settle_submission(id, SubmissionStatus::Cancelled, None);
        self.submissions.get(id).cloned()
    }

    pub(in crate::core) fn save_messages(
        &mut self,
        mut messages: Vec<UIMessage>,
    ) -> Result<Vec<String>, SubmitError> {
        self.admit_messages(&mut messages)?;
        self.check_saved_tool_parts(&messages)?;
        let mut ids = Vec::with_capacity(messages.len());
        for message in messages {
            let entry = self.transcript.upsert(message);
            self.put_entry(&entry);
            ids.push(entry.message.id);
        }
        if !ids.is_empty() {
            self.broadcast_transcript(None);
        }
        Ok(ids)
    }

    pub(in crate::core::admit) fn on_continue_last_turn(
        &mut self,
        from_outside: bool,
    ) -> Result<String, SubmitError> {
        if self.transcript.last().map(|m| m.role) != Some(Role::Assistant) {
            return Err(SubmitError(
                "nothing to continue: the last message is not an assistant message".into(),
            ));
        }
        if from_outside {
            self.admit_outside_turn()?;
        }
        Ok(self.owe_continuation_now())
    }

    /// A turn asked for from outside the agent without a tab (a named
    /// caller's submission, a continuation over RPC, a parent's `chat()`)
    /// counts toward the agent's request rate; past it, the refusal.
    pub(in crate::core::admit) fn admit_outside_turn(&mut self) -> Result<(), SubmitError> {
        let per_agent = self.config.settings.limits.max_agent_requests_per_minute;
        let counted = self
            .request_rate
            .admit_for_agent(self.now, per_agent)
            .map_err(SubmitError)?;
        if counted {
            self.store_request_rates();
        }
        Ok(())
    }

    /// A turn started (`pump`): a submission it runs is running, its answer known.
    pub(in crate::core::admit) fn submission_started(
        &mut self,
        request_id: &str,
        root: Option<&str>,
    ) {
        let Some(answer) = self
            .active
            .as_ref()
            .filter(|a| a.turn().request_id == request_id)
            .map(|a| a.message().id.clone())
        else {
            return;
        };
        let now = self.now;
        let owner = root.unwrap_or(request_id);
        let Some(record) = self.submissions.start(owner, request_id, answer, now) else {
            return;
        };
        self.store(StoreOp::PutSubmission(record));
    }

    /// A clear: every unfinished submission is cancelled (their turns are
    /// skipped or aborted by the clear).
    pub(in crate::core::admit) fn cancel_live_submissions(&mut self) {
        let live: Vec<String> = self.submissions.live().map(|r| r.id.clone()).collect();
        for id in live {
            self.settle_submission(
                &id,
                SubmissionStatus::Cancelled,
                Some("the history was cleared"),
            );
        }
    }

    /// After a wake-up's recoveries: a submission whose turn neither runs,
    /// waits in the queue nor is carried on by a recovery turn ended with the
    /// old instance (parked for a person, or the conversation moved on).
    pub(in crate::core) fn settle_orphaned_submissions(&mut self) {
        let orphaned: Vec<String> = self
            .submissions
            .live()
            .filter(|r| !self.turn_alive(r))
            .map(|r| r.id.clone())
            .collect();
        for id in orphaned {
            let answered = self
                .submissions
                .get(&id)
                .and_then(|r| r.answer_message_id.as_deref())
                .is_some_and(|answer| self.transcript.get(answer).is_some());
            match answered {
                true => self.settle_submission(&id, SubmissionStatus::Completed, None),
                false => self.settle_submission(
                    &id,
                    SubmissionStatus::Failed,
                    Some("the agent restarted and the turn could not be recovered"),
                ),
            }
        }
    }

    fn turn_alive(&self, record: &SubmissionRecord) -> bool {
        let ids = [Some(record.id.as_str()), record.turn_request_id.as_deref()];
        let is_ours = |turn: &QueuedTurn| {
            ids.contains(&Some(turn.request_id.as_str()))
                || turn.recovery_root.as_deref() == Some(record.id.as_str())
        };
        self.active.as_ref().is_some_and(|a| is_ours(a.turn()))
            || self.queue.find(|t| is_ours(t)).is_some()
    }

    /// Gives `messages` the ids they lack, drops tool parts from user
    /// messages (as from a tab's) and holds them to the limits of a tab's
    /// messages.
    fn admit_messages(&mut self, messages: &mut [UIMessage]) -> Result<(), SubmitError> {
        self.mint_missing_ids(messages);
        messages
            .iter_mut()
            .for_each(UIMessage::drop_tool_parts_of_user);
        self.config
            .settings
            .limits
            .check_messages(messages)
            .map_err(SubmitError)
    }

    fn mint_missing_ids(&mut self, messages: &mut [UIMessage]) {
        for message in messages.iter_mut().filter(|m| m.id.is_empty()) {
            message.id = self.new_id(IdKind::Message);
        }
    }

    fn remember_submission(&mut self, record: SubmissionRecord) {
        self.store(StoreOp::PutSubmission(record.clone()));
        for id in self.submissions.remember(record) {
            self.store(StoreOp::DeleteSubmission { id });
        }
    }
}
