//! How the in-memory store is read back by a starting core, exactly as
//! `SqlStore::load` reads the SQLite store: the same order and decoding
//! rules, and every row that no longer decodes moved to the quarantine with
//! its reason (`load`); plus `corrupt`, which writes such a row for tests.

use crate::core::contract::history;
use crate::core::{ConfigKey, OpenStream, StoredState};

use super::{MemStore, QuarantinedRow};

impl MemStore {
    /// What a core restarted on this store starts from, read as
    /// `SqlStore::load` reads it (unreadable rows left out), without moving
    /// anything: `load` also quarantines them.
    pub fn stored_state(&self) -> StoredState {
        self.read().0
    }

    /// `SqlStore::load`: the state a starting core reads, after moving every
    /// row that no longer decodes to the quarantine with its reason (a stream
    /// whose record cannot be read is settled: its chunk rows go with it).
    pub fn load(&mut self) -> StoredState {
        let (state, moves) = self.read();
        for row in moves {
            match row.source {
                "chat_messages" => {
                    if let Some(old) = self.messages.remove(&row.key) {
                        self.by_seq.remove(&(old.seq, old.rowid));
                    }
                }
                "chat_streams" => {
                    self.streams.remove(&row.key);
                    self.chunks.retain(|(id, _), _| *id != row.key);
                }
                "chat_stream_chunks" => {
                    self.chunks
                        .retain(|(id, first), _| format!("{id}:{first}") != row.key);
                }
                "chat_submissions" => {
                    self.submissions.remove(&row.key);
                }
                "chat_queued_bodies" => {
                    self.queued_bodies.remove(&row.key);
                }
                _ => {
                    self.config.retain(|key, _| *key != row.key);
                }
            }
            self.quarantine.push(row);
        }
        state
    }

    /// The state a load returns and the rows it would quarantine.
    fn read(&self) -> (StoredState, Vec<QuarantinedRow>) {
        let mut state = StoredState::default();
        let mut moves = Vec::new();
        let mut keep = |source, key: String, value: &str, reason: String| {
            moves.push(QuarantinedRow {
                source,
                key,
                reason,
                value: value.to_string(),
            })
        };
        // Messages are read through `History` (the SQLite store quarantines
        // an unreadable one when it reads it); a load checks them all here.
        for row in self.ordered_rows() {
            if let Err(e) = history::read_row(row.seq, &row.body) {
                let id = self.by_seq[&(row.seq, row.rowid)].clone();
                keep("chat_messages", id, &row.body, e.to_string());
            }
        }
        let config = |key: ConfigKey| Ok::<_, ()>(self.config(key).map(str::to_string));
        for bad in state.read_config(config).unwrap_or_default() {
            keep(
                "chat_config",
                bad.key.as_str().into(),
                &bad.value,
                bad.reason,
            );
        }
        for (request_id, body) in &self.queued_bodies {
            if let Err(reason) = state.push_queued_body_row(request_id, body) {
                keep("chat_queued_bodies", request_id.clone(), body, reason);
            }
        }
        // `chat_submissions` ORDER BY submitted_at (a clear keeps them).
        let mut submissions: Vec<(&String, &(u64, String))> = self.submissions.iter().collect();
        submissions.sort_by_key(|(_, (at, _))| *at);
        for (id, (_, record)) in submissions {
            if let Err(e) = state.push_submission_row(record) {
                keep("chat_submissions", id.clone(), record, e.to_string());
            }
        }
        for (request_id, row) in self.ordered_streams() {
            let mut open = match OpenStream::from_record_row(&row.record) {
                Ok(open) => open,
                Err(reason) => {
                    keep("chat_streams", request_id.clone(), &row.record, reason);
                    continue;
                }
            };
            for (first_seq, chunk_row) in self.rows_of(request_id) {
                if let Err(reason) = open.push_chunk_row(&chunk_row.bodies) {
                    let key = format!("{request_id}:{first_seq}");
                    keep("chat_stream_chunks", key, &chunk_row.bodies, reason);
                }
            }
            state.open_streams.push(open);
        }
        (state, moves)
    }

    /// The rows moved to the quarantine so far, in the order they were moved.
    pub fn quarantined(&self) -> &[QuarantinedRow] {
        &self.quarantine
    }

    /// Test only: replaces the stored text of a row, as a corrupt or
    /// newer-release row would read (`source` is the SQLite table's name:
    /// a message id, a stream's request id, or a config key's name).
    pub fn corrupt(&mut self, source: &str, key: &str, text: &str) {
        match source {
            "chat_messages" => {
                if let Some(row) = self.messages.get_mut(key) {
                    row.body = text.into();
                }
            }
            "chat_streams" => {
                if let Some(row) = self.streams.get_mut(key) {
                    row.record = text.into();
                }
            }
            "chat_stream_chunks" => {
                // key: `<request id>:<first_seq>`, as the quarantine names it.
                let found = self
                    .chunks
                    .iter_mut()
                    .find(|((id, first), _)| format!("{id}:{first}") == key);
                if let Some((_, row)) = found {
                    row.bodies = text.into();
                }
            }
            "chat_queued_bodies" => {
                if let Some(body) = self.queued_bodies.get_mut(key) {
                    *body = text.into();
                }
            }
            _ => {
                if let Some(config) = ConfigKey::ALL.iter().find(|k| k.as_str() == key) {
                    self.config.insert(config.as_str(), text.into());
                }
            }
        }
    }
}
