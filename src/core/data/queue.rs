//! The serial turn queue: what is waiting to run, why, for whom, and every
//! message-concurrency decision: whether a turn arriving now is refused
//! (`decide_arrival`: `Drop`) and which waiting turn runs, is skipped or
//! waits when it reaches the front (`decide_front`: `Queue`, `Latest`,
//! `Merge`, `Debounce`). It also
//! says what of it must be written down after a change (`QueueWrite`): the
//! queue row, which names each turn but keeps no custom body, and the body
//! rows (`chat_queued_bodies`), each written once when its turn is queued and
//! deleted once the turn leaves the queue (started, skipped, cancelled,
//! cleared), so a change never rewrites the bodies of every waiting turn.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Map, Value};

use crate::protocol::ClientToolSchema;

use crate::core::rows::persisted::DurableTurn;
use crate::core::vocab::config::Concurrency;
use crate::core::vocab::ids::ConnId;
use crate::core::vocab::turn_config::TurnTrigger;

#[derive(Debug, Clone, PartialEq)]
pub struct QueuedTurn {
    pub request_id: String,
    pub trigger: TurnTrigger,
    pub requester: Option<ConnId>,
    /// Ids of the trailing user messages of the originating request.
    pub message_ids: Vec<String>,
    pub submitted_at: u64,
    /// Queue generation when accepted; a clear bumps it and invalidates the turn.
    pub generation: u64,
    /// Arrived while another turn was running or queued.
    pub overlapped: bool,
    /// Custom body sent with this request, if any.
    pub body: Option<Map<String, Value>>,
    /// Recovery: the first interrupted request of the chain.
    pub recovery_root: Option<String>,
    /// Recovery continue: the stored partial answer to stream into.
    pub resume_message: Option<String>,
    /// Client tools for this turn only (a sub-agent call); `None` uses the stored list.
    pub turn_tools: Option<Vec<ClientToolSchema>>,
    /// Where this turn's client tool calls are executed (a parent agent's
    /// channel); without one they are left for a person to answer.
    pub executor: Option<ConnId>,
    /// How many delegated calls deep it was asked at: 0 for a tab's or the
    /// agent's own, a parent's depth plus one for a parent's call.
    pub delegation_depth: u32,
    /// For a tab's submit whose list matched the store once its request was
    /// stored: the count of frames that had changed that list
    /// (`Connections::matching_list_changes`), to tell at the turn's end
    /// whether anything changed it since (`turn/end_frames.rs`).
    pub requester_synced_at: Option<u64>,
}

impl QueuedTurn {
    /// A turn with no requester, origin messages, body or recovery state.
    pub fn new(
        request_id: String,
        trigger: TurnTrigger,
        submitted_at: u64,
        generation: u64,
    ) -> Self {
        QueuedTurn {
            request_id,
            trigger,
            requester: None,
            message_ids: Vec::new(),
            submitted_at,
            generation,
            overlapped: false,
            body: None,
            recovery_root: None,
            resume_message: None,
            turn_tools: None,
            executor: None,
            delegation_depth: 0,
            requester_synced_at: None,
        }
    }

    pub fn is_continuation(&self) -> bool {
        matches!(
            self.trigger,
            TurnTrigger::AutoContinuation | TurnTrigger::RecoveryContinue
        )
    }

    pub fn is_recovery(&self) -> bool {
        matches!(
            self.trigger,
            TurnTrigger::RecoveryContinue | TurnTrigger::RecoveryRetry
        )
    }
}

/// What to do with the turn at the front of the queue.
#[derive(Debug, PartialEq)]
pub enum FrontDecision {
    Run(QueuedTurn),
    /// Superseded by a later submit, or invalidated by a clear.
    Skip(QueuedTurn),
    /// Debounce: not before this time.
    WaitUntil(u64),
    Empty,
}

#[derive(Debug, Default)]
pub struct TurnQueue {
    items: VecDeque<QueuedTurn>,
    /// Bumped by a clear: turns of an older generation are skipped.
    generation: u64,
    /// The queue changed since it was last written down.
    dirty: bool,
    /// Request ids whose body row is stored (as of the last write down).
    stored_bodies: BTreeSet<String>,
}

/// What to write after the queue changed, in this order: the new body rows,
/// the queue row (`turns`; empty: delete it), the body rows no longer needed.
#[derive(Debug, Default, PartialEq)]
pub struct QueueWrite {
    /// (request id, the body's JSON text) of turns queued since the last write.
    pub put_bodies: Vec<(String, String)>,
    pub turns: Vec<DurableTurn>,
    /// Request ids whose turn left the queue.
    pub dropped_bodies: Vec<String>,
}

/// Whether a turn is written down at all: a recovery or an automatic
/// continuation is found again from other rows, and a turn run by a
/// parent's executor does not outlive the live reference.
fn is_durable(turn: &QueuedTurn) -> bool {
    turn.executor.is_none() && !turn.is_recovery() && turn.trigger != TurnTrigger::AutoContinuation
}

impl TurnQueue {
    pub fn push(&mut self, turn: QueuedTurn) {
        self.dirty = true;
        self.items.push_back(turn);
    }

    /// A recovery turn goes first: it finishes the turn that was cut.
    pub fn push_front(&mut self, turn: QueuedTurn) {
        self.dirty = true;
        self.items.push_front(turn);
    }

    /// Turns written down by an earlier instance, in their order, with the
    /// bodies of their body rows. A row of an older release keeps its bodies
    /// inline: they are moved to body rows at the next write down.
    pub fn restore(
        &mut self,
        turns: Vec<DurableTurn>,
        mut bodies: BTreeMap<String, Map<String, Value>>,
    ) {
        for turn in turns {
            let mut queued = QueuedTurn::new(
                turn.request_id,
                turn.trigger,
                turn.submitted_at,
                self.generation,
            );
            queued.message_ids = turn.message_ids;
            queued.overlapped = turn.overlapped;
            queued.delegation_depth = turn.delegation_depth;
            queued.body = match turn.body {
                Some(inline) => {
                    self.dirty = true;
                    Some(inline)
                }
                None => bodies.remove(&queued.request_id),
            };
            if turn.stored_body || bodies.contains_key(&queued.request_id) {
                self.stored_bodies.insert(queued.request_id.clone());
            }
            self.items.push_back(queued);
        }
        // Body rows no queued turn names are deleted at the next write down.
        for orphan in bodies.into_keys() {
            self.dirty = true;
            self.stored_bodies.insert(orphan);
        }
    }

    /// A write of the body of `request_id` was refused: it is not stored.
    pub fn body_not_stored(&mut self, request_id: &str) {
        if self.stored_bodies.remove(request_id) {
            self.dirty = true;
        }
    }

    /// What must be stored, once after each change.
    pub fn take_changes(&mut self) -> Option<QueueWrite> {
        if !std::mem::take(&mut self.dirty) {
            return None;
        }
        let mut write = QueueWrite::default();
        let mut kept = BTreeSet::new();
        for turn in self.items.iter().filter(|t| is_durable(t)) {
            if let Some(body) = &turn.body {
                if !self.stored_bodies.contains(&turn.request_id) {
                    let text = serde_json::to_string(body).unwrap_or_else(|_| "{}".into());
                    write.put_bodies.push((turn.request_id.clone(), text));
                }
                kept.insert(turn.request_id.clone());
            }
            write.turns.push(DurableTurn {
                request_id: turn.request_id.clone(),
                trigger: turn.trigger,
                message_ids: turn.message_ids.clone(),
                submitted_at: turn.submitted_at,
                overlapped: turn.overlapped,
                body: None,
                stored_body: turn.body.is_some(),
                delegation_depth: turn.delegation_depth,
            });
        }
        write.dropped_bodies = self.stored_bodies.difference(&kept).cloned().collect();
        self.stored_bodies = kept;
        Some(write)
    }

    /// The generation a turn queued now belongs to.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The queued turns, front first.
    pub fn iter(&self) -> impl Iterator<Item = &QueuedTurn> {
        self.items.iter()
    }

    pub fn front(&self) -> Option<&QueuedTurn> {
        self.items.front()
    }

    pub fn contains(&self, request_id: &str) -> bool {
        self.items.iter().any(|t| t.request_id == request_id)
    }

    /// The first waiting turn `pred` picks.
    pub fn find(&self, pred: impl Fn(&QueuedTurn) -> bool) -> Option<&QueuedTurn> {
        self.items.iter().find(|t| pred(t))
    }

    pub fn remove(&mut self, request_id: &str) -> Option<QueuedTurn> {
        let index = self.items.iter().position(|t| t.request_id == request_id)?;
        self.dirty = true;
        self.items.remove(index)
    }

    /// Empties the queue (clear): every waiting turn is returned to be skipped.
    pub fn invalidate_all(&mut self) -> Vec<QueuedTurn> {
        self.generation += 1;
        self.dirty = true;
        self.items.drain(..).collect()
    }

    /// Decides a turn of `trigger` arriving now under `strategy`
    /// (`turn_running`: a turn is under way): it overlaps when a turn runs or
    /// waits, and an overlapping submit is refused under `Drop`. Only a
    /// submit is ever refused: a regenerate, a parent's or the agent's own
    /// turn is always queued.
    pub fn decide_arrival(
        &self,
        strategy: Concurrency,
        trigger: TurnTrigger,
        turn_running: bool,
    ) -> Arrival {
        let overlapped = turn_running || !self.items.is_empty();
        if overlapped && trigger == TurnTrigger::Submit && strategy == Concurrency::Drop {
            return Arrival::Refuse;
        }
        Arrival::Queue { overlapped }
    }

    /// Decides the front turn under `strategy` at `now`.
    pub fn decide_front(&mut self, strategy: Concurrency, now: u64) -> FrontDecision {
        let Some(front) = self.items.front() else {
            return FrontDecision::Empty;
        };
        if front.generation != self.generation {
            return self.pop_as(FrontDecision::Skip);
        }
        let overlapping_submit = front.trigger == TurnTrigger::Submit && front.overlapped;
        if overlapping_submit && strategy.supersedes() {
            let superseded = self
                .items
                .iter()
                .skip(1)
                .any(|t| t.trigger == TurnTrigger::Submit && t.overlapped);
            if superseded {
                return self.pop_as(FrontDecision::Skip);
            }
            if let Concurrency::Debounce { ms } = strategy {
                let ready_at = front.submitted_at + ms;
                if now < ready_at {
                    return FrontDecision::WaitUntil(ready_at);
                }
            }
        }
        self.pop_as(FrontDecision::Run)
    }

    fn pop_as(&mut self, wrap: fn(QueuedTurn) -> FrontDecision) -> FrontDecision {
        self.dirty = true;
        match self.items.pop_front() {
            Some(turn) => wrap(turn),
            None => FrontDecision::Empty,
        }
    }
}

/// What the concurrency strategy says about a turn arriving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Queue it; `overlapped` when another turn was running or waiting.
    Queue { overlapped: bool },
    /// Refuse it: nothing of it is stored (`Concurrency::Drop`).
    Refuse,
}

impl Arrival {
    /// Whether another turn was running or waiting when it arrived.
    pub fn overlapped(self) -> bool {
        !matches!(self, Arrival::Queue { overlapped: false })
    }
}

/// An automatic continuation that has been asked for but not yet queued.
#[derive(Debug, Clone)]
pub(in crate::core) struct PendingContinuation {
    pub(in crate::core) request_id: String,
    /// The tab whose result asked for it (parked on its stream).
    pub(in crate::core) owner: Option<ConnId>,
}

impl PendingContinuation {
    /// A continuation found owed in the store at start: no tab owns it.
    pub(in crate::core) fn restored(request_id: String) -> Self {
        PendingContinuation {
            request_id,
            owner: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submit(id: &str, at: u64, overlapped: bool) -> QueuedTurn {
        QueuedTurn {
            overlapped,
            ..QueuedTurn::new(id.into(), TurnTrigger::Submit, at, 0)
        }
    }

    #[test]
    fn latest_skips_every_overlapping_submit_but_the_newest() {
        let mut q = TurnQueue::default();
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            q.push(submit(id, i as u64, true));
        }
        assert!(
            matches!(q.decide_front(Concurrency::Latest, 10), FrontDecision::Skip(t) if t.request_id == "a")
        );
        assert!(
            matches!(q.decide_front(Concurrency::Latest, 10), FrontDecision::Skip(t) if t.request_id == "b")
        );
        assert!(
            matches!(q.decide_front(Concurrency::Latest, 10), FrontDecision::Run(t) if t.request_id == "c")
        );
    }

    #[test]
    fn queue_runs_everything_in_order() {
        let mut q = TurnQueue::default();
        q.push(submit("a", 0, true));
        q.push(submit("b", 1, true));
        assert!(
            matches!(q.decide_front(Concurrency::Queue, 10), FrontDecision::Run(t) if t.request_id == "a")
        );
    }

    #[test]
    fn debounce_waits_for_the_quiet_window_of_the_survivor() {
        let mut q = TurnQueue::default();
        q.push(submit("a", 100, true));
        assert_eq!(
            q.decide_front(Concurrency::Debounce { ms: 750 }, 200),
            FrontDecision::WaitUntil(850)
        );
        assert!(matches!(
            q.decide_front(Concurrency::Debounce { ms: 750 }, 850),
            FrontDecision::Run(_)
        ));
    }

    #[test]
    fn a_cleared_generation_is_skipped() {
        let mut q = TurnQueue::default();
        q.push(submit("a", 0, false));
        q.generation += 1;
        assert!(matches!(
            q.decide_front(Concurrency::Queue, 0),
            FrontDecision::Skip(_)
        ));
    }

    #[test]
    fn only_an_overlapping_submit_under_drop_is_refused_on_arrival() {
        let mut q = TurnQueue::default();
        let arriving = TurnTrigger::Submit;
        assert_eq!(
            q.decide_arrival(Concurrency::Drop, arriving, false),
            Arrival::Queue { overlapped: false }
        );
        assert_eq!(
            q.decide_arrival(Concurrency::Drop, arriving, true),
            Arrival::Refuse
        );
        q.push(submit("a", 0, false));
        assert_eq!(
            q.decide_arrival(Concurrency::Drop, arriving, false),
            Arrival::Refuse
        );
        for other in [TurnTrigger::Regenerate, TurnTrigger::Programmatic] {
            assert_eq!(
                q.decide_arrival(Concurrency::Drop, other, true),
                Arrival::Queue { overlapped: true }
            );
        }
        for strategy in [Concurrency::Queue, Concurrency::Latest, Concurrency::Merge] {
            assert_eq!(
                q.decide_arrival(strategy, arriving, true),
                Arrival::Queue { overlapped: true }
            );
        }
    }
}
