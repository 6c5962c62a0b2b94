//! Rows that no longer parse are moved out of the way, never skipped on
//! every wake: the quarantine table keeps the value (split like any other)
//! and the reason, the row leaves its table, and the move is reported once,
//! after it is committed (`console.error`, readable in `wrangler tail`). Every table's rows are
//! covered: messages, stream records, chunk-log rows and config rows (a row
//! of a newer shape version than this release reads included). A stream
//! record that cannot be read is settled: its chunk log is removed with it.

use worker::{SqlStorage, SqlStorageValue};

use super::pieces::{self, write, Kind};
use super::tables::{Lazy, Tables};

fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// A row moved to the quarantine table, reported once the move is committed
/// (a move that rolls back moved nothing and says nothing).
#[derive(Debug)]
pub struct Moved {
    source: String,
    key: String,
    bytes: usize,
    reason: String,
}

impl Moved {
    /// The one report of the move (`console.error`).
    pub fn report(&self) {
        let Moved {
            source,
            key,
            bytes,
            reason,
        } = self;
        crate::log::write(
            crate::log::LogLevel::Error,
            &format!(
                "storage: quarantined unreadable {source} row {key:?} ({bytes} bytes): {reason}"
            ),
        );
    }
}

/// Moves `value` (a row of `source` under `key`) to the quarantine table.
pub(super) fn keep(
    sql: &SqlStorage,
    tables: &mut Tables,
    source: &str,
    key: &str,
    value: &str,
    reason: &str,
) -> worker::Result<Moved> {
    #[derive(serde::Deserialize)]
    struct Next {
        id: f64,
    }
    tables.ensure(sql, Lazy::Quarantine)?;
    let next: Vec<Next> = sql
        .exec(
            "SELECT COALESCE(MAX(id), 0) + 1 AS id FROM chat_quarantine",
            None,
        )?
        .to_array()?;
    let id = next.first().map(|n| n.id as i64).unwrap_or(1);
    let (first, count) = pieces::put(
        sql,
        tables,
        Kind::Quarantine,
        &id.to_string(),
        0,
        value,
        true,
    )?;
    write(
        sql,
        "INSERT INTO chat_quarantine (id, source, key, reason, at, value, pieces) VALUES (?, ?, ?, ?, ?, ?, ?)",
        vec![
            SqlStorageValue::from(id),
            source.into(),
            key.into(),
            reason.into(),
            SqlStorageValue::from(now_ms()),
            first.into(),
            SqlStorageValue::from(count),
        ],
    )?;
    Ok(Moved {
        source: source.to_string(),
        key: key.to_string(),
        bytes: value.len(),
        reason: reason.to_string(),
    })
}

/// An unreadable transcript row.
pub fn message(
    sql: &SqlStorage,
    tables: &mut Tables,
    id: &str,
    body: &str,
    reason: &str,
) -> worker::Result<Moved> {
    let moved = keep(sql, tables, "chat_messages", id, body, reason)?;
    sql.exec("DELETE FROM chat_messages WHERE id = ?", vec![id.into()])?;
    pieces::drop_pieces(sql, tables, Kind::Message, id, None)?;
    Ok(moved)
}

/// An unreadable config row.
pub fn config(
    sql: &SqlStorage,
    tables: &mut Tables,
    key: &str,
    value: &str,
    reason: &str,
) -> worker::Result<Moved> {
    let moved = keep(sql, tables, "chat_config", key, value, reason)?;
    sql.exec("DELETE FROM chat_config WHERE key = ?", vec![key.into()])?;
    pieces::drop_pieces(sql, tables, Kind::Config, key, None)?;
    Ok(moved)
}

/// An unreadable chunk-log row (the rest of the log is still read).
pub fn chunks(
    sql: &SqlStorage,
    tables: &mut Tables,
    request_id: &str,
    first_seq: u64,
    bodies: &str,
    reason: &str,
) -> worker::Result<Moved> {
    let key = format!("{request_id}:{first_seq}");
    let moved = keep(sql, tables, "chat_stream_chunks", &key, bodies, reason)?;
    sql.exec(
        "DELETE FROM chat_stream_chunks WHERE request_id = ? AND first_seq = ?",
        vec![request_id.into(), SqlStorageValue::from(first_seq as i64)],
    )?;
    pieces::drop_pieces(sql, tables, Kind::Chunks, request_id, Some(first_seq))?;
    Ok(moved)
}

/// An unreadable stream record: quarantined, and the stream settled.
pub fn stream(
    sql: &SqlStorage,
    tables: &mut Tables,
    request_id: &str,
    record: &str,
    reason: &str,
) -> worker::Result<Moved> {
    let moved = keep(sql, tables, "chat_streams", request_id, record, reason)?;
    sql.exec(
        "DELETE FROM chat_stream_chunks WHERE request_id = ?",
        vec![request_id.into()],
    )?;
    pieces::drop_pieces(sql, tables, Kind::Chunks, request_id, None)?;
    sql.exec(
        "DELETE FROM chat_streams WHERE request_id = ?",
        vec![request_id.into()],
    )?;
    Ok(moved)
}

/// An unreadable submission row.
pub fn submission(
    sql: &SqlStorage,
    tables: &mut Tables,
    id: &str,
    record: &str,
    reason: &str,
) -> worker::Result<Moved> {
    let moved = keep(sql, tables, "chat_submissions", id, record, reason)?;
    sql.exec("DELETE FROM chat_submissions WHERE id = ?", vec![id.into()])?;
    Ok(moved)
}
