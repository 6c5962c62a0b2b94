//! The author's storage on the Durable Object's SQLite (the worker's
//! backend of `AuthorStore`): the author's statements run as given, the
//! key-value store lives in a table of the engine's (`chat_author_kv`),
//! made by its first `put`: until then a read answers empty and a delete
//! finds nothing, without making it (an agent that never uses the store
//! never pays for the table).

use serde::Deserialize;
use serde_json::{Map, Value};
use worker::{SqlStorage, SqlStorageValue};

use crate::agent::storage::{AuthorStore, SqlValue};

const KV_TABLE: &str = "chat_author_kv";

/// The Durable Object's SQL storage as the author's store.
pub(crate) struct SqlAuthorStore {
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

impl SqlAuthorStore {
    pub(crate) fn new(sql: SqlStorage) -> SqlAuthorStore {
        SqlAuthorStore { sql }
    }

    /// Whether the key-value table exists (a read of `sqlite_master`).
    fn has_kv(&self) -> Result<bool, String> {
        #[derive(Deserialize)]
        struct Count {
            n: f64,
        }
        let rows: Vec<Count> = (self.sql.exec(
            "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?",
            Some(vec![KV_TABLE.into()]),
        ))
        .and_then(|c| c.to_array())
        .map_err(text)?;
        Ok(rows.first().is_some_and(|row| row.n > 0.0))
    }

    fn ensure_kv(&self) -> Result<(), String> {
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {KV_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        );
        self.sql.exec(&create, None).map(|_| ()).map_err(text)
    }
}

fn binding(value: SqlValue) -> SqlStorageValue {
    match value {
        SqlValue::Null => SqlStorageValue::Null,
        SqlValue::Boolean(b) => SqlStorageValue::Boolean(b),
        SqlValue::Integer(i) => SqlStorageValue::Integer(i),
        SqlValue::Float(f) => SqlStorageValue::Float(f),
        SqlValue::String(s) => SqlStorageValue::String(s),
        SqlValue::Blob(b) => SqlStorageValue::Blob(b),
    }
}

fn text(e: worker::Error) -> String {
    e.to_string()
}

impl AuthorStore for SqlAuthorStore {
    fn sql(&self, query: &str, bindings: Vec<SqlValue>) -> Result<Vec<Map<String, Value>>, String> {
        let bindings = bindings.into_iter().map(binding).collect();
        let cursor = self.sql.exec(query, Some(bindings)).map_err(text)?;
        cursor.to_array().map_err(text)
    }

    fn put(&self, key: &str, json: String) -> Result<(), String> {
        self.ensure_kv()?;
        let insert = format!("INSERT OR REPLACE INTO {KV_TABLE} (key, value) VALUES (?, ?)");
        let bindings = vec![key.into(), json.into()];
        self.sql
            .exec(&insert, Some(bindings))
            .map(|_| ())
            .map_err(text)
    }

    fn get(&self, key: &str) -> Result<Option<String>, String> {
        if !self.has_kv()? {
            return Ok(None);
        }
        let select = format!("SELECT value FROM {KV_TABLE} WHERE key = ?");
        let rows: Vec<KvRow> = (self.sql.exec(&select, Some(vec![key.into()])))
            .and_then(|c| c.to_array())
            .map_err(text)?;
        Ok(rows.into_iter().next().map(|row| row.value))
    }

    fn delete(&self, key: &str) -> Result<bool, String> {
        if !self.has_kv()? {
            return Ok(false);
        }
        let delete = format!("DELETE FROM {KV_TABLE} WHERE key = ?");
        let cursor = self
            .sql
            .exec(&delete, Some(vec![key.into()]))
            .map_err(text)?;
        let _ = cursor.to_array::<Value>();
        Ok(cursor.rows_written() > 0)
    }

    fn keys(&self, prefix: &str) -> Result<Vec<String>, String> {
        if !self.has_kv()? {
            return Ok(Vec::new());
        }
        let select = format!("SELECT key FROM {KV_TABLE} WHERE substr(key, 1, ?) = ? ORDER BY key");
        let bindings = vec![(prefix.len() as i64).into(), prefix.into()];
        let rows: Vec<KeyRow> = (self.sql.exec(&select, Some(bindings)))
            .and_then(|c| c.to_array())
            .map_err(text)?;
        Ok(rows.into_iter().map(|r| r.key).collect())
    }
}
