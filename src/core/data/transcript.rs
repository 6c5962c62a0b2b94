//! The stored conversation: ordered messages in `seq` order, the newest in
//! memory (the window) and the older ones read through the store, and the
//! places kept for the answers of accepted requests. Reconciling a client's
//! transcript and the tool calls in it live in the sibling files.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde_json::Value;

use crate::protocol::{Part, Role, UIMessage};

use crate::core::contract::history::{self, History, PAGE, WINDOW_BYTES, WINDOW_MESSAGES};
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
    /// The posting tab's list may differ from the store after this: a
    /// posted user message was not taken (its id is a stored answer's, or the
    /// history cap deleted it), an id was posted twice, or a posted answer is
    /// not one the store holds under its id and role (a forged one).
    pub unmatched: bool,
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
}

#[path = "transcript_posted.rs"]
mod posted;

#[path = "transcript_reads.rs"]
mod reads;

#[path = "transcript_reconcile.rs"]
mod reconcile;
pub(in crate::core) use reconcile::trailing_user_ids;

#[path = "transcript_tool_calls.rs"]
mod tool_calls;
pub use tool_calls::{apply_approval, apply_tool_result, is_mid_batch, APPROVED_NOT_RUN_ERROR};

#[path = "transcript_retention.rs"]
mod retention;

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
