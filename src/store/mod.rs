//! Durable state on the Durable Object's SQLite: the transcript, the chunk
//! log of streaming turns, and agent config (last client tools, last custom
//! body, last terminal error). Applies the core's `StoreOp`s in order; writes
//! made without an intervening `await` commit together.

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::core::{ConfigKey, OpenStream, StoreOp, StoredState};

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS chat_messages (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, body TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS chat_messages_by_seq ON chat_messages(seq)",
    "CREATE TABLE IF NOT EXISTS chat_streams (request_id TEXT PRIMARY KEY, record TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS chat_stream_chunks (request_id TEXT NOT NULL, first_seq INTEGER NOT NULL, bodies TEXT NOT NULL, PRIMARY KEY (request_id, first_seq))",
    "CREATE TABLE IF NOT EXISTS chat_config (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
];

pub struct SqlStore {
    sql: SqlStorage,
}

#[derive(Deserialize)]
struct MessageRow {
    seq: f64,
    body: String,
}

#[derive(Deserialize)]
struct TextRow {
    value: String,
}

#[derive(Deserialize)]
struct StreamRow {
    record: String,
}

#[derive(Deserialize)]
struct ChunkRow {
    bodies: String,
}

fn text(value: &str) -> SqlStorageValue {
    SqlStorageValue::from(value)
}

impl SqlStore {
    pub fn open(sql: SqlStorage) -> worker::Result<SqlStore> {
        for statement in SCHEMA {
            sql.exec(statement, None)?;
        }
        Ok(SqlStore { sql })
    }

    /// Everything the core needs to start. Rows that fail to parse are skipped
    /// (and reported) rather than failing the whole agent.
    pub fn load(&self) -> worker::Result<StoredState> {
        let mut state = StoredState::default();
        let rows: Vec<MessageRow> = self
            .sql
            .exec("SELECT seq, body FROM chat_messages ORDER BY seq", None)?
            .to_array()?;
        for row in rows {
            if let Err(e) = state.push_message_row(row.seq as u64, &row.body) {
                worker::console_error!("skipping unreadable stored message: {e}");
            }
        }
        state.read_config(|key| self.config_value(key))?;
        let streams: Vec<StreamRow> = self
            .sql
            .exec("SELECT record FROM chat_streams", None)?
            .to_array()?;
        for row in streams {
            let Some(mut open) = OpenStream::from_record_row(&row.record) else {
                continue;
            };
            let chunk_rows: Vec<ChunkRow> = self
                .sql
                .exec(
                    "SELECT bodies FROM chat_stream_chunks WHERE request_id = ? ORDER BY first_seq",
                    vec![text(&open.record.request_id)],
                )?
                .to_array()?;
            for row in chunk_rows {
                open.push_chunk_row(&row.bodies);
            }
            state.open_streams.push(open);
        }
        Ok(state)
    }

    /// Bytes the database occupies (pages × page size); debug output only.
    /// (PRAGMA page_count / cache_size are refused by the runtime: SQLITE_AUTH.)
    pub fn database_size(&self) -> usize {
        self.sql.database_size()
    }

    pub fn config_value(&self, key: ConfigKey) -> worker::Result<Option<String>> {
        let rows: Vec<TextRow> = self
            .sql
            .exec(
                "SELECT value FROM chat_config WHERE key = ?",
                vec![text(key.as_str())],
            )?
            .to_array()?;
        Ok(rows.into_iter().next().map(|r| r.value))
    }

    pub fn apply(&self, op: &StoreOp) -> worker::Result<()> {
        match op {
            StoreOp::PutMessage { seq, message } => {
                let body = serde_json::to_string(message)
                    .map_err(|e| worker::Error::RustError(e.to_string()))?;
                self.sql.exec(
                    "INSERT INTO chat_messages (id, seq, body) VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, body = excluded.body",
                    vec![text(&message.id), SqlStorageValue::from(*seq as i64), text(&body)],
                )?;
            }
            StoreOp::DeleteMessage { id } => {
                self.sql
                    .exec("DELETE FROM chat_messages WHERE id = ?", vec![text(id)])?;
            }
            StoreOp::ClearAll => {
                for table in [
                    "chat_messages",
                    "chat_streams",
                    "chat_stream_chunks",
                    "chat_config",
                ] {
                    self.sql.exec(&format!("DELETE FROM {table}"), None)?;
                }
            }
            StoreOp::OpenStream(record) => {
                let json = serde_json::to_string(record).unwrap_or_default();
                self.sql.exec(
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
                let json = serde_json::to_string(&bodies).unwrap_or_default();
                self.sql.exec(
                    "INSERT OR REPLACE INTO chat_stream_chunks (request_id, first_seq, bodies) VALUES (?, ?, ?)",
                    vec![text(request_id), SqlStorageValue::from(*first_seq as i64), text(&json)],
                )?;
            }
            StoreOp::CloseStream { request_id } => {
                self.sql.exec(
                    "DELETE FROM chat_stream_chunks WHERE request_id = ?",
                    vec![text(request_id)],
                )?;
                self.sql.exec(
                    "DELETE FROM chat_streams WHERE request_id = ?",
                    vec![text(request_id)],
                )?;
            }
            StoreOp::PutConfig { key, value } => {
                self.sql.exec(
                    "INSERT OR REPLACE INTO chat_config (key, value) VALUES (?, ?)",
                    vec![text(key.as_str()), text(value)],
                )?;
            }
            StoreOp::DeleteConfig { key } => {
                self.sql.exec(
                    "DELETE FROM chat_config WHERE key = ?",
                    vec![text(key.as_str())],
                )?;
            }
        }
        Ok(())
    }
}
