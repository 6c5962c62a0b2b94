//! The in-memory store as the core's `History`, reading rows the way
//! `store/reads.rs` does with SQL (unreadable rows left out), and counting
//! what the core reads, so that tests can check a request's cost does not
//! grow with the history.

use std::cell::RefCell;

use crate::core::contract::history;
use crate::core::{Entry, History};

use super::MemStore;

impl MemStore {
    /// Rows the core has read through `History` so far.
    pub fn rows_read(&self) -> usize {
        self.rows_read.get()
    }

    /// `History` calls the core has made so far.
    pub fn history_calls(&self) -> usize {
        self.history_calls.get()
    }

    /// `count_before` calls the core has made so far (each a `COUNT(*)`
    /// over the history in the SQLite store).
    pub fn count_calls(&self) -> usize {
        self.count_calls.get()
    }

    fn entry_of(&self, id: &str) -> Option<Entry> {
        let row = self.messages.get(id)?;
        history::read_row(row.seq, &row.body).ok()
    }

    fn counted(&self, entries: Vec<Entry>) -> Vec<Entry> {
        self.history_calls.set(self.history_calls.get() + 1);
        self.rows_read.set(self.rows_read.get() + entries.len());
        entries
    }
}

impl History for RefCell<MemStore> {
    fn newest_json_before(&self, before_seq: u64, max_bytes: usize) -> String {
        let store = self.borrow();
        let mut used = 0;
        let mut rows: Vec<&str> = Vec::new();
        for (_, id) in store.by_seq.range(..(before_seq, 0)).rev() {
            let Some(row) = store.messages.get(id) else {
                continue;
            };
            used += row.body.len() + 1;
            if used > max_bytes {
                break;
            }
            if history::is_json(&row.body) {
                rows.push(&row.body);
            }
        }
        rows.reverse();
        store.history_calls.set(store.history_calls.get() + 1);
        store.rows_read.set(store.rows_read.get() + rows.len());
        rows.join(",")
    }

    fn page_before(&self, before_seq: u64, limit: usize) -> Vec<Entry> {
        let store = self.borrow();
        let entries = store
            .by_seq
            .range(..(before_seq, 0))
            .rev()
            .filter_map(|(_, id)| store.entry_of(id))
            .take(limit)
            .collect();
        store.counted(entries)
    }

    fn find(&self, id: &str) -> Option<Entry> {
        let store = self.borrow();
        let entries = store.entry_of(id).into_iter().collect();
        store.counted(entries).pop()
    }

    fn find_many(&self, ids: &[&str]) -> Vec<Entry> {
        let store = self.borrow();
        let entries = ids.iter().filter_map(|id| store.entry_of(id)).collect();
        store.counted(entries)
    }

    fn roles_before(&self, ids: &[&str], before_seq: u64) -> Vec<(String, crate::protocol::Role)> {
        // As the SQLite store does: each row's role field.
        let store = self.borrow();
        let roles: Vec<(String, crate::protocol::Role)> = ids
            .iter()
            .filter_map(|id| {
                let row = store.messages.get(*id).filter(|r| r.seq < before_seq)?;
                let role = history::role_in_span(history::role_span(&row.body))?;
                Some((id.to_string(), role))
            })
            .collect();
        store.history_calls.set(store.history_calls.get() + 1);
        store.rows_read.set(store.rows_read.get() + roles.len());
        roles
    }

    fn tool_call_owner(&self, tool_call_id: &str) -> Option<Entry> {
        let store = self.borrow();
        let owner = store
            .tool_calls
            .range((tool_call_id.to_string(), String::new())..)
            .take_while(|(call, _)| call == tool_call_id)
            .filter_map(|(_, id)| store.entry_of(id))
            .max_by_key(|e| e.seq);
        store.counted(owner.into_iter().collect()).pop()
    }

    fn count_before(&self, seq: u64) -> usize {
        let store = self.borrow();
        store.counted(Vec::new());
        store.count_calls.set(store.count_calls.get() + 1);
        store.by_seq.range(..(seq, 0)).count()
    }

    fn seq_after_oldest(&self, n: usize) -> Option<u64> {
        let store = self.borrow();
        store.counted(Vec::new());
        store.by_seq.keys().nth(n).map(|(seq, _)| *seq)
    }
}
