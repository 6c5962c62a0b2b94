//! What outlives one instance of a test agent, in memory: the engine's rows
//! (the shared in-memory store with the SQLite store's semantics), the
//! author's storage, the virtual clock, the durable alarm, the ids,
//! the tabs with every frame they received, the scripted model and the log.
//! An eviction drops the instance and keeps all of this.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::agent::storage::{AuthorStore, SqlValue};
use crate::core::ConnId;
use crate::model::ModelRequest;
use crate::testing::{MemStore, SharedIds};

use super::reply::Reply;
use super::sql::AuthorSql;

/// Midnight UTC, 2026-01-01: where a test agent's clock starts.
pub const START_MS: u64 = 1_767_225_600_000;

/// One tab: what it received, whether its socket is open, its connection's
/// own state, tags, readonly flag and whether its list was the store's
/// (kept with the socket, as an attachment is), and the close code and
/// reason the agent closed it with.
#[derive(Debug, Default)]
pub(crate) struct TabRecord {
    pub frames: Vec<Value>,
    pub open: bool,
    pub state: Option<String>,
    pub tags: Vec<String>,
    pub readonly: bool,
    pub list_matches: bool,
    pub closed_with: Option<(u16, String)>,
}

/// The scripted model's queue and what it was asked.
#[derive(Debug, Default)]
pub(crate) struct ModelScript {
    pub replies: VecDeque<Reply>,
    pub requests: Vec<ModelRequest>,
}

#[derive(Default)]
pub(crate) struct Durable {
    pub store: Rc<RefCell<MemStore>>,
    pub author: Rc<MemoryAuthorStore>,
    pub ids: SharedIds,
    pub clock: Cell<u64>,
    /// The durable alarm and the order it was set in.
    pub alarm: Cell<Option<(u64, u64)>>,
    pub order: Cell<u64>,
    pub tabs: RefCell<BTreeMap<ConnId, TabRecord>>,
    pub model: RefCell<ModelScript>,
    pub log: RefCell<Vec<String>>,
    /// Model events delivered to the core so far (for `Point`).
    pub model_events: Cell<usize>,
    /// `destroy` erased everything: a new instance starts once the code
    /// running now has returned.
    pub reset_pending: Cell<bool>,
}

impl Durable {
    pub fn new() -> Durable {
        let durable = Durable::default();
        durable.clock.set(START_MS);
        durable
    }

    pub fn now(&self) -> u64 {
        self.clock.get()
    }

    pub fn next_order(&self) -> u64 {
        self.order.set(self.order.get() + 1);
        self.order.get()
    }

    /// A frame to tab `conn`: recorded if its socket is open.
    pub fn deliver(&self, conn: &str, frame: Value) -> bool {
        match self.tabs.borrow_mut().get_mut(conn) {
            Some(tab) if tab.open => {
                tab.frames.push(frame);
                true
            }
            _ => false,
        }
    }
}

impl Durable {
    /// Erases what outlives an instance (the engine's rows, the author's
    /// storage, the alarm) and closes every open tab with `code`/`reason`.
    pub fn erase(&self, code: u16, reason: &str) {
        *self.store.borrow_mut() = MemStore::new();
        self.author.clear();
        self.alarm.set(None);
        for tab in self.tabs.borrow_mut().values_mut() {
            if std::mem::replace(&mut tab.open, false) {
                tab.closed_with = Some((code, reason.to_string()));
            }
        }
        self.reset_pending.set(true);
    }
}

/// The author's storage in memory: the key-value store, and the author's
/// SQL tables on SQLite in memory (`sql.rs`).
#[derive(Default)]
pub(crate) struct MemoryAuthorStore {
    kv: RefCell<BTreeMap<String, String>>,
    sql: AuthorSql,
}

impl MemoryAuthorStore {
    fn clear(&self) {
        self.kv.borrow_mut().clear();
        self.sql.clear();
    }
}

impl AuthorStore for MemoryAuthorStore {
    fn sql(&self, query: &str, bindings: Vec<SqlValue>) -> Result<Vec<Map<String, Value>>, String> {
        self.sql.exec(query, bindings)
    }

    fn put(&self, key: &str, json: String) -> Result<(), String> {
        self.kv.borrow_mut().insert(key.to_string(), json);
        Ok(())
    }

    fn get(&self, key: &str) -> Result<Option<String>, String> {
        Ok(self.kv.borrow().get(key).cloned())
    }

    fn delete(&self, key: &str) -> Result<bool, String> {
        Ok(self.kv.borrow_mut().remove(key).is_some())
    }

    fn keys(&self, prefix: &str) -> Result<Vec<String>, String> {
        let kv = self.kv.borrow();
        let keys = kv.range(prefix.to_string()..).map(|(k, _)| k);
        Ok(keys
            .take_while(|k| k.starts_with(prefix))
            .cloned()
            .collect())
    }
}
