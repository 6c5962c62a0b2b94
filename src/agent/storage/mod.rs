//! The author's own storage next to the transcript: `sql` for the author's
//! own tables (statements naming the engine's tables are refused, see
//! `author_sql_guard`) and a small typed key-value store over serde (`put`,
//! `get`, `delete`, `keys`). Both hold to production's limits: a value or
//! row over 2 MB is refused with an error saying so, on every backend.
//! What holds the data is a backend behind the narrow `AuthorStore` trait:
//! the Durable Object's SQLite in a worker (`sql.rs`), memory
//! and SQLite in memory in the test kit.

#[cfg(target_arch = "wasm32")]
pub(crate) mod sql;
pub mod sql_guard;

use std::rc::Rc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::core::MAX_ROW_BYTES;

use crate::agent::storage::sql_guard::check_author_sql;

/// A value the author's SQL binds to a `?`.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Boolean(bool),
    Integer(i64),
    Float(f64),
    String(String),
    Blob(Vec<u8>),
}

macro_rules! sql_value_from {
    ($($t:ty => $variant:ident $(as $cast:ty)?),* $(,)?) => {$(
        impl From<$t> for SqlValue {
            fn from(value: $t) -> SqlValue {
                SqlValue::$variant(value $(as $cast)?)
            }
        }
    )*};
}

sql_value_from!(
    bool => Boolean,
    i32 => Integer as i64,
    i64 => Integer,
    u32 => Integer as i64,
    f32 => Float as f64,
    f64 => Float,
    String => String,
    Vec<u8> => Blob,
);

impl From<&str> for SqlValue {
    fn from(value: &str) -> SqlValue {
        SqlValue::String(value.to_string())
    }
}

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(value: Option<T>) -> SqlValue {
        value.map_or(SqlValue::Null, Into::into)
    }
}

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

/// What holds the author's data. Checks (the guard, the size limits) and
/// serde are done above it; a backend only stores.
pub(crate) trait AuthorStore {
    /// Runs one checked statement; its rows as `{column: value}`.
    fn sql(&self, query: &str, bindings: Vec<SqlValue>) -> Result<Vec<Map<String, Value>>, String>;
    /// Stores `json` under `key`, replacing what was there.
    fn put(&self, key: &str, json: String) -> Result<(), String>;
    /// The JSON stored under `key`.
    fn get(&self, key: &str) -> Result<Option<String>, String>;
    /// Deletes `key`; whether it was stored.
    fn delete(&self, key: &str) -> Result<bool, String>;
    /// The keys starting with `prefix`, in order.
    fn keys(&self, prefix: &str) -> Result<Vec<String>, String>;
}

/// The author's storage (clones share the same data).
#[derive(Clone)]
pub struct AuthorStorage {
    store: Rc<dyn AuthorStore>,
}

impl AuthorStorage {
    #[cfg_attr(
        not(any(target_arch = "wasm32", feature = "test-kit")),
        allow(dead_code)
    )]
    pub(crate) fn new(store: Rc<dyn AuthorStore>) -> AuthorStorage {
        AuthorStorage { store }
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
                SqlValue::String(s) => s.len(),
                SqlValue::Blob(b) => b.len(),
                _ => 0,
            };
            if bytes > MAX_ROW_BYTES {
                return Err(StorageError::TooLarge {
                    what: format!("binding {}", i + 1),
                    bytes,
                });
            }
        }
        let rows = self.store.sql(query, bindings).map_err(StorageError::Sql)?;
        rows.into_iter()
            .map(|row| serde_json::from_value(Value::Object(row)))
            .collect::<Result<_, _>>()
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
        self.store.put(key, json).map_err(StorageError::Sql)
    }

    /// The value stored under `key`, if any.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StorageError> {
        match self.store.get(key).map_err(StorageError::Sql)? {
            Some(json) => serde_json::from_str(&json)
                .map(Some)
                .map_err(|e| StorageError::Serde(e.to_string())),
            None => Ok(None),
        }
    }

    /// Deletes `key`; `true` if it was stored.
    pub fn delete(&self, key: &str) -> Result<bool, StorageError> {
        self.store.delete(key).map_err(StorageError::Sql)
    }

    /// The stored keys that start with `prefix`, in order.
    pub fn keys(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.store.keys(prefix).map_err(StorageError::Sql)
    }
}

fn clip(key: &str) -> &str {
    let mut end = key.len().min(64);
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    &key[..end]
}
