//! Values written as pieces so that no string or row goes over production's
//! limit (`core::row_limits`): the owning row keeps the first piece and the
//! count, `chat_pieces` the others under (kind, key, sub, n). Every write
//! goes through `write`, which refuses a row over the limit before SQLite
//! sees it, exactly as production's SQLite would. `chat_pieces` is made by
//! the first value that needs it (`tables.rs`); until then there is nothing
//! to drop.

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use crate::core::rows::row_limits::{check_row, pieces};

use super::tables::{Lazy, Tables};

/// Which table's value the pieces belong to.
#[derive(Clone, Copy)]
pub enum Kind {
    Message,
    Chunks,
    Config,
    Quarantine,
    QueuedBody,
}

impl Kind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Kind::Message => "message",
            Kind::Chunks => "chunks",
            Kind::Config => "config",
            Kind::Quarantine => "quarantine",
            Kind::QueuedBody => "queued_body",
        }
    }
}

#[derive(Deserialize)]
struct PieceRow {
    piece: String,
}

/// Runs one write statement after checking its text bindings against the
/// row limit.
pub fn write(sql: &SqlStorage, statement: &str, binds: Vec<SqlStorageValue>) -> worker::Result<()> {
    let texts: Vec<&str> = binds
        .iter()
        .filter_map(|v| match v {
            SqlStorageValue::String(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    check_row(&texts).map_err(worker::Error::RustError)?;
    sql.exec(statement, binds)?;
    Ok(())
}

/// Splits `value`; writes every piece after the first and returns the first
/// piece and the count, for the owning row. With `drop_old`, the pieces of
/// an earlier value under the same key go first (the caller passes false
/// only when it knows there are none).
pub fn put<'a>(
    sql: &SqlStorage,
    tables: &mut Tables,
    kind: Kind,
    key: &str,
    sub: u64,
    value: &'a str,
    drop_old: bool,
) -> worker::Result<(&'a str, i64)> {
    if drop_old {
        drop_pieces(sql, tables, kind, key, Some(sub))?;
    }
    let parts = pieces(value);
    if parts.len() > 1 {
        tables.ensure(sql, Lazy::Pieces)?;
    }
    for (n, piece) in parts.iter().enumerate().skip(1) {
        write(
            sql,
            "INSERT INTO chat_pieces (kind, key, sub, n, piece) VALUES (?, ?, ?, ?, ?)",
            vec![
                kind.as_str().into(),
                key.into(),
                SqlStorageValue::from(sub as i64),
                SqlStorageValue::from(n as i64),
                (*piece).into(),
            ],
        )?;
    }
    Ok((parts[0], parts.len() as i64))
}

/// The whole value of a row holding `first` and `count` pieces.
pub fn get(
    sql: &SqlStorage,
    kind: Kind,
    key: &str,
    sub: u64,
    first: String,
    count: f64,
) -> worker::Result<String> {
    if count <= 1.0 {
        return Ok(first);
    }
    let rows: Vec<PieceRow> = sql
        .exec(
            "SELECT piece FROM chat_pieces WHERE kind = ? AND key = ? AND sub = ? ORDER BY n",
            vec![
                kind.as_str().into(),
                key.into(),
                SqlStorageValue::from(sub as i64),
            ],
        )?
        .to_array()?;
    let mut value = first;
    for row in rows {
        value.push_str(&row.piece);
    }
    Ok(value)
}

/// Removes the extra pieces of one value (`sub` given) or of every value of
/// `key` (`sub` none).
pub fn drop_pieces(
    sql: &SqlStorage,
    tables: &Tables,
    kind: Kind,
    key: &str,
    sub: Option<u64>,
) -> worker::Result<()> {
    if !tables.has(Lazy::Pieces) {
        return Ok(());
    }
    match sub {
        Some(sub) => sql.exec(
            "DELETE FROM chat_pieces WHERE kind = ? AND key = ? AND sub = ?",
            vec![
                kind.as_str().into(),
                key.into(),
                SqlStorageValue::from(sub as i64),
            ],
        )?,
        None => sql.exec(
            "DELETE FROM chat_pieces WHERE kind = ? AND key = ?",
            vec![kind.as_str().into(), key.into()],
        )?,
    };
    Ok(())
}
