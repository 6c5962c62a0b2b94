//! The simulated durable store: the shared in-memory store with the SQLite
//! store's semantics and its invariant checks (`durable_chat::testing`),
//! plus the log of every write and JSON views for assertions. `Deref`s to
//! the shared store for its readers (`message_ids`, `open_stream_ids`,
//! `chunks`, `config`, `stored_state`…).

use std::cell::RefCell;
use std::ops::Deref;
use std::rc::Rc;

use serde_json::Value;

use durable_chat::core::{ConfigKey, StoreOp};
use durable_chat::testing::MemStore;

#[derive(Debug, Default)]
pub struct SimStore {
    rows: MemStore,
    /// The same rows, shared with the core as its `History` (kept in step
    /// with `rows` by `apply`).
    shared: Rc<RefCell<MemStore>>,
    /// Every write, in the order it was applied.
    pub ops: Vec<StoreOp>,
    /// The transactions: each one's range in `ops`.
    pub batches: Vec<std::ops::Range<usize>>,
}

impl Deref for SimStore {
    type Target = MemStore;

    fn deref(&self) -> &MemStore {
        &self.rows
    }
}

impl SimStore {
    pub fn apply(&mut self, op: StoreOp) {
        self.rows.apply(&op);
        self.shared.borrow_mut().apply(&op);
        self.ops.push(op);
    }

    /// The store as the core reads it.
    pub fn history(&self) -> Rc<dyn durable_chat::core::History> {
        self.shared.clone()
    }

    /// Rows and calls the core has read through its `History` so far.
    pub fn history_reads(&self) -> (usize, usize) {
        let shared = self.shared.borrow();
        (shared.rows_read(), shared.history_calls())
    }

    /// How many times the core has counted the stored messages before a place.
    pub fn history_counts(&self) -> usize {
        self.shared.borrow().count_calls()
    }

    /// Applies a run of writes as one transaction, as the host does. Only an
    /// injected failure may refuse it (the batch comes back); any other
    /// refusal is a write the core must never issue.
    pub fn apply_batch(&mut self, ops: Vec<StoreOp>) -> Result<(), (Vec<StoreOp>, String)> {
        match self.rows.apply_all(&ops) {
            Ok(()) => {
                let mut shared = self.shared.borrow_mut();
                for op in &ops {
                    shared.apply(op);
                }
                let start = self.ops.len();
                self.ops.extend(ops);
                self.batches.push(start..self.ops.len());
                Ok(())
            }
            Err(e) if e.contains("injected") => Err((ops, e)),
            Err(e) => panic!("store write refused: {e}"),
        }
    }

    /// Test switches of the store (failure injection); the core's `History`
    /// view only ever receives what was committed.
    pub fn rows_mut(&mut self) -> &mut MemStore {
        &mut self.rows
    }

    /// `SqlStore::load` on a restart (unreadable rows quarantined); the
    /// core's `History` view then reads exactly these rows (what tests
    /// changed through `rows_mut` included).
    pub fn load(&mut self) -> durable_chat::core::StoredState {
        let state = self.rows.load();
        *self.shared.borrow_mut() = self.rows.clone();
        state
    }

    /// The stored transcript as JSON, in seq order.
    pub fn transcript(&self) -> Vec<Value> {
        self.rows
            .messages()
            .iter()
            .map(|m| serde_json::to_value(m).expect("message serializes"))
            .collect()
    }

    pub fn message(&self, id: &str) -> Option<Value> {
        self.rows
            .find_message(id)
            .map(|m| serde_json::to_value(m).expect("message serializes"))
    }

    /// The parsed chunk log of an open stream.
    pub fn chunk_log(&self, request_id: &str) -> Vec<Value> {
        self.rows
            .chunks(request_id)
            .map(|log| {
                log.iter()
                    .map(|b| serde_json::from_str(b).expect("logged chunk is JSON"))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The transaction that wrote the first op matching `pred`, if any.
    pub fn batch_of(&self, pred: impl Fn(&StoreOp) -> bool) -> Option<usize> {
        let index = self.ops.iter().position(pred)?;
        self.batches.iter().position(|b| b.contains(&index))
    }

    pub fn count(&self, pred: impl Fn(&StoreOp) -> bool) -> usize {
        self.ops.iter().filter(|op| pred(op)).count()
    }

    pub fn chunk_writes(&self) -> usize {
        self.count(|op| matches!(op, StoreOp::AppendChunks { .. }))
    }

    pub fn config_json(&self, key: ConfigKey) -> Option<Value> {
        self.rows
            .config(key)
            .and_then(|v| serde_json::from_str(v).ok())
    }
}
