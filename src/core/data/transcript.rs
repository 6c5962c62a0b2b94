//! The stored conversation: ordered messages, how client-posted transcripts
//! are reconciled into it, how tool results and approvals land on their part,
//! and the repair of unanswered tool calls before the model is called.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde_json::{json, Value};

use crate::protocol::{Part, Role, ToolPart, ToolState, UIMessage};

use crate::core::contract::history::{self, History, PAGE, WINDOW_BYTES, WINDOW_MESSAGES};
use crate::core::data::accumulator::{settle_output, INTERRUPTED_TOOL_ERROR};
use crate::core::rows::persisted::Entry;

/// The bytes of a message's text, reasoning and file URLs: what makes a
/// message large, measured without serializing it.
fn text_bytes(message: &UIMessage) -> usize {
    message
        .parts
        .iter()
        .map(|part| match part {
            Part::Text(t) | Part::Reasoning(t) => t.text.len(),
            Part::Other(map) => map.get("url").and_then(Value::as_str).map_or(0, str::len),
            _ => 0,
        })
        .sum()
}

pub const APPROVED_NOT_RUN_ERROR: &str =
    "The tool call was approved but did not run before the next turn started.";

/// The conversation as the core sees it: the newest messages in memory (the
/// window, a contiguous run up to the newest stored message), older ones
/// read through `history` when asked for. A message older than the window
/// is loaded into it (with everything after it) before it is changed, so the
/// store never holds an older message with a write still pending.
#[derive(Clone)]
pub struct Transcript {
    /// In `seq` order: every stored message from the window's start on.
    entries: Vec<Entry>,
    /// The `seq` of each message id in the window: finding a message costs
    /// a hash and a binary search, not a walk of the whole history.
    seq_by_id: HashMap<String, u64>,
    next_seq: u64,
    /// Places kept for the answers of accepted requests, by request id.
    reserved: BTreeMap<String, u64>,
    history: Rc<dyn History>,
    /// The store may hold messages placed before the window.
    older: bool,
    /// How many stored messages are placed before the window, by the
    /// window's start: counted once per window position (the messages
    /// before the window change only after entering it).
    older_count: Cell<Option<(u64, usize)>>,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript::load(history::none())
    }
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
    /// The window of a core starting on `history`: its newest messages
    /// (back to the newest assistant message, within a few pages).
    pub fn load(history: Rc<dyn History>) -> Self {
        let mut page = history.page_before(u64::MAX, WINDOW_MESSAGES);
        let older = page.len() == WINDOW_MESSAGES;
        page.reverse();
        let next_seq = page.last().map_or(0, |e| e.seq + 1);
        let mut transcript = Transcript {
            seq_by_id: page.iter().map(|e| (e.message.id.clone(), e.seq)).collect(),
            entries: page,
            next_seq,
            reserved: BTreeMap::new(),
            history,
            older,
            older_count: Cell::new(None),
        };
        let mut pages = 0;
        while transcript.older && transcript.last_assistant().is_none() && pages < 4 {
            transcript.load_page();
            pages += 1;
        }
        transcript
    }

    #[cfg(test)]
    pub fn from_entries(mut entries: Vec<Entry>) -> Self {
        entries.sort_by_key(|e| e.seq);
        Transcript {
            next_seq: entries.last().map_or(0, |e| e.seq + 1),
            seq_by_id: entries
                .iter()
                .map(|e: &Entry| (e.message.id.clone(), e.seq))
                .collect(),
            entries,
            ..Transcript::default()
        }
    }

    /// Loads one page of older messages in front of the window.
    fn load_page(&mut self) {
        if !self.older {
            return;
        }
        let before = self.entries.first().map_or(u64::MAX, |e| e.seq);
        let page = self.history.page_before(before, PAGE);
        if page.len() < PAGE {
            self.older = false;
        }
        let mut entries: Vec<Entry> = page.into_iter().rev().collect();
        for entry in &entries {
            self.seq_by_id.insert(entry.message.id.clone(), entry.seq);
        }
        entries.append(&mut self.entries);
        self.entries = entries;
    }

    /// Widens the window back to `seq` (before that message is changed).
    fn extend_to(&mut self, seq: u64) {
        while self.older && self.entries.first().is_none_or(|e| e.seq > seq) {
            self.load_page();
        }
    }

    /// Forgets the oldest messages of the window once it holds twice the
    /// window's size (`WINDOW_MESSAGES` messages or `WINDOW_BYTES` of text),
    /// down to that size, keeping the newest user and assistant messages and
    /// everything from `keep_from` (a running turn's place) and the
    /// reserved places on. The window starts at a user message where one is
    /// near. Only call it when every write is applied (reads see them).
    pub fn trim(&mut self, keep_from: Option<u64>) {
        let too_many = self.entries.len() > 2 * WINDOW_MESSAGES;
        let too_big = self
            .entries
            .iter()
            .map(|e| text_bytes(&e.message))
            .sum::<usize>()
            > 2 * WINDOW_BYTES;
        if !too_many && !too_big {
            return;
        }
        let mut cut = self.entries.len().saturating_sub(WINDOW_MESSAGES);
        if too_big {
            // The newest messages whose text fits in `WINDOW_BYTES`.
            let mut used = 0;
            let mut fit_from = self.entries.len();
            for (index, entry) in self.entries.iter().enumerate().rev() {
                used += text_bytes(&entry.message);
                if used > WINDOW_BYTES {
                    break;
                }
                fit_from = index;
            }
            cut = cut.max(fit_from.min(self.entries.len() - 1));
        }
        for role in [Role::User, Role::Assistant] {
            if let Some(i) = self.entries.iter().rposition(|e| e.message.role == role) {
                cut = cut.min(i);
            }
        }
        let oldest_kept = self.reserved.values().copied().chain(keep_from).min();
        if let Some(seq) = oldest_kept {
            cut = cut.min(self.entries.partition_point(|e| e.seq < seq));
        }
        if let Some(user) = self.entries[..=cut.min(self.entries.len() - 1)]
            .iter()
            .rposition(|e| e.message.role == Role::User)
        {
            cut = user;
        }
        if cut == 0 {
            return;
        }
        for entry in self.entries.drain(..cut) {
            self.seq_by_id.remove(&entry.message.id);
        }
        self.older = true;
    }

    /// The messages in memory, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &UIMessage> {
        self.entries.iter().map(|e| &e.message)
    }

    /// How many messages are in memory.
    pub fn window_len(&self) -> usize {
        self.entries.len()
    }

    /// The store may hold messages placed before the window.
    pub fn has_older(&self) -> bool {
        self.older
    }

    /// The place of the window's oldest message (older ones are read
    /// through the history).
    pub fn window_start(&self) -> u64 {
        self.entries.first().map_or(self.next_seq, |e| e.seq)
    }

    pub fn history(&self) -> &Rc<dyn History> {
        &self.history
    }

    /// How many stored messages are placed before the window (0 when none
    /// can be): read from the store once per window position.
    pub fn count_before_window(&self) -> usize {
        if !self.older {
            return 0;
        }
        let start = self.window_start();
        match self.older_count.get() {
            Some((at, count)) if at == start => count,
            _ => {
                let count = self.history.count_before(start);
                self.older_count.set(Some((start, count)));
                count
            }
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.seq_by_id.clear();
        self.reserved.clear();
        self.older = false;
        self.older_count.set(None);
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

    /// The message's place in the window, loading it (and what follows)
    /// from the store when it is older.
    fn locate(&mut self, id: &str) -> Option<usize> {
        if let Some(i) = self.position(id) {
            return Some(i);
        }
        if !self.older {
            return None;
        }
        let stored = self.history.find(id)?;
        if stored.seq >= self.window_start() {
            return None;
        }
        self.extend_to(stored.seq);
        self.position(id)
    }

    /// A stored message, from the window or the store.
    pub fn get(&self, id: &str) -> Option<UIMessage> {
        self.find(id).map(|e| e.message)
    }

    fn find(&self, id: &str) -> Option<Entry> {
        if let Some(i) = self.position(id) {
            return Some(self.entries[i].clone());
        }
        if !self.older {
            return None;
        }
        self.history
            .find(id)
            .filter(|e| e.seq < self.window_start())
    }

    /// Appends a new message or replaces the one with the same id in place.
    pub fn upsert(&mut self, message: UIMessage) -> Entry {
        if let Some(i) = self.locate(&message.id) {
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
        self.extend_to(seq);
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
            if !self.is_free(slot) {
                continue;
            }
            self.reserved.insert(request_id.to_string(), slot);
            self.next_seq = self.next_seq.max(slot + 1);
        }
    }

    /// Like `upsert`, but a new message takes the reserved `seq`, in order.
    pub fn insert_at(&mut self, seq: u64, message: UIMessage) -> Entry {
        if let Some(i) = self.locate(&message.id) {
            self.entries[i].message = message;
            return self.entries[i].clone();
        }
        self.extend_to(seq);
        let entry = Entry { seq, message };
        let at = self.entries.partition_point(|e| e.seq < seq);
        self.seq_by_id.insert(entry.message.id.clone(), seq);
        self.entries.insert(at, entry.clone());
        self.next_seq = self.next_seq.max(seq + 1);
        entry
    }

    /// A write of this message was refused (its batch rolled back): the
    /// window goes back to the stored copy, or forgets a message that was
    /// never stored, so what is served is what is stored.
    pub fn revert_to_stored(&mut self, id: &str) {
        let Some(i) = self.position(id) else {
            return;
        };
        match self.history.find(id) {
            Some(stored) if stored.seq == self.entries[i].seq => {
                self.entries[i].message = stored.message;
            }
            _ => {
                self.entries.remove(i);
                self.seq_by_id.remove(id);
            }
        }
    }

    pub fn seq_of(&self, id: &str) -> Option<u64> {
        self.find(id).map(|e| e.seq)
    }

    /// No message holds `seq` and no queued turn has it reserved for its answer.
    pub fn is_free(&mut self, seq: u64) -> bool {
        self.extend_to(seq);
        self.entries.binary_search_by_key(&seq, |e| e.seq).is_err()
            && !self.reserved.values().any(|s| *s == seq)
    }

    /// Some message is placed after `seq`.
    pub fn has_after(&self, seq: u64) -> bool {
        self.entries.last().is_some_and(|e| e.seq > seq)
    }

    /// The messages of the window placed before `seq`: what the turn that
    /// reserved it answers (older ones: `history`).
    pub fn before(&self, seq: u64) -> impl Iterator<Item = &UIMessage> {
        self.entries
            .iter()
            .take_while(move |e| e.seq < seq)
            .map(|e| &e.message)
    }

    /// Like `before`, with each message's place.
    pub fn entries_before(&self, seq: u64) -> impl Iterator<Item = (u64, &UIMessage)> {
        self.entries
            .iter()
            .take_while(move |e| e.seq < seq)
            .map(|e| (e.seq, &e.message))
    }

    /// Merges a client-posted transcript: new user messages are appended (marked
    /// `channel:"web"`), edited user messages are updated by id, and assistant or
    /// system messages the server never produced are ignored (the server owns
    /// model output). With `regenerate`, stored messages after the last posted
    /// message are removed so the new answer replaces them. Costs a lookup per
    /// posted message (older ones are only loaded when they change).
    pub fn reconcile(&mut self, incoming: &[UIMessage], regenerate: bool) -> Reconciled {
        let mut out = Reconciled {
            message_ids: trailing_user_ids(incoming.iter()),
            ..Default::default()
        };
        if regenerate {
            let anchor = incoming.iter().rev().find_map(|m| self.locate(&m.id));
            if let Some(last_known) = anchor {
                for entry in self.entries.drain(last_known + 1..) {
                    self.seq_by_id.remove(&entry.message.id);
                    out.removed.push(entry.message.id);
                }
            }
        }
        let older = posted::PostedOlder::read(self, incoming);
        // Where the newest posted message the store knows is, asked the
        // first time a posted user message is unknown.
        let mut last_known: Option<Option<usize>> = None;
        for (index, message) in incoming.iter().enumerate() {
            if message.role != Role::User {
                continue;
            }
            let sanitized = sanitize_user_message(message);
            match older.find(self, &message.id) {
                Some(stored) if stored.role != Role::User => {}
                Some(stored) if stored.parts == sanitized.parts => {}
                Some(_) => out.written.push(self.upsert(sanitized)),
                None => {
                    let known = *last_known.get_or_insert_with(|| {
                        incoming
                            .iter()
                            .rposition(|m| older.find(self, &m.id).is_some())
                    });
                    // Unknown, yet older than a message the store keeps: a
                    // message the history cap deleted, posted again by a tab
                    // that still shows it. It stays deleted.
                    if known.is_none_or(|known| index > known) {
                        out.written.push(self.upsert(sanitized));
                    }
                }
            }
        }
        out
    }

    /// Like `find`, borrowing a message of the window.
    fn find_ref(&self, id: &str) -> Option<std::borrow::Cow<'_, UIMessage>> {
        if let Some(i) = self.position(id) {
            return Some(std::borrow::Cow::Borrowed(&self.entries[i].message));
        }
        self.find(id).map(|e| std::borrow::Cow::Owned(e.message))
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

    /// Whether an assistant message holds `tool_call_id` (the window, then
    /// the store's tool call index). Only assistants make tool calls: a tool
    /// part a client wrote into a user message is never the target of a
    /// result or an approval.
    pub fn has_tool_call(&self, tool_call_id: &str) -> bool {
        self.owner_of(tool_call_id).is_some()
    }

    /// The newest assistant message holding `tool_call_id` (the window, then
    /// the store's tool call index).
    pub fn owner_of(&self, tool_call_id: &str) -> Option<UIMessage> {
        let in_window = self
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && m.has_tool_call(tool_call_id));
        match in_window {
            Some(message) => Some(message.clone()),
            None if self.older => self
                .history
                .tool_call_owner(tool_call_id)
                .filter(|e| e.seq < self.window_start())
                .map(|e| e.message),
            None => None,
        }
    }

    /// The newest assistant message holding `tool_call_id`, loaded into the
    /// window when it is older (it is about to change).
    pub fn owner_of_mut(&mut self, tool_call_id: &str) -> Option<&mut Entry> {
        let in_window = self.entries.iter().rposition(|e| {
            e.message.role == Role::Assistant && e.message.has_tool_call(tool_call_id)
        });
        let index = match in_window {
            Some(i) => i,
            None if self.older => {
                let owner = self.history.tool_call_owner(tool_call_id)?;
                if owner.seq >= self.window_start() {
                    return None;
                }
                self.locate(&owner.message.id)?
            }
            None => return None,
        };
        self.entries.get_mut(index)
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
pub(in crate::core) fn trailing_user_ids<'a>(
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

/// Client-supplied `channel`/`turnMetadata` are not trusted; web messages say
/// so. Tool parts are not a user's to send: they are dropped.
fn sanitize_user_message(message: &UIMessage) -> UIMessage {
    let mut clean = message.clone();
    clean.drop_tool_parts_of_user();
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

#[path = "transcript_posted.rs"]
mod posted;

#[path = "transcript_reads.rs"]
mod reads;

#[path = "transcript_retention.rs"]
mod retention;

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
