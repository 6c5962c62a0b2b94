//! The full-text index of the history (`chat_search`, SQLite FTS5 in the
//! Durable Object): one row per stored message that has text, its rowid the
//! message's place (`seq`), kept in step with every message write, delete,
//! drop and clear (`SqlStore::apply`), filled for a history stored before
//! it by migration 9. A search ranks the matches (bm25) and answers with an
//! excerpt of each, bounded in hits and bytes (`vocab/history_search.rs`).

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::core::vocab::history_search::{fts_query, searchable_text, within_bytes, HistoryHit};
use crate::protocol::UIMessage;

use super::SqlStore;

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
