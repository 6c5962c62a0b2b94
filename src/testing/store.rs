//! An in-memory store with the SQLite store's semantics (`src/store`), for
//! the simulation and the fuzzer: it applies every `StoreOp` the way those
//! SQL statements change their tables, keeps bodies as the same JSON text, and
//! rebuilds the `StoredState` a restarted core starts from the way
//! `SqlStore::load` reads it back (same order, same skipping rules). Shared
//! as `Rc<RefCell<MemStore>>`, it is the core's `History` (`store/reads.rs`).
//!
//! It enforces production's row limit the way the SQLite store does
//! (`core::row_limits`): every value is written as pieces of at most
//! `PIECE_BYTES`, and a row over `MAX_ROW_BYTES` is refused, so a value the
//! SQLite store could not keep cannot be kept here either. `fail_writes`
//! makes every write fail and `fail_next_message_write` the next message
//! write (as the SQLite store's test switch does), to test how a refused
//! write is handled; `apply_all` applies a batch as one transaction (all of
//! it or none), as the SQLite store does.
//!
//! `load` quarantines rows that no longer decode exactly as the SQLite
//! store does (`quarantined` lists them; `corrupt` writes such a row).
//!
//! A checked store (the default) also panics when the core breaks an
//! invariant the SQLite store relies on without enforcing it: two messages
//! at one seq, chunks appended to a stream that is not open, a chunk log
//! written with a gap or an overlap.

mod reads;

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use crate::core::{ConfigKey, OpenStream, StoreOp, StreamRecord};
use crate::protocol::UIMessage;

mod loading;

/// A row moved out of its table because it no longer decodes
/// (`chat_quarantine`): the table it came from, its key there, why, and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct QuarantinedRow {
    pub source: &'static str,
    pub key: String,
    pub reason: String,
    pub value: String,
}

/// A `chat_messages` row (its id is the key it is kept under).
#[derive(Debug, Clone)]
struct MessageRow {
    seq: u64,
    /// SQLite's rowid: among rows of one seq, `ORDER BY seq` (read through
    /// the seq index) returns them in rowid order, that is insertion order.
    rowid: u64,
    body: String,
}

/// A `chat_streams` row.
#[derive(Debug, Clone)]
struct StreamRow {
    /// `INSERT OR REPLACE` deletes the old row and inserts a new one.
    rowid: u64,
    record: String,
}

/// A `chat_stream_chunks` row.
#[derive(Debug, Clone)]
struct ChunkRow {
    /// The JSON array of chunk bodies, as the SQLite store writes it.
    bodies: String,
    /// How many bodies it holds (for the gap/overlap check).
    len: u64,
}

#[derive(Debug, Clone)]
pub struct MemStore {
    checked: bool,
    /// `chat_messages` by id (the primary key).
    messages: BTreeMap<String, MessageRow>,
    /// `chat_messages_by_seq`: (seq, rowid) → id.
    by_seq: BTreeMap<(u64, u64), String>,
    /// `chat_streams` by request id.
    streams: BTreeMap<String, StreamRow>,
    /// `chat_stream_chunks` by (request id, first_seq).
    chunks: BTreeMap<(String, u64), ChunkRow>,
    /// `chat_config` by key.
    config: BTreeMap<&'static str, String>,
    /// `chat_submissions` by id: (submitted_at, record JSON).
    submissions: BTreeMap<String, (u64, String)>,
    /// `chat_queued_bodies` by request id: the body's JSON text.
    queued_bodies: BTreeMap<String, String>,
    next_rowid: u64,
    /// Every write is refused while set (failure injection for tests).
    pub fail_writes: bool,
    /// The next batch holding a message write is refused (then cleared).
    pub fail_next_message_write: bool,
    /// The largest piece of any value written so far (bytes).
    largest_piece: usize,
    /// `chat_tool_calls`: (tool call id, message id) of assistant messages.
    tool_calls: BTreeSet<(String, String)>,
    /// Rows the core has read through `History` so far (see `reads`).
    rows_read: Cell<usize>,
    /// `History` calls the core has made so far.
    history_calls: Cell<usize>,
    /// `count_before` calls (a `COUNT(*)` in the SQLite store) so far.
    count_calls: Cell<usize>,
    /// `chat_quarantine` (emptied by a clear, as the SQLite store's).
    quarantine: Vec<QuarantinedRow>,
}

impl Default for MemStore {
    fn default() -> Self {
        MemStore::new()
    }
}

impl MemStore {
    /// A store that also checks the core's invariants (see the module header).
    pub fn new() -> MemStore {
        MemStore {
            checked: true,
            messages: BTreeMap::new(),
            by_seq: BTreeMap::new(),
            streams: BTreeMap::new(),
            chunks: BTreeMap::new(),
            config: BTreeMap::new(),
            submissions: BTreeMap::new(),
            queued_bodies: BTreeMap::new(),
            next_rowid: 0,
            fail_writes: false,
            fail_next_message_write: false,
            largest_piece: 0,
            tool_calls: BTreeSet::new(),
            rows_read: Cell::new(0),
            history_calls: Cell::new(0),
            count_calls: Cell::new(0),
            quarantine: Vec::new(),
        }
    }

    /// Exactly what the SQLite store does, with no invariant checks.
    pub fn unchecked() -> MemStore {
        MemStore {
            checked: false,
            ..MemStore::new()
        }
    }

    /// Deletes the chunk log of stream `request_id`.
    fn delete_chunk_log(&mut self, request_id: &str) {
        self.chunks.retain(|(id, _), _| id != request_id);
    }

    fn rowid(&mut self) -> u64 {
        self.next_rowid += 1;
        self.next_rowid
    }

    /// Applies `op`; a write refused (over the row limit, or while
    /// `fail_writes` is set) panics, as the core must never issue one.
    pub fn apply(&mut self, op: &StoreOp) {
        if let Err(e) = self.try_apply(op) {
            panic!("store write refused: {e}");
        }
    }

    /// Applies `op` unless it is refused: while `fail_writes` is set, or when
    /// a row it writes would be over production's limit (checked per piece,
    /// with the row's other text columns, as the SQLite store writes it).
    pub fn try_apply(&mut self, op: &StoreOp) -> Result<(), String> {
        self.apply_all(std::slice::from_ref(op))
    }

    /// Applies a batch as one transaction: when any write of it is refused,
    /// nothing of it is kept and the refusal is returned. (Every refusal is
    /// known before anything is written, so checking first is the rollback.)
    pub fn apply_all(&mut self, ops: &[StoreOp]) -> Result<(), String> {
        if self.fail_writes {
            return Err("storage write failed (injected)".into());
        }
        let writes_message = ops
            .iter()
            .any(|op| matches!(op, StoreOp::PutMessage { .. }));
        if writes_message && std::mem::take(&mut self.fail_next_message_write) {
            return Err("message write refused (injected failure)".into());
        }
        let mut largest = 0;
        for op in ops {
            largest = largest.max(check_limits(op)?);
        }
        self.largest_piece = self.largest_piece.max(largest);
        for op in ops {
            self.apply_unchecked(op);
        }
        Ok(())
    }

    /// The largest piece of any value written so far, in bytes.
    pub fn largest_piece(&self) -> usize {
        self.largest_piece
    }

    fn apply_unchecked(&mut self, op: &StoreOp) {
        match op {
            StoreOp::PutMessage { seq, message } => self.put_message(*seq, message),
            StoreOp::DeleteMessage { id } => {
                if let Some(row) = self.messages.remove(id) {
                    self.by_seq.remove(&(row.seq, row.rowid));
                }
                self.tool_calls.retain(|(_, owner)| owner != id);
            }
            StoreOp::DropMessagesBefore { seq } => {
                let dropped: Vec<(u64, u64)> =
                    self.by_seq.range(..(*seq, 0)).map(|(k, _)| *k).collect();
                for key in dropped {
                    if let Some(id) = self.by_seq.remove(&key) {
                        self.messages.remove(&id);
                        self.tool_calls.retain(|(_, owner)| *owner != id);
                    }
                }
            }
            StoreOp::ClearAll => {
                self.messages.clear();
                self.by_seq.clear();
                self.streams.clear();
                self.chunks.clear();
                self.config
                    .retain(|key, _| ConfigKey::SURVIVES_CLEAR.iter().any(|k| k.as_str() == *key));
                self.tool_calls.clear();
                self.quarantine.clear();
                self.queued_bodies.clear();
            }
            StoreOp::OpenStream(record) => {
                // A stream opens with an empty log (as the SQLite store's).
                self.delete_chunk_log(&record.request_id);
                let rowid = self.rowid();
                let record_json = record.to_row();
                self.streams.insert(
                    record.request_id.clone(),
                    StreamRow {
                        rowid,
                        record: record_json,
                    },
                );
            }
            StoreOp::AppendChunks {
                request_id,
                first_seq,
                bodies,
            } => self.append_chunks(request_id, *first_seq, bodies),
            StoreOp::CloseStream { request_id } => {
                self.delete_chunk_log(request_id);
                self.streams.remove(request_id);
            }
            StoreOp::PutConfig { key, value } => {
                self.config.insert(key.as_str(), value.clone());
            }
            StoreOp::PutSubmission(record) => {
                let json = serde_json::to_string(record).expect("a submission serializes");
                self.submissions
                    .insert(record.id.clone(), (record.submitted_at, json));
            }
            StoreOp::DeleteSubmission { id } => {
                self.submissions.remove(id);
            }
            StoreOp::DeleteConfig { key } => {
                self.config.remove(key.as_str());
            }
            StoreOp::PutQueuedBody { request_id, body } => {
                self.queued_bodies.insert(request_id.clone(), body.clone());
            }
            StoreOp::DeleteQueuedBody { request_id } => {
                self.queued_bodies.remove(request_id);
            }
        }
    }

    /// `INSERT … ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, body =
    /// excluded.body`: a known id keeps its row (and rowid) and takes the new
    /// seq and body.
    fn put_message(&mut self, seq: u64, message: &UIMessage) {
        let body = serde_json::to_string(message).expect("a message serializes");
        let rowid = match self.messages.get(&message.id) {
            Some(row) => {
                self.by_seq.remove(&(row.seq, row.rowid));
                row.rowid
            }
            None => self.rowid(),
        };
        if self.checked {
            if let Some(((_, _), other)) = self.by_seq.range((seq, 0)..=(seq, u64::MAX)).next() {
                panic!(
                    "seq {seq} already holds message {other} (writing {})",
                    message.id
                );
            }
        }
        self.by_seq.insert((seq, rowid), message.id.clone());
        self.tool_calls.retain(|(_, owner)| owner != &message.id);
        for call in crate::core::contract::history::indexed_tool_calls(message) {
            self.tool_calls
                .insert((call.to_string(), message.id.clone()));
        }
        self.messages
            .insert(message.id.clone(), MessageRow { seq, rowid, body });
    }

    /// `INSERT OR REPLACE` of the row keyed (request id, first_seq).
    fn append_chunks(&mut self, request_id: &str, first_seq: u64, bodies: &[Rc<str>]) {
        if self.checked {
            assert!(
                self.streams.contains_key(request_id),
                "chunks appended to stream {request_id}, which is not open"
            );
            let logged: u64 = self.rows_of(request_id).map(|(_, row)| row.len).sum();
            assert_eq!(
                first_seq, logged,
                "the chunk log of {request_id} would get a gap or an overlap"
            );
        }
        let bodies: Vec<&str> = bodies.iter().map(|b| &**b).collect();
        let row = ChunkRow {
            bodies: serde_json::to_string(&bodies).expect("chunk bodies serialize"),
            len: bodies.len() as u64,
        };
        self.chunks.insert((request_id.to_string(), first_seq), row);
    }

    /// The chunk rows of a request id, by first_seq.
    fn rows_of<'a>(&'a self, request_id: &'a str) -> impl Iterator<Item = (u64, &'a ChunkRow)> {
        self.chunks
            .range((request_id.to_string(), 0)..)
            .take_while(move |((id, _), _)| id == request_id)
            .map(|((_, first_seq), row)| (*first_seq, row))
    }

    /// Message rows in `ORDER BY seq` order (ties by rowid).
    fn ordered_rows(&self) -> impl Iterator<Item = &MessageRow> {
        self.by_seq.values().filter_map(|id| self.messages.get(id))
    }

    /// Stream rows in the order `SELECT record FROM chat_streams` reads them (rowid).
    fn ordered_streams(&self) -> Vec<(&String, &StreamRow)> {
        let mut rows: Vec<(&String, &StreamRow)> = self.streams.iter().collect();
        rows.sort_by_key(|(_, row)| row.rowid);
        rows
    }

    // ---- reading what is stored ----

    /// The stored message bodies (JSON), in transcript order.
    pub fn message_bodies(&self) -> Vec<&str> {
        self.ordered_rows().map(|row| row.body.as_str()).collect()
    }

    /// The stored messages, in transcript order, read back from their JSON
    /// (unreadable ones are left out, as a load does).
    pub fn messages(&self) -> Vec<UIMessage> {
        self.ordered_rows()
            .filter_map(|row| serde_json::from_str(&row.body).ok())
            .collect()
    }

    /// The ids of the stored messages, in transcript order.
    pub fn message_ids(&self) -> Vec<String> {
        self.by_seq.values().cloned().collect()
    }

    pub fn find_message(&self, id: &str) -> Option<UIMessage> {
        let row = self.messages.get(id)?;
        serde_json::from_str(&row.body).ok()
    }

    pub fn seq_of(&self, id: &str) -> Option<u64> {
        self.messages.get(id).map(|row| row.seq)
    }

    /// Request ids of the open streams, in the order a load returns them.
    pub fn open_stream_ids(&self) -> Vec<String> {
        self.ordered_streams()
            .into_iter()
            .map(|(id, _)| id.clone())
            .collect()
    }

    pub fn open_stream(&self, request_id: &str) -> Option<StreamRecord> {
        let row = self.streams.get(request_id)?;
        serde_json::from_str(&row.record).ok()
    }

    /// The chunk log of an open stream as a load returns it; `None` when no
    /// stream of that request id is open.
    pub fn chunks(&self, request_id: &str) -> Option<Vec<String>> {
        let mut open = OpenStream::from_record_row(&self.streams.get(request_id)?.record).ok()?;
        for (_, row) in self.rows_of(request_id) {
            let _ = open.push_chunk_row(&row.bodies);
        }
        Some(open.chunks)
    }

    /// How many chunks the log of an open stream holds (without reading
    /// them); `None` when no stream of that request id is open.
    pub fn chunk_count(&self, request_id: &str) -> Option<u64> {
        self.streams.get(request_id)?;
        Some(self.rows_of(request_id).map(|(_, row)| row.len).sum())
    }

    /// Whether any chunk-log row is stored (for any request id).
    pub fn has_chunk_rows(&self) -> bool {
        !self.chunks.is_empty()
    }

    pub fn config(&self, key: ConfigKey) -> Option<&str> {
        self.config.get(key.as_str()).map(String::as_str)
    }

    /// The stored bodies of queued turns (`chat_queued_bodies`): request id
    /// and JSON text.
    pub fn queued_bodies(&self) -> &BTreeMap<String, String> {
        &self.queued_bodies
    }

    /// The names of the stored config rows.
    pub fn config_keys(&self) -> Vec<&'static str> {
        self.config.keys().copied().collect()
    }
}

/// Refuses `op` when a row it writes would be over production's limit
/// (checked per piece, with the row's other text columns, as the SQLite store
/// writes it); otherwise the size of its largest piece.
fn check_limits(op: &StoreOp) -> Result<usize, String> {
    use crate::core::rows::row_limits::{check_row, pieces};
    let (key, value): (String, String) = match op {
        StoreOp::PutMessage { message, .. } => (
            message.id.clone(),
            serde_json::to_string(message).map_err(|e| e.to_string())?,
        ),
        StoreOp::OpenStream(record) => {
            let json = record.to_row();
            // A stream record is one row, never split.
            check_row(&[&record.request_id, &json])?;
            return Ok(json.len());
        }
        StoreOp::AppendChunks {
            request_id, bodies, ..
        } => {
            let bodies: Vec<&str> = bodies.iter().map(|b| &**b).collect();
            (
                request_id.clone(),
                serde_json::to_string(&bodies).map_err(|e| e.to_string())?,
            )
        }
        StoreOp::PutConfig { key, value } => (key.as_str().to_string(), value.clone()),
        StoreOp::PutQueuedBody { request_id, body } => (request_id.clone(), body.clone()),
        _ => return Ok(0),
    };
    let mut largest = 0;
    for piece in pieces(&value) {
        check_row(&[&key, piece])?;
        largest = largest.max(piece.len());
    }
    Ok(largest)
}

#[cfg(test)]
mod tests;
