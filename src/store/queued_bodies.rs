//! The custom bodies of queued turns (`chat_queued_bodies`, one row per
//! request id, split over `chat_pieces` like any value over the row limit):
//! written once when a turn is queued, read back with the queue on wake,
//! deleted when the turn leaves the queue. The queue row itself only says
//! that a turn has a body, so queueing one more turn never rewrites the
//! bodies of the others.

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::core::StoredState;

use super::pieces::{self, write, Kind};
use super::quarantine;
use super::tables::{Lazy, Tables};

#[derive(Deserialize)]
struct BodyRow {
    request_id: String,
    body: String,
    pieces: f64,
}

/// Inserts or replaces the body of `request_id`.
pub fn put(
    sql: &SqlStorage,
    tables: &mut Tables,
    request_id: &str,
    body: &str,
) -> worker::Result<()> {
    tables.ensure(sql, Lazy::QueuedBodies)?;
    let (first, count) = pieces::put(sql, tables, Kind::QueuedBody, request_id, 0, body, true)?;
    write(
        sql,
        "INSERT OR REPLACE INTO chat_queued_bodies (request_id, body, pieces) VALUES (?, ?, ?)",
        vec![
            request_id.into(),
            first.into(),
            SqlStorageValue::from(count),
        ],
    )
}

/// Deletes the body of `request_id` (nothing when it has none).
pub fn delete(sql: &SqlStorage, tables: &Tables, request_id: &str) -> worker::Result<()> {
    if !tables.has(Lazy::QueuedBodies) {
        return Ok(());
    }
    sql.exec(
        "DELETE FROM chat_queued_bodies WHERE request_id = ?",
        vec![request_id.into()],
    )?;
    pieces::drop_pieces(sql, tables, Kind::QueuedBody, request_id, None)
}

/// Reads every stored body into `state`; an unreadable one is returned to
/// be quarantined (`quarantined`).
pub fn load(
    sql: &SqlStorage,
    tables: &Tables,
    state: &mut StoredState,
) -> worker::Result<Vec<(String, String, String)>> {
    if !tables.has(Lazy::QueuedBodies) {
        return Ok(Vec::new());
    }
    let rows: Vec<BodyRow> = sql
        .exec(
            "SELECT request_id, body, pieces FROM chat_queued_bodies",
            None,
        )?
        .to_array()?;
    let mut unreadable = Vec::new();
    for row in rows {
        let body = pieces::get(
            sql,
            Kind::QueuedBody,
            &row.request_id,
            0,
            row.body,
            row.pieces,
        )?;
        if let Err(reason) = state.push_queued_body_row(&row.request_id, &body) {
            unreadable.push((row.request_id, body, reason));
        }
    }
    Ok(unreadable)
}

/// Moves an unreadable body row to the quarantine (its turn runs with the
/// agent's last custom body, as a turn with none of its own does).
pub fn quarantined(
    sql: &SqlStorage,
    tables: &mut Tables,
    request_id: &str,
    body: &str,
    reason: &str,
) -> worker::Result<quarantine::Moved> {
    let moved = quarantine::keep(sql, tables, "chat_queued_bodies", request_id, body, reason)?;
    delete(sql, tables, request_id)?;
    Ok(moved)
}

#[derive(Deserialize)]
struct Sizes {
    rows: f64,
    bytes: f64,
}

/// How many body rows are stored and their bytes (their first pieces and
/// the others); test figures only.
pub fn sizes(sql: &SqlStorage, tables: &Tables) -> worker::Result<(usize, usize)> {
    if !tables.has(Lazy::QueuedBodies) {
        return Ok((0, 0));
    }
    let statement = match tables.has(Lazy::Pieces) {
        true => "SELECT COUNT(*) AS rows, COALESCE(SUM(LENGTH(body)), 0) + (SELECT COALESCE(SUM(LENGTH(piece)), 0) FROM chat_pieces WHERE kind = 'queued_body') AS bytes FROM chat_queued_bodies",
        false => "SELECT COUNT(*) AS rows, COALESCE(SUM(LENGTH(body)), 0) AS bytes FROM chat_queued_bodies",
    };
    let rows: Vec<Sizes> = sql.exec(statement, None)?.to_array()?;
    Ok(rows
        .first()
        .map(|r| (r.rows as usize, r.bytes as usize))
        .unwrap_or_default())
}
