//! Durable state on the Durable Object's SQLite: the transcript, the chunk
//! log of streaming turns, agent config (last client tools, last custom
//! body, last terminal error) and the custom bodies of queued turns
//! (`queued_bodies`). Applies the core's `StoreOp`s in order, a
//! batch at a time inside one transaction (all of it is written or none);
//! values over production's row limit are split (`pieces`), the schema is
//! versioned and migrated on open (`schema`), and rows that no longer parse
//! are moved aside (`quarantine`). A new agent has only the tables a chat
//! turn writes; the others are made by their first write (`tables`). The core reads older messages through
//! `reads` (its `History`); a load reads no messages.

mod known_rows;
pub mod mcp_servers;
mod pieces;
mod quarantine;
mod queued_bodies;
mod reads;
pub mod schema;
pub mod search;
mod snapshot;
mod snapshot_text;
mod tables;

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::core::{ConfigKey, OpenStream, StoreOp, StoredState};

use known_rows::KnownRows;
use pieces::{write, Kind};
use tables::{Lazy, Tables};

#[derive(Clone)]
pub struct SqlStore {
    sql: SqlStorage,
    storage: std::rc::Rc<worker::Storage>,
    /// Test only (`DEBUG_TOOLS=1`): the next message write is refused.
    fail_next_message: std::rc::Rc<std::cell::Cell<bool>>,
    /// Test only (`DEBUG_TOOLS=1`): the next write of the synced state is refused.
    fail_next_state: std::rc::Rc<std::cell::Cell<bool>>,
    /// Where the last transcript frame's older part started (`snapshot.rs`).
    snapshot_cut: std::rc::Rc<snapshot_text::CutMemo>,
    /// What is known not to exist, so writes skip deletes that find nothing.
    known: std::rc::Rc<std::cell::RefCell<KnownRows>>,
    /// Which of the tables made by their first write exist.
    tables: std::rc::Rc<std::cell::RefCell<Tables>>,
    /// The agent searches its history: the full-text index is kept
    /// (`search.rs`).
    search_index: bool,
}

#[derive(Deserialize)]
struct TextRow {
    value: String,
    pieces: f64,
}

#[derive(Deserialize)]
struct StreamRow {
    request_id: String,
    record: String,
}

#[derive(Deserialize)]
struct SubmissionRow {
    id: String,
    record: String,
}

#[derive(Deserialize)]
struct ChunkRow {
    first_seq: f64,
    bodies: String,
    pieces: f64,
}

fn text(value: &str) -> SqlStorageValue {
    SqlStorageValue::from(value)
}

/// Deletes the chunk log of stream `request_id` (its rows and their pieces)
/// unless it is known to have none.
fn delete_chunk_log(
    sql: &SqlStorage,
    tables: &Tables,
    known: &mut KnownRows,
    request_id: &str,
) -> worker::Result<()> {
    if !known.may_have_chunk_log(request_id) {
        return Ok(());
    }
    sql.exec(
        "DELETE FROM chat_stream_chunks WHERE request_id = ?",
        vec![text(request_id)],
    )?;
    if known.may_have_pieces(Kind::Chunks) {
        pieces::drop_pieces(sql, tables, Kind::Chunks, request_id, None)?;
    }
    known.deleted_chunk_log(request_id);
    Ok(())
}

impl SqlStore {
    /// Opens the store, first migrating the schema to this release's version
    /// and building (or dropping) the history's search index as the agent
    /// searches it or not.
    pub fn open(storage: worker::Storage, search_index: bool) -> worker::Result<SqlStore> {
        let sql = storage.sql();
        let tables = schema::migrate(&sql, &storage)?;
        search::keep_index(&sql, &storage, search_index, &tables)?;
        Ok(SqlStore {
            sql,
            storage: std::rc::Rc::new(storage),
            fail_next_message: Default::default(),
            fail_next_state: Default::default(),
            snapshot_cut: Default::default(),
            known: Default::default(),
            tables: std::rc::Rc::new(std::cell::RefCell::new(tables)),
            search_index,
        })
    }

    /// Everything the core needs to start but the messages (it reads those
    /// through `History`). A row that fails to parse is moved to the
    /// quarantine table (and reported once) rather than failing the whole
    /// agent; a stream whose record fails to parse is settled (its chunk
    /// log removed).
    pub fn load(&self) -> worker::Result<StoredState> {
        let mut state = StoredState::default();
        let mut known = KnownRows::default();
        let rows = state.read_config(|key| {
            let value = self.config_value(key)?;
            known.config_row(key, value.is_some());
            Ok::<_, worker::Error>(value)
        })?;
        known.learn(&self.sql, &self.tables.borrow())?;
        *self.known.borrow_mut() = known;
        for bad in rows {
            self.moved(move |sql, tables| {
                quarantine::config(sql, tables, bad.key.as_str(), &bad.value, &bad.reason)
            })?;
        }
        let bodies = queued_bodies::load(&self.sql, &self.tables.borrow(), &mut state)?;
        for (id, body, reason) in bodies {
            self.moved(move |sql, tables| {
                queued_bodies::quarantined(sql, tables, &id, &body, &reason)
            })?;
        }
        let submissions: Vec<SubmissionRow> = match self.tables.borrow().has(Lazy::Submissions) {
            true => self
                .sql
                .exec(
                    "SELECT id, record FROM chat_submissions ORDER BY submitted_at",
                    None,
                )?
                .to_array()?,
            false => Vec::new(),
        };
        for row in submissions {
            if let Err(e) = state.push_submission_row(&row.record) {
                let reason = e.to_string();
                self.moved(move |sql, tables| {
                    quarantine::submission(sql, tables, &row.id, &row.record, &reason)
                })?;
            }
        }
        let streams: Vec<StreamRow> = self
            .sql
            .exec("SELECT request_id, record FROM chat_streams", None)?
            .to_array()?;
        for row in streams {
            let mut open = match OpenStream::from_record_row(&row.record) {
                Ok(open) => open,
                Err(reason) => {
                    let (id, record) = (row.request_id.clone(), row.record.clone());
                    self.moved(move |sql, tables| {
                        quarantine::stream(sql, tables, &id, &record, &reason)
                    })?;
                    continue;
                }
            };
            let chunk_rows: Vec<ChunkRow> = self
                .sql
                .exec(
                    "SELECT first_seq, bodies, pieces FROM chat_stream_chunks WHERE request_id = ? ORDER BY first_seq",
                    vec![text(&row.request_id)],
                )?
                .to_array()?;
            for chunk in chunk_rows {
                let first_seq = chunk.first_seq as u64;
                let bodies = pieces::get(
                    &self.sql,
                    Kind::Chunks,
                    &row.request_id,
                    first_seq,
                    chunk.bodies,
                    chunk.pieces,
                )?;
                if let Err(reason) = open.push_chunk_row(&bodies) {
                    let id = row.request_id.clone();
                    self.moved(move |sql, tables| {
                        quarantine::chunks(sql, tables, &id, first_seq, &bodies, &reason)
                    })?;
                }
            }
            state.open_streams.push(open);
        }
        Ok(state)
    }

    /// One move to the quarantine, as one transaction (a row is never both
    /// in its table and quarantined, so it is reported once), reported after
    /// the transaction commits.
    fn moved(
        &self,
        body: impl FnOnce(&SqlStorage, &mut Tables) -> worker::Result<quarantine::Moved> + 'static,
    ) -> worker::Result<()> {
        let sql = self.sql.clone();
        let done = std::rc::Rc::new(std::cell::RefCell::new(None));
        let inside = done.clone();
        let tables = self.tables.clone();
        let tables_before = self.tables.borrow().clone();
        let result = schema::transaction(&self.storage, move || {
            *inside.borrow_mut() = Some(body(&sql, &mut tables.borrow_mut())?);
            Ok(())
        });
        if let Err(e) = result {
            // Rolled back: a table it made is gone again.
            *self.tables.borrow_mut() = tables_before;
            return Err(e);
        }
        // Reported once committed: a move rolled back moved nothing.
        if let Some(moved) = done.borrow_mut().take() {
            moved.report();
        }
        Ok(())
    }

    /// Test only: the next `PutMessage` fails inside its transaction, so
    /// the whole batch it belongs to is rolled back.
    pub fn fail_next_message_write(&self) {
        self.fail_next_message.set(true);
    }

    /// Test only: the next write of the synced state (`ConfigKey::AgentState`)
    /// fails inside its transaction.
    pub fn fail_next_state_write(&self) {
        self.fail_next_state.set(true);
    }

    /// Bytes the database occupies (pages × page size); debug output only.
    /// (PRAGMA page_count / cache_size are refused by the runtime: SQLITE_AUTH.)
    pub fn database_size(&self) -> usize {
        self.sql.database_size()
    }

    /// The stored queue row's bytes, how many body rows of queued turns are
    /// stored and their bytes (debug output only).
    pub fn queue_rows(&self) -> worker::Result<(usize, usize, usize)> {
        let queue = self.config_value(ConfigKey::Queue)?.map_or(0, |v| v.len());
        let (bodies, bytes) = queued_bodies::sizes(&self.sql, &self.tables.borrow())?;
        Ok((queue, bodies, bytes))
    }

    pub fn config_value(&self, key: ConfigKey) -> worker::Result<Option<String>> {
        let rows: Vec<TextRow> = self
            .sql
            .exec(
                "SELECT value, pieces FROM chat_config WHERE key = ?",
                vec![text(key.as_str())],
            )?
            .to_array()?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        pieces::get(
            &self.sql,
            Kind::Config,
            key.as_str(),
            0,
            row.value,
            row.pieces,
        )
        .map(Some)
    }

    /// Applies a batch of writes as one transaction: when any of them fails,
    /// none is kept (a chunk log is never dropped without the message that
    /// replaces it) and the batch comes back with the error.
    ///
    /// A batch with nothing to write (every op a delete of a row known not
    /// to exist) opens no transaction.
    pub fn apply_all(&self, ops: Vec<StoreOp>) -> Result<(), (Vec<StoreOp>, worker::Error)> {
        if ops.iter().all(|op| self.writes_nothing(op)) {
            return Ok(());
        }
        let store = self.clone();
        let ops = std::rc::Rc::new(ops);
        let batch = ops.clone();
        let known_before = self.known.borrow().clone();
        let tables_before = self.tables.borrow().clone();
        let result = schema::transaction(&self.storage, move || {
            for op in batch.iter() {
                store.apply(op)?;
            }
            Ok(())
        });
        result.map_err(|e| {
            // Rolled back: what was known before the batch holds again.
            *self.known.borrow_mut() = known_before;
            *self.tables.borrow_mut() = tables_before;
            let ops = std::rc::Rc::try_unwrap(ops).unwrap_or_else(|rc| (*rc).clone());
            (ops, e)
        })
    }

    /// Whether `op` would run no statement (a delete of a config row known
    /// not to exist).
    fn writes_nothing(&self, op: &StoreOp) -> bool {
        matches!(op, StoreOp::DeleteConfig { key } if !self.known.borrow().may_have_config(*key))
    }

    pub fn apply(&self, op: &StoreOp) -> worker::Result<()> {
        self.forget_snapshot_cut(op);
        let sql = &self.sql;
        let known = &mut *self.known.borrow_mut();
        let tables = &mut *self.tables.borrow_mut();
        match op {
            StoreOp::PutMessage { seq, message } => {
                if self.fail_next_message.replace(false) {
                    return Err(worker::Error::RustError(
                        "message write refused (injected failure)".into(),
                    ));
                }
                let body = serde_json::to_string(message)
                    .map_err(|e| worker::Error::RustError(e.to_string()))?;
                if self.search_index {
                    search::index_message(sql, *seq, message)?;
                }
                let drop_old = known.may_have_pieces(Kind::Message);
                let (first, count) =
                    pieces::put(sql, tables, Kind::Message, &message.id, 0, &body, drop_old)?;
                known.wrote_pieces(Kind::Message, count);
                write(
                    sql,
                    "INSERT INTO chat_messages (id, seq, body, pieces) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, body = excluded.body, pieces = excluded.pieces",
                    vec![text(&message.id), SqlStorageValue::from(*seq as i64), text(first), SqlStorageValue::from(count)],
                )?;
                if tables.has(Lazy::ToolCalls) {
                    sql.exec(
                        "DELETE FROM chat_tool_calls WHERE message_id = ?",
                        vec![text(&message.id)],
                    )?;
                }
                for call in crate::core::contract::history::indexed_tool_calls(message) {
                    tables.ensure(sql, Lazy::ToolCalls)?;
                    write(
                        sql,
                        "INSERT OR IGNORE INTO chat_tool_calls (tool_call_id, message_id) VALUES (?, ?)",
                        vec![text(call), text(&message.id)],
                    )?;
                }
            }
            StoreOp::DeleteMessage { id } => {
                if self.search_index {
                    search::unindex_message(sql, id)?;
                }
                sql.exec("DELETE FROM chat_messages WHERE id = ?", vec![text(id)])?;
                if tables.has(Lazy::ToolCalls) {
                    sql.exec(
                        "DELETE FROM chat_tool_calls WHERE message_id = ?",
                        vec![text(id)],
                    )?;
                }
                pieces::drop_pieces(sql, tables, Kind::Message, id, None)?;
            }
            StoreOp::DropMessagesBefore { seq } => {
                let before = reads::seq_value(*seq);
                if tables.has(Lazy::Pieces) {
                    sql.exec(
                        "DELETE FROM chat_pieces WHERE kind = ? AND key IN (SELECT id FROM chat_messages WHERE seq < ?)",
                        vec![Kind::Message.as_str().into(), before.clone()],
                    )?;
                }
                if tables.has(Lazy::ToolCalls) {
                    sql.exec(
                        "DELETE FROM chat_tool_calls WHERE message_id IN (SELECT id FROM chat_messages WHERE seq < ?)",
                        vec![before.clone()],
                    )?;
                }
                if self.search_index {
                    sql.exec(
                        "DELETE FROM chat_search WHERE rowid < ?",
                        vec![before.clone()],
                    )?;
                }
                sql.exec("DELETE FROM chat_messages WHERE seq < ?", vec![before])?;
            }
            StoreOp::ClearAll => {
                for table in ["chat_messages", "chat_streams", "chat_stream_chunks"] {
                    sql.exec(&format!("DELETE FROM {table}"), None)?;
                }
                for table in [Lazy::ToolCalls, Lazy::Quarantine, Lazy::QueuedBodies] {
                    if tables.has(table) {
                        sql.exec(&format!("DELETE FROM {}", table.name()), None)?;
                    }
                }
                if self.search_index {
                    sql.exec("DELETE FROM chat_search", None)?;
                }
                // The rows that are not chat state stay, with their pieces.
                let kept = ConfigKey::SURVIVES_CLEAR
                    .iter()
                    .map(|k| format!("'{}'", k.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ");
                sql.exec(
                    &format!("DELETE FROM chat_config WHERE key NOT IN ({kept})"),
                    None,
                )?;
                if tables.has(Lazy::Pieces) {
                    sql.exec(
                        &format!(
                            "DELETE FROM chat_pieces WHERE NOT (kind = 'config' AND key IN ({kept}))"
                        ),
                        None,
                    )?;
                }
                known.cleared(&ConfigKey::SURVIVES_CLEAR);
            }
            StoreOp::OpenStream(record) => {
                // A stream opens with an empty log: chunks left by an earlier
                // stream of the same request id (whose close was refused) go.
                delete_chunk_log(sql, tables, known, &record.request_id)?;
                let json = record.to_row();
                write(
                    sql,
                    "INSERT OR REPLACE INTO chat_streams (request_id, record) VALUES (?, ?)",
                    vec![text(&record.request_id), text(&json)],
                )?;
            }
            StoreOp::AppendChunks {
                request_id,
                first_seq,
                bodies,
            } => {
                let bodies: Vec<&str> = bodies.iter().map(|b| &**b).collect();
                let json = serde_json::to_string(&bodies)
                    .map_err(|e| worker::Error::RustError(e.to_string()))?;
                let drop_old = known.may_have_pieces(Kind::Chunks);
                let (first, count) = pieces::put(
                    sql,
                    tables,
                    Kind::Chunks,
                    request_id,
                    *first_seq,
                    &json,
                    drop_old,
                )?;
                known.wrote_pieces(Kind::Chunks, count);
                write(
                    sql,
                    "INSERT OR REPLACE INTO chat_stream_chunks (request_id, first_seq, bodies, pieces) VALUES (?, ?, ?, ?)",
                    vec![text(request_id), SqlStorageValue::from(*first_seq as i64), text(first), SqlStorageValue::from(count)],
                )?;
                known.wrote_chunks(request_id);
            }
            StoreOp::CloseStream { request_id } => {
                delete_chunk_log(sql, tables, known, request_id)?;
                sql.exec(
                    "DELETE FROM chat_streams WHERE request_id = ?",
                    vec![text(request_id)],
                )?;
            }
            StoreOp::PutConfig { key, value } => {
                if *key == ConfigKey::AgentState && self.fail_next_state.replace(false) {
                    return Err(worker::Error::RustError(
                        "state write refused (injected failure)".into(),
                    ));
                }
                let drop_old = known.may_have_pieces(Kind::Config);
                let (first, count) =
                    pieces::put(sql, tables, Kind::Config, key.as_str(), 0, value, drop_old)?;
                known.wrote_pieces(Kind::Config, count);
                write(
                    sql,
                    "INSERT OR REPLACE INTO chat_config (key, value, pieces) VALUES (?, ?, ?)",
                    vec![
                        text(key.as_str()),
                        text(first),
                        SqlStorageValue::from(count),
                    ],
                )?;
                known.wrote_config(*key);
            }
            StoreOp::PutSubmission(record) => {
                let json = serde_json::to_string(record)
                    .map_err(|e| worker::Error::RustError(e.to_string()))?;
                tables.ensure(sql, Lazy::Submissions)?;
                write(
                    sql,
                    "INSERT OR REPLACE INTO chat_submissions (id, submitted_at, record) VALUES (?, ?, ?)",
                    vec![text(&record.id), SqlStorageValue::from(record.submitted_at as i64), text(&json)],
                )?;
            }
            StoreOp::DeleteSubmission { id } => {
                if tables.has(Lazy::Submissions) {
                    sql.exec("DELETE FROM chat_submissions WHERE id = ?", vec![text(id)])?;
                }
            }
            StoreOp::PutQueuedBody { request_id, body } => {
                queued_bodies::put(sql, tables, request_id, body)?;
            }
            StoreOp::DeleteQueuedBody { request_id } => {
                queued_bodies::delete(sql, tables, request_id)?;
            }
            StoreOp::DeleteConfig { key } => {
                if !known.may_have_config(*key) {
                    return Ok(());
                }
                sql.exec(
                    "DELETE FROM chat_config WHERE key = ?",
                    vec![text(key.as_str())],
                )?;
                if known.may_have_pieces(Kind::Config) {
                    pieces::drop_pieces(sql, tables, Kind::Config, key.as_str(), None)?;
                }
                known.deleted_config(*key);
            }
        }
        Ok(())
    }
}
