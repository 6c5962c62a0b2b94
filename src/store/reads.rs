//! The core's read-through view of the stored conversation (`core::History`):
//! pages of older messages by `seq`, a message by id (the primary key) or
//! only its role (its row's role field), the
//! owner of a tool call id (the `chat_tool_calls` index, kept in step with
//! every message write) and counts. A row that no longer parses is
//! quarantined as a load would, and left out.

use serde::Deserialize;
use worker::SqlStorageValue;

use crate::core::contract::history;
use crate::core::{Entry, History};

use super::pieces::{self, Kind};
use super::tables::Lazy;
use super::{quarantine, SqlStore};

#[derive(Deserialize)]
struct MessageRow {
    id: String,
    seq: f64,
    body: String,
    pieces: f64,
}

#[derive(Deserialize)]
struct CountRow {
    n: f64,
}

/// `seq` as SQLite takes it (integers beyond ±2^53−1 are refused).
pub(super) fn seq_value(seq: u64) -> SqlStorageValue {
    SqlStorageValue::from(seq.min(1 << 52) as i64)
}

impl SqlStore {
    fn read_rows(&self, statement: &str, binds: Vec<SqlStorageValue>) -> Vec<Entry> {
        let rows: Vec<MessageRow> = match self.sql.exec(statement, binds).and_then(|c| c.to_array())
        {
            Ok(rows) => rows,
            Err(e) => {
                crate::log::write(
                    crate::log::LogLevel::Error,
                    &format!("storage: reading messages failed: {e}"),
                );
                return Vec::new();
            }
        };
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let seq = row.seq as u64;
            let body = match pieces::get(&self.sql, Kind::Message, &row.id, 0, row.body, row.pieces)
            {
                Ok(body) => body,
                Err(e) => {
                    crate::log::write(
                        crate::log::LogLevel::Error,
                        &format!("storage: reading message {:?} failed: {e}", row.id),
                    );
                    continue;
                }
            };
            match history::read_row(seq, &body) {
                Ok(entry) => out.push(entry),
                Err(e) => {
                    // The row leaves the table: a remembered frame cut may cover it.
                    self.snapshot_cut.set(None);
                    let (id, reason) = (row.id.clone(), e.to_string());
                    let moved = self.moved(move |sql, tables| {
                        quarantine::message(sql, tables, &id, &body, &reason)
                    });
                    if let Err(e) = moved {
                        crate::log::write(
                            crate::log::LogLevel::Error,
                            &format!("storage: quarantine of {:?} failed: {e}", row.id),
                        );
                    }
                }
            }
        }
        out
    }
}

impl SqlStore {
    /// A page read as one string joined by SQLite (a row at a time costs far
    /// more in crossing to JS and back), parsed here once: SQLite only joins
    /// the stored bodies, it does not parse them. `None` when a row of the
    /// page is split in pieces or the page does not parse as messages (a row
    /// that is not JSON, or not a message): the caller then reads row by row
    /// (and quarantines what cannot be read).
    fn json_page_before(&self, before_seq: u64, limit: usize) -> Option<Vec<Entry>> {
        #[derive(Deserialize)]
        struct Page {
            page: Option<String>,
            plain: f64,
            n: f64,
        }
        #[derive(Deserialize)]
        struct Row {
            seq: u64,
            message: crate::protocol::UIMessage,
        }
        let rows: Vec<Page> = self
            .sql
            .exec(
                "SELECT '[' || group_concat('{\"seq\":' || seq || ',\"message\":' || body || '}', ',' ORDER BY seq DESC) || ']' AS page, SUM(pieces = 1) AS plain, COUNT(*) AS n FROM (SELECT seq, body, pieces FROM chat_messages WHERE seq < ? ORDER BY seq DESC LIMIT ?)",
                vec![seq_value(before_seq), SqlStorageValue::from(limit as i64)],
            )
            .and_then(|c| c.to_array())
            .ok()?;
        let page = rows.into_iter().next()?;
        if page.n == 0.0 {
            return Some(Vec::new());
        }
        if page.plain != page.n {
            return None;
        }
        let rows: Vec<Row> = serde_json::from_str(page.page.as_deref()?).ok()?;
        if rows.len() as f64 != page.n {
            return None;
        }
        Some(
            rows.into_iter()
                .map(|r| Entry {
                    seq: r.seq,
                    message: r.message,
                })
                .collect(),
        )
    }
}

impl History for SqlStore {
    fn newest_json_before(&self, before_seq: u64, max_bytes: usize) -> String {
        self.older_part_js(before_seq, max_bytes)
            .map(String::from)
            .unwrap_or_default()
    }

    fn page_before(&self, before_seq: u64, limit: usize) -> Vec<Entry> {
        if let Some(page) = self.json_page_before(before_seq, limit) {
            return page;
        }
        self.read_rows(
            "SELECT id, seq, body, pieces FROM chat_messages WHERE seq < ? ORDER BY seq DESC LIMIT ?",
            vec![seq_value(before_seq), SqlStorageValue::from(limit as i64)],
        )
    }

    fn find(&self, id: &str) -> Option<Entry> {
        self.read_rows(
            "SELECT id, seq, body, pieces FROM chat_messages WHERE id = ?",
            vec![id.into()],
        )
        .pop()
    }

    fn find_many(&self, ids: &[&str]) -> Vec<Entry> {
        // One query for any number of ids: they go in as one JSON array.
        let ids = serde_json::to_string(ids).unwrap_or_default();
        self.read_rows(
            "SELECT id, seq, body, pieces FROM chat_messages WHERE id IN (SELECT value FROM json_each(?))",
            vec![ids.into()],
        )
    }

    fn roles_before(&self, ids: &[&str], before_seq: u64) -> Vec<(String, crate::protocol::Role)> {
        #[derive(Deserialize)]
        struct RoleRow {
            id: String,
            span: String,
        }
        // Only the role field is read (`history::role_span`), whatever the
        // message's size (a long chat's tab posts every answer).
        let ids = serde_json::to_string(ids).unwrap_or_default();
        let rows = self
            .sql
            .exec(
                "SELECT id, substr(body, instr(body, ?), ?) AS span FROM chat_messages WHERE seq < ? AND id IN (SELECT value FROM json_each(?))",
                vec![
                    history::ROLE_FIELD.into(),
                    SqlStorageValue::from(history::ROLE_SPAN as i64),
                    seq_value(before_seq),
                    ids.into(),
                ],
            )
            .and_then(|c| c.to_array::<RoleRow>());
        match rows {
            Ok(rows) => rows
                .into_iter()
                .filter_map(|r| Some((r.id, history::role_in_span(&r.span)?)))
                .collect(),
            Err(e) => {
                crate::log::write(
                    crate::log::LogLevel::Error,
                    &format!("storage: reading message roles failed: {e}"),
                );
                Vec::new()
            }
        }
    }

    fn tool_call_owner(&self, tool_call_id: &str) -> Option<Entry> {
        if !self.tables.borrow().has(Lazy::ToolCalls) {
            return None;
        }
        self.read_rows(
            "SELECT m.id AS id, m.seq AS seq, m.body AS body, m.pieces AS pieces FROM chat_tool_calls AS t JOIN chat_messages AS m ON m.id = t.message_id WHERE t.tool_call_id = ? ORDER BY m.seq DESC LIMIT 1",
            vec![tool_call_id.into()],
        )
        .pop()
    }

    fn count_before(&self, seq: u64) -> usize {
        self.sql
            .exec(
                "SELECT COUNT(*) AS n FROM chat_messages WHERE seq < ?",
                vec![seq_value(seq)],
            )
            .and_then(|c| c.to_array::<CountRow>())
            .ok()
            .and_then(|rows| rows.first().map(|r| r.n as usize))
            .unwrap_or(0)
    }

    fn seq_after_oldest(&self, n: usize) -> Option<u64> {
        #[derive(Deserialize)]
        struct SeqRow {
            seq: f64,
        }
        self.sql
            .exec(
                "SELECT seq FROM chat_messages ORDER BY seq LIMIT 1 OFFSET ?",
                vec![SqlStorageValue::from(i64::try_from(n).unwrap_or(i64::MAX))],
            )
            .and_then(|c| c.to_array::<SeqRow>())
            .ok()
            .and_then(|rows| rows.first().map(|r| r.seq as u64))
    }
}
