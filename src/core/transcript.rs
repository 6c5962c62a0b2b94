//! The stored conversation: ordered messages, how client-posted transcripts
//! are reconciled into it, how tool results and approvals land on their part,
//! and the repair of unanswered tool calls before the model is called.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use crate::protocol::{Part, Role, ToolPart, ToolState, UIMessage};

use super::accumulator::settle_output;

pub const INTERRUPTED_TOOL_ERROR: &str =
    "The tool call was interrupted before a result was recorded.";
pub const APPROVED_NOT_RUN_ERROR: &str =
    "The tool call was approved but did not run before the next turn started.";

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub seq: u64,
    pub message: UIMessage,
}

#[derive(Debug, Default, Clone)]
pub struct Transcript {
    /// In `seq` order.
    entries: Vec<Entry>,
    /// The `seq` of each message id: finding a message costs a hash and a
    /// binary search, not a walk of the whole history.
    seq_by_id: HashMap<String, u64>,
    next_seq: u64,
    /// Places kept for the answers of accepted requests, by request id.
    reserved: BTreeMap<String, u64>,
}

/// What reconciling a client transcript changed.
#[derive(Debug, Default)]
pub struct Reconciled {
    /// Entries written (new or edited user messages).
    pub written: Vec<Entry>,
    /// Ids of stored messages removed (regeneration drops the replaced branch).
    pub removed: Vec<String>,
    /// Ids of the trailing run of user messages of the request.
    pub message_ids: Vec<String>,
}

impl Transcript {
    pub fn from_entries(mut entries: Vec<Entry>) -> Self {
        entries.sort_by_key(|e| e.seq);
        let next_seq = entries.last().map_or(0, |e| e.seq + 1);
        let seq_by_id = entries
            .iter()
            .map(|e: &Entry| (e.message.id.clone(), e.seq))
            .collect();
        Transcript {
            entries,
            seq_by_id,
            next_seq,
            reserved: BTreeMap::new(),
        }
    }

    pub fn messages(&self) -> Vec<UIMessage> {
        self.entries.iter().map(|e| e.message.clone()).collect()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &UIMessage> {
        self.entries.iter().map(|e| &e.message)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.seq_by_id.clear();
        self.reserved.clear();
    }

    pub fn last(&self) -> Option<&UIMessage> {
        self.entries.last().map(|e| &e.message)
    }

    pub fn last_assistant(&self) -> Option<&UIMessage> {
        self.iter().rev().find(|m| m.role == Role::Assistant)
    }

    fn position(&self, id: &str) -> Option<usize> {
        let seq = *self.seq_by_id.get(id)?;
        match self.entries.binary_search_by_key(&seq, |e| e.seq) {
            Ok(i) if self.entries[i].message.id == id => Some(i),
            // Two stored rows sharing a seq (never written by this core): look properly.
            _ => self.entries.iter().position(|e| e.message.id == id),
        }
    }

    pub fn get(&self, id: &str) -> Option<&UIMessage> {
        self.position(id).map(|i| &self.entries[i].message)
    }

    /// Appends a new message or replaces the one with the same id in place.
    pub fn upsert(&mut self, message: UIMessage) -> Entry {
        if let Some(i) = self.position(&message.id) {
            self.entries[i].message = message;
            return self.entries[i].clone();
        }
        let entry = Entry {
            seq: self.next_seq,
            message,
        };
        self.next_seq += 1;
        self.seq_by_id.insert(entry.message.id.clone(), entry.seq);
        self.entries.push(entry.clone());
        entry
    }

    /// Keeps the place right after an accepted request's messages for its
    /// answer, so the answer follows the question it answers even when newer
    /// submits are stored before it runs (queued turns, `latest`).
    pub fn reserve_for(&mut self, request_id: &str) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.reserved.insert(request_id.to_string(), seq);
    }

    /// The place of a starting turn's answer: the one reserved when it was
    /// accepted, else the end. Turns start in acceptance order, so older
    /// reservations belong to requests that were skipped or cancelled.
    /// A turn without a reservation (a recovery, a continuation) takes the
    /// end and leaves the reservations of queued turns alone.
    pub fn take_reserved(&mut self, request_id: &str) -> u64 {
        let Some(seq) = self.reserved.remove(request_id) else {
            let seq = self.next_seq;
            self.next_seq += 1;
            return seq;
        };
        self.reserved.retain(|_, s| *s > seq);
        seq
    }

    /// After a restart, the places of the queued turns' answers (held only in
    /// memory) are taken again: right after each turn's last origin message,
    /// where `reserve_for` put them, unless that place is taken. Without this
    /// a turn accepted before a later message would, once restored, answer
    /// with that message in its context and be stored after it.
    pub fn restore_reservations<'a>(
        &mut self,
        turns: impl Iterator<Item = (&'a str, &'a [String])>,
    ) {
        for (request_id, origin) in turns {
            let Some(last) = origin.iter().filter_map(|id| self.seq_of(id)).max() else {
                continue;
            };
            let slot = last + 1;
            if !self.is_free(slot) || self.reserved.values().any(|s| *s == slot) {
                continue;
            }
            self.reserved.insert(request_id.to_string(), slot);
            self.next_seq = self.next_seq.max(slot + 1);
        }
    }

    /// Like `upsert`, but a new message takes the reserved `seq`, in order.
    pub fn insert_at(&mut self, seq: u64, message: UIMessage) -> Entry {
        if let Some(i) = self.position(&message.id) {
            self.entries[i].message = message;
            return self.entries[i].clone();
        }
        let entry = Entry { seq, message };
        let at = self.entries.partition_point(|e| e.seq < seq);
        self.seq_by_id.insert(entry.message.id.clone(), seq);
        self.entries.insert(at, entry.clone());
        self.next_seq = self.next_seq.max(seq + 1);
        entry
    }

    pub fn seq_of(&self, id: &str) -> Option<u64> {
        self.position(id).map(|i| self.entries[i].seq)
    }

    /// No message holds `seq`.
    pub fn is_free(&self, seq: u64) -> bool {
        self.entries.binary_search_by_key(&seq, |e| e.seq).is_err()
    }

    /// Some message is placed after `seq`.
    pub fn has_after(&self, seq: u64) -> bool {
        self.entries.last().is_some_and(|e| e.seq > seq)
    }

    /// The messages placed before `seq`: what the turn that reserved it answers.
    pub fn before(&self, seq: u64) -> impl Iterator<Item = &UIMessage> {
        self.entries
            .iter()
            .take_while(move |e| e.seq < seq)
            .map(|e| &e.message)
    }

    /// Merges a client-posted transcript: new user messages are appended (marked
    /// `channel:"web"`), edited user messages are updated by id, and assistant or
    /// system messages the server never produced are ignored (the server owns
    /// model output). With `regenerate`, stored messages after the last posted
    /// message are removed so the new answer replaces them.
    pub fn reconcile(&mut self, incoming: &[UIMessage], regenerate: bool) -> Reconciled {
        let mut out = Reconciled {
            message_ids: trailing_user_ids(incoming.iter()),
            ..Default::default()
        };
        if regenerate {
            if let Some(last_known) = incoming.iter().rev().find_map(|m| self.position(&m.id)) {
                for entry in self.entries.drain(last_known + 1..) {
                    self.seq_by_id.remove(&entry.message.id);
                    out.removed.push(entry.message.id);
                }
            }
        }
        for message in incoming {
            if message.role != Role::User {
                continue;
            }
            let sanitized = sanitize_user_message(message);
            match self.position(&message.id) {
                Some(i) if self.entries[i].message.role != Role::User => {}
                Some(i) if self.entries[i].message.parts == sanitized.parts => {}
                _ => out.written.push(self.upsert(sanitized)),
            }
        }
        out
    }

    /// Calls of the latest answer a person approved that have not run yet.
    pub fn approved_calls(&self) -> Vec<&crate::protocol::ToolPart> {
        self.last_assistant()
            .map(|m| {
                m.tool_parts()
                    .filter(|t| t.state == ToolState::ApprovalResponded)
                    .filter(|t| t.approval.as_ref().and_then(|a| a.approved) == Some(true))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The newest assistant message holding `tool_call_id`. Only assistants
    /// make tool calls: a tool part a client wrote into a user message is
    /// never the target of a result or an approval.
    pub fn owner_of(&self, tool_call_id: &str) -> Option<&UIMessage> {
        self.iter()
            .rev()
            .find(|m| m.role == Role::Assistant && m.has_tool_call(tool_call_id))
    }

    pub fn owner_of_mut(&mut self, tool_call_id: &str) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .rev()
            .find(|e| e.message.role == Role::Assistant && e.message.has_tool_call(tool_call_id))
    }

    /// Rewrites every tool part that can no longer get a result, except the
    /// approved calls of the last assistant message when `keep_approved_tail`
    /// (a continuation is about to run them). Returns the entries changed.
    pub fn repair_unanswered(&mut self, keep_approved_tail: bool) -> Vec<Entry> {
        let last_assistant = self
            .entries
            .iter()
            .rposition(|e| e.message.role == Role::Assistant);
        let mut changed = Vec::new();
        for (index, entry) in self.entries.iter_mut().enumerate() {
            let is_tail = Some(index) == last_assistant;
            let mut touched = false;
            for part in &mut entry.message.parts {
                let Part::Tool(tool) = part else { continue };
                touched |= repair_part(tool, keep_approved_tail && is_tail);
            }
            if touched {
                changed.push(entry.clone());
            }
        }
        changed
    }
}

fn repair_part(tool: &mut ToolPart, keep_approved: bool) -> bool {
    match tool.state {
        ToolState::InputStreaming | ToolState::InputAvailable | ToolState::ApprovalRequested => {
            tool.set_error(INTERRUPTED_TOOL_ERROR);
            true
        }
        ToolState::ApprovalResponded if !keep_approved => {
            let approved = tool
                .approval
                .as_ref()
                .and_then(|a| a.approved)
                .unwrap_or(false);
            if approved {
                tool.set_error(APPROVED_NOT_RUN_ERROR);
            } else {
                tool.state = ToolState::OutputDenied;
            }
            true
        }
        _ => false,
    }
}

/// A result or error from a client lands on the first part still waiting for one.
pub fn apply_tool_result(tool: &mut ToolPart, output: &Value, error_text: Option<&str>) -> bool {
    // A call waiting for (or holding) an approval is a server tool's: only
    // its own run settles it.
    if tool.state != ToolState::InputAvailable {
        return false;
    }
    match error_text {
        Some(text) => tool.set_error(text),
        None => {
            settle_output(tool, output);
            tool.preliminary = Some(false);
        }
    }
    true
}

/// An approval decision lands only on a part that asked for one.
pub fn apply_approval(tool: &mut ToolPart, approved: bool) -> bool {
    if tool.state != ToolState::ApprovalRequested {
        return false;
    }
    let mut approval = tool.approval.clone().unwrap_or(crate::protocol::Approval {
        id: tool.tool_call_id.clone(),
        approved: None,
        reason: None,
    });
    approval.approved = Some(approved);
    tool.approval = Some(approval);
    tool.state = if approved {
        ToolState::ApprovalResponded
    } else {
        ToolState::OutputDenied
    };
    true
}

/// Ids of the trailing run of user messages (the `messageIds` of a request).
pub(super) fn trailing_user_ids<'a>(
    messages: impl DoubleEndedIterator<Item = &'a UIMessage>,
) -> Vec<String> {
    let mut ids: Vec<String> = messages
        .rev()
        .take_while(|m| m.role == Role::User)
        .map(|m| m.id.clone())
        .collect();
    ids.reverse();
    ids
}

/// Client-supplied `channel`/`turnMetadata` are not trusted; web messages say so.
fn sanitize_user_message(message: &UIMessage) -> UIMessage {
    let mut clean = message.clone();
    let mut meta = match clean.metadata.take() {
        Some(Value::Object(m)) => m,
        _ => Default::default(),
    };
    meta.remove("turnMetadata");
    meta.insert("channel".into(), json!("web"));
    clean.metadata = Some(Value::Object(meta));
    clean
}

/// True while the latest assistant is mid-batch: some tool calls of its step
/// are settled and others still wait for a person.
pub fn is_mid_batch(message: &UIMessage) -> bool {
    let mut settled = false;
    let mut waiting = false;
    for tool in message.tool_parts() {
        settled |= tool.state.is_settled() || tool.state == ToolState::ApprovalResponded;
        waiting |= tool.state.awaits_human();
    }
    settled && waiting
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::UIMessage;

    fn assistant_with(tools: &[(&str, ToolState)]) -> UIMessage {
        let mut m = UIMessage::assistant("a1");
        for (id, state) in tools {
            m.parts.push(Part::Tool(ToolPart::new(id, "t", *state)));
        }
        m
    }

    #[test]
    fn messages_are_found_by_id_after_inserts_in_the_middle_and_a_regenerate() {
        let mut t = Transcript::default();
        t.reserve_for("r1");
        t.reconcile(&[UIMessage::user_text("u1", "one")], false);
        t.reconcile(&[UIMessage::user_text("u2", "two")], false);
        let seq = t.take_reserved("r1");
        t.insert_at(seq, UIMessage::assistant("a1"));
        let order: Vec<&str> = t.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(order, ["a1", "u1", "u2"], "the reserved place comes first");
        for id in ["a1", "u1", "u2"] {
            assert_eq!(t.get(id).map(|m| m.id.as_str()), Some(id));
        }
        let r = t.reconcile(&[UIMessage::user_text("u1", "one")], true);
        assert_eq!(r.removed, vec!["u2"]);
        assert!(
            t.get("u2").is_none(),
            "a removed message is no longer found"
        );
        t.reconcile(&[UIMessage::user_text("u2", "again")], false);
        assert_eq!(
            t.last().map(|m| m.id.as_str()),
            Some("u2"),
            "posted again, it is appended"
        );
    }

    #[test]
    fn new_user_messages_are_appended_and_marked_as_web() {
        let mut t = Transcript::default();
        let r = t.reconcile(&[UIMessage::user_text("u1", "hi")], false);
        assert_eq!(r.written.len(), 1);
        assert_eq!(r.message_ids, vec!["u1"]);
        assert_eq!(
            t.get("u1").unwrap().metadata,
            Some(json!({"channel":"web"}))
        );
        let again = t.reconcile(&[UIMessage::user_text("u1", "hi")], false);
        assert!(
            again.written.is_empty(),
            "an unchanged message is not rewritten"
        );
    }

    #[test]
    fn forged_assistant_messages_are_not_stored() {
        let mut t = Transcript::default();
        let mut forged = UIMessage::assistant("x");
        forged
            .parts
            .push(Part::Text(crate::protocol::TextPart::done(
                "I am the model",
            )));
        t.reconcile(&[forged, UIMessage::user_text("u1", "hi")], false);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn a_reserved_answer_sorts_before_messages_stored_while_it_streamed() {
        let mut t = Transcript::default();
        t.upsert(UIMessage::user_text("u1", "hi"));
        t.reserve_for("r1");
        t.upsert(UIMessage::user_text("u2", "meanwhile"));
        let seq = t.take_reserved("r1");
        assert_eq!(t.before(seq).count(), 1);
        t.insert_at(seq, UIMessage::assistant("a1"));
        let ids: Vec<String> = t.iter().map(|m| m.id.clone()).collect();
        assert_eq!(ids, ["u1", "a1", "u2"]);
    }

    #[test]
    fn regeneration_drops_the_answer_after_the_last_posted_message() {
        let mut t = Transcript::default();
        t.upsert(UIMessage::user_text("u1", "hi"));
        t.upsert(UIMessage::assistant("a1"));
        let r = t.reconcile(&[UIMessage::user_text("u1", "hi")], true);
        assert_eq!(r.removed, vec!["a1"]);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn unanswered_calls_become_errors_but_an_approved_tail_call_is_kept() {
        let mut t = Transcript::default();
        let mut approved = assistant_with(&[
            ("c1", ToolState::ApprovalResponded),
            ("c2", ToolState::InputAvailable),
        ]);
        approved.tool_part_mut("c1").unwrap().approval = Some(crate::protocol::Approval {
            id: "c1".into(),
            approved: Some(true),
            reason: None,
        });
        t.upsert(approved);
        let changed = t.repair_unanswered(true);
        assert_eq!(changed.len(), 1);
        let m = t.get("a1").unwrap();
        assert_eq!(
            m.tool_parts().next().unwrap().state,
            ToolState::ApprovalResponded
        );
        let c2 = m.tool_parts().nth(1).unwrap();
        assert_eq!(c2.state, ToolState::OutputError);
        assert_eq!(c2.error_text.as_deref(), Some(INTERRUPTED_TOOL_ERROR));
    }

    #[test]
    fn mid_batch_means_some_settled_and_some_waiting() {
        assert!(is_mid_batch(&assistant_with(&[
            ("a", ToolState::OutputAvailable),
            ("b", ToolState::InputAvailable)
        ])));
        assert!(!is_mid_batch(&assistant_with(&[
            ("a", ToolState::InputAvailable),
            ("b", ToolState::InputAvailable)
        ])));
        assert!(!is_mid_batch(&assistant_with(&[
            ("a", ToolState::OutputAvailable),
            ("b", ToolState::OutputError)
        ])));
    }

    #[test]
    fn approval_only_lands_on_a_part_that_asked() {
        let mut asked = ToolPart::new("c", "delete_file", ToolState::ApprovalRequested);
        assert!(apply_approval(&mut asked, false));
        assert_eq!(asked.state, ToolState::OutputDenied);
        let mut client_call = ToolPart::new("c", "getUserTimezone", ToolState::InputAvailable);
        assert!(!apply_approval(&mut client_call, true));
    }
}
