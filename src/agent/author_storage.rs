//! The author's own storage on the agent's SQLite, next to the transcript:
//! `sql` for the author's own tables (statements naming the engine's tables
//! are refused, see `author_sql_guard`) and a small typed key-value store
//! over serde (`put`, `get`, `delete`, `keys`) in a table of the engine's.
//! Both hold to production's limits: a value or row over 2 MB is refused
//! with an error saying so, on the local runtime too.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use worker::{SqlStorage, SqlStorageValue};

use crate::core::MAX_ROW_BYTES;

use super::author_sql_guard::check_author_sql;

/// A value the author's SQL binds to a `?`.
pub type SqlValue = SqlStorageValue;

/// Why a storage call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// The statement names a table of the engine's or runs a refused statement.
    #[error("statement refused: {0}")]
    Refused(String),
    /// A value (or a key-value row) is over production's 2 MB limit.
    #[error("{what} is {bytes} bytes; the limit is {MAX_ROW_BYTES} bytes")]
    TooLarge { what: String, bytes: usize },
    /// A value does not (de)serialise as the type asked for.
    #[error("value does not convert: {0}")]
    Serde(String),
    /// SQLite refused the statement.
    #[error("sqlite: {0}")]
    Sql(String),
}

const KV_TABLE: &str = "chat_author_kv";

/// The author's storage (clones share the same database).
#[derive(Clone)]
pub struct AuthorStorage {
    sql: SqlStorage,
}

#[derive(Deserialize)]
struct KvRow {
    value: String,
}

#[derive(Deserialize)]
struct KeyRow {
    key: String,
}

impl AuthorStorage {
    pub(crate) fn new(sql: SqlStorage) -> AuthorStorage {
        AuthorStorage { sql }
    }

    /// Runs `query` with `bindings` on the author's own tables and returns
    /// its rows, each deserialised from `{column: value}` (use
    /// `serde_json::Value` for any shape).
    pub fn sql<T: DeserializeOwned>(
        &self,
        query: &str,
        bindings: Vec<SqlValue>,
    ) -> Result<Vec<T>, StorageError> {
        check_author_sql(query).map_err(StorageError::Refused)?;
        for (i, value) in bindings.iter().enumerate() {
            let bytes = match value {
                SqlStorageValue::String(s) => s.len(),
                SqlStorageValue::Blob(b) => b.len(),
                _ => 0,
            };
            if bytes > MAX_ROW_BYTES {
                return Err(StorageError::TooLarge {
                    what: format!("binding {}", i + 1),
                    bytes,
                });
            }
        }
        let cursor = self.sql.exec(query, Some(bindings)).map_err(sql_error)?;
        cursor
            .to_array()
            .map_err(|e| StorageError::Serde(e.to_string()))
    }

    /// Stores `value` under `key` as JSON, replacing what was there.
    pub fn put<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<(), StorageError> {
        let json = serde_json::to_string(value).map_err(|e| StorageError::Serde(e.to_string()))?;
        let bytes = json.len() + key.len();
        if bytes > MAX_ROW_BYTES {
            return Err(StorageError::TooLarge {
                what: format!("the value of `{}`", clip(key)),
                bytes,
            });
        }
        self.ensure_kv()?;
        self.sql
            .exec(
                &format!("INSERT OR REPLACE INTO {KV_TABLE} (key, value) VALUES (?, ?)"),
                Some(vec![key.into(), json.into()]),
            )
            .map_err(sql_error)?;
        Ok(())
    }

    /// The value stored under `key`, if any.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StorageError> {
        self.ensure_kv()?;
        let rows: Vec<KvRow> = self
            .sql
            .exec(
                &format!("SELECT value FROM {KV_TABLE} WHERE key = ?"),
                Some(vec![key.into()]),
            )
            .and_then(|c| c.to_array())
            .map_err(sql_error)?;
        match rows.into_iter().next() {
            Some(row) => serde_json::from_str(&row.value)
                .map(Some)
                .map_err(|e| StorageError::Serde(e.to_string())),
            None => Ok(None),
        }
    }

    /// Deletes `key`; `true` if it was stored.
    pub fn delete(&self, key: &str) -> Result<bool, StorageError> {
        self.ensure_kv()?;
        let cursor = self
            .sql
            .exec(
                &format!("DELETE FROM {KV_TABLE} WHERE key = ?"),
                Some(vec![key.into()]),
            )
            .map_err(sql_error)?;
        let _ = cursor.to_array::<serde_json::Value>();
        Ok(cursor.rows_written() > 0)
    }

    /// The stored keys that start with `prefix`, in order.
    pub fn keys(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.ensure_kv()?;
        let rows: Vec<KeyRow> = self
            .sql
            .exec(
                &format!("SELECT key FROM {KV_TABLE} WHERE substr(key, 1, ?) = ? ORDER BY key"),
                Some(vec![(prefix.len() as i64).into(), prefix.into()]),
            )
            .and_then(|c| c.to_array())
            .map_err(sql_error)?;
        Ok(rows.into_iter().map(|r| r.key).collect())
    }

    fn ensure_kv(&self) -> Result<(), StorageError> {
        self.sql
            .exec(
                &format!(
                    "CREATE TABLE IF NOT EXISTS {KV_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
                ),
                None,
            )
            .map(|_| ())
            .map_err(sql_error)
    }
}

fn sql_error(e: worker::Error) -> StorageError {
    StorageError::Sql(e.to_string())
}

fn clip(key: &str) -> &str {
    let mut end = key.len().min(64);
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    &key[..end]
}
