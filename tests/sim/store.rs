//! The simulated durable store: applies every `StoreOp` the core emits
//! (messages by seq, chunk log per request id, open streams, config values),
//! checks the invariants a real store relies on, and rebuilds the
//! `StoredState` a restarted core starts from (a simulated eviction).

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use durable_chat::core::{ConfigKey, Entry, OpenStream, StoreOp, StoredState, StreamRecord};
use durable_chat::protocol::UIMessage;

#[derive(Debug, Default)]
pub struct MemStore {
    /// Messages keyed by their seq (the transcript order).
    pub messages: BTreeMap<u64, UIMessage>,
    /// The chunk log of each open stream, by request id.
    pub chunks: BTreeMap<String, Vec<Rc<str>>>,
    pub open_streams: BTreeMap<String, StreamRecord>,
    /// Config values by key name (`last_client_tools`, `last_body`, `terminal_error`).
    pub config: BTreeMap<&'static str, String>,
    /// Every write, in the order it was applied.
    pub ops: Vec<StoreOp>,
}

impl MemStore {
    pub fn apply(&mut self, op: StoreOp) {
        match &op {
            StoreOp::PutMessage { seq, message } => {
                self.messages
                    .retain(|s, m| m.id != message.id || *s == *seq);
                if let Some(other) = self.messages.get(seq) {
                    assert_eq!(
                        other.id, message.id,
                        "seq {seq} already holds message {} (writing {})",
                        other.id, message.id
                    );
                }
                self.messages.insert(*seq, message.clone());
            }
            StoreOp::DeleteMessage { id } => self.messages.retain(|_, m| &m.id != id),
            StoreOp::ClearAll => {
                self.messages.clear();
                self.chunks.clear();
                self.open_streams.clear();
                self.config.clear();
            }
            StoreOp::OpenStream(record) => {
                self.open_streams
                    .insert(record.request_id.clone(), record.clone());
                self.chunks.insert(record.request_id.clone(), Vec::new());
            }
            StoreOp::AppendChunks {
                request_id,
                first_seq,
                bodies,
            } => {
                assert!(
                    self.open_streams.contains_key(request_id),
                    "chunks appended to stream {request_id} which is not open"
                );
                let log = self.chunks.entry(request_id.clone()).or_default();
                assert_eq!(
                    *first_seq,
                    log.len() as u64,
                    "chunk log of {request_id} would get a gap or an overlap"
                );
                log.extend(bodies.iter().cloned());
            }
            StoreOp::CloseStream { request_id } => {
                self.open_streams.remove(request_id);
                self.chunks.remove(request_id);
            }
            StoreOp::PutConfig { key, value } => {
                self.config.insert(key.as_str(), value.clone());
            }
            StoreOp::DeleteConfig { key } => {
                self.config.remove(key.as_str());
            }
        }
        self.ops.push(op);
    }

    /// What a core restarted on this store starts from.
    pub fn stored_state(&self) -> StoredState {
        let mut state = StoredState {
            messages: self
                .messages
                .iter()
                .map(|(seq, message)| Entry {
                    seq: *seq,
                    message: message.clone(),
                })
                .collect(),
            open_streams: self
                .open_streams
                .values()
                .map(|record| OpenStream {
                    record: record.clone(),
                    chunks: self.chunks[&record.request_id]
                        .iter()
                        .map(|c| c.to_string())
                        .collect(),
                })
                .collect(),
            ..StoredState::default()
        };
        let config = |key: ConfigKey| Ok::<_, ()>(self.config.get(key.as_str()).cloned());
        let _ = state.read_config(config);
        state
    }

    /// The stored transcript as JSON, in seq order.
    pub fn transcript(&self) -> Vec<Value> {
        self.messages
            .values()
            .map(|m| serde_json::to_value(m).expect("message serializes"))
            .collect()
    }

    pub fn message_ids(&self) -> Vec<String> {
        self.messages.values().map(|m| m.id.clone()).collect()
    }

    pub fn message(&self, id: &str) -> Option<Value> {
        self.messages
            .values()
            .find(|m| m.id == id)
            .map(|m| serde_json::to_value(m).expect("message serializes"))
    }

    /// The parsed chunk log of an open stream.
    pub fn chunk_log(&self, request_id: &str) -> Vec<Value> {
        self.chunks
            .get(request_id)
            .map(|log| {
                log.iter()
                    .map(|b| serde_json::from_str(b).expect("logged chunk is JSON"))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn count(&self, pred: impl Fn(&StoreOp) -> bool) -> usize {
        self.ops.iter().filter(|op| pred(op)).count()
    }

    pub fn chunk_writes(&self) -> usize {
        self.count(|op| matches!(op, StoreOp::AppendChunks { .. }))
    }

    pub fn config_json(&self, key: ConfigKey) -> Option<Value> {
        self.config
            .get(key.as_str())
            .and_then(|v| serde_json::from_str(v).ok())
    }
}
