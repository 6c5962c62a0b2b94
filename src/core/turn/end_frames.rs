//! What a turn sends each tab so that its message list shows what is
//! stored: at its end the transcript frame; to the tab that asked for the
//! turn while its list matched the store, updates of only the messages it
//! holds in another form than the stored one, sent as soon as the model
//! begins to answer (so the turn's end sends that tab only its stream's
//! last chunks and the terminal frame).

use crate::protocol::{server, Outcome, Role, UIMessage};

use crate::core::data::queue::QueuedTurn;
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

impl Core {
    /// When the model begins to answer (the first event of a call): a
    /// requester whose list matches the store but for what its own request
    /// and stream added (`synced_requester`) is sent, as
    /// `cf_agent_message_updated`, what the end's transcript would change in
    /// its list — the turn's user messages, held as posted, and the answer
    /// before them, held as streamed — while the model streams, once per
    /// turn. Its list still counts as matching: the turn notes the changes
    /// it made itself.
    pub(in crate::core::turn) fn update_requester_list(&mut self) {
        let Some(active) = self.active.as_ref() else {
            return;
        };
        if active.requester_updated {
            return;
        }
        let Some(requester) = self.synced_requester(&active.turn, Outcome::Completed) else {
            return;
        };
        let messages = self.held_in_other_form(&active.turn, active.seq);
        self.send_updates(&requester, messages);
        let changes = self.conns.matching_list_changes(&requester);
        if let Some(active) = self.active.as_mut() {
            active.requester_updated = true;
            active.turn.requester_synced_at = changes;
        }
    }

    /// After a turn's answer (placed at `answer_seq`) is stored. Every tab
    /// gets the transcript (the stock client replaces its list with it,
    /// keeping the answer it streamed itself), except a requester whose list
    /// is known to match the store but for what its own request and stream
    /// added: it needs nothing more when the model's first answer already
    /// brought it its updates (`requester_updated`), else it gets them now,
    /// so a long chat's turn does not move and re-render its whole history.
    pub(super) fn send_turn_end_lists(
        &mut self,
        turn: &QueuedTurn,
        outcome: Outcome,
        answer_seq: u64,
        requester_updated: bool,
    ) {
        // Messages past the history cap go first (every tab must lose them).
        self.keep_history_within_cap();
        let Some(requester) = self.synced_requester(turn, outcome) else {
            self.broadcast_transcript(None);
            return;
        };
        self.broadcast_transcript(Some(&requester));
        if !requester_updated {
            let messages = self.held_in_other_form(turn, answer_seq);
            self.send_updates(&requester, messages);
        }
    }

    /// `messages`, as stored, to the requester, each as `cf_agent_message_updated`.
    fn send_updates(&mut self, requester: &ConnId, messages: Vec<UIMessage>) {
        for message in messages {
            self.send_list_change(vec![requester.clone()], server::message_updated(&message));
        }
    }

    /// The requester of a completed submit whose list matched the store when
    /// it asked (`QueuedTurn::requester_synced_at`), that followed the whole
    /// turn live and that no frame has changed the list of since.
    fn synced_requester(&self, turn: &QueuedTurn, outcome: Outcome) -> Option<ConnId> {
        if outcome != Outcome::Completed || turn.is_continuation() {
            return None;
        }
        let conn = turn.requester.as_ref()?;
        let synced_at = turn.requester_synced_at?;
        (self.conns.is_live(conn) && self.conns.matching_list_changes(conn) == Some(synced_at))
            .then(|| conn.clone())
    }

    /// The stored forms of the turn's user messages and of the newest answer
    /// before them.
    fn held_in_other_form(&self, turn: &QueuedTurn, answer_seq: u64) -> Vec<UIMessage> {
        let before: Vec<&UIMessage> = self.transcript.before(answer_seq).collect();
        let first_asked = before
            .iter()
            .position(|m| turn.message_ids.contains(&m.id))
            .unwrap_or(before.len());
        let previous_answer = before[..first_asked]
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant);
        previous_answer
            .into_iter()
            .chain(
                before[first_asked..]
                    .iter()
                    .filter(|m| turn.message_ids.contains(&m.id)),
            )
            .map(|m| (*m).clone())
            .collect()
    }
}
