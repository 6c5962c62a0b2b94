//! Chat requests, cancel and clear: what a submit persists and broadcasts,
//! a turn's arrival asked of the queue's concurrency decision
//! (`data/queue.rs`), and the pump, the one place that starts turns.

use serde_json::{Map, Value};

use crate::protocol::{server, ChatRequest, ClientToolSchema, Outcome, Trigger};

use crate::core::contract::effects::{StoreOp, Timer};
use crate::core::contract::log_event::StartedBy;
use crate::core::data::queue::{Arrival, FrontDecision, QueuedTurn};
use crate::core::rows::persisted::ConfigKey;
use crate::core::vocab::ids::ConnId;
use crate::core::vocab::turn_config::TurnTrigger;
use crate::core::Core;

impl Core {
    pub(in crate::core) fn on_chat_request(
        &mut self,
        conn: ConnId,
        id: String,
        request: ChatRequest,
    ) {
        if let Some(error) = self.queue_full() {
            self.reject(conn, Some(id), &error);
            return;
        }
        let limits = self.config.settings.limits;
        let spender = self.spender_of(&StartedBy::Tab(conn.to_string()));
        if let Err(error) = self.tokens_allow(&spender, None) {
            self.reject(conn, Some(id), &error);
            return;
        }
        let counted = match self.request_rate.admit(
            &conn,
            self.now,
            limits.max_requests_per_minute,
            limits.max_agent_requests_per_minute,
        ) {
            Ok(counted) => counted,
            Err(error) => {
                self.reject(conn, Some(id), &error);
                return;
            }
        };
        let trigger = match request.trigger {
            Trigger::Submit => TurnTrigger::Submit,
            Trigger::Regenerate => TurnTrigger::Regenerate,
        };
        let overlapped = match self.arrival(trigger) {
            Arrival::Queue { overlapped } => overlapped,
            Arrival::Refuse => {
                let message_ids =
                    crate::core::data::transcript::trailing_user_ids(request.messages.iter());
                self.send_transcript(vec![conn.clone()], false);
                self.request_ended(vec![conn], &id, Outcome::Skipped, Some(&message_ids), false);
                return;
            }
        };
        // Written with the accepted request's rows (a refused one writes
        // nothing; its count is stored with the next write).
        if counted {
            self.store_request_rates();
        }
        self.forget_terminal_error();
        if let Some(tools) = request.client_tools {
            self.remember_client_tools(tools);
        }
        self.remember_body(request.body.clone());
        let reconciled = self
            .transcript
            .reconcile(&request.messages, trigger == TurnTrigger::Regenerate);
        for removed in &reconciled.removed {
            self.store(StoreOp::DeleteMessage {
                id: removed.clone(),
            });
        }
        for entry in &reconciled.written {
            self.put_entry(entry);
        }
        if !reconciled.written.is_empty() || !reconciled.removed.is_empty() {
            self.broadcast_transcript(Some(&conn));
        }
        self.transcript.reserve_for(&id);
        if reconciled.unmatched {
            self.conns.lists_differ(std::slice::from_ref(&conn));
        }
        let requester_synced_at = (trigger == TurnTrigger::Submit)
            .then(|| self.conns.matching_list_changes(&conn))
            .flatten();
        self.queue.push(QueuedTurn {
            requester: Some(conn),
            requester_synced_at,
            message_ids: reconciled.message_ids,
            overlapped,
            body: Some(request.body),
            ..QueuedTurn::new(id, trigger, self.now, self.queue.generation())
        });
        self.pump();
    }

    /// Starts queued turns while nothing runs.
    pub(in crate::core) fn pump(&mut self) {
        // A tab's result still waiting on `after_tool_call` lands first: a
        // turn started now would find its call unanswered.
        while self.active.is_none() && self.tab_results_rewriting.is_empty() {
            match self
                .queue
                .decide_front(self.config.settings.concurrency, self.now)
            {
                FrontDecision::Run(turn) => {
                    let (id, root) = (turn.request_id.clone(), turn.recovery_root.clone());
                    self.start_turn(turn);
                    self.submission_started(&id, root.as_deref());
                }
                FrontDecision::Skip(turn) => self.skip_turn(turn),
                FrontDecision::WaitUntil(at) => {
                    self.set_timer(Timer::Debounce, at);
                    return;
                }
                FrontDecision::Empty => break,
            }
        }
        if self.active.is_none() && self.queue.is_empty() && self.continuation.is_none() {
            // Nothing will stream for connections still parked on a turn.
            let parked = self.conns.take_parked();
            self.send_to(parked, server::stream_resume_none(None, None));
        }
    }

    /// A superseded turn answers its requester; an invalidated one (clear) answers everyone.
    fn skip_turn(&mut self, turn: QueuedTurn) {
        let to = if turn.generation != self.queue.generation() {
            self.conns.chat()
        } else {
            turn.requester.iter().cloned().collect()
        };
        self.send_skipped(to, &turn);
    }

    fn send_skipped(&mut self, to: Vec<ConnId>, turn: &QueuedTurn) {
        self.request_ended(
            to,
            &turn.request_id,
            Outcome::Skipped,
            Some(&turn.message_ids),
            turn.is_continuation(),
        );
    }

    pub(in crate::core) fn on_cancel(&mut self, id: &str) {
        if self
            .active
            .as_ref()
            .is_some_and(|a| a.turn().request_id == id)
        {
            self.end_turn(Outcome::Aborted, None);
            return;
        }
        if let Some(turn) = self.queue.remove(id) {
            let to = self.conns.chat();
            self.request_ended(
                to,
                &turn.request_id,
                Outcome::Aborted,
                Some(&turn.message_ids),
                turn.is_continuation(),
            );
            self.pump();
        } else if self.cancel_continuation(id) {
            self.pump();
        }
    }

    /// Clear: abort and forget everything; other tabs are told to clear.
    pub(in crate::core) fn on_clear(&mut self, sender: Option<ConnId>) {
        // With nothing running, the front turn is waiting out its debounce
        // window: only its requester is told it was skipped.
        let front_waits = self.active.is_none();
        self.cancel_live_submissions();
        for (index, turn) in self.queue.invalidate_all().into_iter().enumerate() {
            let to = match (&turn.requester, index == 0 && front_waits) {
                (Some(requester), true) => vec![requester.clone()],
                _ => self.conns.chat(),
            };
            self.send_skipped(to, &turn);
        }
        self.drop_continuation();
        if self.active.is_some() {
            self.abandon_turn();
        }
        let parked = self.conns.take_parked();
        self.send_to(parked, server::stream_resume_none(None, None));
        self.transcript.clear();
        // Results waiting on `after_tool_call` settle calls that are gone.
        self.tab_results_rewriting.clear();
        self.compaction.reset();
        self.context_texts.clear();
        self.inputs.reset();
        self.recovery.reset();
        self.ended.reset();
        self.forget_turn_depth();
        // The rows that are not chat state survive it
        // (`ConfigKey::SURVIVES_CLEAR`).
        self.store(StoreOp::ClearAll);
        let to = match &sender {
            Some(conn) => self.conns.all_except(conn),
            None => self.conns.all(),
        };
        self.send_list_change(to, server::chat_clear());
    }

    /// Why no further turn is accepted now, when the queue holds the most
    /// pending turns the limits allow (tabs, submissions and parents alike).
    /// What the concurrency strategy says about a turn of `trigger` arriving
    /// now (the one decision for all five strategies lives in `data/queue.rs`).
    pub(in crate::core::admit) fn arrival(&self, trigger: TurnTrigger) -> Arrival {
        let strategy = self.config.settings.concurrency;
        self.queue
            .decide_arrival(strategy, trigger, self.active.is_some())
    }

    pub(in crate::core::admit) fn queue_full(&self) -> Option<String> {
        let limit = self.config.settings.limits.max_pending_turns;
        (self.queue.len() >= limit).then(|| {
            format!("too many pending turns (limit {limit}); try again when the agent is less busy")
        })
    }

    /// The id of a turn accepted but not yet streaming, if any. A continuation
    /// still waiting for its batch is not one: only its owner is parked on it.
    pub(in crate::core) fn accepted_not_streaming(&self) -> Option<String> {
        self.queue.front().map(|t| t.request_id.clone())
    }
}

impl Core {
    /// A sub-agent turn asked for by a parent agent: the message is stored and
    /// broadcast like a tab's, and the turn queues like any other.
    pub(in crate::core) fn on_programmatic_chat(
        &mut self,
        conn: Option<ConnId>,
        messages: Vec<crate::protocol::UIMessage>,
        tools: Vec<crate::protocol::ClientToolSchema>,
        executor: bool,
    ) {
        // The pending-turn limit of a tab's submit holds for programmatic
        // turns too; a parent is told on its channel (its `chat()` fails).
        if let Some(error) = self.queue_full() {
            if let Some(conn) = conn {
                self.reject(conn, None, &error);
            }
            return;
        }
        // A parent's turn counts toward the agent's request rate, as a
        // tab's does; the agent's own (no connection) does not.
        if let Some(conn) = &conn {
            if let Err(refused) = self.admit_outside_turn() {
                self.reject(conn.clone(), None, &refused.0);
                return;
            }
        }
        let request_id = self.new_id(crate::core::vocab::ids::IdKind::Request);
        if let Some(conn) = &conn {
            self.send_to(
                vec![conn.clone()],
                crate::protocol::channel::rpc_started(&request_id),
            );
        }
        // Every message is the caller's, stored as a user message in order;
        // a user message may be edited by reusing its id, any other stored
        // message is never overwritten: the new one gets an id of its own.
        let mut message_ids = Vec::with_capacity(messages.len());
        for mut message in messages {
            message.role = crate::protocol::Role::User;
            let taken = self
                .transcript
                .get(&message.id)
                .is_some_and(|m| m.role != crate::protocol::Role::User);
            if taken || message.id.is_empty() {
                message.id = self.new_id(crate::core::vocab::ids::IdKind::Message);
            }
            let entry = self.transcript.upsert(message);
            self.put_entry(&entry);
            message_ids.push(entry.message.id);
        }
        self.broadcast_transcript(None);
        // Never refused (only a submit is): it waits its place in the queue.
        let overlapped = self.arrival(TurnTrigger::Programmatic).overlapped();
        // A parent's call is as deep as the parent said (kept with the turn).
        let delegation_depth = conn
            .as_deref()
            .map_or(0, |c| self.conns.delegation_depth(c));
        self.queue.push(QueuedTurn {
            message_ids,
            overlapped,
            delegation_depth,
            turn_tools: Some(tools),
            executor: conn.clone().filter(|_| executor),
            requester: conn,
            ..QueuedTurn::new(
                request_id,
                TurnTrigger::Programmatic,
                self.now,
                self.queue.generation(),
            )
        });
        self.pump();
    }
}

impl Core {
    /// The client tools a tab offers from now on, stored (an empty list
    /// deletes the row).
    pub(in crate::core) fn remember_client_tools(&mut self, tools: Vec<ClientToolSchema>) {
        self.put_config_or_delete(ConfigKey::ClientTools, &tools, tools.is_empty());
        self.inputs.replace_client_tools(tools);
    }

    /// The custom body later turns see, stored (an empty body deletes the row).
    pub(in crate::core::admit) fn remember_body(&mut self, body: Map<String, Value>) {
        self.put_config_or_delete(ConfigKey::CustomBody, &body, body.is_empty());
        self.inputs.replace_body(body);
    }
}
