//! The full-text index of the history (`chat_search`, SQLite FTS5 in the
//! Durable Object), kept only by an agent that searches its history
//! (`AgentDefinition::searches_history`): one row per stored message that
//! has text, its rowid the message's place (`seq`), kept in step with every
//! message write, delete, drop and clear (`SqlStore::apply`). Built from the
//! stored messages when such an agent opens without it (`keep_index`: a
//! history stored before, or by an agent that did not search), dropped when
//! the agent opens and no longer searches, so the others pay no index
//! writes. A search ranks the matches (bm25) and answers with an
//! excerpt of each, bounded in hits and bytes (`vocab/history_search.rs`).

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::core::vocab::history_search::{fts_query, searchable_text, within_bytes, HistoryHit};
use crate::protocol::UIMessage;

use super::tables::{Lazy, Tables};
use super::SqlStore;

/// The index table, and its rows built from the stored messages (those
/// split over pieces put back together as in migration 6).
const BUILD: [&str; 3] = [
    "CREATE VIRTUAL TABLE chat_search USING fts5(text, message_id UNINDEXED, role UNINDEXED, tokenize = 'unicode61')",
    "INSERT INTO chat_search (rowid, text, message_id, role) SELECT seq, t, id, r FROM (SELECT m.seq AS seq, m.id AS id, json_extract(m.body, '$.role') AS r, (SELECT group_concat(json_extract(p.value, '$.text'), char(10)) FROM json_each(m.body, '$.parts') AS p WHERE json_extract(p.value, '$.type') = 'text') AS t FROM chat_messages AS m WHERE m.pieces = 1 AND json_valid(m.body) AND json_type(m.body, '$.parts') = 'array') WHERE t IS NOT NULL AND trim(t) != ''",
    "INSERT INTO chat_search (rowid, text, message_id, role) WITH RECURSIVE joined(id, seq, pieces, n, body) AS (SELECT id, seq, pieces, 0, body FROM chat_messages WHERE pieces > 1 UNION ALL SELECT j.id, j.seq, j.pieces, c.n, j.body || c.piece FROM joined AS j JOIN chat_pieces AS c ON c.kind = 'message' AND c.key = j.id AND c.sub = 0 AND c.n = j.n + 1), m AS (SELECT id, seq, body FROM joined WHERE n = pieces - 1 AND json_valid(body) AND json_type(body, '$.parts') = 'array') SELECT seq, t, id, r FROM (SELECT m.seq AS seq, m.id AS id, json_extract(m.body, '$.role') AS r, (SELECT group_concat(json_extract(p.value, '$.text'), char(10)) FROM json_each(m.body, '$.parts') AS p WHERE json_extract(p.value, '$.type') = 'text') AS t FROM m) WHERE t IS NOT NULL AND trim(t) != ''",
];

#[derive(Deserialize)]
struct CountRow {
    n: f64,
}

/// Builds the index when `on` and it is missing; drops it when not `on`.
/// Messages split over pieces are read only when `chat_pieces` exists.
pub fn keep_index(
    sql: &SqlStorage,
    storage: &worker::Storage,
    on: bool,
    tables: &Tables,
) -> worker::Result<()> {
    let present = sql
        .exec(
            "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'chat_search'",
            None,
        )?
        .to_array::<CountRow>()?
        .first()
        .is_some_and(|row| row.n > 0.0);
    match (on, present) {
        (true, false) => {
            let sql = sql.clone();
            let split = tables.has(Lazy::Pieces);
            super::schema::transaction(storage, move || {
                for statement in BUILD.iter().take(if split { 3 } else { 2 }) {
                    sql.exec(statement, None)?;
                }
                Ok(())
            })
        }
        (false, true) => {
            sql.exec("DROP TABLE chat_search", None)?;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Re-indexes message `id` at `seq` (its old place, if it had another, and
/// whatever was at `seq` are forgotten first).
pub fn index_message(sql: &SqlStorage, seq: u64, message: &UIMessage) -> worker::Result<()> {
    let place = super::reads::seq_value(seq);
    sql.exec(
        "DELETE FROM chat_search WHERE rowid IN (SELECT seq FROM chat_messages WHERE id = ?) OR rowid = ?",
        vec![SqlStorageValue::from(message.id.clone()), place.clone()],
    )?;
    let text = searchable_text(message);
    if text.trim().is_empty() {
        return Ok(());
    }
    let role = serde_json::to_value(message.role)
        .ok()
        .and_then(|r| r.as_str().map(str::to_string))
        .unwrap_or_default();
    sql.exec(
        "INSERT INTO chat_search (rowid, text, message_id, role) VALUES (?, ?, ?, ?)",
        vec![
            place,
            SqlStorageValue::from(text),
            SqlStorageValue::from(message.id.clone()),
            SqlStorageValue::from(role),
        ],
    )?;
    Ok(())
}

/// Forgets message `id` (before its row is deleted).
pub fn unindex_message(sql: &SqlStorage, id: &str) -> worker::Result<()> {
    sql.exec(
        "DELETE FROM chat_search WHERE rowid IN (SELECT seq FROM chat_messages WHERE id = ?)",
        vec![SqlStorageValue::from(id.to_string())],
    )?;
    Ok(())
}

#[derive(Deserialize)]
struct HitRow {
    message_id: String,
    role: String,
    seq: f64,
    excerpt: String,
}

impl SqlStore {
    /// The best `limit` matches of `query` over the whole stored history.
    pub fn search(&self, query: &str, limit: usize) -> worker::Result<Vec<HistoryHit>> {
        if !self.search_index {
            return Err(worker::Error::RustError(
                "this agent keeps no search index: return true from AgentDefinition::searches_history".into(),
            ));
        }
        let Some(query) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let rows: Vec<HitRow> = self
            .sql
            .exec(
                "SELECT message_id, role, rowid AS seq, snippet(chat_search, 0, '[', ']', '…', 24) AS excerpt FROM chat_search WHERE chat_search MATCH ? ORDER BY bm25(chat_search) LIMIT ?",
                vec![SqlStorageValue::from(query), SqlStorageValue::from(limit as i64)],
            )?
            .to_array()?;
        let hits = rows
            .into_iter()
            .map(|r| HistoryHit {
                message_id: r.message_id,
                role: r.role,
                seq: r.seq as u64,
                excerpt: r.excerpt,
            })
            .collect();
        Ok(within_bytes(hits))
    }
}
